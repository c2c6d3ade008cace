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
from collections.abc import Iterator
from pathlib import Path

from ppedu.export import torch_actions
from ppedu.ops import Kind, Op, Schedule

#: Course name → PyTorch's schedule name, for the schedules both have.
TORCH_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved1F1B", "interleaved-zb": "InterleavedZeroBubble",
               "looped-bfs": "LoopedBFS", "zb-v": "ZBVZeroBubble", "dualpipe-v": "DualPipeV"}


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
        ranks = get_schedule_ops(torch_name, p, m, num_stages_per_rank=v)
    return [[None if a is None else str(a) for a in rank] for rank in ranks]


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


def to_torch_actions(schedule: Schedule) -> dict[int, list]:
    """A ppedu schedule as PyTorch's per-rank compute actions (F, B or I, W), to feed its tools.

    Only single-direction schedules translate: PyTorch names a chunk by its index alone.
    """
    from torch.distributed.pipelining.schedules import _Action

    return {rank: [_Action.from_str(a) for a in row] for rank, row in enumerate(torch_actions(schedule))}
