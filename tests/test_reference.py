"""Cross-check against PyTorch's own schedule orders (torch.distributed.pipelining)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppedu import Costs, Op, simulate
from ppedu.memory import FREE_AT_B
from ppedu.ops import Schedule
from ppedu.reference import (ONE_STAGE_PER_RANK, RECORDED, RECORDED_CASES, TORCH_NAMES, differences, peaks_in_order, pytorch_actions,
                             torch_orders, torch_overlapped, w_differences)
from ppedu.schedules import RULES, VIRTUAL, build, dualpipe, dualpipe_v, interleaved_1f1b, one_f_one_b, zero_bubble_h2

CASES = [(2, 4), (4, 8), (3, 9), (4, 12), (8, 32)]


@pytest.mark.parametrize("name,v", [("gpipe", 1), ("interleaved", 2), ("interleaved", 3), ("dualpipe-v", 2)])
@pytest.mark.parametrize("p,m", CASES)
def test_orders_match_pytorch(name, v, p, m):
    ours = build(name, p, m, v if name == "interleaved" else 1)
    assert ours.chunks == p * v
    assert differences(ours.stages, torch_orders(name, p, m, v)) == []


@pytest.mark.parametrize("p,m", CASES)
def test_dualpipe_v_overlaps_the_same_pairs_as_pytorch(p, m):
    ours = dualpipe_v(p, m).overlapped
    assert ours and ours == torch_overlapped("dualpipe-v", p, m, 2)


@pytest.mark.parametrize("p,m", CASES)
def test_1f1b_matches_pytorch_except_its_last_rank_bug(p, m):
    # torch 2.13's Schedule1F1B lists, on the last rank, forwards of micro-batches 1…m and none of 0.
    ours, theirs = one_f_one_b(p, m).stages, torch_orders("1f1b", p, m)
    assert differences(ours, theirs) == [f"GPU {p - 1}, position 0: ours F0c{p - 1}, reference F1c{p - 1}"]
    forwards = [op.microbatch for op in theirs[-1] if op.kind == "F"]
    assert forwards == list(range(1, m + 1))
    assert differences(ours[:-1], theirs[:-1]) == []


def test_pytorchs_1f1b_order_fails_ppedus_validation():
    theirs = torch_orders("1f1b", 4, 8)
    schedule = one_f_one_b(4, 8)
    broken = type(schedule)(theirs, "torch-1f1b", schedule.placement, 8)
    with pytest.raises(ValueError, match="operation F0c3 is missing"):
        simulate(broken)


def test_differences_reports_each_rank_that_parts():
    a = ((Op("F", 0, 0), Op("B", 0, 0)), (Op("F", 0, 1),))
    b = ((Op("F", 0, 0),), (Op("F", 0, 1),))
    assert differences(a, b) == ["GPU 0, position 1: ours B0c0, reference (end)"]
    assert differences(a, a) == []


def test_every_torch_schedule_name_is_known_to_pytorch():
    from torch.distributed.pipelining.schedules import get_schedule_class

    for torch_name in TORCH_NAMES.values():
        assert get_schedule_class(ONE_STAGE_PER_RANK.get(torch_name, torch_name)) is not None


@pytest.mark.parametrize("name", ["interleaved", "interleaved-zb"])
@pytest.mark.parametrize("p,m,v", [(4, 2, 2), (4, 3, 2), (8, 5, 2), (4, 10, 2), (4, 6, 3), (2, 8, 2), (3, 9, 4)])
def test_flexible_interleaving_matches_pytorch_for_any_m_it_accepts(name, p, m, v):
    # m < p (one round of m) and m not a multiple of p (m // p rounds); ppedu's default group
    # (Megatron's smallest valid one) is PyTorch's round wherever PyTorch accepts m.
    assert m % max(1, m // p) == 0
    ours = build(name, p, m, v)
    assert differences(ours.stages, torch_orders(name, p, m, v)) == []


@pytest.mark.parametrize("name,v", [("zb-v", 2), ("looped-bfs", 2), ("looped-bfs", 3), ("interleaved-zb", 2)])
@pytest.mark.parametrize("p,m", CASES + [(4, 16), (4, 3)])
def test_new_schedules_match_pytorch(name, v, p, m):
    ours = build(name, p, m, v if name in VIRTUAL else 1)
    assert differences(ours.stages, torch_orders(name, p, m, v)) == []


def test_interleaving_follows_megatrons_own_worked_example():
    # Megatron-LM's schedule-table docstring: PP 2, 5 micro-batches in groups of 3, VP 2; rank 0
    # warms up with 5 forwards, then runs chunks in the order 1 1 1 2 2 2 -2 1 -2 1 -2 2 -1 2 -1 -1 -2 -2 -1 -1
    # (chunk k forward as k, backward as -k).
    ours = interleaved_1f1b(2, 5, v=2, group=3).stages[0]
    assert [(op.chunk // 2 + 1) * (1 if op.kind == "F" else -1) for op in ours] == [
        1, 1, 1, 2, 2, 2, -2, 1, -2, 1, -2, 2, -1, 2, -1, -1, -2, -2, -1, -1]
    assert [op.microbatch for op in ours if op.kind == "F"] == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]


def test_pytorchs_1f1b_loop_runs_f0_on_its_last_rank_although_its_listed_order_skips_it(tmp_path):
    # One process is a one-stage pipeline: its only rank is the last one, where the listed order is off by one.
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    m = 4
    listed = [op.microbatch for op in torch_orders("1f1b", 1, m)[0] if op.kind == "F"]
    assert listed == [1, 2, 3, 4]  # no F0, and an F4 of a micro-batch that does not exist
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        stage = PipelineStage(torch.nn.Linear(2, 2), 0, 1, torch.device("cpu"))
        ran: list[int] = []
        forward = stage.forward_one_chunk
        stage.forward_one_chunk = lambda index, *args, **kwargs: (ran.append(index), forward(index, *args, **kwargs))[1]
        Schedule1F1B(stage, m, loss_fn=lambda out, y: ((out - y) ** 2).mean()).step(torch.randn(8, 2), target=torch.randn(8, 2))
    finally:
        dist.destroy_process_group()
    assert ran == [0, 1, 2, 3]


def test_the_recorded_orders_are_pytorchs_own():
    """A light install (no torch) reads chapter 5's orders from the recording: it must be what torch lists."""
    recorded = json.loads(RECORDED.read_text())
    assert set(recorded) == {f"{n} {p} {m} {v}" for n, p, m, v in RECORDED_CASES}
    for name, p, m, v in RECORDED_CASES:
        assert recorded[f"{name} {p} {m} {v}"] == pytorch_actions(name, p, m, v)


