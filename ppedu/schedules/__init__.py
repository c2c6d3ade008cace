"""Schedule generators: pure functions of (p, m[, v]) that return a :class:`~ppedu.ops.Schedule`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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

#: How the course writes each schedule's name in prose and tables.
NAMES: dict[str, str] = {
    "gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved", "zb-h1": "ZB-H1", "zb-h2": "ZB-H2",
    "interleaved-zb": "interleaved ZB", "looped-bfs": "looped BFS", "zb-v": "ZB-V", "dualpipe": "DualPipe",
    "dualpipe-v": "DualPipeV", "chimera": "Chimera",
}


@dataclass(frozen=True)
class Rule:
    """Where a schedule runs and what it asks of the framework: ``text`` as the course states it,
    ``accepts(p, m)`` the builder's own rule on ``p`` and ``m`` (``tests/test_schedules.py`` holds the
    two to each other)."""

    text: str
    accepts: Callable[[int, int], bool]


def _any(p: int, m: int) -> bool:
    return True


def _even_pair(p: int, m: int) -> bool:
    return p % 2 == 0 and m % 2 == 0


RULES: dict[str, Rule] = {
    "gpipe": Rule("any p, m", _any),
    "1f1b": Rule("any p, m", _any),
    "interleaved": Rule("any p, m, v (the 2021 paper: m a multiple of p)", _any),
    "zb-h1": Rule("any p, m; W run apart from B", _any),
    "zb-h2": Rule("any p, m; W apart from B; no gap inside a GPU's run from m ≥ 2p−1", _any),
    "interleaved-zb": Rule("any p, m, v; W apart from B", _any),
    "looped-bfs": Rule("any p, m, v", _any),
    "zb-v": Rule("any p, m (its pattern is drawn for m ≥ 2p−1); W apart from B", _any),
    "dualpipe": Rule("p even, m even, m ≥ 2p; W apart from B", lambda p, m: _even_pair(p, m) and m >= 2 * p),
    "dualpipe-v": Rule("m ≥ 2p; W apart from B", lambda p, m: m >= 2 * p),
    "chimera": Rule("p even, m even; its two replicas all-reduce their gradients", _even_pair),
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


__all__ = ["GROUPED", "NAMES", "RULES", "SCHEDULES", "VIRTUAL", "Rule", "build", "chimera", "dualpipe", "dualpipe_v", "gpipe",
           "interleaved_1f1b", "interleaved_zero_bubble", "looped_bfs", "one_f_one_b", "zero_bubble_h1",
           "zero_bubble_h2", "zero_bubble_v"]
