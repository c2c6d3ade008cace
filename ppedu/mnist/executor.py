"""The executor: runs a ppedu schedule op by op on real chunks of a model, in one process.

Each stage of the schedule is a simulated GPU. ``F`` runs a chunk's forward on one micro-batch
and keeps what autograd saved for the backward; ``B`` runs its backward (only the input
gradient when the schedule has a matching ``W``, which later computes the parameter
gradients); a micro-batch's saved activations are dropped as soon as the schedule is done with
them — after W where W is split off, as :data:`~ppedu.memory.FREE_AT_W` counts them. Every op is
timed, the bytes of saved activations are counted per simulated GPU, and the measured durations
are replayed by the simulator itself as if the GPUs ran side by side, next to its prediction
from the same measured costs.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from statistics import fmean

import torch
from torch import nn

import numpy as np

from ppedu.costs import Costs
from ppedu.memory import FREE_AT_W
from ppedu.ops import Op, Schedule
from ppedu.simulate import Timeline, simulate

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
Batch = tuple[torch.Tensor, torch.Tensor]
_Key = tuple[int, int, int]  # (micro-batch, chunk, direction)


@dataclass(frozen=True)
class StepResult:
    """One training step as the executor ran it: what it measured, and timelines built from that.

    ``loss`` is the mini-batch's mean loss; ``durations`` the seconds each op took, in the order
    they ran; ``saved_bytes[(micro-batch, chunk, direction)]`` the bytes of activations its F
    saved for the backward. The timelines and memory curves are computed on first use.
    """

    schedule: Schedule
    loss: float
    durations: Mapping[Op, float]
    saved_bytes: Mapping[_Key, int]

    @cached_property
    def measured(self) -> Timeline:
        """Every op with its measured duration, replayed on simulated GPUs that run side by side
        (an op starts when its GPU is free and its input is ready, hand-overs free); its
        ``costs`` are the measured per-stage mean durations."""
        return simulate(self.schedule, mean_costs(self.schedule, self.durations), FREE_AT_W, self.durations)

    @cached_property
    def predicted(self) -> Timeline:
        """The simulator's timeline under the measured per-stage mean costs."""
        return simulate(self.schedule, self.measured.costs)

    @cached_property
    def memory(self) -> tuple[tuple[tuple[float, int], ...], ...]:
        """Per simulated GPU, ``(time, bytes)`` on ``measured``'s clock: the bytes of saved
        activations alive from that time on, released as the simulator's memory model says
        (from an F's start to its B's end, or its W's end where W is split off)."""
        c = self.schedule.columns
        weight = np.array([self.saved_bytes[op[1:]] for op in c.ops], dtype=float)[c.forward]
        return tuple(tuple(zip(t.tolist(), np.rint(b).astype(int).tolist())) for t, b in self.measured.memory_profile(weight))

    @property
    def peak_activation_bytes(self) -> tuple[int, ...]:
        """Per simulated GPU, the most bytes of saved activations alive at once."""
        return tuple(max((b for _, b in stage), default=0) for stage in self.memory)


