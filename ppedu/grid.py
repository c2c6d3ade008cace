"""The spacetime grid: one row per GPU, one column per time step, as the textbook draws it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

import numpy as np

from ppedu.ops import Op
from ppedu.simulate import Timeline

IDLE = -1
_MAX_CELLS = 2_000_000


@dataclass(frozen=True)
class Grid:
    """``cells[s, t]`` is the index (into ``timeline.events``) of what GPU ``s`` runs in time step
    ``t``, or ``IDLE``; each step lasts ``dt`` time units. Row 0 is GPU 0 (drawn at the bottom).

    >>> from ppedu import schedules, simulate
    >>> g = grid(simulate(schedules.gpipe(4, 4)))
    >>> g.total_slots, g.busy_slots, g.idle_slots
    (56, 32, 24)
    """

    timeline: Timeline
    cells: np.ndarray
    dt: float

    @property
    def shape(self) -> tuple[int, int]:
        return self.cells.shape

    @property
    def total_slots(self) -> int:
        return int(self.cells.size)

    @property
    def idle_slots(self) -> int:
        return int((self.cells == IDLE).sum())

    @property
    def busy_slots(self) -> int:
        return self.total_slots - self.idle_slots

    @property
    def bubble_ratio(self) -> float:
        return self.idle_slots / self.total_slots if self.total_slots else 0.0

    @property
    def idle_mask(self) -> np.ndarray:
        return self.cells == IDLE

    def kinds(self) -> np.ndarray:
        """Per cell ``"F"``, ``"B"``, ``"W"`` or ``""`` (idle)."""
        table = np.array([e.op.kind for e in self.timeline.events] + [""], dtype=object)
        return table[self.cells]

    def labels(self) -> np.ndarray:
        """Per cell the op's short label (``F3``; ``F3c5`` when a GPU holds several chunks;
        a trailing ``'`` for DualPipe's second direction), or ``""`` for an idle cell."""
        table = np.array([label(e.op, self.timeline) for e in self.timeline.events] + [""], dtype=object)
        return table[self.cells]

    def starts(self) -> np.ndarray:
        """True where a cell is the first step of its operation (not a continuation)."""
        first = np.ones(self.cells.shape, dtype=bool)
        first[:, 1:] = self.cells[:, 1:] != self.cells[:, :-1]
        return first & (self.cells != IDLE)


def grid(timeline: Timeline, dt: float | None = None) -> Grid:
    """Cut ``timeline`` into time steps of ``dt`` (by default the largest step that every
    start and end falls on: 1 under unit costs)."""
    times = {t for e in timeline.events for t in (e.start, e.end)}
    dt = dt or _resolution(times)
    steps = round(timeline.makespan / dt)
    if timeline.p * steps > _MAX_CELLS:
        raise ValueError(f"a grid of {timeline.p}×{steps} cells is too large to draw; pass a larger dt")
    cells = np.full((timeline.p, steps), IDLE, dtype=np.int64)
    for i, e in enumerate(timeline.events):
        cells[e.stage, round(e.start / dt) : round(e.end / dt)] = i
    return Grid(timeline, cells, dt)


def label(op: Op, timeline: Timeline) -> str:
    return op.label(chunk=timeline.schedule.chunks > timeline.schedule.p)


def _resolution(times: set[float]) -> float:
    fractions = [Fraction(t).limit_denominator(1000) for t in times if t > 0]
    if not fractions:
        return 1.0
    denominator = lcm(*(f.denominator for f in fractions))
    return gcd(*(int(f * denominator) for f in fractions)) / denominator
