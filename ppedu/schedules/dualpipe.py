"""DualPipe (DeepSeek-V3, 2024) and its V-shaped fold, DualPipeV.

Each rank holds two model pieces and runs DeepSeek's eight phases: a forward warm-up, then
overlapped forward-and-backward pairs of its two pieces, then a backward drain whose
weight-gradient passes (W) are split off to fill the tail.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from ppedu.ops import Op, Schedule
from ppedu.validate import require_counts

# An abstract action of the eight-phase order: (kind, phase, split W off?, overlapped with the F before?).
_Action = tuple[str, int, bool, bool]
_F0, _F1, _B1, _W = ("F", 0, False, False), ("F", 1, False, False), ("B", 1, False, False), ("W", 0, False, False)
_B0_PAIRED, _B1_PAIRED = ("B", 0, False, True), ("B", 1, False, True)


def dualpipe(p: int, m: int) -> Schedule:
    """DeepSeek-V3's bidirectional schedule: half the micro-batches enter at GPU 0, half at GPU p-1.

    GPU ``j`` holds model stage ``j`` for direction 0 and stage ``p-1-j`` for direction 1 (two
    copies of the parameters). Micro-batches ``0 … m/2-1`` go one way, ``m/2 … m-1`` the other.
    An overlapped forward-and-backward pair is an F directly followed by a B that the schedule
    lists in ``overlapped``; ``Costs.fb`` says how long such a pair takes.

    >>> s = dualpipe(2, 4)
    >>> s.stages[0][:4]
    (F0c0, F2c1', F1c0, B2c1')
    """
    require_counts(p=p, m=m)
    if p % 2:
        raise ValueError(f"dualpipe needs an even number of stages p (got p={p})")
    if m % 2 or m < 2 * p:
        raise ValueError(f"dualpipe needs an even m with m ≥ 2p micro-batches (got p={p}, m={m})")
    half = p // 2
    stages, overlapped = [], set()
    for j in range(p):
        directions = (0, 1) if j < half else (1, 0)  # phase 0 is the direction that arrives first
        chunk = {0: j, 1: p - 1 - j}
        ops, paired = _translate(
            _eight_phases(half, min(j, p - 1 - j), m // 2),
            lambda kind, ph, i: Op(kind, i + directions[ph] * (m // 2), chunk[directions[ph]], directions[ph]),
        )
        stages.append(ops)
        overlapped |= paired
    placement = (tuple(range(p)), tuple(range(p - 1, -1, -1)))
    return Schedule(tuple(stages), "dualpipe", placement, m, overlapped=frozenset(overlapped))


def dualpipe_v(p: int, m: int) -> Schedule:
    """DualPipeV: DualPipe folded onto a V, one direction, half the parameter memory.

    The model is cut into ``2p`` chunks; GPU ``j`` holds chunks ``j`` and ``2p-1-j``, so every
    micro-batch enters and leaves at GPU 0 (PyTorch's ``ScheduleDualPipeV``).

    >>> dualpipe_v(2, 4).placement
    ((0, 1, 1, 0),)
    """
    require_counts(p=p, m=m)
    if m < 2 * p:
        raise ValueError(f"dualpipe-v needs m ≥ 2p micro-batches (got p={p}, m={m})")
    built = [
        _translate(_eight_phases(p, j, m), lambda kind, ph, i, j=j: Op(kind, i, (j, 2 * p - 1 - j)[ph]))
        for j in range(p)
    ]
    placement = (tuple(min(c, 2 * p - 1 - c) for c in range(2 * p)),)
    overlapped = frozenset(op for _, paired in built for op in paired)
    return Schedule(tuple(ops for ops, _ in built), "dualpipe-v", placement, m, 2, overlapped)


def _eight_phases(n: int, r: int, k: int) -> Iterator[_Action]:
    """DeepSeek's order for a rank at distance ``r`` from the nearer end of an ``n``-rank leg,
    with ``k`` micro-batches per piece; phase 0 is the piece whose micro-batches arrive first."""
    yield from [_F0] * ((n - r - 1) * 2)
    yield from [_F0, _F1] * (r + 1)
    for _ in range(n - r - 1):
        yield from [("B", 1, True, False), _W, _F1]
    for i in range(k - 2 * n + r + 1):
        # The rank at the tip does not overlap its very first pair, as in DeepSeek's reference.
        yield from [_F0, _B1 if i == 0 and r == n - 1 else _B1_PAIRED, _F1, _B0_PAIRED]
    for _ in range(n - r - 1):
        yield from [_B1, _F1, _B0_PAIRED]
    split = False
    for i in range(r + 1):
        # Odd and even ranks switch to split W one backward apart, as DeepSeek's reference does.
        split = split or (i == (r + 1) // 2 and r % 2 == 1)
        yield ("B", 1, split, False)
        split = split or (i == (r + 1) // 2 and r % 2 == 0)
        yield ("B", 0, split, False)
    for _ in range(n - r - 1):
        yield from [_W, ("B", 0, True, False)]
    yield from [_W] * (r + 1)


def _translate(actions: Iterator[_Action], make) -> tuple[tuple[Op, ...], set[Op]]:
    """Number the abstract actions per piece, let ``W`` take the oldest split-off backward, and
    collect the backwards that overlap the forward before them."""
    counters = {("F", 0): 0, ("F", 1): 0, ("B", 0): 0, ("B", 1): 0}
    pending: deque[Op] = deque()
    ops: list[Op] = []
    overlapped: set[Op] = set()
    for kind, ph, split, paired in actions:
        if kind == "W":
            if pending:
                ops.append(pending.popleft())
            continue
        i = counters[kind, ph]
        counters[kind, ph] += 1
        op = make(kind, ph, i)
        ops.append(op)
        if paired:
            overlapped.add(op)
        if split:
            pending.append(Op("W", op.microbatch, op.chunk, op.direction))
    assert not pending, "every split-off W must be run"
    return tuple(ops), overlapped
