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

    When ``p`` divides ``m`` the order is the paper's basic unit (``p/2`` micro-batches each
    way), repeated ``m/p`` times (:func:`_basic_units`): under equal unit costs each GPU idles
    the paper's ``p-2`` slots (1F1B: ``2(p-1)``), and each GPU's peak lies in the paper's
    range of ``p/2 + 1`` to ``p`` micro-batches' activations. Other even ``m``, which the
    paper leaves out, get a greedy order (:func:`_greedy`); it too idles ``p-2`` slots per GPU
    when ``m > p`` and ``p ≤ 10`` (checked up to ``m = 5p``), more when ``m < p``.

    >>> chimera(2, 2).stages[0]
    (F0c0, F1c1', B1c1', B0c0)
    >>> chimera(4, 4).stages[1]
    (F0c1, F2c2', F1c1, F3c2', B2c2', B0c1, B3c2', B1c1)
    """
    require_counts(p=p, m=m)
    if p % 2 or m % 2:
        raise ValueError(f"chimera needs an even number of stages p and micro-batches m (got p={p}, m={m})")
    orders = _basic_units(p, m) if m % p == 0 else _greedy(p, m)
    placement = (tuple(range(p)), tuple(range(p - 1, -1, -1)))
    return Schedule(tuple(map(tuple, orders)), "chimera", placement, m)


def _basic_units(p: int, m: int) -> list[list[Op]]:
    """Each GPU's ops in the order of the slots the paper's basic units give them.

    The ``r``-th micro-batch (``r < p/2``) of unit ``u`` of either pipeline runs its forward on
    chunk ``c`` in slot ``2pu + 2r + c`` and its backward in slot ``2pu + 2r + 2p-1-c``: one
    step per chunk, the backward right after the last chunk's forward, and the unit done after
    ``3p-2`` slots. No two ops of a GPU share a slot: on GPU ``j`` the down pipeline's forwards
    and the up pipeline's backwards take the slots of ``j``'s parity, the other two the others,
    and within each parity the forwards end (slots ``2pu + p+j-2`` and ``2pu + 2p-3-j``) before
    the backwards begin (``2pu + p+j`` and ``2pu + 2p-1-j``), whose last ones in turn come
    before unit ``u+1``'s forwards (``2p`` slots after unit ``u``'s).
    """
    half, n = m // 2, p // 2
    timed: list[list[tuple[int, Op]]] = [[] for _ in range(p)]
    for d in (0, 1):
        for i in range(half):
            unit, r = divmod(i, n)
            start = 2 * p * unit + 2 * r
            for c in range(p):
                j = c if d == 0 else p - 1 - c  # the GPU that holds chunk c of pipeline d
                timed[j] += [(start + c, Op("F", d * half + i, c, d)),
                             (start + 2 * p - 1 - c, Op("B", d * half + i, c, d))]
    return [[op for _, op in sorted(ops)] for ops in timed]


def _greedy(p: int, m: int) -> list[list[Op]]:
    """Each GPU takes, whenever it is free, a forward before a backward while 1F1B's limit
    allows (at most ``p - k`` micro-batches in flight at position ``k`` of either pipeline), the
    one whose input came first, on a tie the pipeline that came from the far end; the order is
    that greedy run under equal unit costs."""
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
    return orders