def test_without_torch_the_recorded_orders_answer_and_others_say_what_is_missing(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nclass NoTorch:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n")
    script = ("from ppedu import schedules\nfrom ppedu.reference import differences, torch_orders\n"
              "print(differences(schedules.interleaved_1f1b(4, 8, 2).stages, torch_orders('interleaved', 4, 8, 2)))\n"
              "print(differences(schedules.one_f_one_b(4, 8).stages, torch_orders('1f1b', 4, 8)))\n"
              "import sys; assert 'torch' not in sys.modules\n"
              "try:\n    torch_orders('gpipe', 4, 4)\nexcept ModuleNotFoundError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0] == "[]", done.stdout + done.stderr
    assert lines[1] == "['GPU 3, position 0: ours F0c3, reference F1c3']"  # torch 2.13's listing error, recorded too
    assert "needs torch, which is not installed here" in lines[2]


# W placement and memory: every zero-bubble family against a reference nobody here wrote. PyTorch's orders are read
# live; DeepSeek's loop and the zero-bubble authors' generator cannot be installed, so their output is recorded
# (tests/references/record.py runs their code).
THIRD_PARTY = json.loads((Path(__file__).parent / "references" / "third_party.json").read_text())
TORCH_ZB = ["zb-h1", "interleaved-zb", "zb-v", "dualpipe-v"]


def _ops(rows):
    return tuple(tuple(Op.parse(label) for label in row) for row in rows)


def _chunks(name: str) -> int:
    """Stages per rank in PyTorch's form of the zero-bubble schedule ``name``."""
    return 1 if name == "zb-h1" else 2


def disagreements(ours: Schedule, theirs) -> list[str]:
    """Everything the reference checks hold a zero-bubble schedule to: each rank's order, where each W sits among
    the F's and B's, and each stage's peak of chunk-activations (the simulator's, against a count along the
    reference's own order)."""
    peaks, reference = simulate(ours).peak_activations, peaks_in_order(theirs)
    return differences(ours.stages, theirs) + w_differences(ours.stages, theirs) + (
        [f"peak activations per stage: ours {peaks}, reference {reference}"] if peaks != reference else [])


@pytest.mark.parametrize("name", TORCH_ZB)
@pytest.mark.parametrize("p,m", CASES + [(4, 16), (4, 3), (5, 7)])
def test_zero_bubble_schedules_place_every_w_and_peak_as_pytorchs_do(name, p, m):
    if not RULES[name].accepts(p, m):
        pytest.skip(f"{name} does not run at p={p}, m={m}")
    assert disagreements(build(name, p, m, 2 if name in VIRTUAL else 1), torch_orders(name, p, m, _chunks(name))) == []


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 3), (8, 32)])
def test_pytorchs_zero_bubble_schedule_on_one_stage_per_rank_is_zb_h1(p, m):
    ours = build("zb-h1", p, m)
    assert ours.stages == torch_orders("zb-h1", p, m)
    assert simulate(ours).peak_activations == (min(p, m),) * p  # as 1F1B, the paper's p micro-batches
    assert simulate(ours, memory=FREE_AT_B).peak_activations == tuple(min(p - j, m) for j in range(p))


