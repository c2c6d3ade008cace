"""The communication price of interleaving: the hand-over latency, or the link bandwidth, past
which interleaved 1F1B stops beating 1F1B."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ppedu.cluster.costing import costs_for
from ppedu.cluster.hardware import LINKS, Cluster, Link, Model
from ppedu.costs import Costs
from ppedu.schedules import interleaved_1f1b, one_f_one_b
from ppedu.simulate import simulate

def interleaving_break_even(p: int, m: int, costs: Costs, v: int = 2, chunk_costs: Costs | None = None) -> float:
    """The hand-over latency at which interleaved 1F1B (``v`` chunks per GPU) stops beating 1F1B.

    ``costs`` are per stage; interleaving pays ``chunk_costs`` per chunk (default
    ``costs.per_chunk(v)``); both get the same latency for every hand-over. Interleaving shrinks
    the bubble's time ``v``-fold but hands over ``(pv − 1)/(p − 1)`` times as often (``v`` and more: chapter 4b), so
    past this latency it loses.
    0 if it never wins (one GPU has no bubble to shrink), ``inf`` if it always does. Found by
    bisection.

    >>> round(interleaving_break_even(4, 8, Costs(f=1, b=2)), 3)
    1.375
    """
    plain, inter = one_f_one_b(p, m), interleaved_1f1b(p, m, v)
    chunked = chunk_costs or costs.per_chunk(v)

    def gap(latency: float) -> float:
        return (simulate(inter, replace(chunked, comm=latency)).makespan
                - simulate(plain, replace(costs, comm=latency)).makespan)

    if gap(0.0) >= 0:
        return 0.0
    low, high = 0.0, max(costs.forward(s) + costs.backward(s, True) for s in range(p)) or 1.0
    for _ in range(64):
        if gap(high) >= 0:
            break
        low, high = high, 2 * high
    else:
        return math.inf
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    return high


def break_even_bandwidth(model: Model, cluster: Cluster, m: int, v: int = 2, recompute: str = "selective") -> float:
    """The link bandwidth (bytes/s, at ``cluster.link``'s latency) below which interleaving ``v``
    ways no longer pays for ``model`` on ``cluster``: 0 if interleaving always pays, ``inf`` if
    it never does."""
    p = cluster.gpus
    costs, _ = costs_for(model, cluster, one_f_one_b(p, m), recompute)
    chunked, _ = costs_for(model, cluster, interleaved_1f1b(p, m, v), recompute)
    latency = interleaving_break_even(p, m, _by_stage(costs, p), v, chunked)
    extra = latency - cluster.link.latency
    if math.isinf(latency):
        return 0.0
    return model.hand_over_bytes / extra if extra > 0 else math.inf  # inf: no bandwidth is enough


def _by_stage(costs: Costs, p: int) -> Costs:
    """One-chunk-per-stage costs given per chunk, as a plain per-stage tuple."""
    return Costs(f=tuple(costs.forward(s, s) for s in range(p)), b=tuple(costs.backward(s, False, s) for s in range(p)),
                 w=tuple(costs.weight(s, s) for s in range(p)), comm=costs.comm)


def interleaving_by_link(model: Model, cluster: Cluster, m: int, v: int = 2, links: Sequence[Link] | None = None,
                         recompute: str = "selective") -> list[tuple[Link, float, float]]:
    """For each link (default: every preset), the step times of 1F1B and of interleaved 1F1B with
    ``v`` chunks per GPU when every hand-over crosses that link: where the second stops being
    smaller, interleaving stops paying."""
    out = []
    for link in links or list(LINKS.values()):
        c = replace(cluster, link=link, node_size=None, between_nodes=None)
        times = []
        for schedule in (one_f_one_b(c.gpus, m), interleaved_1f1b(c.gpus, m, v)):
            times.append(simulate(schedule, costs_for(model, c, schedule, recompute)[0]).makespan)
        out.append((link, times[0], times[1]))
    return out
