"""Timing a training step so that the measured diagram can be set beside the predicted one.

A single timed step says little: the first run of a new batch shape pays for memory allocation
and autograd's set-up (on the lab's model, one cold forward can take most of a step), and on a
shared machine any op can be preempted. So :func:`measure_step` warms up first, then runs the
step several times on one thread and keeps each op's fastest run: noise only ever adds time. The per-stage
costs the simulator predicts from are then the means of those robust per-op durations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from ppedu.mnist.executor import Batch, LossFn, StepResult, run_schedule
from ppedu.ops import Schedule

#: How far apart the predicted and the measured makespan may be, as a share of the measured one.
AGREEMENT = 0.10


def measure_step(schedule: Schedule, chunks: Sequence[nn.Module], batch: Batch, loss_fn: LossFn,
                 warmup: int = 2, repeats: int = 9) -> StepResult:
    """Run the step ``warmup`` times untimed, then ``repeats`` times, and return it with each op's
    fastest duration (the chunks' gradients are those of one step, as after :func:`run_schedule`).

    >>> import torch
    >>> from torch.nn.functional import cross_entropy
    >>> from ppedu.schedules import one_f_one_b
    >>> from ppedu.mnist import mlp, split_model
    >>> batch = (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,)))
    >>> step = measure_step(one_f_one_b(2, 4), split_model(mlp(layers=4, hidden=8), 2), batch, cross_entropy)
    >>> len(step.durations), abs(gap(step)) < 1
    (16, True)
    """
    if warmup < 0 or repeats < 1:
        raise ValueError(f"measure_step needs warmup ≥ 0 and repeats ≥ 1 (got warmup={warmup}, repeats={repeats})")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one core per op: on a shared machine, more threads only contend and add noise
    try:
        for _ in range(warmup):
            run_schedule(schedule, chunks, batch, loss_fn)
        runs = [run_schedule(schedule, chunks, batch, loss_fn) for _ in range(repeats)]
    finally:
        torch.set_num_threads(threads)
    fastest = {op: min(run.durations[op] for run in runs) for op in runs[-1].durations}
    return replace(runs[-1], durations=fastest)


def gap(step: StepResult) -> float:
    """The predicted makespan's distance from the measured one, as a share of the measured one."""
    return step.predicted.makespan / step.measured.makespan - 1
