"""1F1B (PipeDream-Flush; Narayanan et al., 2021): warm-up, one-forward-one-backward, cooldown."""

from __future__ import annotations

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
