"""The lab across processes: one operating-system process per GPU of a schedule, the model's chunks
on the processes the schedule places them on, and every hand-over an explicit message over
``torch.distributed`` (gloo, on CPU): the sending GPU's ``send`` of an activation or a gradient, the
receiving GPU's ``recv``.

Two ways to move a message:

- ``"blocking"``: ``dist.send`` and ``dist.recv``. Gloo's send returns only once the receiver has
  posted the matching receive — a rendezvous — so a GPU that sends waits for its neighbour to get
  that far in its own order. Two neighbours that send to each other at once (an activation up, a
  gradient down: 1F1B's steady state) each wait for the other forever, though the simulator, whose
  sends never wait, finds the order valid.
- ``"overlapped"``: ``dist.isend`` and ``dist.irecv``. A send is posted and forgotten until the end
  of the step; each GPU posts the receive of its next operation's input before it computes the
  current one, so the transfer runs under the computation. Only a real dependency can hold a GPU up.

A GPU that waits longer than ``timeout`` seconds gives up and says where it was stuck (:class:`Wait`);
the run then reports every GPU's wait, the cycle of a deadlock in words. A run that finishes
reports each operation's start and end on one clock (:attr:`ProcessRun.measured`), beside the
simulator's prediction from the measured costs (:attr:`ProcessRun.predicted`), the step's loss and
the largest difference of its gradients from the unpipelined model's.

Worker code lives here, not in a notebook: ``multiprocessing`` starts each process afresh and
imports this module there.
"""

from __future__ import annotations

import datetime
import os
import queue as queues
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from statistics import median
from typing import Any

import numpy as np

from ppedu.costs import Costs
from ppedu.ops import Op, Schedule
from ppedu.simulate import Timeline, simulate

MODES = ("blocking", "overlapped")
#: The lab's model: an MLP of this many layers, cut into the schedule's chunks.
LAYERS = 8


@dataclass(frozen=True)
class Record:
    """One operation as a process ran it, in seconds since the step began on every process: when its
    input was there (``ready``), its computation, and when its output's send had gone (``sent``)."""

    op: Op
    ready: float
    start: float
    end: float
    sent: float


@dataclass(frozen=True)
class Wait:
    """Where a process was when its time ran out: at ``op``, doing ``action``."""

    rank: int
    op: Op | None
    action: str

    def __str__(self) -> str:
        return f"GPU {self.rank}" + (f" at {self.op!r}" if self.op else "") + f": {self.action}"


@dataclass(frozen=True)
class ProcessRun:
    """One training step of ``schedule`` across ``schedule.p`` processes, as it ran."""

    schedule: Schedule
    mode: str
    records: tuple[tuple[Record, ...], ...]
    waits: tuple[Wait, ...]
    loss: float | None
    max_grad_diff: float | None

    @property
    def finished(self) -> bool:
        return not self.waits

    def explain(self) -> str:
        """Why the run stopped, one line per GPU, or that it finished."""
        if self.finished:
            return f"{self.schedule.name} ({self.mode}): finished on {self.schedule.p} processes"
        return f"{self.schedule.name} ({self.mode}): deadlock\n" + "\n".join(map(str, self.waits))

    @cached_property
    def measured(self) -> Timeline:
        """The step as it ran: each operation's computation on the processes' common clock (the
        hand-overs are the gaps). Its ``costs`` are the measured per-GPU means, as the prediction's."""
        if not self.finished:
            raise ValueError(f"the run did not finish, so it has no timeline:\n{self.explain()}")
        c = self.schedule.columns
        ran = self._by_op
        start = np.array([ran[op].start for op in c.ops])
        end = np.array([ran[op].end for op in c.ops])
        waited = np.full(len(c.ops), -1, dtype=np.int64)
        for i, need in enumerate(c.needs.tolist()):
            first = i == c.start[c.stage[i]]
            if need >= 0 and (first or start[i] > end[i - 1] + 1e-9):  # it waited for its input
                waited[i] = need
        return Timeline(self.schedule, self._costs(), start, end, waited)

    @cached_property
    def predicted(self) -> Timeline:
        """The simulator's timeline of the same order under the measured costs: per GPU the mean F, B
        and W, and for every hand-over the median latency measured between a send's computation ending
        and its receiver having the data (where the receiver was already waiting)."""
        return simulate(self.schedule, self._costs())

    def _costs(self) -> Costs:
        from ppedu.mnist.executor import mean_costs

        durations = {op: r.end - r.start for op, r in self._by_op.items()}
        return replace(mean_costs(self.schedule, durations), comm=self.hand_over_latency)

    @cached_property
    def _by_op(self) -> dict[Op, Record]:
        return {r.op: r for records in self.records for r in records}

    @cached_property
    def hand_over_latency(self) -> float:
        """The median time from an operation's computation ending to its output being ready on another
        GPU that was already waiting for it (0 if no receiver ever waited)."""
        ran = self._by_op
        chunks = self.schedule.chunks
        samples = []
        for records in self.records:
            previous = 0.0
            for r in records:
                source = r.op.needs(chunks)
                if source is not None and self.schedule.hand_over(r.op) and ran[source].end >= previous:
                    samples.append(max(0.0, r.ready - ran[source].end))  # posted before the data came
                previous = r.sent
        return median(samples) if samples else 0.0


