"""From a real model and cluster to schedule costs: per-layer times from FLOP counts, hand-over
times from link bandwidth and latency, per-GPU memory, and the "which schedule for my cluster"
table.

The arithmetic is the usual back-of-the-envelope one, stated so that a student can redo it:

* a transformer block with ``P`` parameters costs ``2·P·tokens`` FLOPs forward in its matrices (one
  multiply and one add per parameter per token) plus its attention core's ``4·b·s²·h`` (``QKᵀ`` and
  scores × ``V``); its matrices cost as much again in each of the input-gradient pass ``b`` and the
  weight-gradient pass ``w``, and the attention core, which has no weights, ``2×`` its forward in ``b``
  (``2.5×`` with FlashAttention, which recomputes ``QKᵀ``) (:meth:`Model.layer_backward_flops`);
* the embedding is a lookup (no FLOPs); the output layer is a ``hidden × vocab`` matmul;
* a time is FLOPs ÷ (peak FLOP/s × an achievable-efficiency factor);
* a hand-over between stages carries ``tokens × hidden`` activations (or their gradients) and
  takes ``latency + bytes ÷ bandwidth``;
* memory per GPU is weights + gradients (``dtype`` bytes each per parameter) + optimizer state
  (Adam in mixed precision: fp32 master weights, momentum and variance, 12 bytes per parameter,
  16 in all; Rajbhandari et al., "ZeRO", 2020) + the schedule's peak activations, taken from
  the simulator. Activations per block follow Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models", 2022: ``s·b·h·(34 + 5·a·s/h)`` bytes at 16 bits
  with nothing recomputed and eager attention, ``34·s·b·h`` with selective recomputation (their
  selective mode: the attention core's scores recomputed, which FlashAttention never stores — ppedu's
  ``selective`` is that mode, so with FlashAttention it keeps and runs what ``none`` does), ``2·s·b·h``
  (the block's input) with full recomputation, which costs one more forward inside every backward.

Tensor and sequence parallelism, data parallelism with ZeRO's sharding and every parallelism's traffic
are :mod:`ppedu.cluster.parallel`'s; the CUDA context and a framework's own buffers are not modelled. Each of the
scale chapters' concepts has its module: :mod:`~ppedu.cluster.collectives` (α–β costs, ring and tree, NCCL-tests'
bandwidths; drawn by :mod:`~ppedu.cluster.chart`), :mod:`~ppedu.cluster.tensor` (Megatron's splits derived),
:mod:`~ppedu.cluster.context` (ring and all-gather attention), :mod:`~ppedu.cluster.experts` (capacity, routing,
the all-to-all), :mod:`~ppedu.cluster.sharding` (precisions, ZeRO, FSDP2), :mod:`~ppedu.cluster.reliability`
(failures and checkpoints), :mod:`~ppedu.cluster.published` (the figures the case studies start from, with their
sources) and :mod:`~ppedu.cluster.cases` (Llama 3 405B and DeepSeek-V3 computed end to end).
Sizes are in GB of 10⁹ bytes (:data:`GB`), bandwidths in GB/s of 10⁹ bytes per second.

>>> m = MODELS["70b"]
>>> round(m.params / 1e9, 1), m.layers
(69.0, 80)
>>> c = Cluster(GPUS["h100-80gb"], 8, LINKS["nvlink"])
>>> row = best(plan(m, c, [16]))
>>> row is None  # 69 B parameters × 16 bytes do not fit in 8 × 80 GB
True
"""

from ppedu.cluster.break_even import break_even_bandwidth, interleaving_break_even, interleaving_by_link
from ppedu.cluster.costing import Memory, costs_for, memory_for
from ppedu.cluster.hardware import ADAM_BYTES, GB, GPU, GPUS, LINKS, MODELS, RECOMPUTE, Cluster, Link, Model
from ppedu.cluster.layouts import Layout, layouts
from ppedu.cluster.collectives import ring, ring_seconds
from ppedu.cluster.parallel import Parallel, States, Traffic, data_parallel, states, traffic
from ppedu.cluster.planning import PlanRow, best, plan, render_plan

__all__ = ["ADAM_BYTES", "GB", "GPU", "GPUS", "LINKS", "MODELS", "RECOMPUTE", "Cluster", "Layout", "Link", "Memory",
           "Model", "Parallel", "PlanRow", "States", "Traffic", "best", "break_even_bandwidth", "costs_for", "data_parallel",
           "interleaving_break_even", "interleaving_by_link", "layouts", "memory_for", "plan", "render_plan", "ring",
           "ring_seconds", "states", "traffic"]
