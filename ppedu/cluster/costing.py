"""A schedule's costs and memory on a real model and cluster: the model cut into chunks balanced
on FLOPs, each chunk's F, B and W times, hand-over times from the links, and bytes per GPU."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ppedu.cluster.hardware import ADAM_BYTES, Cluster, Model
from ppedu.cluster.collectives import ring_seconds
from ppedu.cluster.parallel import Parallel, states
from ppedu.costs import Costs, PerChunk
from ppedu.ops import Schedule
from ppedu.partition import Partition, partition
from ppedu.simulate import Timeline

def costs_for(model: Model, cluster: Cluster, schedule: Schedule, recompute: str = "selective",
              parallel: Parallel = Parallel()) -> tuple[Costs, Partition]:
    """The cost model of ``schedule`` running ``model`` on ``cluster``: the model's units cut into
    the schedule's chunks (balanced on forward FLOPs, :func:`ppedu.partition`), each chunk's
    F, B and W times, and the hand-over times. On a mixed cluster the cut is balanced on each
    chunk's time on its own GPU (one-direction schedules only: DualPipe runs a chunk on two GPUs).

    With ``t``-way tensor parallelism (``parallel``) each stage is ``t`` GPUs: every chunk computes a
    ``t``-th of its FLOPs, its F and B each wait for two all-reduces of ``s·b·h`` per block over
    ``parallel.tp_link`` (not overlapped), and a hand-over carries a ``t``-th of the activation.

    >>> from ppedu.cluster import GPUS, LINKS, MODELS
    >>> from ppedu.schedules import one_f_one_b
    >>> costs, cut = costs_for(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink3"]), one_f_one_b(4, 8))
    >>> cut.sizes, round(costs.forward(0, 0) * 1e3, 1)  # units per stage, ms per forward
    ((9, 8, 8, 9), 123.9)
    """
    if schedule.p != cluster.gpus:
        raise ValueError(f"the schedule has {schedule.p} stages for {cluster.gpus} GPUs")
    flops = model.layer_flops()
    b_flops, w_flops = model.layer_backward_flops(recompute)
    if len(flops) < schedule.chunks:
        raise ValueError(f"{model.name} has {len(flops)} units to cut, fewer than {schedule.chunks} chunks")
    if cluster.mixed and len(schedule.placement) > 1:
        raise ValueError(f"{schedule.name} runs each chunk on two GPUs; mixed GPUs are modelled for "
                         "one-direction schedules only")
    # Speeds in FLOP/s, so that the cut's stage costs are each chunk's seconds on its own GPU.
    speeds = tuple(cluster.device(s).flops_per_second for s in schedule.placement[0])
    cut = _cut(flops, schedule.chunks, speeds)
    t = parallel.t
    tp = 2 * ring_seconds(model.hand_over_bytes, t, "all-reduce", parallel.tp_link)  # a block's output, s·b·h
    blocks = cut.totals(model.layer_blocks())
    f = [x / t + tp * k for x, k in zip(cut.stage_costs, blocks)]
    b = [x / t / v + tp * k for x, v, k in zip(cut.totals(b_flops), speeds, blocks)]
    w = [x / t / v for x, v in zip(cut.totals(w_flops), speeds)]
    comm = cluster.comm(model.hand_over_bytes / t)
    return Costs(f=PerChunk(f), b=PerChunk(b), w=PerChunk(w), comm=comm), cut


def on_gpus(schedule: Schedule, per_chunk: Sequence[float],
            combine: Callable[[Iterable[float]], float] = sum) -> tuple[float, ...]:
    """Per GPU, ``per_chunk``'s values for the chunks it holds (both copies in DualPipe), combined.

    >>> from ppedu.schedules import dualpipe
    >>> on_gpus(dualpipe(4, 8), (1, 2, 3, 4)), on_gpus(dualpipe(4, 8), (1, 2, 3, 4), max)
    ((5.0, 5.0, 5.0, 5.0), (4.0, 3.0, 3.0, 4.0))
    """
    return tuple(float(combine([per_chunk[c] for row in schedule.placement for c, home in enumerate(row) if home == s]))
                 for s in range(schedule.p))


@lru_cache(maxsize=256)
def _cut(flops: tuple[float, ...], chunks: int, speeds: tuple[float, ...]) -> Partition:
    """:func:`ppedu.partition`, once per model, cut and GPUs: a plan asks for the same cut for
    every m, schedule and link."""
    return partition(flops, chunks, speeds)


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU: weights, gradients, optimizer state, peak activations, and what is there only for
    a while at the peak (weights ZeRO-3 gathered, activations recomputation rebuilds)."""

    weights: tuple[float, ...]
    grads: tuple[float, ...]
    optimizer: tuple[float, ...]
    activations: tuple[float, ...]
    transient: tuple[float, ...] = ()

    @property
    def total(self) -> tuple[float, ...]:
        transient = self.transient or (0.0,) * len(self.weights)
        return tuple(map(sum, zip(self.weights, self.grads, self.optimizer, self.activations, transient)))

    def as_dict(self) -> dict[str, list[float]]:
        return {k: list(getattr(self, k) or (0.0,) * len(self.weights))
                for k in ("weights", "grads", "optimizer", "activations", "transient", "total")}


def memory_for(model: Model, timeline: Timeline, cut: Partition, recompute: str = "selective",
               optimizer_bytes: float = ADAM_BYTES, parallel: Parallel = Parallel()) -> Memory:
    """Per GPU, the memory ``timeline`` needs when its chunks are ``cut`` from ``model``: every chunk a
    GPU holds (both copies in DualPipe) brings its parameters — split ``t`` ways and sharded as ZeRO's
    stage says (:func:`~ppedu.cluster.parallel.states`), a mixture of experts' routed experts spread over the
    ``d`` replicas (:func:`replicated_params`) — and the activations are the simulator's peak,
    each chunk weighted by its own size, divided by tensor and sequence parallelism. At the peak a GPU
    may also hold, for a while, what recomputation rebuilds for one block and (ZeRO-3) one chunk's
    gathered weights: counted as ``transient``, so that ``total`` is an upper bound."""
    dense, experts = replicated_params(model, cut)
    params, largest = on_gpus(timeline.schedule, dense), on_gpus(timeline.schedule, dense, max)
    t, sp = parallel.t, parallel.sequence
    activations = timeline.peak_activation_memory(cut.totals(model.layer_activation_bytes(recompute, t, sp)))
    held = [states(x, big, model, parallel, optimizer_bytes) for x, big in zip(params, largest)]
    # Each replica holds 1/d of the experts, alone: nothing of them to shard or gather.
    own = [states(x / parallel.d, 0.0, model, replace(parallel, d=1, zero=0), optimizer_bytes)
           for x in on_gpus(timeline.schedule, experts)]
    rebuilt = model.recompute_transient_bytes(recompute, t, sp)
    return Memory(tuple(x.weights + e.weights for x, e in zip(held, own)),
                  tuple(x.grads + e.grads for x, e in zip(held, own)),
                  tuple(x.optimizer + e.optimizer for x, e in zip(held, own)),
                  activations, tuple(x.gathered + rebuilt for x in held))


def replicated_params(model: Model, cut: Partition) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per chunk of ``cut``, the parameters every data-parallel replica holds, and the routed experts', which
    expert parallelism spreads over the replicas (ppedu takes the expert-parallel group as wide as the
    data-parallel one): experts are neither reduced nor sharded over ``d``, each replica holding ``1/d`` of them."""
    total, experts = cut.totals(model.layer_params()), cut.totals(model.layer_expert_params())
    return tuple(a - b for a, b in zip(total, experts)), experts
