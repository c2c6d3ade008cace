"""The spacetime grid: one row per GPU, one column per time step, as the textbook draws it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

from functools import cached_property
from typing import Any

from ppedu.arrays import as_list, table
from ppedu.ops import Op
from ppedu.simulate import Timeline

IDLE = -1
_MAX_CELLS = 2_000_000


@dataclass(frozen=True)
class Grid:
    """``cells[s, t]`` is the index (into ``timeline.events``) of what GPU ``s`` runs in time step
    ``t``, or ``IDLE``; each step lasts ``dt`` time units. Row 0 is GPU 0 (drawn at the bottom).
    ``cells`` and the tables below are numpy arrays (a :class:`~ppedu.arrays.Table` where numpy is not installed).

    >>> from ppedu import schedules, simulate
    >>> g = grid(simulate(schedules.gpipe(4, 4)))
    >>> g.total_slots, g.busy_slots, g.idle_slots
    (56, 32, 24)
    """

    timeline: Timeline
    cells: Any
    dt: float

    @cached_property
    def rows(self) -> list[list[int]]:
        """``cells`` as plain lists, row by row."""
        return as_list(self.cells)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0]) if self.rows else 0

    @property
    def total_slots(self) -> int:
        p, steps = self.shape
        return p * steps

    @property
    def idle_slots(self) -> int:
        return sum(row.count(IDLE) for row in self.rows)

    @property
    def busy_slots(self) -> int:
        return self.total_slots - self.idle_slots

    @property
    def bubble_ratio(self) -> float:
        return self.idle_slots / self.total_slots if self.total_slots else 0.0

    @property
    def idle_mask(self) -> Any:
        return table([[c == IDLE for c in row] for row in self.rows], bool)

    def kinds(self) -> Any:
        """Per cell ``"F"``, ``"B"``, ``"W"`` or ``""`` (idle)."""
        return self._per_cell([e.op.kind for e in self.timeline.events])

    def labels(self) -> Any:
        """Per cell the op's short label (``F3``; ``F3c5`` when a GPU holds several chunks;
        a trailing ``'`` for DualPipe's second direction), or ``""`` for an idle cell."""
        return self._per_cell([label(e.op, self.timeline) for e in self.timeline.events])

    def starts(self) -> Any:
        """True where a cell is the first step of its operation (not a continuation)."""
        return table([[c != IDLE and (t == 0 or c != row[t - 1]) for t, c in enumerate(row)] for row in self.rows], bool)

    def causes(self) -> list[list[str]]:
        """Per cell the cause of its idleness (:mod:`ppedu.idle`), or ``""`` where the GPU is busy.

        >>> from ppedu import schedules, simulate
        >>> grid(simulate(schedules.gpipe(2, 1))).causes()
        [['', 'fill', 'fill', ''], ['fill', '', '', 'drain']]
        """
        out = [["" for _ in row] for row in self.rows]
        for x in self.timeline.idle_causes():
            a, b = round(x.start / self.dt), round(x.end / self.dt)
            out[x.stage][a:b] = [x.cause] * (b - a)
        return out

    def _per_cell(self, per_event: list[str]) -> Any:
        per_event.append("")  # IDLE (-1) reads the last entry
        return table([[per_event[c] for c in row] for row in self.rows], str)


def grid(timeline: Timeline, dt: float | None = None) -> Grid:
    """Cut ``timeline`` into time steps of ``dt`` (by default the largest step that every
    start and end falls on: 1 under unit costs)."""
    times = {t for e in timeline.events for t in (e.start, e.end)}
    dt = dt or resolution(times)
    steps = round(timeline.makespan / dt)
    if timeline.p * steps > _MAX_CELLS:
        raise ValueError(f"a grid of {timeline.p}×{steps} cells is too large to draw; pass a larger dt")
    cells = [[IDLE] * steps for _ in range(timeline.p)]
    for i, e in enumerate(timeline.events):
        a, b = round(e.start / dt), round(e.end / dt)
        cells[e.stage][a:b] = [i] * (b - a)
    return Grid(timeline, table(cells, int), dt)


def label(op: Op, timeline: Timeline) -> str:
    return op.label(chunk=timeline.schedule.chunks > timeline.schedule.p)


def resolution(times: set[float]) -> float:
    """The largest step that every one of ``times`` falls on (1 for whole steps; at most a thousandth).

    >>> resolution({0.0, 0.5, 1.25}), resolution({2.0, 3.0})
    (0.25, 1.0)
    """
    fractions = [Fraction(t).limit_denominator(1000) for t in times if t > 0]
    if not fractions:
        return 1.0
    denominator = lcm(*(f.denominator for f in fractions))
    return gcd(*(int(f * denominator) for f in fractions)) / denominator
