"""Record the orders of two reference implementations that cannot be installed with the course, so that
``tests/test_reference.py`` can hold ppedu's schedules to them: DeepSeek's DualPipe and DualPipeV
(``dualpipe/dualpipe.py``, ``dualpipe/dualpipev.py``) and the zero-bubble authors' schedule generator
(``megatron/core/pipeline_parallel/zerobubble/scheduler/zb.py``, Qi et al.).

Their own code runs, unchanged, read from a git directory of each repository; only what it calls out to is
replaced: DualPipe's compute and communication methods by recorders (so no GPU or process group is needed), and
the LP solver the generator imports but does not use for its heuristic (``pulp``) by an empty module. What is
written is their output (each rank's operations in order, which backward runs overlapped, and for the generator
each operation's end time and its own count of live activations), never their code.

    python tests/references/record.py DUALPIPE_GIT_DIR ZERO_BUBBLE_GIT_DIR

writes ``tests/references/third_party.json``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

OUT = Path(__file__).with_name("third_party.json")
#: (p, m) for DeepSeek's DualPipe (p even, m even, m ≥ 2p) and DualPipeV (m ≥ 2p).
DUALPIPE_CASES = ((2, 4), (4, 8), (4, 10), (6, 12), (8, 16), (8, 20))
DUALPIPE_V_CASES = ((2, 4), (3, 7), (4, 8), (4, 11), (6, 12), (8, 20))
#: (p, m, f, b, w, comm): the zero-bubble generator's cases, its memory limit 2p-1 micro-batches.
ZB_CASES = ((2, 3, 1, 1, 1, 0), (3, 5, 1, 1, 1, 0), (4, 7, 1, 1, 1, 0), (4, 12, 1, 1, 1, 0), (4, 16, 1, 1, 1, 0),
            (6, 18, 1, 1, 1, 0), (8, 24, 1, 1, 1, 0), (4, 12, 5, 6, 4, 0), (4, 12, 5, 6, 4, 1))


def _source(git_dir: str, paths: list[str], into: Path) -> None:
    for path in paths:
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True,
                              capture_output=True, text=True).stdout
        (into / path).parent.mkdir(parents=True, exist_ok=True)
        (into / path).write_text(text)


def _label(kind: str, microbatch: int, chunk: int, direction: int = 0) -> str:
    return f"{kind}{microbatch}c{chunk}" + ("'" if direction else "")


def record_dualpipe(git_dir: str) -> dict[str, object]:
    """Per case, what DeepSeek's ``step`` runs on each rank, recorded from their own loop."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        _source(git_dir, ["dualpipe/__init__.py", "dualpipe/comm.py", "dualpipe/utils.py", "dualpipe/dualpipe.py",
                          "dualpipe/dualpipev.py"], Path(tmp))
        sys.path.insert(0, tmp)
        try:
            dualpipe = importlib.import_module("dualpipe")
        finally:
            sys.path.remove(tmp)
        dualpipe.set_p2p_tensor_shapes([(1,)])
        dualpipe.set_p2p_tensor_dtype(torch.float32)
        cases: dict[str, object] = {}
        for v_shaped, runs in ((False, DUALPIPE_CASES), (True, DUALPIPE_V_CASES)):
            for p, m in runs:
                ranks = [_dualpipe_rank(dualpipe.DualPipeV if v_shaped else dualpipe.DualPipe, v_shaped, p, m, r)
                         for r in range(p)]
                cases[f"{'DualPipeV' if v_shaped else 'DualPipe'} {p} {m}"] = {
                    "ops": [ops for ops, _ in ranks], "overlapped": sorted(o for _, pairs in ranks for o in pairs)}
        return cases


