"""Sharded data parallelism across real processes: a ZeRO-1 optimizer written by hand, then PyTorch's FSDP2.

:class:`Zero1` is ZeRO stage 1 (Rajbhandari et al., 2020): every rank keeps the whole model but Adam's state only for
its ``1/n`` of the parameters, as one flat vector padded to a multiple of ``n``. A step reduce-scatters the gradients
(each rank receives the sum of its own piece), averages, runs Adam on its piece, and all-gathers the updated pieces
into every rank's parameters: a reduce-scatter and an all-gather, an all-reduce's bytes (chapter 13's 2Ψ).

:func:`run_fsdp2` shards the same model with ``torch.distributed.fsdp.fully_shard`` (FSDP2), each of its eight
layers a unit, then the root. On CPU it runs over gloo: its all-gathers and reduce-scatters are gloo's (PyTorch's
``ProcessGroupGloo`` runs a reduce-scatter as an all-reduce of the whole buffer, keeping its piece: the right bytes
arrive, at an all-reduce's cost). What each rank holds is measured with PyTorch's own ``FSDPMemTracker``
(``torch.distributed._tools.fsdp2_mem_tracker``, an internal tool), its collectives with
:class:`~ppedu.ranks.traffic.Traffic`, and both are set beside chapter 13's walk of the units,
:func:`ppedu.cluster.sharding.fsdp_step`, in the workload's precision with Adam (:func:`adam_in`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.cluster.sharding import Precision, fsdp_step, zero_stages
from ppedu.lesson import Table
from ppedu.ranks.traffic import Traffic
from ppedu.ranks.workload import Workload, flat, largest_gap, median_step_ms, on_cpu, timed_steps

def adam_in(dtype: str) -> Precision:
    """Bytes per parameter when everything is kept in ``dtype``: weights, gradients and Adam's two moments, no
    separate master copy (the lab trains in fp32, or fp64).

    >>> adam_in("float32").total
    16
    """
    size = {"float32": 4, "float64": 8}[dtype]
    return Precision(f"{dtype}, Adam", size, size, 0, 2 * size)


class Zero1:
    """Adam on this rank's ``1/n`` of ``params``, the rest by reduce-scatter and all-gather (see the module's
    docstring). Call :meth:`step` after ``backward()``."""

    def __init__(self, params: Sequence[Any], optimizer: Any) -> None:
        import torch
        import torch.distributed as dist

        self.params = list(params)
        self.n, rank = dist.get_world_size(), dist.get_rank()
        total = sum(p.numel() for p in self.params)
        self.piece = -(-total // self.n)
        self.padding = self.piece * self.n - total
        self.like = {"dtype": self.params[0].dtype, "device": self.params[0].device}
        whole = torch.cat([flat(self.params), torch.zeros(self.padding, **self.like)])
        self.mine = torch.nn.Parameter(whole[rank * self.piece:(rank + 1) * self.piece].clone())
        self.optimizer = optimizer([self.mine])

    def step(self) -> None:
        import torch
        import torch.distributed as dist

        grads = torch.cat([flat(p.grad for p in self.params), torch.zeros(self.padding, **self.like)])
        mine = torch.empty(self.piece, **self.like)
        dist.reduce_scatter_single(mine, grads)
        self.mine.grad = mine / self.n
        self.optimizer.step()
        whole = torch.empty(self.piece * self.n, **self.like)
        dist.all_gather_single(whole, self.mine.detach())
        at = 0
        with torch.no_grad():
            for p in self.params:
                p.copy_(whole[at:at + p.numel()].view_as(p))
                at += p.numel()

    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds."""
        return sum(t.numel() * t.element_size() for s in self.optimizer.state.values() for t in s.values()
                   if hasattr(t, "numel") and t.dim() > 0)


@dataclass(frozen=True)
class Sharded:
    """A sharded run beside the unsharded one: the largest parameter gap after its steps, the median step (ms),
    the collectives of one step and the MB a rank sends in them as rings, and the MB of Adam's state a rank keeps,
    each beside chapter 13's count."""

    method: str
    param_gap: float
    step_ms: float
    collectives: str
    sent_mb: float
    formula_mb: float
    adam_mb: float
    formula_adam_mb: float

    def _repr_markdown_(self) -> str:
        return Table((self,))._repr_markdown_()


def run_zero1(world: int = 2, workload: Workload = Workload(optimizer="adam"), timeout: float = 300.0) -> Sharded:
    """Train ``workload`` with :class:`Zero1` on ``world`` new ranks and set it beside the unsharded run and beside
    chapter 13's ZeRO-1 traffic (``zero_stages``, one step)."""
    from ppedu.ranks.launch import run_ranks

    per_rank = run_ranks(_zero1, world, workload, timeout=timeout)
    reference = workload.reference()
    stage = zero_stages(reference.params.numel(), world, adam_in(workload.dtype))[1]
    return Sharded("ZeRO-1 by hand", max(largest_gap(r["params"], reference.params) for r in per_rank),
                   median_step_ms([r["seconds"] for r in per_rank]), Traffic.of(per_rank[0]["traffic"]).summary(),
                   round(Traffic.of(per_rank[0]["traffic"]).sent(world) / 1e6, 4), round(stage.sent_gb * 1e3, 4),
                   round(per_rank[0]["state"] / 1e6, 4), round(stage.optimizer_gb * 1e3, 4))


