"""Interleaved 1F1B (Megatron-LM; Narayanan et al., 2021): ``v`` model chunks per stage."""

from __future__ import annotations

from ppedu.ops import Kind, Op, Schedule
from ppedu.validate import require_counts


def interleaved_1f1b(p: int, m: int, v: int = 2) -> Schedule:
    """The model in ``p·v`` chunks, chunk ``c`` on stage ``c mod p``; Megatron-LM's order.

    Micro-batches go in groups of ``p`` through each local chunk in turn; stage ``j`` warms
    up with ``(p-j-1)·2 + (v-1)·p`` forwards, then alternates F and B, then drains.

    >>> s = interleaved_1f1b(2, 2, v=2)
    >>> s.stages[0]
    (F0c0, F1c0, F0c2, F1c2, B0c2, B1c2, B0c0, B1c0)
    >>> s.placement
    ((0, 1, 0, 1),)
    """
    require_counts(p=p, m=m, v=v)
    if m % p:
        raise ValueError(f"interleaved 1F1B needs m to be a multiple of p (got p={p}, m={m})")
    total = m * v

    def op(kind: Kind, k: int, j: int) -> Op:
        group, rest = divmod(k, p * v)
        local = rest // p
        if kind == "B":
            local = v - 1 - local
        return Op(kind, group * p + rest % p, local * p + j)

    stages = []
    for j in range(p):
        warmup = min((p - j - 1) * 2 + (v - 1) * p, total)
        ops = [op("F", k, j) for k in range(warmup)]
        for k in range(total - warmup):
            ops += [op("F", warmup + k, j), op("B", k, j)]
        ops += [op("B", k, j) for k in range(total - warmup, total)]
        stages.append(tuple(ops))
    return Schedule(tuple(stages), "interleaved", (tuple(c % p for c in range(p * v)),), m, v)