def run_schedule(schedule: Schedule, chunks: Sequence[nn.Module], batch: Batch, loss_fn: LossFn,
                 optimizer: torch.optim.Optimizer | None = None) -> StepResult:
    """Run one training step of ``chunks`` (the model cut into ``schedule.chunks`` pieces, as
    :func:`~ppedu.mnist.split_model` makes them) on ``batch`` in ``schedule.microbatches``
    micro-batches, in the schedule's order; then step ``optimizer`` if one is given.

    ``loss_fn(output, target)`` must average over its micro-batch (as ``cross_entropy`` does);
    each micro-batch's loss is weighted by its share of the batch, so the chunks' gradients
    are those of the whole mini-batch's mean loss, as if the model had not been cut. A
    bidirectional schedule (DualPipe) runs direction 1 through a copy of the chunks and adds
    the copy's gradients to the chunks' own, as its two parameter copies would be reduced.

    >>> import torch
    >>> from torch.nn.functional import cross_entropy
    >>> from ppedu.schedules import one_f_one_b
    >>> from ppedu.mnist import max_grad_diff, mlp, reference_gradients, split_model
    >>> model = mlp(layers=4, hidden=16)
    >>> batch = (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,)))
    >>> reference = reference_gradients(model, batch, cross_entropy)
    >>> chunks = split_model(model, 2)
    >>> result = run_schedule(one_f_one_b(2, 4), chunks, batch, cross_entropy)
    >>> len(result.measured.events), max_grad_diff(chunks, reference) < 1e-6
    (16, True)
    """
    schedule.validate()
    inputs, targets = batch
    m, n = schedule.microbatches, len(inputs)
    if len(chunks) != schedule.chunks:
        raise ValueError(f"schedule {schedule.name} runs {schedule.chunks} chunks but {len(chunks)} were given")
    if len(targets) != n:
        raise ValueError(f"batch has {n} inputs but {len(targets)} targets")
    if m > n:
        raise ValueError(f"m={m} micro-batches need a batch of at least {m} examples (got {n})")
    # Each micro-batch its own tensor, as it would be on a GPU (a view would pin the whole batch).
    xs = [x.clone() for x in torch.tensor_split(inputs, m)]
    ys = torch.tensor_split(targets, m)
    copies = [list(chunks)] + [_fresh_copy(chunks) for _ in schedule.placement[1:]]
    for module in copies[0]:
        module.zero_grad(set_to_none=True)
    params = [[[p for p in c.parameters() if p.requires_grad] for c in copy_] for copy_ in copies]
    storages = [[{p.untyped_storage().data_ptr() for p in ps} for ps in copy_] for copy_ in params]
    split = schedule.split_backwards
    last = schedule.chunks - 1

    handed: dict[_Key, torch.Tensor] = {}  # an F's output, waiting for the next chunk's F
    grads: dict[_Key, torch.Tensor] = {}  # the gradient of a chunk's output, waiting for its B
    saved: dict[_Key, tuple[torch.Tensor, torch.Tensor]] = {}  # (chunk input, chunk output) until B
    deferred: dict[_Key, tuple[torch.Tensor, torch.Tensor | None]] = {}  # (output, its gradient) from B to W
    sizes: dict[_Key, int] = {}
    loss = 0.0
    durations: dict[Op, float] = {}
    for op in _execution_order(schedule):
        kind, mb, c, d = op
        key, module, ps = (mb, c, d), copies[d][c], params[d][c]
        start = time.perf_counter()
        if kind == "F":
            x = (xs[mb] if c == 0 else handed.pop((mb, c - 1, d))).detach().requires_grad_(c > 0)
            counter = _SavedBytes(storages[d][c])
            with counter.hooks():
                out = module(x)
                if c == last:  # the last chunk's output is its share of the mini-batch's loss
                    out = loss_fn(out, ys[mb]) * (len(xs[mb]) / n)
            saved[key], sizes[key] = (x, out), counter.bytes
            if c == last:
                loss += out.item()
            else:
                handed[key] = out.detach()
        elif kind == "B":
            x, out = saved.pop(key)
            g = None if c == last else grads.pop(key)
            if key in split:  # input gradient only; W will need the graph again
                if c:
                    grads[mb, c - 1, d] = torch.autograd.grad(out, x, g, retain_graph=True)[0]
                deferred[key] = (out, g)
            elif c or ps:  # autograd accumulates into .grad itself: x.grad and the parameters'
                torch.autograd.backward(out, g, inputs=[x, *ps] if c else ps)
                if c and x.grad is not None:
                    grads[mb, c - 1, d] = x.grad
            del x, out
        else:
            out, g = deferred.pop(key)
            if ps:
                torch.autograd.backward(out, g, inputs=ps)
            del out
        durations[op] = time.perf_counter() - start
    if len(copies) > 1:  # DualPipe: reduce the second parameter copy into the first
        for own, other in zip(params[0], params[1]):
            _accumulate(own, [p.grad for p in other])
    if optimizer is not None:
        optimizer.step()
    return StepResult(schedule, loss, durations, sizes)


