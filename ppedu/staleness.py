"""Synchronous flush against stale updates: what PipeDream's asynchronous pipeline (Narayanan et
al., SOSP 2019) would do with a schedule's order.

GPipe, 1F1B (PipeDream-Flush) and every schedule of this course are synchronous: all ``m``
backwards finish, the gradients are averaged, one update follows (the flush). PipeDream instead
updates a stage's weights after every backward and never flushes. Then a micro-batch's backward
on stage ``j`` runs on weights that have changed since its forward, unless the stage keeps the old
version (weight stashing): one version per micro-batch in flight. Everything here is read from a
schedule's per-stage order, taking each backward as one update of its stage.

>>> from ppedu.schedules import one_f_one_b
>>> s = one_f_one_b(4, 8)
>>> stashed_versions(s), staleness(s)
((4, 3, 2, 1), (3, 2, 1, 0))
>>> versions_seen(s, 5)
(2, 3, 4, 5)
"""

from __future__ import annotations

from ppedu.ops import Op, Schedule


def stashed_versions(schedule: Schedule) -> tuple[int, ...]:
    """Per stage, the most weight versions weight stashing keeps at once, each one chunk's
    weights: one per micro-batch and chunk whose forward has run on the stage and whose backward
    has not (the count of its activations too)."""
    out = []
    for ops in schedule.stages:
        alive, peak = set(), 0
        for op in ops:
            key = (op.microbatch, op.chunk, op.direction)
            if op.kind == "F":
                alive.add(key)
                peak = max(peak, len(alive))
            elif op.kind == "B":
                alive.discard(key)
        out.append(peak)
    return tuple(out)


def staleness(schedule: Schedule) -> tuple[int, ...]:
    """Per stage, the most updates (other micro-batches' backwards of the same chunk) between one
    micro-batch's forward and its own backward: how many versions old the weights its gradient
    was computed on are when that gradient is applied. Zero for every stage means no staleness."""
    out = []
    for ops in schedule.stages:
        worst = 0
        for i, op in enumerate(ops):
            if op.kind == "F":
                end = ops.index(op._replace(kind="B"))
                worst = max(worst, sum(_updates(x, op) for x in ops[i + 1:end]))
        out.append(worst)
    return tuple(out)


def versions_seen(schedule: Schedule, microbatch: int) -> tuple[int, ...]:
    """Per stage, how many updates of the weights ``microbatch``'s first forward there uses the
    stage has applied by then: the weight version it computes with. Different numbers on different stages mean the
    micro-batch's forward mixes weights of different ages, which PipeDream accepts (its optional
    "vertical sync" makes them equal) and a flush rules out."""
    out = []
    for ops in schedule.stages:
        first = next((i for i, op in enumerate(ops) if op.kind == "F" and op.microbatch == microbatch), None)
        if first is None:
            raise ValueError(f"micro-batch {microbatch} has no forward on this schedule (m = {schedule.microbatches})")
        out.append(sum(_updates(op, ops[first]) for op in ops[:first]))
    return tuple(out)


def _updates(op: Op, forward: Op) -> bool:
    """Whether ``op`` updates the weights ``forward`` computes with: a backward of the same chunk."""
    return op.kind == "B" and (op.chunk, op.direction) == (forward.chunk, forward.direction)
