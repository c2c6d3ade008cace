"""The closed forms the course teaches, to set beside what the simulator measures.

Two definitions of the bubble are in use: the textbook's idle slots ÷ total slots (``idle/total``)
and Megatron-LM's bubble time ÷ ideal compute time (``bubble/ideal``). With ``r`` the second,
the first is ``r / (1 + r)``.

>>> bubble_ratio(4, 4)
0.42857142857142855
>>> to_idle_total(bubble_over_ideal(4, 4))
0.42857142857142855
"""

from __future__ import annotations

from ppedu.validate import require_counts


def _idle_and_busy(p: int, m: int, v: int) -> tuple[int, int]:
    """``(idle, busy)`` per GPU, in pairs of a chunk's forward and backward under equal costs: a step
    takes ``v·max(m, p) + min(m, p) − 1`` of them, ``v·m`` busy."""
    require_counts(p=p, m=m, v=v)
    return v * max(m, p) + min(m, p) - 1 - v * m, v * m


def bubble_ratio(p: int, m: int, v: int = 1) -> float:
    """Idle ÷ total slots of GPipe and 1F1B (``v = 1``) or interleaved 1F1B, equal per-chunk costs:
    ``(p-1) / (v·m + p-1)`` for ``m ≥ p`` (any ``m`` when ``v = 1``). With fewer micro-batches than
    GPUs, interleaving waits for each round's micro-batches to come back: ``(v(p-m) + m-1) / (v·p + m-1)``.

    >>> bubble_ratio(4, 8, 2), bubble_ratio(4, 2, 2)
    (0.15789473684210525, 0.5555555555555556)
    """
    idle, busy = _idle_and_busy(p, m, v)
    return idle / (idle + busy)


def bubble_over_ideal(p: int, m: int, v: int = 1) -> float:
    """Bubble time ÷ ideal time, as Megatron-LM states it: ``(p-1) / (v·m)`` for ``m ≥ p``."""
    idle, busy = _idle_and_busy(p, m, v)
    return idle / busy


def to_idle_total(r: float) -> float:
    """Convert a bubble/ideal figure into idle/total: ``r / (1 + r)``."""
    return r / (1 + r)


def to_bubble_over_ideal(x: float) -> float:
    """Convert an idle/total figure into bubble/ideal: ``x / (1 - x)``."""
    if not 0 <= x < 1:
        raise ValueError(f"an idle/total ratio lies in [0, 1) (got {x})")
    return x / (1 - x)


def microbatches_for(target: float, p: int, v: int = 1) -> int:
    """The fewest micro-batches whose idle/total bubble is at most ``target`` (interleaved 1F1B
    for ``v > 1``, which runs any ``m`` as current Megatron-LM and PyTorch do).

    >>> microbatches_for(0.10, p=4)
    27
    >>> microbatches_for(0.10, p=4, v=2)
    14
    """
    require_counts(p=p, v=v)
    if not 0 < target < 1:
        raise ValueError(f"a target bubble ratio lies strictly between 0 and 1 (got {target})")
    # (p-1)/(v·m+p-1) ≤ target  ⟺  v·m ≥ (p-1)(1-target)/target, and below m = p the bubble is only
    # larger: start at that bound, then walk up to where the target is met.
    m = max(1, int((p - 1) * (1 - target) / target / v))
    while bubble_ratio(p, m, v) > target + 1e-12:  # a target met exactly counts as met
        m += 1
    return m
