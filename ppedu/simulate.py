"""The simulator: replays a schedule under a cost model and measures time, idleness and memory."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ppedu.costs import Costs
from ppedu.ops import Op, Schedule


@dataclass(frozen=True, slots=True)
class Event:
    """One operation as it ran: on which stage, from ``start`` to ``end``."""

    stage: int
    op: Op
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start

    def as_dict(self, with_direction: bool = False) -> dict[str, object]:
        d: dict[str, object] = {
            "stage": self.stage,
            "kind": self.op.kind,
            "microbatch": self.op.microbatch,
            "chunk": self.op.chunk,
            "start": self.start,
            "end": self.end,
        }
        if with_direction:
            d["direction"] = self.op.direction
        return d


@dataclass(frozen=True)
class Timeline:
    """The result of :func:`simulate`: every event, with the course's metrics as properties.

    Slots are measured in time units: ``total_slots`` is stages × makespan, so under unit
    costs they are the cells of the textbook's spacetime grid.
    """

    schedule: Schedule
    costs: Costs
    events: tuple[Event, ...]

    @property
    def stages(self) -> int:
        return self.schedule.p

    @cached_property
    def makespan(self) -> float:
        return max((e.end for e in self.events), default=0.0)

    @property
    def total_slots(self) -> float:
        return self.stages * self.makespan

    @cached_property
    def busy_per_stage(self) -> tuple[float, ...]:
        busy = [0.0] * self.stages
        for e in self.events:
            busy[e.stage] += e.end - e.start
        return tuple(busy)

    @property
    def busy_slots(self) -> float:
        return sum(self.busy_per_stage)

    @property
    def idle_slots(self) -> float:
        return self.total_slots - self.busy_slots

    @property
    def bubble_ratio(self) -> float:
        """Idle slots ÷ total slots: the textbook's bubble ratio (``1 - utilization``)."""
        return self.idle_slots / self.total_slots if self.total_slots else 0.0

    @property
    def bubble_over_ideal(self) -> float:
        """Idle time ÷ busy time: the bubble as Megatron-LM states it, ``(p-1)/m`` for 1F1B."""
        return self.idle_slots / self.busy_slots if self.busy_slots else 0.0

    @property
    def utilization(self) -> float:
        return 1.0 - self.bubble_ratio

    @cached_property
    def _memory(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        return self._profile(None)

    def _profile(self, weights: Sequence[float] | None) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        # +w when a forward starts, -w when its backward (input-gradient part) ends; at equal
        # times the free comes first, as a framework frees before it allocates the next one.
        ends = {(e.op.microbatch, e.op.chunk, e.op.direction): e.end for e in self.events if e.op.kind == "B"}
        deltas: list[list[tuple[float, float]]] = [[] for _ in range(self.stages)]
        for e in self.events:
            if e.op.kind == "F":
                w = 1 if weights is None else weights[e.op.chunk]
                deltas[e.stage] += [(e.start, w), (ends[e.op.microbatch, e.op.chunk, e.op.direction], -w)]
        out = []
        for d in deltas:
            d.sort()
            times = np.array([t for t, _ in d], dtype=float)
            out.append((times, np.cumsum([x for _, x in d], dtype=int if weights is None else float)))
        return tuple(out)

    def activations(self, stage: int) -> tuple[np.ndarray, np.ndarray]:
        """Chunk-activations alive on ``stage`` over time: ``counts[i]`` holds from ``times[i]`` on."""
        return self._memory[stage]

    @property
    def peak_activations(self) -> tuple[int, ...]:
        """Per stage, the most chunk-activations alive at once (one chunk's worth each)."""
        return tuple(int(c.max(initial=0)) for _, c in self._memory)

    @property
    def peak_stage_activations(self) -> tuple[float, ...]:
        """Per stage, the peak in units of one whole stage's activations (a chunk holds 1/v of
        them), so schedules that cut the model differently compare fairly."""
        return tuple(n / self.schedule.virtual for n in self.peak_activations)

    def peak_activation_memory(self, per_chunk: Sequence[float]) -> tuple[float, ...]:
        """Per stage, the most activation memory alive at once when one micro-batch's activations
        of chunk ``c`` take ``per_chunk[c]`` (in bytes, say): unbalanced chunks weigh differently.

        >>> from ppedu.schedules import one_f_one_b
        >>> simulate(one_f_one_b(2, 4)).peak_activation_memory([10.0, 3.0])
        (20.0, 3.0)
        """
        if len(per_chunk) != self.schedule.chunks:
            raise ValueError(f"{len(per_chunk)} activation sizes for {self.schedule.chunks} chunks")
        return tuple(float(v.max(initial=0)) for _, v in self._profile(per_chunk))

    def on_stage(self, stage: int) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.stage == stage)

    def metrics(self) -> dict[str, object]:
        """The headline numbers, as the CLI's ``--json`` reports them."""
        return {
            "makespan": self.makespan,
            "total_slots": self.total_slots,
            "busy_slots": self.busy_slots,
            "idle_slots": self.idle_slots,
            "bubble_ratio": self.bubble_ratio,
            "utilization": self.utilization,
            "peak_activations": list(self.peak_activations),
        }