def run_processes(schedule: Schedule, mode: str = "overlapped", *, timeout: float = 20.0, hidden: int = 512,
                  batch_size: int = 128, seed: int = 0, warmup: int = 1, repeats: int = 5) -> ProcessRun:
    """Run training steps of ``schedule`` on ``schedule.p`` new processes (gloo, CPU), each hand-over sent
    as ``mode`` says, giving up ``timeout`` seconds into a wait: ``warmup`` steps untimed, then ``repeats``
    timed ones, of which the fastest is reported (a process the machine set aside for a moment only ever
    makes a step longer).

    The model is the lab's MLP (``hidden`` units, :data:`LAYERS` layers, initialised from ``seed``), cut
    into ``schedule.chunks`` chunks; the batch the first ``batch_size`` training images, in
    ``schedule.microbatches`` micro-batches. One direction only: a schedule with two copies of the
    model (DualPipe, Chimera) is refused.
    """
    import torch.multiprocessing as mp

    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)} (got {mode!r})")
    schedule.validate()
    if len(schedule.placement) > 1:
        raise ValueError(f"{schedule.name} runs two copies of the model in two directions; the lab runs one")
    if schedule.chunks > LAYERS:
        raise ValueError(f"the lab's model has {LAYERS} layers, fewer than {schedule.chunks} chunks")
    if not 0 < timeout:
        raise ValueError(f"timeout is a number of seconds above 0 (got {timeout})")
    if warmup < 0 or repeats < 1:
        raise ValueError(f"run_processes needs warmup ≥ 0 and repeats ≥ 1 (got warmup={warmup}, repeats={repeats})")
    context = mp.get_context("spawn")
    results: Any = context.Queue()
    with tempfile.TemporaryDirectory(prefix="ppedu-processes-") as folder:
        rendezvous = os.path.join(folder, "rendezvous")  # a file store: no port to pick or to collide on
        settings = (schedule, mode, timeout, hidden, batch_size, seed, warmup, repeats, rendezvous)
        workers = [context.Process(target=_worker, args=(rank, settings, results), daemon=True)
                   for rank in range(schedule.p)]
        reports: dict[int, dict[str, Any]] = {}
        try:
            for worker in workers:
                worker.start()
            deadline = time.monotonic() + 120 + (warmup + repeats + 1) * timeout
            while len(reports) < schedule.p and time.monotonic() < deadline:
                try:
                    report = results.get(timeout=1.0)
                    reports[report["rank"]] = report
                except queues.Empty:
                    if not any(w.is_alive() for w in workers):
                        break
        finally:  # also when the caller interrupts: no process outlives the run
            for worker in workers:
                worker.join(timeout=5)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
    waits = tuple(w for rank in range(schedule.p) for w in _waits(rank, reports.get(rank)))
    steps = [reports.get(rank, {}).get("steps", []) for rank in range(schedule.p)]
    fastest = min(range(repeats), key=lambda k: max(step[k][-1][3] for step in steps if step)) if not waits else 0
    records = tuple(tuple(Record(Op(*r[0]), *r[1:]) for r in (step[fastest] if step else ())) for step in steps)
    last = reports.get(schedule.placement[0][-1], {})
    return ProcessRun(schedule, mode, records, waits, last.get("loss"), reports.get(0, {}).get("max_grad_diff"))


def _waits(rank: int, report: dict[str, Any] | None) -> list[Wait]:
    if report is None:
        return [Wait(rank, None, "the process ended without a report")]
    if report.get("stuck") is None:
        return []
    op, action = report["stuck"]
    return [Wait(rank, Op(*op) if op else None, action)]


# -- in each process ----------------------------------------------------------------------------------

