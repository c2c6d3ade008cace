"""The replay loop: resources work through their runs of items, each item starting once its
resource is free and the one item it needs has finished (plus a delay). It knows nothing of
pipelines — the simulator, the MNIST executor's measured timeline and the schedule checks
give it numbered items — and visits each item once, so it stays linear in their number.

>>> r = replay(bounds=[0, 2, 3], needs=[-1, -1, 0], delay=[0, 0, 0.5], length=[1, 1, 2])
>>> r.start, r.end, list(r.waited)
([0.0, 1.0, 1.5], [1.0, 2.0, 3.5], [-1, -1, 0])
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from math import inf


@dataclass(frozen=True)
class Replay:
    """When each item ran. ``waited[i]`` is the item whose arrival set ``i``'s start (``i``'s own
    input or, for a glued pair, its partner's), or ``-1`` when ``i`` started as soon as its
    resource was free: the loop's own answer to "why did it start then?". ``waited`` is a
    flat array, which numpy reads without a copy (the loop writes it only when an item waits)."""

    start: list[float]
    end: list[float]
    waited: array[int]


class Deadlock(ValueError):
    """The runs' order makes resources wait on each other: ``stuck`` lists, per blocked
    resource, ``(resource, the item at its head, the item that one needs)``."""

    def __init__(self, stuck: list[tuple[int, int, int]]) -> None:
        super().__init__(f"deadlock: {len(stuck)} resources wait on each other")
        self.stuck = stuck


def replay(bounds: Sequence[int], needs: Sequence[int], delay: Sequence[float], length: Sequence[float],
           glued: Collection[int] = ()) -> Replay:
    """Run items ``0 … n-1``: resource ``q`` runs items ``bounds[q]`` to ``bounds[q+1] - 1`` in
    order, one at a time (number the items resource by resource); item ``i`` takes ``length[i]`` and
    starts when its resource is free and item ``needs[i]`` (``-1``: none) ended ``delay[i]`` ago.
    An item in ``glued`` runs straight after the item before it on its resource, and that one
    waits for both inputs (two items overlapped into one unit).

    Raises :class:`Deadlock` if some resource can never reach the end of its run.

    >>> replay([0, 2, 4], needs=[-1, 3, 0, -1], delay=[0] * 4, length=[1] * 4).start
    [0.0, 3.0, 1.0, 2.0]
    """
    n, resources = len(length), len(bounds) - 1
    start: list = [None] * n  # None: not run yet
    waited = array("q", [-1]) * n
    # end[i] is +inf until item i has run, so "its input has not arrived" and "it waits for its
    # input" are one comparison; the extra last entry, -inf, is where need -1 (none) points.
    end = [inf] * n + [-inf]
    paired = bytearray(n)  # 1: the next item is glued to this one
    firsts = set(bounds)
    for i in glued:
        if i not in firsts:  # the first item of a run has nothing before it to be glued to
            paired[i - 1] = 1
    # Resources are numbered from 1 in the loop, so 0 can mean "none" below.
    free, pos, stop = [0.0] * (resources + 1), [0, *bounds[:-1]], [0, *bounds[1:]]
    # Who waits for what, as linked lists in flat int lists (no allocation in the loop):
    # first[i] is a resource waiting for item i, after[q] the next one waiting for the same item.
    first, after = [0] * n, [0] * (resources + 1)
    ready = list(range(1, resources + 1))
    push, pop = ready.append, ready.pop
    while ready:
        q = pop()
        t = free[q]
        for x in range(pos[q], stop[q]):
            need = needs[x]
            arrival = end[need] + delay[x]
            if arrival > t:
                if start[need] is None:  # not run yet: wait for it
                    after[q], first[need] = first[need], q
                    break
                t = arrival
                waited[x] = need
            if glued and paired[x] and (need := needs[x + 1]) != x:
                arrival = end[need] + delay[x + 1]
                if arrival > t:  # the pair also waits for its second item's input
                    if start[need] is None:
                        after[q], first[need] = first[need], q
                        break
                    t = arrival
                    waited[x] = need
            start[x] = t
            t += length[x]
            end[x] = t
            if first[x]:
                w = first[x]
                while w:
                    push(w)
                    w = after[w]
        else:
            x = stop[q]
        pos[q], free[q] = x, t
    end.pop()
    stuck = []
    for q in range(1, resources + 1):
        if (head := pos[q]) < stop[q]:
            need = needs[head]
            if need < 0 or start[need] is not None:  # the head's input is in: its glued partner's is not
                need = needs[head + 1]
            stuck.append((q - 1, head, need))
    if stuck:
        raise Deadlock(stuck)
    return Replay(start, end, waited)