@pytest.mark.parametrize("key", sorted(THIRD_PARTY["deepseek"]))
def test_dualpipe_runs_deepseeks_own_loop_op_for_op(key):
    """DeepSeek's DualPipe and DualPipeV step loops, run with recorders for compute and communication: the same
    ops on every rank, split W's at the same places, the same overlapped pairs, the same peaks (p + 1 stages'
    activations for DualPipe, DeepSeek's table)."""
    name, p, m = key.split()
    p, m = int(p), int(m)
    ours = (dualpipe if name == "DualPipe" else dualpipe_v)(p, m)
    theirs = _ops(THIRD_PARTY["deepseek"][key]["ops"])
    assert disagreements(ours, theirs) == []
    assert ours.overlapped == frozenset(Op.parse(label) for label in THIRD_PARTY["deepseek"][key]["overlapped"])
    if name == "DualPipe":
        assert simulate(ours).peak_activations == (p + 1,) * p


@pytest.mark.parametrize("key", sorted(THIRD_PARTY["zero-bubble"]))
def test_zb_h2_holds_what_the_zero_bubble_authors_generator_holds_at_2p_minus_1(key):
    """The authors' generator (zb.py) limited to 2p-1 micro-batches, W freeing them: ppedu's simulator gives its
    order the end times the generator computed; ppedu's ZB-H2 (the paper's handcrafted order, W's in the steady
    state) holds the same peak on every stage, 2p-1 (the paper's figure), and keeps every stage busy as long, from
    its first op to its last, on the same makespan — at the paper's equal costs and at 5:6:4 with communication.
    Their orders differ where the generator's greedy defers a W a little longer."""
    case = THIRD_PARTY["zero-bubble"][key]
    _, p, m, f, b, w, comm = key.split()
    p, m = int(p), int(m)
    costs = Costs(f=float(f), b=float(b), w=float(w), comm=float(comm))
    theirs = Schedule(_ops(case["ops"]), "zb.py", (tuple(range(p)),), m)
    replayed = simulate(theirs, costs)
    assert list(replayed.end) == [e for row in case["end"] for e in row]
    assert tuple(case["peak"]) == peaks_in_order(theirs.stages) == replayed.peak_activations
    ours = simulate(zero_bubble_h2(p, m), costs)
    assert ours.peak_activations == tuple(case["peak"]) == (min(m, 2 * p - 1),) * p
    assert ours.makespan == replayed.makespan
    span = [lambda t, j=j: max(e.end for e in t.on_stage(j)) - min(e.start for e in t.on_stage(j)) for j in range(p)]
    assert [s(ours) for s in span] == [s(replayed) for s in span]


def _perturbed(schedule: Schedule, rank: int, i: int, change: str) -> Schedule:
    """``schedule`` with the W at position ``i`` of ``rank`` moved to the rank's end, or swapped with the op after."""
    ops = list(schedule.stages[rank])
    if change == "move":
        ops.append(ops.pop(i))
    else:
        ops[i], ops[i + 1] = ops[i + 1], ops[i]
    stages = schedule.stages[:rank] + (tuple(ops),) + schedule.stages[rank + 1:]
    return Schedule(stages, schedule.name, schedule.placement, schedule.microbatches, schedule.virtual, schedule.overlapped)


@pytest.mark.parametrize("name", TORCH_ZB + ["dualpipe", "zb-h2"])
def test_every_moved_or_swapped_w_fails_the_reference_checks(name):
    """The checks can fail: on each zero-bubble family, moving any W that has an F after it to the end of its rank,
    or swapping it with the op that follows, is caught as a W out of place, and some such move as a higher peak."""
    p, m = 4, 8
    ours = build(name, p, m, 2 if name in VIRTUAL else 1)
    if name == "dualpipe":
        theirs = _ops(THIRD_PARTY["deepseek"][f"DualPipe {p} {m}"]["ops"])
    elif name == "zb-h2":
        theirs = ours.stages  # the authors' generator orders differently: hold ZB-H2 to its own peak, 2p-1
    else:
        theirs = torch_orders(name, p, m, _chunks(name))
    assert disagreements(ours, theirs) == []
    raised = 0
    for rank, ops in enumerate(ours.stages):
        for i, op in enumerate(ops):
            later = ops[i + 1:]
            if op.kind != "W" or "F" not in {x.kind for x in later}:
                continue
            for change in ("move", "swap"):
                if change == "swap" and (later[0].kind == "W" or later[0] in ours.overlapped):
                    continue
                broken = _perturbed(ours, rank, i, change)
                found = disagreements(broken, theirs)
                assert any(line.startswith(f"GPU {rank}: {op!r} follows") for line in found), (change, op, found)
                raised += any(line.startswith("peak") for line in found)
    assert raised > 0
