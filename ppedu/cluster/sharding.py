"""Sharded data parallelism: ZeRO's three stages and PyTorch's FSDP2, unit by unit, with the bytes each keeps per GPU
and sends per step; the numbers' precision; and how a pipeline's order decides how often sharded weights are
gathered.

**Precision** (:class:`Precision`): mixed-precision training keeps per parameter a 16-bit copy of the weights the
matrices read, its gradient, and the optimizer's fp32 master weights and Adam's two moments: 2 + 2 + 12 = 16 bytes
(Rajbhandari et al., "ZeRO", 2020, section 3.1). Megatron-LM accumulates a bf16 model's gradients in fp32 (18
bytes); DeepSeek-V3's FP8 recipe keeps fp32 master weights and gradients and bf16 moments (its report, section
3.3.3).

**ZeRO** shards over the ``d`` replicas the optimizer state (stage 1), the gradients too (2), the weights too (3).
Per step, a replica of ``Ψ`` parameters sends (ring collectives, :mod:`ppedu.cluster.collectives`): stage 0
all-reduces the gradients (a reduce-scatter and an all-gather of them), stages 1 and 2 reduce-scatter the gradients
and all-gather the updated weights — in 16 bits each time an all-reduce's bytes, ``2Ψ`` elements times ``(d−1)/d`` —
and stage 3 gathers the weights once more, for the backward, ``3Ψ``: 1.5 times as much (the ZeRO paper, section 7).

**FSDP2** (``torch.distributed.fsdp.fully_shard``) applies stage 3 per *unit*, usually a block: a unit's weights are
all-gathered just before its forward, the next unit's prefetched meanwhile, and freed after it
(``reshard_after_forward``) to be gathered again for its backward; its gradients are reduce-scattered as its backward
ends. Llama 3 does not reshard after the forward (its report, section 3.3.2): no second gather, but every unit's
weights stay gathered from its forward to its backward. :func:`fsdp_step` walks the units and counts both.

>>> zero_stages(1e9, 8, PRECISIONS["bf16"])[3].sent_gb / zero_stages(1e9, 8, PRECISIONS["bf16"])[0].sent_gb
1.5
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.cluster.collectives import ring
from ppedu.cluster.hardware import GB
from ppedu.lesson import Table
from ppedu.ops import Schedule
from ppedu.rounding import rounded
from ppedu.validate import whole


@dataclass(frozen=True)
class Precision:
    """Bytes per parameter: the weights the matrices read, their gradient as accumulated, the optimizer's master
    weights and its moments."""

    name: str
    weights: float
    grads: float
    master: float
    moments: float

    @property
    def optimizer(self) -> float:
        return self.master + self.moments

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer


#: The ZeRO paper's count (16-bit weights and gradients, fp16 in the paper, bf16 here: the same bytes; fp32 master and
#: Adam moments); Megatron-LM's default for a
#: bf16 model (gradients accumulated in fp32, ``--main-grads-dtype`` in ``megatron/training/arguments.py``); DeepSeek-V3's
#: (section 3.3.3: fp32 master weights and gradients, bf16 moments; the FP8 copy of the weights its matrices read is
#: our assumption, the report names no other).
PRECISIONS = {
    "bf16": Precision("bf16, Adam in fp32 (ZeRO)", 2, 2, 4, 8),
    "bf16-fp32-grads": Precision("bf16, fp32 gradients (Megatron-LM's default, Llama 3's)", 2, 4, 4, 8),
    "fp8-deepseek": Precision("FP8, fp32 master and gradients, bf16 moments (DeepSeek-V3)", 1, 4, 4, 4),
}


@dataclass(frozen=True)
class ZeroRow:
    """One ZeRO stage for a replica of ``Ψ`` parameters over ``d`` GPUs: GB per GPU and GB sent per GPU per step."""

    stage: int
    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    total_gb: float
    sent_gb: float


def zero_stages(params: float, d: int, precision: Precision) -> Table[ZeroRow]:
    """ZeRO's stages 0–3 for ``params`` parameters replicated over ``d`` GPUs (no pipeline: one gradient
    reduction per step), what each keeps and sends (see the module's docstring; the gradients reduce and the
    weights gather in their own precision)."""
    whole("d", d)
    w, g, o = params * precision.weights, params * precision.grads, params * precision.optimizer
    rows = []
    for stage in range(4):
        kept = (w / (d if stage >= 3 else 1), g / (d if stage >= 2 else 1), o / (d if stage >= 1 else 1))
        gathers = 2 if stage == 3 else 1
        gathered = g if stage == 0 else w  # stage 0 all-reduces the gradients; the others gather the weights
        sent = ring(g, d, "reduce-scatter") + gathers * ring(gathered, d, "all-gather")
        weights, grads, optimizer = (x / GB for x in kept)
        rows.append(ZeroRow(stage, *rounded((weights, grads, optimizer, sum(kept) / GB, sent / GB))))
    return Table(tuple(rows))


@dataclass(frozen=True)
class FsdpStep:
    """One step of FSDP over ``units`` on one GPU: the most bytes it holds at once, of which the gathered weights
    and the unsharded gradients at that moment, and the bytes it sends."""

    peak: float
    gathered_at_peak: float
    sent: float
    gathers: int

    def gigabytes(self) -> dict[str, float]:
        return {k: round(getattr(self, k) / GB, 3) for k in ("peak", "gathered_at_peak", "sent")}


def fsdp_step(units: Sequence[float], d: int, precision: Precision, reshard_after_forward: bool = True,
              prefetch: int = 1) -> FsdpStep:
    """Walk one step of FSDP2 over units of ``units`` parameters each, sharded ``d`` ways: forward through the
    units, backward in reverse. A unit's weights are gathered for its forward and (if resharded after it) again
    for its backward, ``prefetch`` units ahead; its gradients are whole from its backward until their
    reduce-scatter. Activations are not counted (they are the schedule's, :mod:`ppedu.cluster.costing`).

    >>> p = PRECISIONS["bf16"]
    >>> once, kept = fsdp_step([1e9] * 4, 8, p), fsdp_step([1e9] * 4, 8, p, reshard_after_forward=False)
    >>> once.gathers, kept.gathers, round(kept.sent / once.sent, 3)  # Llama 3's choice: 2Ψ of traffic, not 3Ψ
    (8, 4, 0.667)
    >>> once.gathered_at_peak < kept.gathered_at_peak  # ... for every unit's weights held until its backward
    True
    """
    whole("d", d)
    if prefetch < 0:
        raise ValueError(f"prefetch is a number of units ≥ 0 (got {prefetch})")
    n = len(units)
    sharded = sum(units) * precision.total / d
    w = [u * precision.weights for u in units]
    g = [u * precision.grads for u in units]
    peak, at_peak, gathers, sent = 0.0, 0.0, 0, 0.0
    held: set[int] = set()
    for i in range(n):  # forward: unit i computes, units up to i + prefetch are gathered
        for j in range(i, min(n, i + prefetch + 1)):
            if j not in held:
                held.add(j)
                gathers += 1
                sent += ring(w[j], d, "all-gather")
        now = sum(w[j] for j in held)
        peak, at_peak = max((peak, at_peak), (sharded + now, now))
        if reshard_after_forward:
            held.discard(i)
    for i in reversed(range(n)):  # backward: unit i computes, its gradients are whole until they are scattered
        for j in range(max(0, i - prefetch), i + 1):
            if j not in held:
                held.add(j)
                gathers += 1
                sent += ring(w[j], d, "all-gather")
        now = sum(w[j] for j in held) + g[i]
        peak, at_peak = max((peak, at_peak), (sharded + now, now))
        sent += ring(g[i], d, "reduce-scatter")
        held.discard(i)
    return FsdpStep(peak, at_peak, sent, gathers)


def regathers(schedule: Schedule) -> tuple[int, ...]:
    """Per GPU, how often a sharded chunk's weights must be gathered in one step of ``schedule`` when a GPU keeps
    one chunk gathered at a time, for as long as consecutive operations use it: the runs of the same chunk in
    its order (a ZeRO-3 or FSDP stage beside a pipeline). One chunk per GPU keeps its whole stage gathered all
    step (one run); interleaving switches chunks every few ops; looped BFS (Lamy-Poirier, 2023) runs every
    micro-batch through a chunk before the next, so each chunk is gathered once on the way forward and once on the
    way back, but for the last, whose forwards run straight into its backwards: ``2v − 1``.

    >>> from ppedu.schedules import interleaved_1f1b, looped_bfs, one_f_one_b
    >>> regathers(looped_bfs(4, 8, 2)), regathers(interleaved_1f1b(4, 8, 2))[0], regathers(one_f_one_b(4, 8))[0]
    ((3, 3, 3, 3), 11, 1)
    """
    out = []
    for ops in schedule.stages:
        runs = sum(1 for k, op in enumerate(ops) if k == 0 or op.chunk != ops[k - 1].chunk)
        out.append(runs)
    return tuple(out)
