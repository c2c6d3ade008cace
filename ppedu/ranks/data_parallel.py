"""Data parallelism across real processes: by hand, three ways, then PyTorch's ``DistributedDataParallel``.

Every rank holds the whole model and computes the gradient of its own shard of the batch; the ranks then average
their gradients, so each takes the same optimizer step as one process on the whole batch would. By hand:

* :func:`allreduce_each` — one all-reduce per parameter, after the backward: many small messages, each paying α;
* :func:`allreduce_flat` — the gradients in one flat buffer, one all-reduce after the backward: α once, but the
  communication waits for the whole backward;
* :class:`Buckets` — the gradients in buckets filled from a hook that runs as each parameter's gradient is
  accumulated (``register_post_accumulate_grad_hook``); a bucket is all-reduced asynchronously as soon as it is full,
  while the backward goes on computing the layers below, and :meth:`Buckets.finish` waits for them all.

DDP's reducer does the last (``torch/nn/parallel/distributed.py``, PyTorch 2.13): buckets of at least
``bucket_cap_mb`` (25 MiB by default; the first bucket ``dist._DEFAULT_FIRST_BUCKET_BYTES``, 1 MiB, when the cap is
the default) in reverse order of the parameters: a bucket is closed once it holds the cap. Its first step
reduces all the gradients as one bucket; after it, the reducer rebuilds the buckets in the order the gradients became
ready, and launches them in order. ``gradient_as_bucket_view=True`` makes each ``.grad`` a view into its bucket, so
the gradients are not held twice. :func:`bucket_plan` is that assignment.

>>> bucket_plan([100352, 128, 4096, 128, 4096, 128, 1280, 40], cap=4194)  # a 4-layer MLP: as its reducer made them
[[7, 6, 5, 4], [3, 2], [1, 0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.lesson import Table
from ppedu.ranks.traffic import Traffic
from ppedu.ranks.workload import Workload, flat, largest_gap, median_step_ms, on_cpu, timed_steps

#: The runs :func:`compare` makes, by name.
METHODS = ("each parameter", "one flat buffer", "buckets from hooks", "DDP", "DDP, gradients as bucket views")


def bucket_plan(nbytes: Sequence[int], cap: int) -> list[list[int]]:
    """Parameters (by index, in registration order, of ``nbytes`` bytes each) grouped as DDP groups them: in
    reverse order, a bucket closed once it holds at least ``cap`` bytes."""
    plan: list[list[int]] = [[]]
    held = 0
    for i in reversed(range(len(nbytes))):
        plan[-1].append(i)
        held += nbytes[i]
        if held >= cap:
            plan.append([])
            held = 0
    return [bucket for bucket in plan if bucket]


def allreduce_each(model: Any) -> None:
    """Average every gradient across the ranks, one all-reduce per parameter."""
    import torch.distributed as dist

    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()


def allreduce_flat(model: Any) -> None:
    """Average every gradient across the ranks in one all-reduce of a flat copy."""
    import torch.distributed as dist

    params = list(model.parameters())
    buffer = flat(p.grad for p in params)
    dist.all_reduce(buffer)
    buffer /= dist.get_world_size()
    at = 0
    for p in params:
        p.grad.copy_(buffer[at:at + p.numel()].view_as(p))
        at += p.numel()


class Buckets:
    """Gradients averaged in buckets of at least ``cap`` bytes (:func:`bucket_plan`), each all-reduced as soon as
    its gradients have all been accumulated and the buckets before it have gone: during the backward. Call
    :meth:`finish` after ``backward()``."""

    def __init__(self, model: Any, cap: int) -> None:
        import torch

        self.params = [p for p in model.parameters() if p.requires_grad]
        self.plan = bucket_plan([p.numel() * p.element_size() for p in self.params], cap)
        like = self.params[0]
        self.buffers = [torch.zeros(sum(self.params[i].numel() for i in b), dtype=like.dtype, device=like.device)
                        for b in self.plan]
        self.where: dict[int, tuple[int, int]] = {}
        for k, bucket in enumerate(self.plan):
            at = 0
            for i in bucket:
                self.where[i] = (k, at)
                at += self.params[i].numel()
        self.ready = [0] * len(self.plan)
        self.works: list[Any] = []
        for i, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(lambda p, i=i: self._accumulated(i, p))

    def _accumulated(self, i: int, p: Any) -> None:
        import torch.distributed as dist

        k, at = self.where[i]
        self.buffers[k][at:at + p.numel()].copy_(p.grad.reshape(-1))
        self.ready[k] += 1
        while len(self.works) < len(self.plan) and self.ready[len(self.works)] == len(self.plan[len(self.works)]):
            self.works.append(dist.all_reduce(self.buffers[len(self.works)], async_op=True))

    def finish(self) -> None:
        """Wait for every bucket and put the averaged gradients back."""
        import torch.distributed as dist

        if len(self.works) < len(self.plan):
            raise RuntimeError("finish() before every gradient was accumulated: call it after backward()")
        for work, bucket, buffer in zip(self.works, self.plan, self.buffers):
            work.wait()
            buffer /= dist.get_world_size()
            for i in bucket:
                k, at = self.where[i]
                self.params[i].grad.copy_(buffer[at:at + self.params[i].numel()].view_as(self.params[i]))
        self.ready, self.works = [0] * len(self.plan), []


@dataclass(frozen=True)
class Compared:
    """One way of averaging gradients, as it ran: the median step in ms, the all-reduces of its last step (their
    buffers in kB, in order) and the MB each rank sends in them as a ring would (beside chapter 12's all-reduce of
    every gradient), the largest gaps from the unsharded run's first gradient and final parameters, and how many
    distinct storages hold the gradients."""

    method: str
    step_ms: float
    buckets_kb: tuple[float, ...]
    sent_mb: float
    formula_mb: float
    grad_gap: float
    param_gap: float
    grad_storages: int


def compare(world: int = 2, workload: Workload = Workload(), cap_mb: float = 0.25, methods: Sequence[str] = METHODS,
            timeout: float = 300.0) -> Table[Compared]:
    """Train ``workload`` on ``world`` new ranks with each of ``methods`` (buckets of ``cap_mb`` MiB, DDP's
    ``bucket_cap_mb`` too) and set each beside the unsharded reference run."""
    from ppedu.cluster.collectives import ring
    from ppedu.ranks.launch import run_ranks

    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r} (the methods are {', '.join(METHODS)})")
    per_rank = run_ranks(_train, world, workload, list(methods), cap_mb, timeout=timeout)
    reference = workload.reference()
    formula = ring(reference.params.numel() * reference.params.element_size(), world, "all-reduce") / 1e6
    rows = []
    for method in methods:
        ran = [r[method] for r in per_rank]
        buffers = tuple(round(b / 1e3, 1) for b in Traffic.of(ran[0]["traffic"]).buffers("all-reduce"))
        rows.append(Compared(method, median_step_ms([r["seconds"] for r in ran]), buffers,
                             round(Traffic.of(ran[0]["traffic"]).sent(world) / 1e6, 4), round(formula, 4),
                             largest_gap(ran[0]["grad"], reference.grads[0]),
                             max(largest_gap(r["params"], reference.params) for r in ran), ran[0]["storages"]))
    return Table(tuple(rows))


def _train(rank: int, world: int, workload: Workload, methods: list[str], cap_mb: float) -> dict[str, Any]:
    """On each rank: every method from the same initial model, its steps timed, the last one's traffic recorded."""
    from torch.nn.functional import cross_entropy
    from torch.nn.parallel import DistributedDataParallel

    from ppedu.ranks.launch import device

    here, out = device(rank), {}
    for method in methods:
        model = workload.model().to(here)
        net, buckets = model, None
        if method.startswith("DDP"):
            net = DistributedDataParallel(model, device_ids=[here] if here.type == "cuda" else None,
                                          bucket_cap_mb=cap_mb, gradient_as_bucket_view="views" in method)
        elif method == "buckets from hooks":
            buckets = Buckets(model, int(cap_mb * 2**20))
        optimizer = workload.make_optimizer(model.parameters())
        first: list[Any] = []

        def step(x: Any, y: Any) -> None:
            optimizer.zero_grad(set_to_none="views" not in method)  # set to None, a view's bucket alias would go
            cross_entropy(net(x), y).backward()
            if method == "each parameter":
                allreduce_each(model)
            elif method == "one flat buffer":
                allreduce_flat(model)
            elif buckets is not None:
                buckets.finish()
            if not first:  # the first step's averaged gradient, to check (a step the timing leaves out)
                first.append(on_cpu(p.grad for p in model.parameters()))
            optimizer.step()

        *timed, (x, y) = workload.shard(rank, world, here)
        seconds = timed_steps(step, timed)
        with Traffic() as traffic:  # the last step, watched (after its buckets were rebuilt, for DDP)
            step(x, y)
        storages = len({p.grad.untyped_storage().data_ptr() for p in model.parameters()})
        out[method] = {"seconds": seconds, "traffic": traffic.pairs(), "grad": first[0],
                       "params": on_cpu(model.parameters()), "storages": storages}
    return out
