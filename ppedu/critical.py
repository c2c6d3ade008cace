"""The critical path of a timeline: the chain of operations, and hand-overs between them, that sets the makespan.

Walk back from the operation that ends last. Each operation started either when its input arrived — the simulator
records which arrival set its start (``Timeline.waited``) — or as soon as its GPU was free, when the operation before
it on that GPU ended. Following that, op by op, reaches an operation that started at time 0. Every step of the chain
is work or an input in transit, so the chain is as long as the step: shorten any operation on it and the step
shortens (until another chain takes over); shorten one off it and nothing changes. That is what a grid is read for
when a schedule is unfamiliar: which passes the step waits on, and so which idle slots are the order's and which the
dependencies'.

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
