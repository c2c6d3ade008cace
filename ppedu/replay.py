"""The replay loop: resources work through their queues of items, each item starting once its
resource is free and the one item it needs has finished (plus a delay). It knows nothing of
pipelines — the simulator, the MNIST executor's measured timeline and the schedule checks
give it numbered items — and visits each item once, so it stays linear in their number.

>>> r = replay(queues=[[0, 1], [2]], needs=[-1, -1, 0], delay=[0, 0, 0.5], length=[1, 1, 2])
>>> r.start, r.end, r.waited
([0.0, 1.0, 1.5], [1.0, 2.0, 3.5], [-1, -1, 0])
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Replay:
    """When each item ran. ``waited[i]`` is the item whose arrival set ``i``'s start (``i``'s own
    input or, for a glued pair, its partner's), or ``-1`` when ``i`` started as soon as its
    resource was free: the loop's own answer to "why did it start then?"."""

    start: list[float]
    end: list[float]
    waited: list[int]


class Deadlock(ValueError):
    """The queues' order makes resources wait on each other: ``stuck`` lists, per blocked
    resource, ``(resource, the item at its head, the item that one needs)``."""

    def __init__(self, stuck: list[tuple[int, int, int]]) -> None:
        super().__init__(f"deadlock: {len(stuck)} resources wait on each other")
        self.stuck = stuck


def replay(queues: Sequence[Sequence[int]], needs: Sequence[int], delay: Sequence[float], length: Sequence[float],
           glued: Collection[int] = ()) -> Replay:
    """Run items ``0 … n-1``: resource ``q`` runs ``queues[q]`` in order, one at a time; item ``i``
    takes ``length[i]`` and starts when its resource is free and item ``needs[i]`` (``-1``:
    none) ended ``delay[i]`` ago. An item in ``glued`` runs straight after the item before it
    in its queue, and that one waits for both inputs (two items overlapped into one unit).

    Raises :class:`Deadlock` if some resource can never reach the end of its queue.

    >>> replay([[0, 1], [2, 3]], needs=[-1, 3, 0, -1], delay=[0] * 4, length=[1] * 4).start
    [0.0, 3.0, 1.0, 2.0]
    """
    n = len(length)
    start, waited = [0.0] * n, [-1] * n
    end = [-1.0] * n  # -1: not run yet
    pair = bytearray(n)
    for i in glued:
        pair[i] = 1
    waiters: list[list[int] | None] = [None] * n
    free = [0.0] * len(queues)
    pos = [0] * len(queues)
    ready = list(range(len(queues)))
    while ready:
        q = ready.pop()
        items, t = queues[q], free[q]
        last = len(items) - 1
        for i in range(pos[q], last + 1):
            x = items[i]
            need = needs[x]
            if need >= 0:
                arrival = end[need]
                if arrival < 0:
                    waiters[need] = [*(waiters[need] or ()), q]
                    break
                arrival += delay[x]
                if arrival > t:
                    t = arrival
                    waited[x] = need
            if glued and i < last and pair[items[i + 1]]:
                partner = items[i + 1]
                need = needs[partner]
                if need >= 0 and need != x:
                    arrival = end[need]
                    if arrival < 0:
                        waiters[need] = [*(waiters[need] or ()), q]
                        break
                    arrival += delay[partner]
                    if arrival > t:
                        t = arrival
                        waited[x] = need
            start[x] = t
            t += length[x]
            end[x] = t
            if waiters[x] is not None:
                ready.extend(waiters[x])  # type: ignore[arg-type]
                waiters[x] = None
        else:
            i = last + 1
        pos[q], free[q] = i, t
    stuck = []
    for q, items in enumerate(queues):
        if pos[q] < len(items):
            head = items[pos[q]]
            need = needs[head]
            if need < 0 or end[need] >= 0:  # the head's input is in: its glued partner's is not
                need = needs[items[pos[q] + 1]]
            stuck.append((q, head, need))
    if stuck:
        raise Deadlock(stuck)
    return Replay(start, end, waited)