def _worker(rank: int, settings: tuple, results: Any) -> None:
    """One GPU of the pipeline: set up, run ``warmup`` + 1 steps of its order, report the last."""
    import torch
    import torch.distributed as dist

    schedule, mode, timeout, hidden, batch_size, seed, warmup, repeats, rendezvous = settings
    torch.set_num_threads(1)  # several processes share the machine's cores
    report: dict[str, Any] = {"rank": rank, "stuck": None}
    try:
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=schedule.p,
                                timeout=datetime.timedelta(seconds=timeout))
    except Exception as error:  # noqa: BLE001 (the parent reports it as this GPU's wait)
        report["stuck"] = (None, f"could not join the process group: {error}"[:300])
        results.put(report)
        return
    try:
        step = _Step(rank, schedule, mode, timeout, hidden, batch_size, seed)
        for _ in range(warmup):
            step.run()
        report["steps"] = [step.run() for _ in range(repeats)]
        report["loss"] = step.loss
        report["max_grad_diff"] = step.gradient_check()
    except _Stuck as stuck:
        report["stuck"] = (tuple(stuck.op) if stuck.op else None, stuck.action)
    finally:
        results.put(report)
        if report["stuck"] is None:
            dist.destroy_process_group()  # a stuck process leaves at once: its peers' waits fail with it


class _Stuck(Exception):
    def __init__(self, op: Op | None, action: str) -> None:
        super().__init__(action)
        self.op, self.action = op, action


