"""Why is this slot idle? Every idle interval of a timeline, tagged with its cause.

The replay loop records, for each op, which arrival set its start (``Timeline.waited``); an idle
gap before an op is therefore a wait for that input, and its cause follows from where the gap
lies and from what held the input up:

- ``hand-over``: the ``comm`` latency inside the gap on the chain that set the waiting op's start
  (each input on it that set an op's start spent ``start - end`` of it in transit);
- ``fill`` / ``drain``: the pipeline filling (a GPU waiting before its first backward) or
  draining (once it has run its last forward and its first backward, and at the end of the step);
- ``pair``: an overlapped F&B pair held back until its backward's input is in too;
- in the steady state between them, whatever held the input up where its chain of waits began:
  ``imbalance`` (a GPU with more work than this one), ``deferred W`` (a weight-gradient pass the
  schedule ran first), or plainly the order of the schedule: waiting for an ``activation`` from
  upstream or a ``gradient`` from downstream.

The intervals cover the idle time exactly, so the causes add up to the bubble.

>>> from ppedu import Costs, schedules, simulate
>>> print(simulate(schedules.one_f_one_b(4, 8)).idle_causes())
idle 24 of 88 slots = fill 12 + drain 12
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ppedu.arrays import as_list

if TYPE_CHECKING:
    from ppedu.simulate import Timeline

#: The causes, each with what it means (the order of the roll-up).
CAUSES: dict[str, str] = {
    "fill": "the pipeline filling: waiting for work before the GPU's first backward",
    "drain": "the pipeline draining: after the GPU's last forward and its first backward",
    "hand-over": "the latency of an activation or gradient on its way from another GPU",
    "imbalance": "a slower neighbour: the input was held up by a GPU with more work",
    "deferred W": "the input was held up behind a weight-gradient pass the schedule ran first",
    "pair": "an overlapped F&B pair waiting for its backward's input",
    "activation": "waiting for an activation from upstream, as the schedule's order dictates",
    "gradient": "waiting for a gradient from downstream, as the schedule's order dictates",
}

#: The three kinds a student reads off a grid without hand-over time or uneven GPUs: the pipeline filling, draining,
#: or the schedule's order itself (an input put late by the order, a W run first, a pair held back).
SORTS: dict[str, str] = {"fill": "fill", "drain": "drain", "activation": "order", "gradient": "order",
                         "deferred W": "order", "pair": "order"}

#: How a diagram draws each cause: a pale tint and a hatch of its own, so the causes stay apart
#: in greyscale and for colour-blind readers (the hatch names are :mod:`ppedu.svg`'s).
CAUSE_STYLE: dict[str, tuple[str, str]] = {
    "fill": ("#F2F2F2", "\\\\"),
    "drain": ("#F2F2F2", "--"),
    "hand-over": ("#FBE3D6", "||"),
    "imbalance": ("#FCEFD2", "++"),
    "deferred W": ("#D9F0E8", "oo"),
    "pair": ("#E0EEF8", "xx"),
    "activation": ("#DCE6F2", "//"),
    "gradient": ("#F9E3D9", ".."),
}


@dataclass(frozen=True)
class Idle:
    """One idle interval: GPU ``stage`` has nothing to run from ``start`` to ``end``, because of ``cause``."""

    stage: int
    start: float
    end: float
    cause: str

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class IdleCauses:
    """The idle intervals of a timeline with their causes, rolled up per GPU and in total."""

    intervals: tuple[Idle, ...]
    stages: int
    total_slots: float

    def __iter__(self) -> Iterator[Idle]:
        return iter(self.intervals)

    def per_stage(self) -> tuple[dict[str, float], ...]:
        """Per GPU, the idle time of each cause (every cause listed, zeros included)."""
        out = [dict.fromkeys(CAUSES, 0.0) for _ in range(self.stages)]
        for x in self.intervals:
            out[x.stage][x.cause] += x.duration
        return tuple(out)

    def totals(self) -> dict[str, float]:
        """The idle time of each cause over all GPUs: the bubble, taken apart.

        >>> from ppedu import Costs, schedules, simulate
        >>> t = simulate(schedules.gpipe(4, 4), Costs(comm=0.5))
        >>> {k: v for k, v in t.idle_causes().totals().items() if v}
        {'fill': 20.5, 'drain': 8.5, 'hand-over': 7.0}
        """
        out = dict.fromkeys(CAUSES, 0.0)
        for x in self.intervals:
            out[x.cause] += x.duration
        return out

    def as_dict(self) -> dict[str, object]:
        """Totals and per-GPU figures, as the CLI's ``--json`` reports them."""
        return {"totals": self.totals(), "per_stage": list(self.per_stage())}

    def __str__(self) -> str:
        totals = self.totals()
        parts = " + ".join(f"{k} {v:g}" for k, v in totals.items() if v > 1e-12) or "nothing"
        return f"idle {sum(totals.values()):g} of {self.total_slots:g} slots = {parts}"


