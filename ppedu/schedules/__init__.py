"""Schedule generators: pure functions of (p, m[, v]) that return a :class:`~ppedu.ops.Schedule`."""

from __future__ import annotations

from collections.abc import Callable

from ppedu.ops import Schedule
from ppedu.schedules.chimera import chimera
from ppedu.schedules.dualpipe import dualpipe, dualpipe_v
from ppedu.schedules.gpipe import gpipe
from ppedu.schedules.interleaved import interleaved_1f1b
from ppedu.schedules.looped_bfs import looped_bfs
from ppedu.schedules.one_f_one_b import one_f_one_b
from ppedu.schedules.zero_bubble import interleaved_zero_bubble, zero_bubble_h1, zero_bubble_h2, zero_bubble_v
from ppedu.validate import one_of

#: The course's names for the schedules (as the CLI spells them).
SCHEDULES: dict[str, Callable[..., Schedule]] = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved": interleaved_1f1b,
    "zb-h1": zero_bubble_h1,
    "zb-h2": zero_bubble_h2,
    "interleaved-zb": interleaved_zero_bubble,
    "looped-bfs": looped_bfs,
    "zb-v": zero_bubble_v,
    "dualpipe": dualpipe,
    "dualpipe-v": dualpipe_v,
    "chimera": chimera,
}

#: The schedules that cut each stage into ``v`` chunks of the caller's choosing (the V-shaped
#: ones always use two).
VIRTUAL = frozenset({"interleaved", "interleaved-zb", "looped-bfs"})
#: The schedules that take Megatron's micro-batch group size.
GROUPED = frozenset({"interleaved", "interleaved-zb"})


def build(name: str, p: int, m: int, v: int = 1, group: int | None = None) -> Schedule:
    """Build a schedule by its course name; ``v`` matters only for :data:`VIRTUAL` schedules and
    ``group`` only for :data:`GROUPED` ones.

    >>> build("1f1b", 4, 8).name
    '1f1b'
    >>> build("interleaved-zb", 4, 6, v=2).virtual
    2
    """
    one_of("schedule", name, SCHEDULES)
    if v != 1 and name not in VIRTUAL:
        raise ValueError(f"v (chunks per stage) applies only to {', '.join(sorted(VIRTUAL))} (got v={v} for {name})")
    if group is not None and name not in GROUPED:
        raise ValueError(f"group applies only to {', '.join(sorted(GROUPED))} (got group={group} for {name})")
    if name in GROUPED:
        return SCHEDULES[name](p, m, v, group)
    return SCHEDULES[name](p, m, v) if name in VIRTUAL else SCHEDULES[name](p, m)


__all__ = ["GROUPED", "SCHEDULES", "VIRTUAL", "build", "chimera", "dualpipe", "dualpipe_v", "gpipe",
           "interleaved_1f1b", "interleaved_zero_bubble", "looped_bfs", "one_f_one_b", "zero_bubble_h1",
           "zero_bubble_h2", "zero_bubble_v"]
