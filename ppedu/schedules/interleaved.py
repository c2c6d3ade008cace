"""Interleaved 1F1B (Megatron-LM; Narayanan et al., 2021): ``v`` model chunks per stage."""

from __future__ import annotations

from ppedu.ops import Op, Schedule
from ppedu.validate import require_counts


def interleaved_1f1b(p: int, m: int, v: int = 2, group: int | None = None) -> Schedule:
    """The model in ``p·v`` chunks, chunk ``c`` on stage ``c mod p``; Megatron-LM's order.

    Micro-batches go in groups of ``group`` (Megatron's ``microbatch_group_size_per_vp_stage``;
    by default ``p`` when ``m`` is a multiple of ``p``, see :func:`_group` otherwise) through each
    local chunk in turn, the last group taking whatever is left; stage ``j`` warms up with
    ``(p-j-1)·2 + (v-1)·group`` forwards, then alternates F and B, then drains.

    >>> s = interleaved_1f1b(2, 2, v=2)
    >>> s.stages[0]
    (F0c0, F1c0, F0c2, F1c2, B0c2, B1c2, B0c0, B1c0)
    >>> s.placement
    ((0, 1, 0, 1),)
    >>> [op.microbatch for op in interleaved_1f1b(4, 10, 2).stages[3] if op.kind == "F"][:10]
    [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    """
    require_counts(p=p, m=m, v=v)
    group = _group(p, m, group)
    stages = tuple(
        _interleaved_order(p, m, v, group, j, min((p - j - 1) * 2 + (v - 1) * group, m * v)) for j in range(p)
    )
    return Schedule(stages, "interleaved", (tuple(c % p for c in range(p * v)),), m, v)


def _group(p: int, m: int, group: int | None) -> int:
    """The micro-batch group size, checked against Megatron's two rules: ``p ≤ group ≤ m``, and
    the last group (``m mod group``, if any) no smaller than ``p``, else the stages wait on each
    other. With ``m < p`` only ``group = m`` is possible (PyTorch's single round). By default, the
    smallest group that obeys them (``p`` when ``m`` is a multiple of ``p``), which is also
    PyTorch's choice wherever PyTorch accepts ``m``."""
    if group is None:
        return next(g for g in range(min(p, m), m + 1) if _fits(p, m, g))
    if isinstance(group, bool) or not isinstance(group, int) or not min(p, m) <= group <= m:
        raise ValueError(f"group (micro-batches per chunk in turn) must be a whole number from "
                         f"min(p, m) = {min(p, m)} to m = {m} (got {group!r})")
    if not _fits(p, m, group):
        raise ValueError(f"group: the last group, m mod group = {m % group}, must be 0 or at least p = {p} "
                         f"(got p={p}, m={m}, group={group})")
    return group


def _fits(p: int, m: int, group: int) -> bool:
    return m % group == 0 or m % group >= p


def _table(m: int, v: int, group: int) -> list[tuple[int, int]]:
    """Megatron's schedule table: the k-th (micro-batch, local chunk) each stage runs forward;
    the last group is whatever is left."""
    table = []
    for first in range(0, m, group):
        table += [(mb, local) for local in range(v) for mb in range(first, min(first + group, m))]
    return table


def _interleaved_order(p: int, m: int, v: int, group: int, j: int, warmup: int,
                       w_delay: int | None = None) -> tuple[Op, ...]:
    """Stage ``j``'s order: ``warmup`` forwards, then F and B alternating, then the remaining B's,
    forwards taking the table in order and backwards taking it with the local chunks reversed.

    With ``w_delay`` set every B is split: the W of the k-th backward follows the
    ``(k + w_delay)``-th backward, and the W's still owed end the stage (zero-bubble style)."""
    table = _table(m, v, group)
    forward = [Op("F", mb, local * p + j) for mb, local in table]
    backward = [Op("B", mb, (v - 1 - local) * p + j) for mb, local in table]
    ops = forward[:warmup]
    done = 0  # backwards whose W has been placed

    def run_backward(k: int) -> None:
        nonlocal done
        ops.append(backward[k])
        if w_delay is not None and k >= w_delay:
            ops.append(Op("W", *backward[done][1:]))
            done += 1

    total = len(table)
    for k in range(total - warmup):
        ops.append(forward[warmup + k])
        run_backward(k)
    for k in range(total - warmup, total):
        run_backward(k)
    if w_delay is not None:
        ops += [Op("W", *b[1:]) for b in backward[done:]]
    return tuple(ops)
