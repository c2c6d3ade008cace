"""PyTorch's own schedule orders (``torch.distributed.pipelining``), read without starting processes.

The course checks its schedules against these, and shows where a reference is itself wrong.
"""

from __future__ import annotations

import warnings
from functools import cache

from ppedu.export import torch_actions
from ppedu.ops import Kind, Op, Schedule

#: Course name → PyTorch's schedule name, for the schedules both have.
TORCH_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved1F1B", "interleaved-zb": "InterleavedZeroBubble",
               "looped-bfs": "LoopedBFS", "zb-v": "ZBVZeroBubble", "dualpipe-v": "DualPipeV"}


def torch_orders(name: str, p: int, m: int, v: int = 1) -> tuple[tuple[Op, ...], ...]:
    """Per rank, the compute operations PyTorch's schedule ``name`` runs, in order, as ``Op``\\s.

    ``name`` is a course name (see :data:`TORCH_NAMES`) or PyTorch's own. PyTorch's input-gradient
    action becomes ``B`` (the schedule then also has the ``W``); an overlapped forward-backward
    pair becomes its F followed by its B; spacing and communication actions are dropped.
    """
    return tuple(tuple(op for action in rank for op, _ in _expand(action)) for rank in _torch_ranks(name, p, m, v))


def torch_overlapped(name: str, p: int, m: int, v: int = 1) -> frozenset[Op]:
    """The backwards that PyTorch's schedule runs overlapped with a forward (``OVERLAP_F_B``)."""
    return frozenset(op for rank in _torch_ranks(name, p, m, v) for a in rank for op, paired in _expand(a) if paired)


def _torch_ranks(name: str, p: int, m: int, v: int) -> list[list]:
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_schedule_ops(TORCH_NAMES.get(name, name), p, m, num_stages_per_rank=v)


@cache
def _kinds() -> dict[object, Kind]:
    """PyTorch's compute action types → ppedu's kinds (built once, after torch is imported)."""
    from torch.distributed.pipelining.schedules import _ComputationType as T

    return {T.FORWARD: "F", T.FULL_BACKWARD: "B", T.BACKWARD_INPUT: "B", T.BACKWARD_WEIGHT: "W"}


def _expand(action, paired: bool = False):
    """(op, runs overlapped?) for each compute op in one PyTorch action."""
    from torch.distributed.pipelining.schedules import _ComputationType as T

    if action is None:
        return
    if action.computation_type == T.OVERLAP_F_B:
        for sub in action.sub_actions:
            yield from _expand(sub, paired=True)
    elif action.computation_type in _kinds():
        kind = _kinds()[action.computation_type]
        yield Op(kind, action.microbatch_index, action.stage_index), paired and kind == "B"


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


def to_torch_actions(schedule: Schedule) -> dict[int, list]:
    """A ppedu schedule as PyTorch's per-rank compute actions (F, B or I, W), to feed its tools.

    Only single-direction schedules translate: PyTorch names a chunk by its index alone.
    """
    from torch.distributed.pipelining.schedules import _Action

    return {rank: [_Action.from_str(a) for a in row] for rank, row in enumerate(torch_actions(schedule))}