def idle_causes(timeline: Timeline) -> IdleCauses:
    """Tag every idle interval of ``timeline`` with its cause (see the module's notes)."""
    c = timeline.schedule.columns
    start, end, waited = as_list(timeline.start), as_list(timeline.end), as_list(timeline.waited)
    stage, kind, needs = as_list(c.stage), as_list(c.kind), as_list(c.needs)
    bounds = as_list(c.start)
    busy = timeline.busy_per_stage
    head = bytearray(len(start))  # the first op on each GPU
    for a, b in zip(bounds, bounds[1:]):
        if a < b:
            head[a] = 1
    scale = max(timeline.makespan, 1.0) * 1e-9
    origin: dict[int, int] = {}  # op → the op where its chain of waits began

    def began(x: int) -> int:
        chain = []
        while waited[x] >= 0 and x not in origin:
            chain.append(x)
            x = waited[x]
        root = origin.get(x, x)
        for y in chain:
            origin[y] = root
        return root

    final = end.index(max(end)) if end else 0  # the op that ends the step
    intervals: list[Idle] = []
    for s in range(timeline.p):
        a, b = bounds[s], bounds[s + 1]
        kinds = kind[a:b]
        first_b = a + kinds.index(1) if 1 in kinds else b
        last_f = a + len(kinds) - 1 - kinds[::-1].index(0) if 0 in kinds else a - 1
        free = 0.0
        for i in range(a, b):
            if start[i] - free > scale:
                w = waited[i]
                latency = min(_latency(i, free, start, end, waited, head), start[i] - free)
                if latency > scale:
                    intervals.append(Idle(s, start[i] - latency, start[i], "hand-over"))
                if start[i] - latency - free > scale:
                    intervals.append(Idle(s, free, start[i] - latency, _cause(
                        i, w, first_b, last_f, needs, kind, stage, bounds, began, busy, scale)))
            free = end[i]
        if timeline.makespan - free > scale:  # after its last op, until the last GPU finishes
            latency = min(_latency(final, free, start, end, waited, head), timeline.makespan - free)
            if timeline.makespan - latency - free > scale:
                intervals.append(Idle(s, free, timeline.makespan - latency, "drain"))
            if latency > scale:
                intervals.append(Idle(s, timeline.makespan - latency, timeline.makespan, "hand-over"))
    return IdleCauses(tuple(intervals), timeline.p, timeline.total_slots)


def _latency(i: int, since: float, start: list[float], end: list[float], waited: list[int], head: bytearray) -> float:
    """The hand-over latency in the window from ``since`` to op ``i``'s start, along the chain
    that set that start: back through each op's binding input (``start - end`` of it in transit)
    or, where the op started as soon as its GPU was free, through the op before it. The chain
    covers the window without gaps, so the rest of the window is work on other GPUs."""
    total = 0.0
    while start[i] > since:
        w = waited[i]
        if w >= 0:
            total += start[i] - max(end[w], since)
            i = w
        elif head[i]:
            break
        else:
            i -= 1  # flat order: the op before it on its GPU, which ended as it started
    return total


def _cause(i: int, w: int, first_b: int, last_f: int, needs: list[int], kind: list[int], stage: list[int],
           bounds: list[int], began: Callable[[int], int], busy: tuple[float, ...], scale: float) -> str:
    """The cause of the wait before op ``i``, which waited for op ``w``."""
    if w != needs[i]:
        return "pair"
    if i <= first_b:
        return "fill"
    if i > last_f:
        return "drain"
    root = began(w)
    if root > bounds[stage[root]]:  # it started as soon as its GPU was free: what ran before held it up
        before = root - 1
        if kind[before] == 2:
            return "deferred W"
        if busy[stage[root]] > busy[stage[i]] + scale:
            return "imbalance"
    return "activation" if kind[w] == 0 else "gradient"
