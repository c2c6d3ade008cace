"""Breadth-first pipeline parallelism (Lamy-Poirier, 2022; PyTorch's ``ScheduleLoopedBFS``)."""

from __future__ import annotations

from ppedu.ops import Op, Schedule
from ppedu.validate import require_counts


def looped_bfs(p: int, m: int, v: int = 2) -> Schedule:
    """Interleaved placement (chunk ``c`` on stage ``c mod p``), GPipe's order per chunk: each
    stage runs every micro-batch forward through its first chunk, then its next, …, then the
    backwards chunk by chunk in reverse, the latest micro-batch first.

    Interleaving's short pipeline fill at GPipe's memory: all ``m·v`` chunk-activations alive.

    >>> looped_bfs(2, 2).stages[0]
    (F0c0, F1c0, F0c2, F1c2, B1c2, B0c2, B1c0, B0c0)
    """
    require_counts(p=p, m=m, v=v)
    stages = []
    for j in range(p):
        chunks = [local * p + j for local in range(v)]
        forwards = [Op("F", mb, c) for c in chunks for mb in range(m)]
        backwards = [Op("B", mb, c) for c in reversed(chunks) for mb in reversed(range(m))]
        stages.append(tuple(forwards + backwards))
    return Schedule(tuple(stages), "looped-bfs", (tuple(c % p for c in range(p * v)),), m, v)
