"""Small computations the chapters ask of a schedule beyond the simulator's own metrics."""

from __future__ import annotations

from dataclasses import replace

from ppedu.costs import Costs
from ppedu.ops import Schedule
from ppedu.schedules import interleaved_1f1b, one_f_one_b
from ppedu.simulate import simulate


def hand_overs(schedule: Schedule) -> int:
    """How many operations take their input from another GPU (each one an activation or a
    gradient sent over a link): ``2·m·(p·v - 1)`` for interleaved 1F1B, ``2·m·(p - 1)`` for 1F1B.

    >>> hand_overs(one_f_one_b(4, 8)), hand_overs(interleaved_1f1b(4, 8, 2))
    (48, 112)
    """
    last = schedule.chunks - 1
    count = 0
    for ops in schedule.stages:
        for kind, _, c, d in ops:
            if kind == "F" and c > 0:
                source = c - 1
            elif kind == "B" and c < last:
                source = c + 1
            else:
                continue
            count += schedule.placement[d][source] != schedule.placement[d][c]
    return count


def break_even_comm(p: int, m: int, v: int, costs: Costs, tolerance: float = 1e-6) -> float:
    """The hand-over latency from which interleaved 1F1B (``v`` chunks per GPU, each ``1/v`` of
    ``costs``) is no faster than plain 1F1B on the same model: below it interleaving pays.

    >>> round(break_even_comm(4, 8, 2, Costs(f=1, b=1)), 3)
    1.0
    """
    if v < 2:
        raise ValueError(f"interleaving needs v ≥ 2 chunks per GPU (got v={v})")
    plain, inter = one_f_one_b(p, m), interleaved_1f1b(p, m, v)
    per_chunk = costs.per_chunk(v)

    def gain(comm: float) -> float:
        return simulate(plain, replace(costs, comm=comm)).makespan - simulate(inter, replace(per_chunk, comm=comm)).makespan

    if gain(0.0) <= 0:
        return 0.0
    low, high = 0.0, max(tolerance, costs.forward(0) + costs.backward(0, full=True))
    while gain(high) > 0:
        low, high = high, high * 2
        if high > 1e9:
            raise ValueError("interleaving stays faster at every latency tried (up to 1e9)")
    while high - low > tolerance:
        mid = (low + high) / 2
        low, high = (mid, high) if gain(mid) > 0 else (low, mid)
    return high
