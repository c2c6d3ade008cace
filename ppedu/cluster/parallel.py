"""Parallelism beside the pipeline: ``t``-way tensor parallelism inside each stage (with or without
sequence parallelism), ``d`` data-parallel replicas of the whole pipeline with ZeRO's sharding, and
the traffic each of them — and the pipeline itself, and a mixture of experts — puts on the links.

The arithmetic, stated once so that a student can redo it (ring algorithms, :mod:`ppedu.cluster.collectives`;
``n`` GPUs; ``M`` bytes):

* an all-reduce sends ``2M(n-1)/n`` per GPU, a reduce-scatter or an all-gather ``M(n-1)/n``;
* tensor parallelism (Megatron-LM) all-reduces a block's ``s·b·h`` activations twice in its forward
  and twice in its backward (sequence parallelism turns each all-reduce into an all-gather and a
  reduce-scatter, and its backward gathers each column-parallel layer's input again: a quarter more), and splits the block's matrices ``t`` ways
  (:func:`ppedu.cluster.tensor.block_collectives` lists them);
* the pipeline sends one activation forward and one gradient back per micro-batch and stage boundary,
  each ``s·b·h`` split ``t`` ways (each tensor-parallel GPU sends its share);
* data parallelism reduces every gradient once per step. ZeRO (Rajbhandari et al., 2020) shards over
  the ``d`` replicas the optimizer state (stage 1), the gradients too (2), the weights too (3, as
  FSDP). Beside a pipeline, whose ``m`` micro-batches each add to every gradient, stage 2 must
  reduce-scatter the gradients after every micro-batch and stage 3 gather the weights before each
  micro-batch's forward and backward (FSDP reshards after each forward by default:
  ``torch/distributed/fsdp/_fully_shard/_fully_shard.py``): ``m`` times the traffic of stage 1.
  Megatron-LM's distributed optimizer shards what stage 1 shards (its ``docs/user-guide/features/
  dist_optimizer.md``), and DeepSpeed's ``PipelineEngine`` refuses stages 2 and 3
  (``deepspeed/runtime/pipe/engine.py``);
* a mixture of experts sends each token to its ``top_k`` experts and back (dispatch and combine) in
  the forward, and the same again in the backward: four all-to-alls of ``tokens·top_k·h`` per layer.

>>> traffic(MODELS["7b"], Parallel(t=2), m=1, blocks=1, hand_overs=0, params=0).tensor / 1e6  # 4 × 2·M/2, M = 33.6 MB
134.217728
"""

from __future__ import annotations

from dataclasses import dataclass

from ppedu.cluster.collectives import ring
from ppedu.cluster.hardware import ADAM_BYTES, LINKS, MODELS, Link, Model
from ppedu.cluster.tensor import block_collectives
from ppedu.validate import whole


@dataclass(frozen=True)
class Parallel:
    """How each pipeline stage and the pipeline itself are replicated or split: ``t``-way tensor
    parallelism inside a stage over ``tp_link`` (a node's NVLink), ``sequence`` parallelism with it,
    ``d`` data-parallel replicas of the pipeline reducing their gradients over ``dp_link``, sharded as
    ZeRO stage ``zero`` (0: not at all)."""

    t: int = 1
    d: int = 1
    sequence: bool = False
    zero: int = 0
    tp_link: Link = LINKS["nvlink"]
    dp_link: Link = LINKS["ib-400"]

    def __post_init__(self) -> None:
        whole("t", self.t)
        whole("d", self.d)
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero is a ZeRO stage: 0, 1, 2 or 3 (got {self.zero!r})")
        if self.sequence and self.t == 1:
            raise ValueError("sequence parallelism splits what tensor parallelism leaves whole: it needs t > 1")

    @property
    def label(self) -> str:
        parts = [f"t={self.t}" + (" +SP" if self.sequence else ""), f"d={self.d}"]
        return ", ".join(parts) + (f", ZeRO-{self.zero}" if self.zero else "")


@dataclass(frozen=True)
class States:
    """Bytes of model state on one GPU: weights, gradients, optimizer state, and (ZeRO-3) the layers'
    weights gathered while a chunk computes."""

    weights: float
    grads: float
    optimizer: float
    gathered: float = 0.0