def reference_gradients(model: nn.Module, batch: Batch, loss_fn: LossFn) -> list[torch.Tensor]:
    """The gradients of ``loss_fn(model(inputs), targets)`` on the whole batch, unpipelined, in
    ``model.parameters()`` order; computed on a copy, so ``model`` is left as it was.

    >>> import torch
    >>> from ppedu.mnist import mlp
    >>> model = mlp(layers=2, hidden=4)
    >>> grads = reference_gradients(model, (torch.zeros(3, 1, 28, 28), torch.tensor([0, 1, 2])),
    ...                             torch.nn.functional.cross_entropy)
    >>> [tuple(g.shape) for g in grads], model[0][1].weight.grad is None
    ([(4, 784), (4,), (10, 4), (10,)], True)
    """
    twin = _fresh_copy([model])[0]
    loss_fn(twin(batch[0]), batch[1]).backward()
    return [p.grad if p.grad is not None else torch.zeros_like(p) for p in twin.parameters()]


def max_grad_diff(chunks: Sequence[nn.Module], reference: Sequence[torch.Tensor]) -> float:
    """The largest absolute difference between the chunks' gradients and ``reference``'s.

    >>> import torch
    >>> layer = torch.nn.Linear(2, 1)
    >>> layer.weight.grad, layer.bias.grad = torch.ones(1, 2), torch.zeros(1)
    >>> max_grad_diff([layer], [torch.ones(1, 2), torch.full((1,), 0.5)])
    0.5
    """
    own = [p.grad if p.grad is not None else torch.zeros_like(p) for c in chunks for p in c.parameters()]
    if len(own) != len(reference):
        raise ValueError(f"the chunks have {len(own)} parameters but the reference has {len(reference)}")
    return max((float((a - b).abs().max()) for a, b in zip(own, reference)), default=0.0)


class _SavedBytes:
    """Counts the bytes autograd saves for the backward, each storage once, parameters excluded."""

    def __init__(self, parameter_storages: set[int]) -> None:
        self.bytes = 0
        self._seen = set(parameter_storages)

    def hooks(self) -> torch.autograd.graph.saved_tensors_hooks:
        return torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in self._seen:
            self._seen.add(storage.data_ptr())
            self.bytes += storage.nbytes()
        return t


def _accumulate(params: Sequence[torch.Tensor], grads: Sequence[torch.Tensor | None]) -> None:
    for p, g in zip(params, grads):
        if g is not None:
            p.grad = g.detach().clone() if p.grad is None else p.grad.add_(g)


def _fresh_copy(modules: Sequence[nn.Module]) -> list[nn.Module]:
    copies = copy.deepcopy(list(modules))
    for module in copies:
        module.zero_grad(set_to_none=True)
    return copies


@lru_cache(maxsize=64)
def _execution_order(schedule: Schedule) -> tuple[Op, ...]:
    """An order in which one process can run every op: the schedule's per-stage order, its
    stages interleaved as a unit-cost simulation runs them (so every input is ready)."""
    timeline = simulate(schedule, Costs(f=1, b=1, w=1))
    return tuple(e.op for e in sorted(timeline.events, key=lambda e: (e.start, e.stage)))


def mean_costs(schedule: Schedule, durations: Mapping[Op, float]) -> Costs:
    """Per stage, the mean measured F, B (input-gradient part where W is split off) and W: the costs under
    which the simulator predicts a measured step."""
    f, b, w = [], [], []
    for s, ops in enumerate(schedule.stages):
        ws = [durations[op] for op in ops if op.kind == "W"]
        bs = [durations[op] for op in ops if op.kind == "B" and (not ws or op[1:] in schedule.split_backwards)]
        f.append(fmean([durations[op] for op in ops if op.kind == "F"] or [0.0]))
        b.append(fmean(bs or [0.0]))
        w.append(fmean(ws or [0.0]))
    return Costs(f=tuple(f), b=tuple(b), w=tuple(w))