def simulate(schedule: Schedule, costs: Costs | None = None) -> Timeline:
    """Run ``schedule`` under ``costs``: each stage takes its ops in order, and an op starts when
    its stage is free and its input has arrived (plus the hand-over's ``comm`` if it came from
    another stage).

    One pass in dependency order, each op visited once, so large schedules stay fast.

    >>> from ppedu.schedules import gpipe
    >>> t = simulate(gpipe(4, 4))
    >>> t.makespan, t.idle_slots, t.total_slots
    (14.0, 24.0, 56.0)
    """
    costs = costs or Costs()
    schedule.validate()
    costs.check(schedule.p, schedule.chunks)
    p, placement, last = schedule.p, schedule.placement, schedule.chunks - 1
    split = schedule.split_backwards
    # Per stage, kind and chunk it holds: F, full B, input-gradient B and W durations, looked up once.
    durations = [{k: [0.0] * schedule.chunks for k in "FBIW"} for _ in range(p)]
    for row in placement:
        for c, s in enumerate(row):
            cost = durations[s]
            cost["F"][c], cost["B"][c] = costs.forward(s, c), costs.backward(s, True, c)
            cost["I"][c], cost["W"][c] = costs.backward(s, False, c), costs.weight(s, c)
    # Per direction, the hand-over into chunk c+1 (forward) and back into chunk c (backward).
    ahead = [[costs.hand_over(row[c], row[c + 1], c) for c in range(last)] for row in placement]
    back = [[costs.hand_over(row[c + 1], row[c], c) for c in range(last)] for row in placement]
    pair_times = [costs.pair(s) or 0.0 for s in range(p)]
    # Without an F&B time the pair's two ops simply run one after the other.
    pair_heads = [
        {i for i, op in enumerate(ops[1:]) if op in schedule.overlapped} if costs.fb is not None else set()
        for ops in schedule.stages
    ]
    finished: dict[tuple, float] = {}
    waiting: defaultdict[tuple, list[int]] = defaultdict(list)
    free = [0.0] * p
    pos = [0] * p
    events: list[list[Event]] = [[] for _ in range(p)]
    ready = list(range(p))
    while ready:
        s = ready.pop()
        ops, stage_events, cost, heads = schedule.stages[s], events[s], durations[s], pair_heads[s]
        i, start = pos[s], free[s]
        while i < len(ops):
            # A unit is one op, or an F with the B it runs overlapped with (DualPipe's F&B pair),
            # which starts once both inputs are in.
            unit = ops[i : i + 2] if i in heads else ops[i : i + 1]
            blocked = False
            for kind, mb, c, d in unit:
                # The input an op consumes: the previous chunk's F, the next chunk's B (the last
                # chunk's B starts from its own F's output), or, for W, its own B.
                dep: tuple | None = None
                delay = 0.0
                if kind == "F":
                    if c:
                        dep, delay = ("F", mb, c - 1, d), ahead[d][c - 1]
                elif kind == "B":
                    if c == last:
                        dep = ("F", mb, c, d)
                    else:
                        dep, delay = ("B", mb, c + 1, d), back[d][c]
                else:
                    dep = ("B", mb, c, d)
                if dep is not None:
                    arrived = finished.get(dep)
                    if arrived is None:
                        waiting[dep].append(s)
                        blocked = True
                        break
                    arrived += delay
                    if arrived > start:
                        start = arrived
            if blocked:
                break
            lengths = [cost["I" if op[0] == "B" and op[1:] in split else op[0]][op[2]] for op in unit]
            if len(unit) == 2:  # the pair's F and B share its F&B time in proportion
                total = sum(lengths)
                lengths = [x * pair_times[s] / total if total else 0.0 for x in lengths]
            for op, length in zip(unit, lengths):
                end = start + length
                finished[op] = end
                stage_events.append(Event(s, op, start, end))
                if op in waiting:
                    ready.extend(waiting.pop(op))
                start = end
            i += len(unit)
        pos[s], free[s] = i, start
    if any(pos[s] < len(schedule.stages[s]) for s in range(p)):
        waits = "; ".join(
            f"GPU {s} waits at {schedule.stages[s][pos[s]]!r} for {Op(*dep)!r}"
            for dep, stages in sorted(waiting.items()) for s in stages
        )
        raise ValueError(f"deadlock: the schedule's order makes stages wait on each other ({waits})")
    return Timeline(schedule, costs, tuple(e for stage in events for e in stage))