class _Step:
    """One process's share of a training step: its chunks, the data, and its order of operations."""

    def __init__(self, rank: int, schedule: Schedule, mode: str, timeout: float, hidden: int, batch_size: int,
                 seed: int) -> None:
        import torch
        from torch.nn.functional import cross_entropy

        from ppedu.mnist.data import load_mnist
        from ppedu.mnist.models import mlp, split_model

        self.rank, self.schedule, self.mode = rank, schedule, mode
        self.timeout = datetime.timedelta(seconds=timeout)
        torch.manual_seed(seed)
        self.model = mlp(layers=LAYERS, hidden=hidden)
        self.chunks = split_model(self.model, schedule.chunks)
        images, labels = load_mnist("train", limit=batch_size)
        self.batch = (images, labels)
        self.xs = [x.clone() for x in torch.tensor_split(images, schedule.microbatches)]
        self.ys = torch.tensor_split(labels, schedule.microbatches)
        self.loss_fn = cross_entropy
        with torch.no_grad():  # the shape of every chunk's output, to receive into
            out, self.shapes = images[:1], []
            for chunk in self.chunks:
                out = chunk(out)
                self.shapes.append(tuple(out.shape[1:]))
        self.mine = [c for c, home in enumerate(schedule.placement[0]) if home == rank]
        self.loss = 0.0

    def _tag(self, kind: str, mb: int, chunk: int) -> int:
        """A message's tag, unique in the step: an activation into ``chunk`` or a gradient out of it."""
        return ((0 if kind == "activation" else 1) * self.schedule.microbatches + mb) * self.schedule.chunks + chunk

    def _message(self, op: Op) -> tuple[str, int, int, int] | None:
        """``(what, from GPU, tag, boundary chunk)`` for ``op``'s input if another GPU sends it."""
        pair = self.schedule.hand_over(op)
        if pair is None:
            return None
        if op.kind == "F":
            return "activation", pair[0], self._tag("activation", op.microbatch, op.chunk), op.chunk - 1
        return "gradient", pair[0], self._tag("gradient", op.microbatch, op.chunk), op.chunk

    def run(self) -> list[tuple]:
        import torch
        import torch.distributed as dist

        schedule, last = self.schedule, self.schedule.chunks - 1
        for c in self.mine:
            self.chunks[c].zero_grad(set_to_none=True)
        ops = schedule.stages[self.rank]
        split = schedule.split_backwards
        local: dict[tuple, torch.Tensor] = {}  # inputs that stay on this GPU
        saved: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}
        deferred: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor | None]] = {}
        posted: dict[int, tuple[Any, torch.Tensor]] = {}  # op index → (pending receive, its buffer)
        sends: list[tuple[Any, torch.Tensor]] = []
        records = []
        self.loss = 0.0
        dist.barrier()
        t0 = time.perf_counter()

        def post(i: int) -> None:
            """Post the receive of op ``i``'s input (overlapped mode), once."""
            if i < len(ops) and i not in posted and (message := self._message(ops[i])) is not None:
                what, source, tag, boundary = message
                buffer = torch.empty((len(self.xs[ops[i].microbatch]), *self.shapes[boundary]))
                posted[i] = (dist.irecv(buffer, source, tag=tag), buffer)

        def receive(i: int, op: Op) -> torch.Tensor | None:
            message = self._message(op)
            if message is None:
                return None
            what, source, tag, boundary = message
            action = f"waiting to receive the {what} of micro-batch {op.microbatch} from GPU {source}"
            try:
                if self.mode == "overlapped":
                    post(i)
                    work, buffer = posted.pop(i)
                    work.wait(self.timeout)
                else:
                    buffer = torch.empty((len(self.xs[op.microbatch]), *self.shapes[boundary]))
                    dist.recv(buffer, source, tag=tag)
            except RuntimeError:
                raise _Stuck(op, action) from None
            return buffer

        def send(op: Op, what: str, tensor: torch.Tensor, target: int, tag: int) -> None:
            tensor = tensor.detach().contiguous()
            if self.mode == "overlapped":
                sends.append((dist.isend(tensor, target, tag=tag), tensor))
                return
            try:
                dist.send(tensor, target, tag=tag)
            except RuntimeError:
                raise _Stuck(op, f"waiting for GPU {target} to receive the {what} of micro-batch {op.microbatch}") from None

        for i, op in enumerate(ops):
            kind, mb, c, _ = op
            arrived = receive(i, op)
            ready = time.perf_counter() - t0
            if self.mode == "overlapped":
                post(i + 1)  # the next input travels while this op computes
            start = time.perf_counter() - t0
            chunk = self.chunks[c]
            params = [q for q in chunk.parameters() if q.requires_grad]
            if kind == "F":
                x = self.xs[mb] if c == 0 else (arrived if arrived is not None else local.pop(("a", mb, c)))
                x = x.detach().requires_grad_(c > 0)
                out = chunk(x)
                if c == last:
                    out = self.loss_fn(out, self.ys[mb]) * (len(self.xs[mb]) / len(self.batch[0]))
                    self.loss += out.item()
                saved[mb, c] = (x, out)
            elif kind == "B":
                x, out = saved.pop((mb, c))
                g = None if c == last else (arrived if arrived is not None else local.pop(("g", mb, c)))
                if (mb, c, 0) in split:
                    grad_in = torch.autograd.grad(out, x, g, retain_graph=True)[0] if c else None
                    deferred[mb, c] = (out, g)
                else:
                    torch.autograd.backward(out, g, inputs=[x, *params] if c else params)
                    grad_in = x.grad if c else None
            else:
                out, g = deferred.pop((mb, c))
                torch.autograd.backward(out, g, inputs=params)
            end = time.perf_counter() - t0
            if kind == "F" and c < last:
                target = schedule.placement[0][c + 1]
                if target == self.rank:
                    local["a", mb, c + 1] = out.detach()
                else:
                    send(op, "activation", out, target, self._tag("activation", mb, c + 1))
            elif kind == "B" and c > 0:
                assert grad_in is not None  # a backward past the first chunk has an input gradient to pass on
                target = schedule.placement[0][c - 1]
                if target == self.rank:
                    local["g", mb, c - 1] = grad_in
                else:
                    send(op, "gradient", grad_in, target, self._tag("gradient", mb, c - 1))
            records.append((tuple(op), ready, start, end, time.perf_counter() - t0))
        for work, _ in sends:  # every message this GPU sent has been received
            try:
                work.wait(self.timeout)
            except RuntimeError:
                raise _Stuck(None, "finished its operations; a GPU never received what it sent") from None
        return records

    def gradient_check(self) -> float | None:
        """On GPU 0, the largest difference between the pipelined step's gradients (gathered from every GPU)
        and the unpipelined model's on the same batch; ``None`` elsewhere."""
        import torch
        import torch.distributed as dist

        from ppedu.mnist.executor import reference_gradients

        grads = {c: [(q.grad if q.grad is not None else torch.zeros_like(q)).detach() for q in self.chunks[c].parameters()]
                 for c in self.mine}
        gathered: list[Any] = [None] * self.schedule.p
        dist.gather_object(grads, gathered if self.rank == 0 else None, dst=0)
        if self.rank != 0:
            return None
        merged = {c: g for part in gathered if part for c, g in part.items()}
        pipelined = [g for c in sorted(merged) for g in merged[c]]
        reference = reference_gradients(self.model, self.batch, self.loss_fn)
        return max(float((a - b).abs().max()) for a, b in zip(pipelined, reference))


def simulator_verdict(schedule: Schedule) -> str:
    """What the simulator, whose sends never wait, says of ``schedule``'s order: that it runs, or the
    deadlock it finds (which GPU waits at which operation for which).

    >>> from ppedu.schedules import gpipe
    >>> simulator_verdict(gpipe(2, 2))
    'runs: makespan 6 under unit costs'
    """
    try:
        return f"runs: makespan {simulate(schedule).makespan:g} under unit costs"
    except ValueError as error:
        return str(error)


def steps_compared(runs: Sequence[ProcessRun]) -> list[tuple[str, str, str]]:
    """``(schedule, mode, what happened)`` of each run: its measured and predicted step in milliseconds,
    or that it deadlocked."""
    return [(r.schedule.name, r.mode, f"measured {r.measured.makespan * 1e3:.1f} ms, predicted "
             f"{r.predicted.makespan * 1e3:.1f} ms" if r.finished else "deadlock") for r in runs]
