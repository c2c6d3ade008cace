"""The simulator: replays a schedule under a cost model and measures time, idleness and memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ppedu.arrays import as_list, gather, largest, spans, vector
from ppedu.costs import Costs
from ppedu.critical import critical_path
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
    by stage), as numpy arrays (lists where numpy is not installed); ``waited[i]`` is the op whose arrival set op ``i``'s start, or ``-1`` if it started
    as soon as its GPU was free. Slots are measured in time units: ``total_slots`` is GPUs ×
    makespan, so under unit costs they are the cells of the textbook's spacetime grid.
    ``memory`` says when activations are released (:mod:`ppedu.memory`).
    """

    schedule: Schedule
    costs: Costs
    start: Any
    end: Any
    waited: Any
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
        return tuple(map(Event, as_list(c.stage), c.ops, as_list(self.start), as_list(self.end)))

    @cached_property
    def whole_steps(self) -> bool:
        """Whether every op starts and ends on a whole time step (a diagram's time then counts steps)."""
        return all(float(t).is_integer() for t in (*as_list(self.start), *as_list(self.end)))

    @cached_property
    def makespan(self) -> float:
        return float(largest(self.end))

    @property
    def total_slots(self) -> float:
        return self.p * self.makespan

    @cached_property
    def busy_per_stage(self) -> tuple[float, ...]:
        return tuple(spans(self.schedule.columns.stage, self.start, self.end, self.p))

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
    def _memory(self) -> tuple[tuple[Any, Any], ...]:
        return self.memory_profile(None)

    def memory_profile(self, weight: Sequence[float] | None) -> tuple[tuple[Any, Any], ...]:
        """Per stage, ``(times, alive)`` as arrays: what the F of each op allocates is ``weight[i]`` (by op
        index; ``None``: one chunk's activations each), released as ``memory`` says."""
        c = self.schedule.columns
        w = [1.0] * len(c.ops) if weight is None else [float(x) for x in as_list(weight)]
        out = profile(as_list(c.stage), as_list(c.kind), as_list(c.split), as_list(c.forward), as_list(self.start),
                      as_list(self.end), w, self.p, self.memory)
        whole = weight is None and self.memory.kept_for_w in (0.0, 1.0)  # whole chunks: count them
        return tuple((vector(t), vector([round(x) for x in a], int) if whole else vector(a)) for t, a in out)

    def activations(self, stage: int) -> tuple[Any, Any]:
        """Chunk-activations alive on ``stage`` over time: ``counts[i]`` holds from ``times[i]`` on."""
        return self._memory[stage]

    @property
    def peak_activations(self) -> tuple[float, ...]:
        """Per stage, the most chunk-activations alive at once (one chunk's worth each)."""
        return tuple(_whole(largest(c, 0)) for _, c in self._memory)

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
        weight = [per_chunk[k] for k in as_list(self.schedule.columns.chunk)]
        return tuple(float(largest(v, 0)) for _, v in self.memory_profile(weight))

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

    def critical_path(self) -> tuple[Event, ...]:
        """The operations that set the makespan, first to last (:mod:`ppedu.critical`): each started when the one
        before it on the path ended, or its output arrived.

        >>> from ppedu.schedules import one_f_one_b
        >>> [f"{e.op.kind}{e.op.microbatch}" for e in simulate(one_f_one_b(2, 2)).critical_path()]
        ['F0', 'F0', 'B0', 'F1', 'B1', 'B1']
        """
        return critical_path(self)

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
        # Per kind (and, for B, whether W is split off), stage and chunk: the op's duration, looked up once.
        table = [[[[0.0] * chunks for _ in range(p)] for _ in range(3)] for _ in range(2)]
        for row in schedule.placement:
            for k, s in enumerate(row):
                for split in (0, 1):
                    table[split][0][s][k] = costs.forward(s, k)
                    table[split][1][s][k] = costs.backward(s, not split, k)
                    table[split][2][s][k] = costs.weight(s, k)
        length = gather(table, c.split, c.kind, c.stage, c.chunk)
    else:
        length = [float(durations[op]) for op in c.ops]
    # Per kind and direction, the hand-over into chunk k+1 (an F's input) and back into chunk k (a B's); none into
    # chunk 0's F (the data), the last chunk's B (its own F's loss) or a W (its own B's).
    delays = [[[0.0] * chunks for _ in schedule.placement] for _ in range(3)]
    for d, row in enumerate(schedule.placement):
        for k in range(last):
            delays[0][d][k + 1] = costs.hand_over(row[k], row[k + 1], k)
            delays[1][d][k] = costs.hand_over(row[k + 1], row[k], k)
    delay = gather(delays, c.kind, c.direction, c.chunk)
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
        r = replay(as_list(c.start), as_list(c.needs), delay, length, glued)
    except Deadlock as stuck:
        waits = "; ".join(f"GPU {q} waits at {c.ops[x]!r} for {c.ops[need]!r}"
                          for q, x, need in sorted(stuck.stuck, key=lambda s: c.ops[s[2]]))
        raise ValueError(f"deadlock: the schedule's order makes stages wait on each other ({waits})") from None
    return Timeline(schedule, costs, vector(r.start), vector(r.end), vector(r.waited, int), memory)
