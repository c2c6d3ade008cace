"""1F1B (PipeDream-Flush; Narayanan et al., 2021): warm-up, one-forward-one-backward, cooldown."""

from __future__ import annotations

from collections.abc import Sequence

from ppedu.ops import Op, Schedule
from ppedu.validate import require_counts


def one_f_one_b(p: int, m: int) -> Schedule:
    """Stage ``j`` runs ``min(p-j-1, m)`` warm-up forwards, then alternates F and B, then drains.

    At most ``min(p-j, m)`` micro-batches are in flight on stage ``j``, against ``m`` for GPipe.

    >>> one_f_one_b(2, 3).stages[0]
    (F0c0, F1c0, B0c0, F2c0, B1c0, B2c0)
    """
    require_counts(p=p, m=m)
    return Schedule(tuple(_stage_order(p, m, j, split_w=False) for j in range(p)), "1f1b", (tuple(range(p)),), m)


def with_warmups(warmups: Sequence[int], m: int, name: str = "hand-built") -> Schedule:
    """1F1B's pattern with the warm-up of each GPU given: GPU ``j`` runs ``warmups[j]`` forwards (at most ``m``),
    then one forward and one backward in turn, then the backwards left. 1F1B's own is ``p-1-j``; any other is an
    order no framework runs, for reading a grid one has not seen (it may deadlock: :func:`~ppedu.simulate` says).

    >>> with_warmups((1, 1), 2).stages[1]
    (F0c1, F1c1, B0c1, B1c1)
    """
    require_counts(p=len(warmups), m=m)
    stages = []
    for j, k in enumerate(warmups):
        k = min(k, m)
        ops = [Op("F", i, j) for i in range(k)]
        for i in range(m - k):
            ops += [Op("F", k + i, j), Op("B", i, j)]
        stages.append((*ops, *(Op("B", i, j) for i in range(m - k, m))))
    return Schedule(tuple(stages), name, (tuple(range(len(warmups))),), m)


def _stage_order(p: int, m: int, j: int, split_w: bool, w_delay: int = 0) -> tuple[Op, ...]:
    """1F1B's order on stage ``j``; with ``split_w`` each B is followed, ``w_delay`` backwards
    later, by its W (deferred W's fill the cooldown, as in ZB-H1)."""
    warmup = min(p - j - 1, m)
    ops = [Op("F", i, j) for i in range(warmup)]
    weights = 0

    def backward(i: int) -> None:
        nonlocal weights
        ops.append(Op("B", i, j))
        if split_w and i >= w_delay:
            ops.append(Op("W", weights, j))
            weights += 1

    for i in range(m - warmup):
        ops.append(Op("F", warmup + i, j))
        backward(i)
    for i in range(m - warmup, m):
        backward(i)
    if split_w:
        ops.extend(Op("W", i, j) for i in range(weights, m))
    return tuple(ops)
