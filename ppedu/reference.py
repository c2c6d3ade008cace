"""PyTorch's own schedule orders (``torch.distributed.pipelining``), read without starting processes.

The course checks its schedules against these, and shows where a reference is itself wrong. Where torch is not
installed (a light install, chapters 1-6), the orders chapter 5 reads come from :data:`RECORDED`, PyTorch 2.13's
own output kept beside this module (``tests/test_reference.py`` checks it against the live torch).

>>> pytorch_actions("1f1b", 2, 2)[1]  # the last rank: torch 2.13 lists F1, F2 where it runs F0, F1
['1F1', '1B0', '1F2', '1B1', '1REDUCE_GRAD']
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ppedu.export import torch_actions
from ppedu.ops import Kind, Op, Schedule

#: Course name → PyTorch's schedule name, for the schedules both have.
TORCH_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved1F1B", "interleaved-zb": "InterleavedZeroBubble",
               "looped-bfs": "LoopedBFS", "zb-v": "ZBVZeroBubble", "dualpipe-v": "DualPipeV", "zb-h1": "ZBH1"}
#: PyTorch has no ZB-H1 of its own name: its ``ScheduleInterleavedZeroBubble`` built with one stage per rank is
#: ZB-H1 (warm-up ``p-1-j``, each W ``j`` backwards after its B). Its visualiser asks for two stages per rank or
#: more, so :func:`pytorch_actions` builds this one itself.
ONE_STAGE_PER_RANK = {"ZBH1": "InterleavedZeroBubble"}


#: PyTorch 2.13's orders for the cases chapter 5 reads, for an environment without torch: (name, p, m, v) → per rank,
#: each action's text (``None`` where the rank idles).
RECORDED = Path(__file__).with_name("reference_orders.json")
RECORDED_CASES = (("Interleaved1F1B", 4, 8, 2), ("1F1B", 4, 8, 1), ("ZBVZeroBubble", 4, 8, 2), ("1F1B", 2, 2, 1))
#: PyTorch's letter for each compute action; spacing and communication actions are not compute.
_KINDS: dict[str, Kind] = {"F": "F", "B": "B", "I": "B", "W": "W"}
_ACTION = re.compile(r"(\d+)([A-Z_]+?)(\d+)")
_OVERLAP = re.compile(r"\((.*)\)OVERLAP_F_B")


def torch_orders(name: str, p: int, m: int, v: int = 1) -> tuple[tuple[Op, ...], ...]:
    """Per rank, the compute operations PyTorch's schedule ``name`` runs, in order, as ``Op``\\s.

    ``name`` is a course name (see :data:`TORCH_NAMES`) or PyTorch's own. PyTorch's input-gradient
    action becomes ``B`` (the schedule then also has the ``W``); an overlapped forward-backward
    pair becomes its F followed by its B; spacing and communication actions are dropped.
    """
    return tuple(tuple(op for action in rank for op, _ in _expand(action)) for rank in pytorch_actions(name, p, m, v))


def torch_overlapped(name: str, p: int, m: int, v: int = 1) -> frozenset[Op]:
    """The backwards that PyTorch's schedule runs overlapped with a forward (``OVERLAP_F_B``)."""
    return frozenset(op for rank in pytorch_actions(name, p, m, v) for a in rank for op, paired in _expand(a) if paired)


def pytorch_actions(name: str, p: int, m: int, v: int = 1) -> list[list[str | None]]:
    """Per rank, PyTorch's own list of actions for its schedule ``name`` (what its visualiser reads), as PyTorch
    writes them: chunk, kind (``F``, ``B``, ``I`` for an input gradient, ``W``), micro-batch; ``None`` where the rank
    idles. Without torch, PyTorch 2.13's recorded list where :data:`RECORDED` has it."""
    torch_name = TORCH_NAMES.get(name, name)
    try:
        from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
    except ImportError:
        recorded = json.loads(RECORDED.read_text()).get(f"{torch_name} {p} {m} {v}")
        if recorded is None:
            raise ModuleNotFoundError(f"PyTorch's {torch_name} order at p={p}, m={m}, v={v} needs torch, which is not "
                                      "installed here (install the course without --light)", name="torch") from None
        return recorded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if torch_name in ONE_STAGE_PER_RANK:
            ranks = _one_stage_per_rank(ONE_STAGE_PER_RANK[torch_name], p, m)
        else:
            ranks = get_schedule_ops(torch_name, p, m, num_stages_per_rank=v)
    return [[None if a is None else str(a) for a in rank] for rank in ranks]


def _one_stage_per_rank(torch_name: str, p: int, m: int) -> list[list[Any]]:
    """PyTorch's multi-stage schedule ``torch_name`` built with one stage per rank, from stand-in stages (as its
    visualiser builds them): its own pipeline order, per rank."""
    from unittest import mock

    from torch.distributed.pipelining.schedules import get_schedule_class
    from torch.distributed.pipelining.stage import PipelineStage

    stage = mock.create_autospec(PipelineStage, instance=True)
    stage.group_rank, stage.group_size, stage.submod, stage.num_stages = 0, p, None, p
    order = get_schedule_class(torch_name)([stage], m).pipeline_order
    return [list(order[rank]) for rank in range(p)]


