"""The vendor brief's remaining figures — "up to 45 % idle" for naive schedules and "3.4×
throughput vs a single-node baseline" — and the pipelines for which they could hold.

Under equal costs and free hand-overs a pipeline of ``p`` GPUs runs ``p × utilization`` times as
fast as one GPU holding the whole model (the same work, spread over ``p`` GPUs, minus the
bubble); utilization is ``1 − (p−1)/(v·m+p−1)``. Each figure is compared at its printed
precision, and every match is the simulator's, not only the formula's.

>>> [(r.p, r.m) for r in idle_matches(0.45, range(2, 12))]
[(10, 11)]
>>> naive_idle(2)
0.5
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ppedu.costs import Costs
from ppedu.errata import Claim
from ppedu.formulas import bubble_ratio
from ppedu.lesson import Table
from ppedu.schedules import build
from ppedu.simulate import simulate


@dataclass(frozen=True)
class Match:
    """A pipeline (``v`` = 1: GPipe or 1F1B; ``v`` > 1: interleaved) and what it achieves."""

    p: int
    m: int
    v: int
    idle_total: float
    utilization: float
    speedup: float


def _simulated(p: int, m: int, v: int) -> Match:
    s = build("interleaved" if v > 1 else "1f1b", p, m, v)
    t = simulate(s, Costs(f=1, b=2).per_chunk(v))
    return Match(p, m, v, round(t.bubble_ratio, 4), round(t.utilization, 4), round(p * t.utilization, 3))


def naive_idle(p: int) -> float:
    """Idle/total of a naive pipeline (one micro-batch, no micro-batching) on ``p`` GPUs: ``(p−1)/p``,
    never below one half for ``p ≥ 2``."""
    return simulate(build("gpipe", p, 1), Costs(f=1, b=2)).bubble_ratio


def idle_matches(idle: float = 0.45, p_values: Iterable[int] = range(2, 65), m_max: int = 256) -> Table[Match]:
    """Every GPipe/1F1B pipeline whose idle/total rounds to ``idle`` at 0.1 %."""
    rows = [_simulated(p, m, 1) for p in p_values for m in range(1, m_max + 1)
            if round(bubble_ratio(p, m) * 100, 1) == round(idle * 100, 1)]
    return Table(tuple(r for r in rows if round(r.idle_total * 100, 1) == round(idle * 100, 1)))


def speedup_matches(speedup: float = 3.4, p_values: Iterable[int] = range(2, 65), vs: Iterable[int] = (1, 2),
                    m_max: int = 256) -> Table[Match]:
    """Every pipeline (``v`` chunks per GPU; for ``v > 1`` ``m`` a multiple of ``p``) whose
    ``p × utilization`` rounds to ``speedup`` at one decimal, as the brief prints it.

    >>> [(r.p, r.m, r.v) for r in speedup_matches(3.4, (4,), (1, 2))][:3]
    [(4, 16, 1), (4, 17, 1), (4, 18, 1)]
    """
    rows = []
    for v in vs:
        for p in p_values:
            for m in range(p if v > 1 else 1, m_max + 1, p if v > 1 else 1):
                if round(p * (1 - bubble_ratio(p, m, v)), 1) == speedup:
                    row = _simulated(p, m, v)
                    if round(row.speedup, 1) == speedup:
                        rows.append(row)
    return Table(tuple(rows))


def both_at_once(speedup: float = 3.4, utilization: float = 0.942) -> float:
    """The number of GPUs the two figures imply together, ``speedup / utilization``: a whole
    number if one equal-cost pipeline could show both.

    >>> round(both_at_once(), 2)
    3.61
    """
    return speedup / utilization


def claims() -> Table[Claim]:
    """The brief's two remaining figures as claims beside ppedu's, each with a verdict.

    >>> [c.holds for c in claims()]
    [False, False]
    """
    naive = [naive_idle(p) for p in range(2, 65)]
    both = both_at_once()
    return Table((
        Claim("brief", "naive pipeline schedules waste up to 45 % of cluster compute", "≤ 45%",
              f"a naive pipeline idles {min(naive):.0%} (p = 2) to {max(naive):.0%} (p = 64)",
              max(naive) <= 0.45),
        Claim("brief", "3.4× throughput vs one node at 94.2 % utilization", "3.4× at 94.2%",
              f"needs p = 3.4 / 0.942 = {both:.2f} GPUs", float(both).is_integer()),
    ))
