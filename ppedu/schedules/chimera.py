"""Chimera (Li and Hoefler, SC 2021): two pipelines in opposite directions over the same GPUs."""

from __future__ import annotations

from ppedu.ops import Kind, Op, Schedule
from ppedu.validate import require_counts


_BF: tuple[Kind, ...] = ("B", "F")


def chimera(p: int, m: int) -> Schedule:
    """The first bidirectional schedule: GPU ``j`` holds stage ``j`` of a "down" pipeline and
    stage ``p-1-j`` of an "up" one (two replicas of the model, hence two copies of the
    parameters and a gradient all-reduce between them); micro-batches ``0 … m/2-1`` go down,
    the rest up, so each pipeline fills the other's bubbles.

    Each GPU takes, whenever it is free, a forward before a backward while 1F1B's limit allows
    (at most ``p - k`` micro-batches in flight at position ``k`` of either pipeline), the one
    whose input came first, on a tie the pipeline that came from the far end; the order is that
    greedy run under equal unit costs. It leaves the paper's ``p-2`` idle slots per GPU (1F1B:
    ``2(p-1)``) at ``m = p = 4`` and whenever ``m ≥ 2p``; at ``m = p ≥ 6``, one slot more.

    >>> chimera(2, 2).stages[0]
    (F0c0, F1c1', B1c1', B0c0)
    """
    require_counts(p=p, m=m)
    if p % 2 or m % 2:
        raise ValueError(f"chimera needs an even number of stages p and micro-batches m (got p={p}, m={m})")
    half = m // 2
    end: dict[Op, int] = {}  # when each op finished, one time unit after it started
    done = {(kind, j, d): 0 for kind in "FB" for j in range(p) for d in (0, 1)}
    orders: list[list[Op]] = [[] for _ in range(p)]

    def candidate(kind: Kind, j: int, d: int, now: int) -> tuple[int, int, int, Op] | None:
        c = j if d == 0 else p - 1 - j  # the chunk (position in its pipeline) GPU j holds
        k = done[kind, j, d]
        if k == half or (kind == "F" and k - done["B", j, d] >= p - c):
            return None
        op = Op(kind, d * half + k, c, d)
        needs = op.needs(p)
        arrived = end.get(needs, now + 1) if needs else 0
        # Forwards first, eagerly (GPipe-like fill); on a tie, the pipeline that came the long way.
        return (kind == "B", arrived, d if 2 * j >= p else 1 - d, op) if arrived <= now else None

    now = 0
    while len(end) < 2 * m * p:
        picks = [min(options) for j in range(p)
                 if (options := [o for kind in _BF for d in (0, 1) if (o := candidate(kind, j, d, now))])]
        for *_, op in picks:
            j = op.chunk if op.direction == 0 else p - 1 - op.chunk
            orders[j].append(op)
            end[op] = now + 1
            done[op.kind, j, op.direction] += 1
        now += 1
    placement = (tuple(range(p)), tuple(range(p - 1, -1, -1)))
    return Schedule(tuple(map(tuple, orders)), "chimera", placement, m)