def record() -> None:
    """Write :data:`RECORDED` from the installed torch (``python -c "from ppedu.reference import record; record()"``)."""
    cases = {f"{n} {p} {m} {v}": pytorch_actions(n, p, m, v) for n, p, m, v in RECORDED_CASES}
    RECORDED.write_text(json.dumps(cases, separators=(",", ":")) + "\n")


def _expand(action: str | None, paired: bool = False) -> Iterator[tuple[Op, bool]]:
    """(op, runs overlapped?) for each compute op in one PyTorch action, read from its text."""
    if action is None:
        return
    if overlap := _OVERLAP.fullmatch(action):
        for sub in overlap.group(1).split(";"):
            yield from _expand(sub, paired=True)
    elif (match := _ACTION.fullmatch(action)) and match.group(2) in _KINDS:
        kind = _KINDS[match.group(2)]
        yield Op(kind, int(match.group(3)), int(match.group(1))), paired and kind == "B"


def differences(ours: tuple[tuple[Op, ...], ...], theirs: tuple[tuple[Op, ...], ...]) -> list[str]:
    """One line per rank whose order differs, naming the first position where they part.

    >>> differences(((Op("F", 0, 0),),), ((Op("F", 1, 0),),))
    ['GPU 0, position 0: ours F0c0, reference F1c0']
    """
    lines = []
    for rank, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            mine = repr(a[i]) if i < len(a) else "(end)"
            ref = repr(b[i]) if i < len(b) else "(end)"
            lines.append(f"GPU {rank}, position {i}: ours {mine}, reference {ref}")
    return lines


def w_differences(ours: Sequence[Sequence[Op]], theirs: Sequence[Sequence[Op]]) -> list[str]:
    """Where a weight-gradient pass sits differently: per rank, the first W that follows a different number of
    forwards and input-gradient backwards in the two orders (the W placement, apart from the F and B order).

    >>> F, B, W = (Op(k, 0, 0) for k in "FBW")
    >>> w_differences([[F, B, W, Op("F", 1, 0)]], [[F, B, Op("F", 1, 0), W]])
    ['GPU 0: W0c0 follows 1 F and 1 B here, 2 F and 1 B in the reference']
    """
    lines = []
    for rank, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        mine, ref = _w_places(a), _w_places(b)
        if mine != ref:
            w = next((w for w in sorted(set(mine) | set(ref)) if mine.get(w) != ref.get(w)))
            here = "{} F and {} B".format(*mine[w]) if w in mine else "nowhere"
            there = "{} F and {} B".format(*ref[w]) if w in ref else "nowhere"
            lines.append(f"GPU {rank}: {w!r} follows {here} here, {there} in the reference")
    return lines


def _w_places(ops: Sequence[Op]) -> dict[Op, tuple[int, int]]:
    """Each W of one rank's order → how many F's and B's run before it there."""
    seen = {"F": 0, "B": 0, "W": 0}
    places = {}
    for op in ops:
        if op.kind == "W":
            places[op] = (seen["F"], seen["B"])
        seen[op.kind] += 1
    return places


def peaks_in_order(stages: Sequence[Sequence[Op]]) -> tuple[int, ...]:
    """Per rank, the most chunk-activations alive at once, counted along the rank's own order: each F keeps one
    until the op that ends its backward, its W where the order splits one off, else its B. A count independent of
    the simulator, for holding ppedu's memory to a reference's order (W frees, :data:`~ppedu.memory.FREE_AT_W`).

    >>> F, B, W = (lambda i, k=k: Op(k, i, 0) for k in "FBW")
    >>> peaks_in_order([[F(0), F(1), B(0), W(0), B(1), W(1)]]), peaks_in_order([[F(0), B(0), F(1), B(1)]])
    ((2,), (1,))
    """
    split = {op[1:] for ops in stages for op in ops if op.kind == "W"}
    peaks = []
    for ops in stages:
        alive = peak = 0
        for op in ops:
            if op.kind == "F":
                alive += 1
                peak = max(peak, alive)
            elif (op.kind == "W") == (op[1:] in split):
                alive -= 1
        peaks.append(peak)
    return tuple(peaks)


def to_torch_actions(schedule: Schedule) -> dict[int, list]:
    """A ppedu schedule as PyTorch's per-rank compute actions (F, B or I, W), to feed its tools.

    Only single-direction schedules translate: PyTorch names a chunk by its index alone.
    """
    from torch.distributed.pipelining.schedules import _Action

    return {rank: [_Action.from_str(a) for a in row] for rank, row in enumerate(torch_actions(schedule))}
