"""A schedule's costs and memory on a real model and cluster: the model cut into chunks balanced
on FLOPs, each chunk's F, B and W times, hand-over times from the links, and bytes per GPU."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ppedu.cluster.hardware import ADAM_BYTES, RECOMPUTE, Cluster, Model
from ppedu.costs import Costs, PerChunk
from ppedu.ops import Schedule
from ppedu.partition import Partition, partition
from ppedu.simulate import Timeline

def costs_for(model: Model, cluster: Cluster, schedule: Schedule, recompute: str = "selective") -> tuple[Costs, Partition]:
    """The cost model of ``schedule`` running ``model`` on ``cluster``: the model's units cut into
    the schedule's chunks (balanced on forward FLOPs, :func:`ppedu.partition`), each chunk's
    F, B and W times, and the hand-over times. On a mixed cluster the cut is balanced on each
    chunk's time on its own GPU (one-direction schedules only: DualPipe runs a chunk on two GPUs).

    >>> from ppedu.cluster import GPUS, LINKS, MODELS
    >>> from ppedu.schedules import one_f_one_b
    >>> costs, cut = costs_for(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink3"]), one_f_one_b(4, 8))
    >>> cut.sizes, round(costs.forward(0, 0) * 1e3, 1)  # units per stage, ms per forward
    ((9, 8, 8, 9), 106.3)
    """
    if schedule.p != cluster.gpus:
        raise ValueError(f"the schedule has {schedule.p} stages for {cluster.gpus} GPUs")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute is one of {', '.join(RECOMPUTE)} (got {recompute!r})")
    flops = model.layer_flops()
    if len(flops) < schedule.chunks:
        raise ValueError(f"{model.name} has {len(flops)} units to cut, fewer than {schedule.chunks} chunks")
    if cluster.mixed and len(schedule.placement) > 1:
        raise ValueError(f"{schedule.name} runs each chunk on two GPUs; mixed GPUs are modelled for "
                         "one-direction schedules only")
    # Speeds in FLOP/s, so that the cut's stage costs are each chunk's seconds on its own GPU.
    cut = _cut(flops, schedule.chunks, tuple(cluster.device(s).flops_per_second for s in schedule.placement[0]))
    f = list(cut.stage_costs)
    b = [2 * x for x in f] if recompute == "full" else f  # full recomputation reruns the forward
    comm = cluster.comm(model.hand_over_bytes)
    return Costs(f=PerChunk(f), b=PerChunk(b), w=PerChunk(f), comm=comm), cut


@lru_cache(maxsize=256)
def _cut(flops: tuple[float, ...], chunks: int, speeds: tuple[float, ...]) -> Partition:
    """:func:`ppedu.partition`, once per model, cut and GPUs: a plan asks for the same cut for
    every m, schedule and link."""
    return partition(flops, chunks, speeds)


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU: weights, gradients, optimizer state and peak activations."""

    weights: tuple[float, ...]
    grads: tuple[float, ...]
    optimizer: tuple[float, ...]
    activations: tuple[float, ...]

    @property
    def total(self) -> tuple[float, ...]:
        return tuple(map(sum, zip(self.weights, self.grads, self.optimizer, self.activations)))

    def as_dict(self) -> dict[str, list[float]]:
        return {k: list(getattr(self, k)) for k in ("weights", "grads", "optimizer", "activations", "total")}


def memory_for(model: Model, timeline: Timeline, cut: Partition, recompute: str = "selective",
               optimizer_bytes: float = ADAM_BYTES) -> Memory:
    """Per GPU, the memory ``timeline`` needs when its chunks are ``cut`` from ``model``: every
    chunk a GPU holds (both copies in DualPipe) brings its parameters, and the activations are
    the simulator's peak, each chunk weighted by its own size."""
    schedule = timeline.schedule
    chunk_params = cut.totals(model.layer_params())
    params = [0.0] * schedule.p
    for row in schedule.placement:
        for c, s in enumerate(row):
            params[s] += chunk_params[c]
    activations = timeline.peak_activation_memory(cut.totals(model.layer_activation_bytes(recompute)))
    weights = tuple(x * model.dtype_bytes for x in params)
    return Memory(weights, weights, tuple(x * optimizer_bytes for x in params), activations)
