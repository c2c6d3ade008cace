"""A training run of the lab: the model, data, optimizer and step loop that the CLI, the
benchmark and the torch.distributed run share, so that their losses can be compared exactly."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn.functional import cross_entropy

from ppedu.mnist.data import load_mnist
from ppedu.mnist.executor import StepResult, max_grad_diff, reference_gradients, run_schedule
from ppedu.mnist.models import build_model, split_model
from ppedu.ops import Schedule
from ppedu.schedules import build

#: Adam's learning rate for every run of the lab.
LEARNING_RATE = 2e-3


def initial_model(name: str, seed: int = 0) -> nn.Sequential:
    """The model every run starts from: ``name`` ("mlp" or "cnn") initialised from ``seed``.

    >>> torch.equal(initial_model("mlp")[0][1].weight, initial_model("mlp")[0][1].weight)
    True
    """
    model = build_model(name)
    torch.manual_seed(seed)
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()
    return model


def optimizer_for(params: Iterator[nn.Parameter] | list[nn.Parameter]) -> torch.optim.Optimizer:
    """Adam at the lab's learning rate; per-parameter, so a rank holding some chunks can run it alone."""
    return torch.optim.Adam(params, lr=LEARNING_RATE)


def training_batches(steps: int, batch_size: int, seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` mini-batches of the shipped training images, shuffled once from ``seed``.

    >>> [x.shape[0] for x, _ in training_batches(3, 5)]
    [5, 5, 5]
    """
    images, labels = load_mnist("train")
    if batch_size > len(images):
        raise ValueError(f"batch size {batch_size} exceeds the {len(images)} training images")
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))
    per_epoch = len(images) // batch_size
    for step in range(steps):
        index = order[(step % per_epoch) * batch_size:][:batch_size]
        yield images[index], labels[index]


def accuracy(model: nn.Module) -> float:
    """The fraction of the shipped test digits that ``model`` classifies correctly.

    >>> 0.0 <= accuracy(initial_model("mlp")) <= 1.0
    True
    """
    images, labels = load_mnist("test")
    with torch.no_grad():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


@dataclass(frozen=True)
class TrainResult:
    """What ``ppedu mnist`` reports: losses per step, the first step's gradient check against the
    unpipelined model, and the last step's timelines and memory."""

    losses: tuple[float, ...]
    test_accuracy: float
    max_grad_diff_vs_reference: float
    last_step: StepResult
    seconds: float
    config: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The JSON object of ``ppedu mnist --json``."""
        return {
            **self.config,
            "loss_first": self.losses[0],
            "loss_last": self.losses[-1],
            "losses": list(self.losses),
            "test_accuracy": self.test_accuracy,
            "max_grad_diff_vs_reference": self.max_grad_diff_vs_reference,
            "predicted_bubble_ratio": self.last_step.predicted.bubble_ratio,
            "measured_bubble_ratio": self.last_step.measured.bubble_ratio,
            "peak_activation_bytes": list(self.last_step.peak_activation_bytes),
            "seconds": self.seconds,
        }


def prepare(schedule: str, p: int, m: int, v: int = 1, model: str = "mlp", batch_size: int = 128,
            seed: int = 0) -> tuple[Schedule, nn.Sequential, list[nn.Sequential]]:
    """The schedule, the initial model and its chunks for a run; ``ValueError`` naming the rule
    broken if they do not fit together.

    >>> plan, net, chunks = prepare("interleaved", p=2, m=4, v=2)
    >>> plan.chunks, len(chunks)
    (4, 4)
    """
    plan = build(schedule, p, m, v)
    if m > batch_size:
        raise ValueError(f"m={m} micro-batches need a batch of at least {m} examples (got batch size {batch_size})")
    net = initial_model(model, seed)
    return plan, net, split_model(net, plan.chunks)


def train(schedule: str, p: int, m: int, v: int = 1, steps: int = 50, model: str = "mlp", batch_size: int = 128,
          seed: int = 0, on_step: Callable[[int, StepResult], None] | None = None) -> TrainResult:
    """Train ``model`` for ``steps`` steps of ``batch_size`` digits under ``schedule`` on ``p``
    simulated GPUs with ``m`` micro-batches (``v`` chunks per GPU for interleaved), calling
    ``on_step(step, result)`` after each step.

    >>> r = train("1f1b", p=2, m=4, steps=2, batch_size=16)
    >>> len(r.losses), r.max_grad_diff_vs_reference < 1e-6
    (2, True)
    """
    if steps < 1:  # before any model is built or data is read
        raise ValueError(f"steps must be at least 1 (got {steps})")
    start = time.perf_counter()
    plan, net, chunks = prepare(schedule, p, m, v, model, batch_size, seed)
    optimizer = optimizer_for(list(net.parameters()))
    losses, diff, result = [], 0.0, None
    for step, batch in enumerate(training_batches(steps, batch_size, seed)):
        reference = reference_gradients(net, batch, cross_entropy) if step == 0 else None
        result = run_schedule(plan, chunks, batch, cross_entropy)
        if reference is not None:
            diff = max_grad_diff(chunks, reference)
        optimizer.step()
        losses.append(result.loss)
        if on_step:
            on_step(step, result)
    assert result is not None  # steps ≥ 1
    config = {"schedule": schedule, "p": p, "m": m, "v": v, "steps": steps, "model": model, "batch_size": batch_size}
    return TrainResult(tuple(losses), accuracy(net), diff, result, time.perf_counter() - start, config)