def _zero1(rank: int, world: int, workload: Workload) -> dict[str, Any]:
    from torch.nn.functional import cross_entropy

    from ppedu.ranks.launch import device

    here = device(rank)
    model = workload.model().to(here)
    zero = Zero1(list(model.parameters()), workload.make_optimizer)

    def step(x: Any, y: Any) -> None:
        model.zero_grad()
        cross_entropy(model(x), y).backward()
        zero.step()

    *timed, (x, y) = workload.shard(rank, world, here)
    seconds = timed_steps(step, timed)
    with Traffic() as traffic:  # the last step, watched
        step(x, y)
    return {"params": on_cpu(model.parameters()), "seconds": seconds, "traffic": traffic.pairs(),
            "state": zero.state_bytes()}


@dataclass(frozen=True)
class Memory:
    """MB one rank holds, measured under FSDP2 beside chapter 13's model: the sharded state (parameters, gradients,
    Adam's moments) between steps, and what is gathered or whole on top of it at the step's peak."""

    what: str
    measured_mb: float
    model_mb: float


@dataclass(frozen=True)
class Fsdp2Run:
    """FSDP2's run: the parameter gap from the unsharded run, the step's collectives, the memory, and chapter 13's
    walk of the same units."""

    sharded: Sharded
    gathers: int
    reduce_scatters: int
    model_gathers: int
    memory: Table[Memory]


def run_fsdp2(world: int = 2, workload: Workload = Workload(optimizer="adam"), reshard_after_forward: bool = True,
              timeout: float = 300.0) -> Fsdp2Run:
    """Train ``workload`` with FSDP2 on ``world`` new ranks (see the module's docstring)."""
    from ppedu.ranks.launch import run_ranks

    per_rank = run_ranks(_fsdp2, world, workload, reshard_after_forward, timeout=timeout)
    reference = workload.reference()
    units = [sum(p.numel() for p in layer.parameters()) for layer in workload.model()]
    precision = adam_in(workload.dtype)
    walk = fsdp_step(units, world, precision, reshard_after_forward)
    r0, traffic = per_rank[0], per_rank[0]["traffic"]
    sharded = Sharded("FSDP2 (fully_shard)", max(largest_gap(r["params"], reference.params) for r in per_rank),
                      median_step_ms([r["seconds"] for r in per_rank]), Traffic.of(traffic).summary(),
                      round(Traffic.of(traffic).sent(world) / 1e6, 4), round(walk.sent / 1e6, 4),
                      round(r0["moments"] / 1e6, 4), round(sum(units) * precision.optimizer / world / 1e6, 4))
    state = r0["state"]
    memory = Table((
        Memory("sharded state: parameters, gradients, Adam", round(state / 1e6, 4),
               round(sum(units) * precision.total / world / 1e6, 4)),
        Memory("gathered and whole at the peak", round(r0["transient"] / 1e6, 4),
               round(walk.gathered_at_peak / 1e6, 4)),
        Memory("peak, activations and inputs aside", round((state + r0["transient"]) / 1e6, 4),
               round(walk.peak / 1e6, 4)),
    ))
    kinds = [kind for kind, _ in traffic]
    return Fsdp2Run(sharded, kinds.count("all-gather"), kinds.count("reduce-scatter"), walk.gathers, memory)


#: FSDPMemTracker's categories of what FSDP2 holds only while a unit computes (its gathered weights, its whole
#: gradients and the buffers they pass through), against the sharded state it keeps.
TRANSIENT = ("Unsharded Param", "Unsharded Grad", "All Gather", "Reduce Scatter", "Temp")


def _fsdp2(rank: int, world: int, workload: Workload, reshard: bool) -> dict[str, Any]:
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.nn.functional import cross_entropy

    from ppedu.ranks.launch import device

    here = device(rank)
    model = workload.model().to(here)
    mesh = init_device_mesh(here.type, (world,))
    for layer in model:
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    optimizer = workload.make_optimizer(model.parameters())

    def step(x: Any, y: Any) -> None:
        optimizer.zero_grad()
        cross_entropy(model(x), y).backward()
        optimizer.step()

    *timed, (x, y) = workload.shard(rank, world, here)
    seconds = timed_steps(step, timed)
    tracker = FSDPMemTracker(model, optimizer)  # the last step, watched: its memory and its collectives
    tracker.track_inputs((x,))
    with tracker, Traffic() as traffic:
        step(x, y)
    peak = {str(getattr(k, "value", k)): v for k, v in tracker.get_tracker_snapshot("peak")[x.device].items()}
    local = [p.to_local() for p in model.parameters()]
    grads = [p.grad.to_local() for p in model.parameters() if p.grad is not None]
    moments = [t.to_local() if hasattr(t, "to_local") else t for s in optimizer.state.values() for t in s.values()]
    adam = sum(t.numel() * t.element_size() for t in moments if t.dim() > 0)
    state = adam + sum(t.numel() * t.element_size() for t in [*local, *grads])
    return {"params": on_cpu(p.full_tensor() for p in model.parameters()), "seconds": seconds, "state": state,
            "moments": adam,
            "transient": sum(peak.get(k, 0) for k in TRANSIENT), "traffic": traffic.pairs()}