def _dualpipe_rank(cls: type, v_shaped: bool, p: int, m: int, rank: int) -> tuple[list[str], list[str]]:
    """One rank's compute operations as DeepSeek's ``step`` calls them, and the backwards it overlaps."""
    import torch

    pipe = cls.__new__(cls)
    torch.nn.Module.__init__(pipe)
    pipe.rank, pipe.num_ranks, pipe.batch_dim = rank, p, 0
    pipe.is_first_rank, pipe.is_last_rank = rank == 0, rank == p - 1
    pipe.is_in_second_half = rank >= p // 2
    pipe.is_middle_rank = rank in (p // 2 - 1, p // 2)
    pipe.overlapped_forward_backward = True
    ops: list[str] = []
    overlapped: list[str] = []
    pending: list[str] = []  # their WeightGradStore: a FIFO of the split backwards' weight gradients
    count = {"F": [0, 0], "B": [0, 0]}

    def op(kind: str, phase: int) -> str:
        direction = 0 if v_shaped else phase ^ pipe.is_in_second_half
        index = count[kind][direction if not v_shaped else phase]
        count[kind][direction if not v_shaped else phase] += 1
        if v_shaped:
            return _label(kind, index, rank if phase == 0 else 2 * p - 1 - rank)
        return _label(kind, index + direction * (m // 2), rank if direction == 0 else p - 1 - rank, direction)

    def forward(phase: int) -> None:
        ops.append(op("F", phase))
        if (v_shaped and pipe.is_first_rank and phase == 1) or (not v_shaped and (
                (pipe.is_first_rank and phase == 1) or (pipe.is_last_rank and phase == 0))):
            pipe.loss_chunks.append(torch.zeros(()))  # what their step stacks at the end

    def backward(phase: int, enable_zb: bool = False) -> None:
        ops.append(op("B", phase))
        if enable_zb:
            pending.append("W" + ops[-1][1:])

    def pair(phase0: int, phase1: int) -> None:
        forward(phase0)
        backward(phase1)
        overlapped.append(ops[-1])

    pipe._forward_compute_chunk = forward
    pipe._backward_compute_chunk = backward
    pipe._forward_backward_compute_chunk = pair
    pipe._weight_chunk = lambda: ops.append(pending.pop(0))
    for name in ("_recv_forward", "_send_forward", "_recv_backward", "_send_backward"):
        setattr(pipe, name, lambda *args, **kwargs: None)
    pipe._commit_and_wait_comm = lambda: None
    pipe.step(num_chunks=m, criterion=lambda *args: torch.zeros(()))
    assert not pending
    return ops, overlapped


def record_zero_bubble(git_dir: str) -> dict[str, object]:
    """Per case, the zero-bubble generator's heuristic order (its best of the variants it tries, as its own
    ``initial_solution`` picks), each op's end time and its count of live activations per stage at its peak,
    with a forward holding one micro-batch's activations until its W (``mem_f=1, mem_b=0, mem_w=-1``) and the
    limit ``2p-1`` micro-batches (``max_mem``), which the authors' ZB-2P setting and the paper's ZB-H2 share."""
    path = "megatron/core/pipeline_parallel/zerobubble/scheduler/"
    with tempfile.TemporaryDirectory() as tmp:
        _source(git_dir, [path + "zb.py", path + "graph.py"], Path(tmp))
        (Path(tmp) / path / "__init__.py").write_text("")
        for package in ("megatron", "megatron/core", "megatron/core/pipeline_parallel",
                        "megatron/core/pipeline_parallel/zerobubble"):
            (Path(tmp) / package / "__init__.py").write_text("")
        sys.modules.setdefault("pulp", types.ModuleType("pulp"))  # imported for its LP solver, unused here
        sys.path.insert(0, tmp)
        try:
            zb = importlib.import_module("megatron.core.pipeline_parallel.zerobubble.scheduler.zb")
        finally:
            sys.path.remove(tmp)
        cases: dict[str, object] = {}
        for p, m, f, b, w, comm in ZB_CASES:
            limit = 2 * p - 1
            config = zb.GraphConfig(mem_f=[1] * p, mem_b=[0] * p, mem_w=[-1] * p, max_mem=[limit] * p,
                                    cost_f=[float(f)] * p, cost_b=[float(b)] * p, cost_w=[float(w)] * p, cost_comm=float(comm), n_stages=p,
                                    n_micro=m)
            graph = zb.Graph.build_graph(p, m, config)
            _, order, end = zb.initial_solution(graph, print_result=False)
            stages, ends, peaks = [], [], []
            for s in range(p):
                ids = sorted((graph.get_id(k, s, i) for k in range(3) for i in range(m)), key=lambda i: order[i])
                stages.append([_label("FBW"[i // (p * m)], i % m, s) for i in ids])
                ends.append([end[i] for i in ids])
                live = peak = 0
                for i in ids:  # their own memory entries, summed in their order
                    live += graph.get_mem(i)
                    peak = max(peak, live)
                peaks.append(peak)
            cases[f"zb {p} {m} {f} {b} {w} {comm}"] = {"ops": stages, "end": ends, "peak": peaks, "limit": limit}
        return cases


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    OUT.write_text(json.dumps({"deepseek": record_dualpipe(sys.argv[1]),
                               "zero-bubble": record_zero_bubble(sys.argv[2])}, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}")
