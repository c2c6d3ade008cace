"""The lab's workload: the course's MNIST model (:func:`ppedu.mnist.mlp`, eight layers) with the same initial weights
on every rank, a global batch of real digits per step cut into the ranks' equal shards, and the reference every
distributed run is checked against — the same steps run unsharded, on one process, on the whole batch.

Each rank's loss is the mean over its own shard, so the mean of the ranks' gradients is the whole batch's gradient:
what an all-reduce that averages must give back.

>>> w = Workload(steps=2, batch=8)
>>> [tuple(x.shape) for x, _ in w.shard(rank=1, world=2)]
[(4, 1, 28, 28), (4, 1, 28, 28)]
>>> ref = w.reference()
>>> len(ref.grads), ref.params.shape == ref.grads[0].shape
(2, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: SGD's learning rate for the data-parallel runs; the sharded ones use the course's Adam (``optimizer_for``).
SGD_RATE = 0.05


@dataclass(frozen=True)
class Reference:
    """The unsharded run: each step's whole-batch gradient and the parameters after the last step, each flattened
    in the model's parameter order."""

    grads: tuple[Any, ...]
    params: Any


@dataclass(frozen=True)
class Workload:
    """``steps`` steps of ``batch`` digits each (a multiple of every world size the lab uses) from ``seed``, in
    ``dtype`` ("float32", or "float64" where a check must see past rounding)."""

    steps: int = 6
    batch: int = 96
    seed: int = 0
    optimizer: str = "sgd"
    dtype: str = "float32"

    def model(self) -> Any:
        """The course's MLP, initialised from ``seed`` (the same on every rank)."""
        from ppedu.mnist.training import initial_model

        import torch

        return initial_model("mlp", self.seed).to(getattr(torch, self.dtype))

    def make_optimizer(self, params: Any) -> Any:
        """SGD at :data:`SGD_RATE`, or the course's Adam (``optimizer="adam"``)."""
        import torch

        from ppedu.mnist.training import optimizer_for

        return optimizer_for(params) if self.optimizer == "adam" else torch.optim.SGD(params, lr=SGD_RATE)

    def batches(self) -> Iterator[tuple[Any, Any]]:
        import torch

        from ppedu.mnist.training import training_batches

        kind = getattr(torch, self.dtype)
        return ((x.to(kind), y) for x, y in training_batches(self.steps, self.batch, self.seed))

    def shard(self, rank: int, world: int, device: Any = "cpu") -> list[tuple[Any, Any]]:
        """Rank ``rank``'s equal share of every step's batch, on ``device``."""
        if self.batch % world:
            raise ValueError(f"a batch of {self.batch} cannot be cut into {world} equal shards")
        size = self.batch // world
        return [(x[rank * size:(rank + 1) * size].to(device), y[rank * size:(rank + 1) * size].to(device))
                for x, y in self.batches()]

    def reference(self) -> Reference:
        """The same steps on one process and the whole batch, on one thread (as each rank runs): a model this small
        gains nothing from more, and on a busy machine the threads only wait for one another (ten to twenty times
        slower in the notebook's kernel on two shared cores)."""
        import torch
        from torch.nn.functional import cross_entropy

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            model = self.model()
            optimizer = self.make_optimizer(model.parameters())
            grads = []
            for x, y in self.batches():
                optimizer.zero_grad()
                cross_entropy(model(x), y).backward()
                grads.append(flat(p.grad for p in model.parameters()))
                optimizer.step()
        finally:
            torch.set_num_threads(threads)  # the caller's kernel as it was
        return Reference(tuple(grads), flat(model.parameters()))


def flat(tensors: Iterator[Any] | Any) -> Any:
    """Tensors flattened into one vector (a copy, detached, where they are)."""
    import torch

    return torch.cat([t.detach().reshape(-1) for t in tensors]).clone()


def on_cpu(tensors: Iterator[Any] | Any) -> Any:
    """:func:`flat`, on the CPU: what a rank hands back, whatever device it computed on."""
    return flat(tensors).cpu()


def largest_gap(a: Any, b: Any) -> float:
    """The largest absolute difference between two vectors of the same length, to three significant digits (what a
    table shows of a gap).

    >>> import torch
    >>> largest_gap(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])), largest_gap(torch.ones(2) / 3, torch.zeros(2))
    (0.5, 0.333)
    """
    if a.shape != b.shape:
        raise ValueError(f"vectors of {tuple(a.shape)} and {tuple(b.shape)} elements cannot be compared")
    return float(f"{float((a - b).abs().max()):.3g}")


def timed_steps(run_step: Callable[[Any, Any], None], shards: list[tuple[Any, Any]]) -> list[float]:
    """Seconds per step of ``run_step(x, y)`` over ``shards``, each step started together on every rank."""
    import time

    import torch
    import torch.distributed as dist

    seconds = []
    for x, y in shards:
        dist.barrier()
        start = time.perf_counter()
        run_step(x, y)
        if x.is_cuda:  # a GPU's work is queued: the step ends when it has run
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    return seconds


def median_step_ms(seconds: list[list[float]]) -> float:
    """The median step in ms of ranks' step times (``seconds[rank][step]``): each step as long as its slowest rank,
    the first step (warm-up: buffers allocated, connections made) left out where there are others.

    >>> median_step_ms([[1.0, 0.002, 0.004, 0.003], [1.0, 0.003, 0.001, 0.003]]), median_step_ms([[0.5], [0.25]])
    (3.0, 500.0)
    """
    steps = len(seconds[0])
    slowest = sorted(max(rank[s] for rank in seconds) for s in range(1 if steps > 1 else 0, steps))
    return round(slowest[(len(slowest) - 1) // 2] * 1e3, 2)