def states(params: float, chunk_params: float, model: Model, parallel: Parallel,
           optimizer_bytes: float = ADAM_BYTES) -> States:
    """The model state of a GPU that holds ``params`` parameters of its stage (``chunk_params`` in its
    largest chunk), split ``t`` ways by tensor parallelism and sharded over ``d`` replicas as ZeRO's
    stage says.

    >>> from ppedu.cluster import MODELS
    >>> s = states(1e9, 1e9, MODELS["7b"], Parallel(d=8, zero=1))
    >>> s.weights, s.grads, s.optimizer
    (2000000000.0, 2000000000.0, 1500000000.0)
    """
    mine = params / parallel.t
    d, z, dtype = parallel.d, parallel.zero, model.dtype_bytes
    return States(weights=mine * dtype / (d if z >= 3 else 1), grads=mine * dtype / (d if z >= 2 else 1),
                  optimizer=mine * optimizer_bytes / (d if z >= 1 else 1),
                  gathered=chunk_params / parallel.t * dtype if z >= 3 and d > 1 else 0.0)


@dataclass(frozen=True)
class Traffic:
    """Bytes one GPU sends in one step, by the parallelism that sends them."""

    tensor: float
    pipeline: float
    data: float
    expert: float

    @property
    def total(self) -> float:
        return self.tensor + self.pipeline + self.data + self.expert

    def gigabytes(self) -> dict[str, float]:
        """Each parallelism's bytes in GB (10⁹), to one decimal.

        >>> Traffic(1.23e9, 4e8, 0.0, 0.0).gigabytes()
        {'tensor': 1.2, 'pipeline': 0.4, 'data': 0.0, 'expert': 0.0}
        """
        return {k: round(getattr(self, k) / 1e9, 1) for k in ("tensor", "pipeline", "data", "expert")}


def data_parallel(params: float, model: Model, parallel: Parallel, m: int) -> list[tuple[str, float]]:
    """The data-parallel collectives of one step for a GPU holding ``params`` parameters of its stage:
    ``(kind, bytes)`` of each, ``m`` micro-batches in the step (see the module's docstring).

    >>> from ppedu.cluster import MODELS
    >>> [k for k, _ in data_parallel(1e9, MODELS["7b"], Parallel(d=2, zero=3), m=2)]
    ['all-gather', 'all-gather', 'all-gather', 'all-gather', 'reduce-scatter', 'reduce-scatter']
    """
    if parallel.d == 1:
        return []
    grads = params / parallel.t * model.dtype_bytes
    if parallel.zero == 0:
        return [("all-reduce", grads)]
    if parallel.zero == 1:  # the gradients reduce-scattered, the updated weights gathered: an all-reduce's bytes
        return [("reduce-scatter", grads), ("all-gather", grads)]
    if parallel.zero == 2:
        return [("reduce-scatter", grads)] * m + [("all-gather", grads)]
    return [("all-gather", grads)] * (2 * m) + [("reduce-scatter", grads)] * m


def traffic(model: Model, parallel: Parallel, m: int, blocks: int, hand_overs: int, params: float,
            moe_layers: int | None = None) -> Traffic:
    """What one GPU sends in a step of ``m`` micro-batches when it holds ``blocks`` transformer blocks and
    ``params`` parameters its replicas reduce (a mixture of experts' routed experts are not among them: each
    replica holds its own), and receives or sends ``hand_overs`` activations and gradients of the pipeline
    (from the schedule). A mixture of experts sends its all-to-alls over an expert-parallel group as large
    as the data-parallel one, in ``moe_layers`` of its blocks (default: all of them)."""
    act = model.hand_over_bytes  # s·b·h: what a hand-over carries
    tensor = m * blocks * sum(ring(c.nbytes, parallel.t, c.kind) for c in block_collectives(model, parallel.t,
                                                                                              parallel.sequence))
    pipeline = hand_overs * act / parallel.t
    data = sum(ring(nbytes, parallel.d, kind) for kind, nbytes in data_parallel(params, model, parallel, m))
    moe = blocks if moe_layers is None else moe_layers
    expert = m * moe * 4 * ring(model.tokens * model.top_k * model.hidden * model.dtype_bytes / parallel.t,
                                parallel.d, "all-to-all") if model.experts else 0.0
    return Traffic(tensor, pipeline, data, expert)
