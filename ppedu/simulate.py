"""The simulator: replays a schedule under a cost model and measures time, idleness and memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ppedu.costs import Costs
from ppedu.idle import IdleCauses, idle_causes
from ppedu.memory import FREE_AT_W, MemoryModel, profile
from ppedu.ops import Op, Schedule
from ppedu.replay import Deadlock, replay


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


@dataclass(frozen=True, eq=False)
class Timeline:
    """The result of :func:`simulate`: when each op ran, with the course's metrics as properties.

    ``start``, ``end`` and ``waited`` hold one entry per op in ``schedule.columns`` order (stage
    by stage); ``waited[i]`` is the op whose arrival set op ``i``'s start, or ``-1`` if it started
    as soon as its GPU was free. Slots are measured in time units: ``total_slots`` is GPUs ×
    makespan, so under unit costs they are the cells of the textbook's spacetime grid.
    ``memory`` says when activations are released (:mod:`ppedu.memory`).
    """

    schedule: Schedule
    costs: Costs
    start: np.ndarray
    end: np.ndarray
    waited: np.ndarray
    memory: MemoryModel = FREE_AT_W

    @property
    def p(self) -> int:
        """How many GPUs (stages) ran, as :attr:`Schedule.p <ppedu.ops.Schedule.p>`."""
        return self.schedule.p

    @property
    def stages(self) -> int:
        """The same as :attr:`p`, kept for the chapters that count GPUs with it; prefer ``p``
        (a :class:`~ppedu.ops.Schedule`'s ``stages`` are its per-GPU op lists)."""
        return self.schedule.p

    @cached_property
    def events(self) -> tuple[Event, ...]:
        """Every op as it ran, stage by stage, each stage in its order."""
        c = self.schedule.columns
        return tuple(map(Event, c.stage.tolist(), c.ops, self.start.tolist(), self.end.tolist()))

    @cached_property
    def makespan(self) -> float:
        return float(self.end.max(initial=0.0))

    @property
    def total_slots(self) -> float:
        return self.p * self.makespan

    @cached_property
    def busy_per_stage(self) -> tuple[float, ...]:
        busy = np.bincount(self.schedule.columns.stage, self.end - self.start, minlength=self.p)
        return tuple(busy.tolist())

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
        return self.memory_profile(None)

    def memory_profile(self, weight: np.ndarray | None) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Per stage, ``(times, alive)``: what the F of each op allocates is ``weight[i]`` (by op
        index; ``None``: one chunk's activations each), released as ``memory`` says."""
        c = self.schedule.columns
        w = np.ones(len(c.ops)) if weight is None else np.asarray(weight, dtype=float)
        out = profile(c.stage, c.kind, c.split, c.forward, self.start, self.end, w, self.p, self.memory)
        if weight is None and self.memory.kept_for_w in (0.0, 1.0):  # whole chunks: count them
            out = tuple((t, np.rint(a).astype(int)) for t, a in out)
        return out

    def activations(self, stage: int) -> tuple[np.ndarray, np.ndarray]:
        """Chunk-activations alive on ``stage`` over time: ``counts[i]`` holds from ``times[i]`` on."""
        return self._memory[stage]

    @property
    def peak_activations(self) -> tuple[float, ...]:
        """Per stage, the most chunk-activations alive at once (one chunk's worth each)."""
        return tuple(_whole(c.max(initial=0)) for _, c in self._memory)

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
        weight = np.asarray(per_chunk, dtype=float)[self.schedule.columns.chunk]
        return tuple(float(v.max(initial=0)) for _, v in self.memory_profile(weight))

    def idle_causes(self) -> IdleCauses:
        """Every idle interval tagged with its cause, rolled up per GPU and in total
        (:mod:`ppedu.idle`): the bubble as "fill + drain + hand-over + imbalance + …".

        >>> from ppedu.schedules import one_f_one_b
        >>> print(simulate(one_f_one_b(4, 8), Costs(f=(1, 1, 2, 1), b=(1, 1, 2, 1))).idle_causes())
        idle 64 of 144 slots = fill 16 + drain 22 + imbalance 26
        """
        return self._idle_causes

    @cached_property
    def _idle_causes(self) -> IdleCauses:
        return idle_causes(self)

    def on_stage(self, stage: int) -> tuple[Event, ...]:
        a, b = self.schedule.columns.start[stage : stage + 2]
        return self.events[a:b]

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
            "idle_causes": self.idle_causes().totals(),
        }


def _shared(table: np.ndarray) -> np.ndarray:
    """``table`` as Python floats in an object array: indexing it per op makes lists whose equal
    entries share one float object, so the replay's inputs cost no allocation per op."""
    return table.astype(object)


def _whole(x: float) -> float:
    return int(x) if float(x).is_integer() else float(x)


def simulate(schedule: Schedule, costs: Costs | None = None, memory: MemoryModel = FREE_AT_W,
             durations: Mapping[Op, float] | None = None) -> Timeline:
    """Run ``schedule`` under ``costs``: each stage takes its ops in order, and an op starts when
    its stage is free and its input (:meth:`~ppedu.ops.Op.needs`) has arrived — plus the
    hand-over's ``comm`` if it came from another stage. ``durations``, if given, are each op's
    own duration (measured ones, say) in place of ``costs``' compute times.

    One pass of the replay loop (:func:`ppedu.replay.replay`), each op visited once.

    >>> from ppedu.schedules import gpipe
    >>> t = simulate(gpipe(4, 4))
    >>> t.makespan, t.idle_slots, t.total_slots
    (14.0, 24.0, 56.0)
    """
    costs = costs or Costs()
    schedule.validate()
    costs.check(schedule.p, schedule.chunks)
    c = schedule.columns
    p, chunks, last = schedule.p, schedule.chunks, schedule.chunks - 1
    if durations is None:
        # Per stage and chunk: F, full B, input-gradient B and W durations, looked up once.
        table = np.zeros((4, p, chunks))
        for row in schedule.placement:
            for k, s in enumerate(row):
                table[:, s, k] = (costs.forward(s, k), costs.backward(s, True, k), costs.backward(s, False, k),
                                  costs.weight(s, k))
        code = c.kind + c.split  # F 0, full B 1, split B 2, W 3 (a W is always split)
        length = _shared(table)[code, c.stage, c.chunk].tolist()
    else:
        length = np.array([durations[op] for op in c.ops], dtype=float).tolist()
    # Per direction, the hand-over into chunk k+1 (forward) and back into chunk k (backward);
    # row 2 is for ops that take no hand-over.
    delays = np.zeros((3, len(schedule.placement), chunks))
    for d, row in enumerate(schedule.placement):
        for k in range(last):
            delays[0, d, k + 1] = costs.hand_over(row[k], row[k + 1], k)
            delays[1, d, k] = costs.hand_over(row[k + 1], row[k], k)
    moved = (c.kind < 2) & ~((c.kind == 1) & (c.chunk == last))
    delay = _shared(delays)[np.where(moved, c.kind, 2), c.direction, c.chunk].tolist()
    glued = []
    if costs.fb is not None and schedule.overlapped:
        where = {op: i for i, op in enumerate(c.ops) if op in schedule.overlapped}
        for b in where.values():  # the pair's F and B share its F&B time in proportion
            f, s = b - 1, int(c.stage[b])
            total = length[f] + length[b]
            scale = (costs.pair(s) or 0.0) / total if total else 0.0
            length[f], length[b] = length[f] * scale, length[b] * scale
            glued.append(b)
    try:
        r = replay(c.start.tolist(), c.needs.tolist(), delay, length, glued)
    except Deadlock as stuck:
        waits = "; ".join(f"GPU {q} waits at {c.ops[x]!r} for {c.ops[need]!r}"
                          for q, x, need in sorted(stuck.stuck, key=lambda s: c.ops[s[2]]))
        raise ValueError(f"deadlock: the schedule's order makes stages wait on each other ({waits})") from None
    start = np.fromiter(r.start, float, len(c.ops))
    # Each end is its start plus its length, the same float sum the loop made: cheaper in bulk.
    end = start + np.fromiter(length, float, len(length))
    return Timeline(schedule, costs, start, end, np.frombuffer(r.waited, np.int64), memory)
