"""Schedule generators: pure functions of (p, m[, v]) that return a :class:`~ppedu.ops.Schedule`."""

from __future__ import annotations

from collections.abc import Callable

from ppedu.ops import Schedule
from ppedu.schedules.dualpipe import dualpipe, dualpipe_v
from ppedu.schedules.gpipe import gpipe
from ppedu.schedules.interleaved import interleaved_1f1b
from ppedu.schedules.one_f_one_b import one_f_one_b
from ppedu.schedules.zero_bubble import zero_bubble_h1
from ppedu.validate import one_of

#: The course's names for the schedules (as the CLI spells them).
SCHEDULES: dict[str, Callable[..., Schedule]] = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved": interleaved_1f1b,
    "zb-h1": zero_bubble_h1,
    "dualpipe": dualpipe,
    "dualpipe-v": dualpipe_v,
}


def build(name: str, p: int, m: int, v: int = 1) -> Schedule:
    """Build a schedule by its course name; ``v`` matters only for ``interleaved``.

    >>> build("1f1b", 4, 8).name
    '1f1b'
    """
    one_of("schedule", name, SCHEDULES)
    if name == "interleaved":
        return interleaved_1f1b(p, m, v)
    if v != 1:
        raise ValueError(f"v (chunks per stage) applies only to interleaved (got v={v} for {name})")
    return SCHEDULES[name](p, m)


__all__ = ["SCHEDULES", "build", "dualpipe", "dualpipe_v", "gpipe", "interleaved_1f1b", "one_f_one_b", "zero_bubble_h1"]
