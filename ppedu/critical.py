"""The critical path of a timeline: the chain of operations, and hand-overs between them, that sets the makespan.

Walk back from the operation that ends last. Each operation started either when its input arrived — the simulator
records which arrival set its start (``Timeline.waited``) — or as soon as its GPU was free, when the operation before
it on that GPU ended. Following that, op by op, reaches an operation that started at time 0. Every step of the chain
is work or an input in transit, so the chain is as long as the step: lengthen any operation on it and the step
lengthens; shorten one off it and nothing changes (shortening one on it need not help either: another chain may be as
long). That is what a grid is read for when a schedule is unfamiliar: which passes the step waits on, and so which idle
slots are the order's and which the dependencies'.

>>> from ppedu import simulate
>>> from ppedu.schedules import gpipe
>>> path = critical_path(simulate(gpipe(3, 2)))
>>> " ".join(f"{e.op.kind}{e.op.microbatch}@{e.stage}" for e in path)
'F0@0 F0@1 F0@2 F1@2 B0@2 B0@1 B0@0 B1@0'
>>> sum(e.duration for e in path)  # nothing in transit (no hand-over cost): the work alone is the makespan
8.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ppedu.arrays import as_list

if TYPE_CHECKING:
    from ppedu.simulate import Event, Timeline


def critical_path(timeline: Timeline) -> tuple[Event, ...]:
    """The operations on ``timeline``'s critical path, first to last (see the module's notes); an empty schedule
    has none."""
    start, end, waited = as_list(timeline.start), as_list(timeline.end), as_list(timeline.waited)
    if not end:
        return ()
    heads = set(as_list(timeline.schedule.columns.start)[:-1])  # each GPU's first operation
    i, chain = end.index(max(end)), []
    while True:
        chain.append(i)
        if waited[i] >= 0:
            i = waited[i]
        elif i in heads or start[i] <= 0:
            break
        else:
            i -= 1  # it started as soon as its GPU was free: when the operation before it there ended
    events = timeline.events
    return tuple(events[j] for j in reversed(chain))


def tight_before(timeline: Timeline) -> tuple[tuple[int, ...], ...]:
    """Per op, the ops it can follow on a critical path: its input and the op before it on its GPU, where that
    one ends as it starts. Ties are kept (equal costs give many chains of the makespan's length); hand-over time
    is not, so it is for timelines without it (a grid's cells then are the whole path)."""
    c = timeline.schedule.columns
    start, end, needs = as_list(timeline.start), as_list(timeline.end), as_list(c.needs)
    heads = set(as_list(c.start)[:-1])
    return tuple(tuple(j for j in (needs[i], -1 if i in heads else i - 1) if j >= 0 and end[j] == start[i])
                 for i in range(len(start)))


def traced(timeline: Timeline, chosen: set[int]) -> tuple[frozenset[int], frozenset[int]]:
    """Of the ops ``chosen`` (indices into ``timeline.events``), the longest chain of them that could open a
    critical path (from time 0, each op following the one before as :func:`tight_before` allows) and the longest
    that could close one (to the makespan). A critical path traced in full is both.

    >>> from ppedu import simulate
    >>> from ppedu.schedules import gpipe
    >>> t = simulate(gpipe(2, 1))  # ops 0, 1 on GPU 0 (F0, B0) and 2, 3 on GPU 1: one chain F0 F0 B0 B0
    >>> [sorted(x) for x in traced(t, {0, 1, 2, 3})], [sorted(x) for x in traced(t, {0, 1, 2})]
    ([[0, 1, 2, 3], [0, 1, 2, 3]], [[0, 2], [1]])
    """
    start, end = as_list(timeline.start), as_list(timeline.end)
    before = tight_before(timeline)
    after: dict[int, list[int]] = {}
    for i, js in enumerate(before):
        for j in js:
            after.setdefault(j, []).append(i)
    # Each chosen op linked to a chosen one it can follow (forward from time 0) or precede (back from the makespan).
    opened: dict[int, int | None] = {}
    for i in sorted(chosen, key=lambda i: start[i]):
        if start[i] <= 0:
            opened[i] = None
        elif links := [j for j in before[i] if j in opened]:
            opened[i] = links[0]
    closed: dict[int, int | None] = {}
    for i in sorted(chosen, key=lambda i: -end[i]):
        if end[i] >= timeline.makespan:
            closed[i] = None
        elif links := [k for k in after.get(i, ()) if k in closed]:
            closed[i] = links[0]
    return (_walk(opened, max(opened, key=lambda i: end[i], default=None)),
            _walk(closed, min(closed, key=lambda i: start[i], default=None)))


def _walk(links: dict[int, int | None], i: int | None) -> frozenset[int]:
    out = set()
    while i is not None:
        out.add(i)
        i = links[i]
    return frozenset(out)
