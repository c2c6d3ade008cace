"""From a real model and cluster to schedule costs: per-layer times from FLOP counts, hand-over
times from link bandwidth and latency, per-GPU memory, and the "which schedule for my cluster"
table.

The arithmetic is the usual back-of-the-envelope one, stated so that a student can redo it:

* a transformer block with ``P`` parameters costs ``2·P·tokens`` FLOPs forward (one multiply and
  one add per parameter per token; attention's ``s²`` term is left out) and twice that backward,
  split evenly into the input-gradient pass ``b`` and the weight-gradient pass ``w``;
* the embedding is a lookup (no FLOPs); the output layer is a ``hidden × vocab`` matmul;
* a time is FLOPs ÷ (peak FLOP/s × an achievable-efficiency factor);
* a hand-over between stages carries ``tokens × hidden`` activations (or their gradients) and
  takes ``latency + bytes ÷ bandwidth``;
* memory per GPU is weights + gradients (``dtype`` bytes each per parameter) + optimizer state
  (Adam in mixed precision: fp32 master weights, momentum and variance, 12 bytes per parameter,
  16 in all; Rajbhandari et al., "ZeRO", 2020) + the schedule's peak activations, taken from
  the simulator. Activations per block follow Korthikanti et al., "Reducing Activation
  Recomputation in Large Transformer Models", 2022: ``s·b·h·(34 + 5·a·s/h)`` bytes at 16 bits
  with nothing recomputed, ``34·s·b·h`` with selective recomputation (attention scores
  recomputed, as flash attention does), ``2·s·b·h`` (the block's input) with full recomputation,
  which costs one more forward inside every backward.

Tensor parallelism, the data-parallel all-reduce and the CUDA context are not modelled; sharding
Adam's state over data-parallel replicas (ZeRO stage 1) is a smaller ``optimizer_bytes``.

>>> m = MODELS["70b"]
>>> round(m.params / 1e9, 1), m.layers
(69.0, 80)
>>> c = Cluster(GPUS["h100-80gb"], 8, LINKS["nvlink"])
>>> row = best(plan(m, c, [16]))
>>> row is None  # 69 B parameters × 16 bytes do not fit in 8 × 80 GB
True
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ppedu.costs import Comm, Costs, PerChunk
from ppedu.ops import Schedule
from ppedu.partition import Partition, partition
from ppedu.schedules import SCHEDULES, VIRTUAL, build, interleaved_1f1b, one_f_one_b
from ppedu.simulate import Timeline, simulate
from ppedu.text import columns

GB = 1e9
#: How much of the forward pass a backward recomputes: nothing, the attention core, everything.
RECOMPUTE = ("none", "selective", "full")
#: Adam in mixed precision keeps fp32 master weights, momentum and variance: 3 × 4 bytes per parameter.
ADAM_BYTES = 12.0


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number ≥ 1 (got {value!r})")


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: ``layers`` blocks of width ``hidden``, an embedding and an
    untied output layer over ``vocab`` tokens, trained on micro-batches of ``microbatch``
    sequences of ``seq`` tokens in ``dtype_bytes``-byte precision (2: bf16).

    ``ffn`` is the MLP width (default ``4·hidden``); ``gated`` MLPs (SwiGLU) have three matrices
    instead of two; ``kv_heads`` below ``heads`` is grouped-query attention.

    >>> toy = Model("toy", layers=2, hidden=8, vocab=10, seq=4, heads=2)
    >>> toy.block_params, toy.params  # 12·h² + 2·h per block; embedding and head h·V each, + a norm
    (784, 1736)
    """

    name: str
    layers: int
    hidden: int
    vocab: int
    seq: int = 4096
    microbatch: int = 1
    heads: int = 1
    kv_heads: int | None = None
    ffn: int | None = None
    gated: bool = False
    dtype_bytes: int = 2

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "vocab", "seq", "microbatch", "heads", "dtype_bytes"):
            _positive_int(name, getattr(self, name))
        for name in ("kv_heads", "ffn"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")

    @property
    def tokens(self) -> int:
        """Tokens in one micro-batch."""
        return self.seq * self.microbatch

    @property
    def block_params(self) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads) * (self.hidden // self.heads)
        ffn = self.ffn or 4 * h
        return 2 * h * h + 2 * h * kv + (3 if self.gated else 2) * h * ffn + 2 * h  # + two norms

    @property
    def params(self) -> int:
        return sum(self.layer_params())

    def layer_params(self) -> tuple[int, ...]:
        """Parameters of each unit a partition may cut between: embedding, the blocks, output layer
        (with the final norm)."""
        h = self.hidden
        return (self.vocab * h, *(self.block_params,) * self.layers, self.vocab * h + h)

    def layer_flops(self) -> tuple[float, ...]:
        """Forward FLOPs of one micro-batch through each unit: ``2 · params · tokens`` (the
        embedding is a lookup)."""
        return (0.0, *(2.0 * p * self.tokens for p in self.layer_params()[1:]))

    @property
    def hand_over_bytes(self) -> int:
        """Bytes of activations (or gradients) one micro-batch carries between two stages."""
        return self.tokens * self.hidden * self.dtype_bytes

    def layer_activation_bytes(self, recompute: str = "selective") -> tuple[float, ...]:
        """Activation bytes each unit keeps for one micro-batch until its backward (see the module
        docstring); the output layer keeps its input and the fp32 logits for the loss."""
        if recompute not in RECOMPUTE:
            raise ValueError(f"recompute is one of {', '.join(RECOMPUTE)} (got {recompute!r})")
        s, b, h, a = self.seq, self.microbatch, self.hidden, self.heads
        per_element = {"none": 34 + 5 * a * s / h, "selective": 34.0, "full": 2.0}[recompute]
        block = s * b * h * per_element * self.dtype_bytes / 2  # the paper's figures are for 16 bits
        return (0.0, *(block,) * self.layers, float(self.tokens * (h * self.dtype_bytes + 4 * self.vocab)))


@dataclass(frozen=True)
class GPU:
    """An accelerator: dense 16-bit peak ``tflops`` (TFLOP/s, without sparsity), ``memory`` in
    bytes, and the fraction of peak a training run achieves (model-FLOPs utilisation)."""

    name: str
    tflops: float
    memory: float
    efficiency: float = 0.4

    @property
    def flops_per_second(self) -> float:
        """What it achieves: peak × efficiency."""
        return self.tflops * 1e12 * self.efficiency

    def seconds(self, flops: float) -> float:
        return flops / self.flops_per_second


@dataclass(frozen=True)
class Link:
    """A GPU-to-GPU link: ``bandwidth`` in bytes/s each way, ``latency`` in seconds per message."""

    name: str
    bandwidth: float
    latency: float

    def seconds(self, nbytes: float) -> float:
        return self.latency + nbytes / self.bandwidth


#: Dense BF16 peaks and memory from NVIDIA's data sheets (A100: "NVIDIA A100 Tensor Core GPU"
#: data sheet, 312 TFLOP/s; H100 SXM and PCIe: "NVIDIA H100 Tensor Core GPU" data sheet, 989 and
#: 756 TFLOP/s, the sheet's 1,979/1,513 being with sparsity; H200 SXM: "NVIDIA H200" data sheet,
#: 989 TFLOP/s, 141 GB; L4: "NVIDIA L4" data sheet, 121 TFLOP/s, 242 with sparsity). Memory in
#: 10⁹ bytes. Efficiency 0.4: Meta reports 38–43 % BF16 MFU training Llama 3 405B on H100s
#: ("The Llama 3 Herd of Models", 2024). Edit with ``dataclasses.replace``.
GPUS: dict[str, GPU] = {
    "a100-40gb": GPU("A100 40GB SXM", 312, 40 * GB),
    "a100-80gb": GPU("A100 80GB SXM", 312, 80 * GB),
    "h100-80gb": GPU("H100 80GB SXM", 989, 80 * GB),
    "h100-pcie": GPU("H100 80GB PCIe", 756, 80 * GB),
    "h200": GPU("H200 141GB SXM", 989, 141 * GB),
    "l4": GPU("L4 24GB", 121, 24 * GB),
}

#: Per-direction bandwidths: NVLink 4 (H100) 900 GB/s and NVLink 3 (A100) 600 GB/s in both
#: directions together (NVIDIA's data sheets); PCIe x16 at 16 and 32 GT/s with 128b/130b
#: coding; InfiniBand HDR and NDR at 200 and 400 Gb/s per port. Latencies are round
#: order-of-magnitude figures for one small point-to-point message through NCCL, not
#: measurements: measure your own and ``replace`` them. Ethernet at 10 and 1 Gb/s (nominal IEEE
#: 802.3 rates, TCP-class latencies) is there to show where interleaving stops paying.
LINKS: dict[str, Link] = {
    "nvlink": Link("NVLink 4", 450 * GB, 3e-6),
    "nvlink3": Link("NVLink 3", 300 * GB, 3e-6),
    "pcie-gen5": Link("PCIe Gen5 x16", 63 * GB, 5e-6),
    "pcie-gen4": Link("PCIe Gen4 x16", 31.5 * GB, 5e-6),
    "ib-400": Link("InfiniBand NDR 400 Gb/s", 50 * GB, 10e-6),
    "ib-200": Link("InfiniBand HDR 200 Gb/s", 25 * GB, 10e-6),
    "eth-10g": Link("Ethernet 10 Gb/s", 1.25 * GB, 50e-6),
    "eth-1g": Link("Ethernet 1 Gb/s", 0.125 * GB, 50e-6),
}

#: Published shapes: Llama 2 7B, 13B and 70B (Touvron et al., "Llama 2", 2023; 4,096-token
#: context, 32,000-token vocabulary, SwiGLU, grouped-query attention in 70B) and Llama 3.1 405B
#: ("The Llama 3 Herd of Models", 2024, Table 3; pre-trained on 8,192-token sequences).
MODELS: dict[str, Model] = {
    "7b": Model("Llama 2 7B", 32, 4096, 32000, 4096, heads=32, ffn=11008, gated=True),
    "13b": Model("Llama 2 13B", 40, 5120, 32000, 4096, heads=40, ffn=13824, gated=True),
    "70b": Model("Llama 2 70B", 80, 8192, 32000, 4096, heads=64, kv_heads=8, ffn=28672, gated=True),
    "405b": Model("Llama 3.1 405B", 126, 16384, 128256, 8192, heads=128, kv_heads=8, ffn=53248, gated=True),
}


@dataclass(frozen=True)
class Cluster:
    """``gpus`` GPUs in a pipeline, neighbours joined by ``link``; with ``node_size`` and
    ``between_nodes``, GPUs in different nodes of that size talk over ``between_nodes``.

    ``gpu`` is one kind for all, or a tuple with one per GPU (a mixed cluster: the partition then
    gives faster GPUs more layers, and each GPU's memory is checked against its own size).

    >>> c = Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"], node_size=2, between_nodes=LINKS["ib-400"])
    >>> comm = c.comm(50e9)  # 50 GB from GPU 1 to 2 over InfiniBand, from 0 to 1 over NVLink
    >>> round(comm[1][2], 4), round(comm[0][1], 4)
    (1.0, 0.1111)
    """

    gpu: GPU | tuple[GPU, ...]
    gpus: int
    link: Link
    node_size: int | None = None
    between_nodes: Link | None = None

    def __post_init__(self) -> None:
        _positive_int("gpus", self.gpus)
        if isinstance(self.gpu, tuple) and len(self.gpu) != self.gpus:
            raise ValueError(f"{len(self.gpu)} GPUs named for a pipeline of {self.gpus}")
        if (self.node_size is None) != (self.between_nodes is None):
            raise ValueError("node_size and between_nodes go together")
        if self.node_size is not None:
            _positive_int("node_size", self.node_size)

    def device(self, stage: int) -> GPU:
        """The GPU that runs pipeline stage ``stage``."""
        return self.gpu[stage] if isinstance(self.gpu, tuple) else self.gpu

    @property
    def mixed(self) -> bool:
        return len({self.device(s) for s in range(self.gpus)}) > 1

    def comm(self, nbytes: float) -> Comm:
        """Hand-over time of ``nbytes``: one number on a uniform cluster, else a GPU × GPU matrix."""
        if self.node_size is None or self.between_nodes is None or self.node_size >= self.gpus:
            return self.link.seconds(nbytes)
        n = self.node_size
        return tuple(tuple((self.link if a // n == b // n else self.between_nodes).seconds(nbytes)
                           for b in range(self.gpus)) for a in range(self.gpus))


def costs_for(model: Model, cluster: Cluster, schedule: Schedule, recompute: str = "selective") -> tuple[Costs, Partition]:
    """The cost model of ``schedule`` running ``model`` on ``cluster``: the model's units cut into
    the schedule's chunks (balanced on forward FLOPs, :func:`ppedu.partition`), each chunk's
    F, B and W times, and the hand-over times. On a mixed cluster the cut is balanced on each
    chunk's time on its own GPU (one-direction schedules only: DualPipe runs a chunk on two GPUs).

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


@dataclass(frozen=True)
class PlanRow:
    """One schedule at one ``m`` on one cluster: its simulated step and memory."""

    timeline: Timeline
    memory: Memory
    capacity: tuple[float, ...]
    tokens: int

    @property
    def schedule(self) -> str:
        return self.timeline.schedule.name

    @property
    def v(self) -> int:
        return self.timeline.schedule.virtual

    @property
    def m(self) -> int:
        return self.timeline.schedule.microbatches

    @property
    def step_time(self) -> float:
        """Seconds per optimizer step of ``m`` micro-batches."""
        return self.timeline.makespan

    @property
    def tokens_per_second(self) -> float:
        return self.m * self.tokens / self.step_time if self.step_time else 0.0

    @property
    def fits(self) -> bool:
        return all(need <= have for need, have in zip(self.memory.total, self.capacity))

    def as_dict(self) -> dict[str, object]:
        t = self.timeline
        return {"schedule": self.schedule, "v": self.v, "m": self.m, "step_time": self.step_time,
                "tokens_per_second": self.tokens_per_second, "bubble_ratio": t.bubble_ratio,
                "bubble_over_ideal": t.bubble_over_ideal, "memory": self.memory.as_dict(), "fits": self.fits}


def plan(model: Model, cluster: Cluster, microbatches: Sequence[int], schedules: Sequence[str] | None = None,
         v: int = 2, recompute: str = "selective", optimizer_bytes: float = ADAM_BYTES) -> list[PlanRow]:
    """Every schedule (default: all the course has; ``interleaved`` with ``v`` chunks per GPU) at
    every ``m`` it accepts, simulated on ``model`` and ``cluster``; rows by ``m``, then schedule."""
    model.layer_activation_bytes(recompute)  # names a bad recompute mode before any schedule is skipped
    capacity = tuple(cluster.device(s).memory for s in range(cluster.gpus))
    rows = []
    for m in microbatches:
        for name in schedules or SCHEDULES:
            try:
                schedule = build(name, cluster.gpus, m, v if name in VIRTUAL else 1)
                costs, cut = costs_for(model, cluster, schedule, recompute)
            except ValueError:
                if schedules:  # asked for by name: say why it cannot run
                    raise
                continue
            timeline = simulate(schedule, costs)
            memory = memory_for(model, timeline, cut, recompute, optimizer_bytes)
            rows.append(PlanRow(timeline, memory, capacity, model.tokens))
    if not rows:
        raise ValueError(f"no schedule accepts p={cluster.gpus} with m in {list(microbatches)}")
    return rows


def best(rows: Sequence[PlanRow]) -> PlanRow | None:
    """The row with the most tokens per second (rows at different ``m`` train different batch
    sizes, so step times alone do not compare) among those that fit in memory, or ``None``."""
    return max((r for r in rows if r.fits), key=lambda r: r.tokens_per_second, default=None)


# --- The communication price of interleaving --------------------------------------------------


def interleaving_break_even(p: int, m: int, costs: Costs, v: int = 2, chunk_costs: Costs | None = None) -> float:
    """The hand-over latency at which interleaved 1F1B (``v`` chunks per GPU) stops beating 1F1B.

    ``costs`` are per stage; interleaving pays ``chunk_costs`` per chunk (default
    ``costs.per_chunk(v)``); both get the same latency for every hand-over. Interleaving shrinks
    the bubble ``v``-fold but hands over ``v`` times as often, so past this latency it loses.
    0 if it never wins (one GPU has no bubble to shrink), ``inf`` if it always does. Found by
    bisection.

    >>> round(interleaving_break_even(4, 8, Costs(f=1, b=2)), 3)
    1.375
    """
    plain, inter = one_f_one_b(p, m), interleaved_1f1b(p, m, v)
    chunked = chunk_costs or costs.per_chunk(v)

    def gap(latency: float) -> float:
        return (simulate(inter, replace(chunked, comm=latency)).makespan
                - simulate(plain, replace(costs, comm=latency)).makespan)

    if gap(0.0) >= 0:
        return 0.0
    low, high = 0.0, max(costs.forward(s) + costs.backward(s, True) for s in range(p)) or 1.0
    for _ in range(64):
        if gap(high) >= 0:
            break
        low, high = high, 2 * high
    else:
        return math.inf
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    return high


def break_even_bandwidth(model: Model, cluster: Cluster, m: int, v: int = 2, recompute: str = "selective") -> float:
    """The link bandwidth (bytes/s, at ``cluster.link``'s latency) below which interleaving ``v``
    ways no longer pays for ``model`` on ``cluster``: 0 if interleaving always pays, ``inf`` if
    it never does."""
    p = cluster.gpus
    costs, _ = costs_for(model, cluster, one_f_one_b(p, m), recompute)
    chunked, _ = costs_for(model, cluster, interleaved_1f1b(p, m, v), recompute)
    latency = interleaving_break_even(p, m, _by_stage(costs, p), v, chunked)
    extra = latency - cluster.link.latency
    if math.isinf(latency):
        return 0.0
    return model.hand_over_bytes / extra if extra > 0 else math.inf  # inf: no bandwidth is enough


def _by_stage(costs: Costs, p: int) -> Costs:
    """One-chunk-per-stage costs given per chunk, as a plain per-stage tuple."""
    return Costs(f=tuple(costs.forward(s, s) for s in range(p)), b=tuple(costs.backward(s, False, s) for s in range(p)),
                 w=tuple(costs.weight(s, s) for s in range(p)), comm=costs.comm)


def interleaving_by_link(model: Model, cluster: Cluster, m: int, v: int = 2, links: Sequence[Link] | None = None,
                         recompute: str = "selective") -> list[tuple[Link, float, float]]:
    """For each link (default: every preset), the step times of 1F1B and of interleaved 1F1B with
    ``v`` chunks per GPU when every hand-over crosses that link: where the second stops being
    smaller, interleaving stops paying."""
    out = []
    for link in links or list(LINKS.values()):
        c = replace(cluster, link=link, node_size=None, between_nodes=None)
        times = []
        for schedule in (one_f_one_b(c.gpus, m), interleaved_1f1b(c.gpus, m, v)):
            times.append(simulate(schedule, costs_for(model, c, schedule, recompute)[0]).makespan)
        out.append((link, times[0], times[1]))
    return out


# --- ppedu plan ----------------------------------------------------------------------------


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``ppedu plan`` on the CLI's sub-command table."""
    from ppedu.cli import numbers  # late: the CLI imports this module

    cmd = commands.add_parser(
        "plan", help="which schedule for my cluster: step time, bubble and memory of each schedule for a real model",
        description="Per-layer times from FLOPs (2·params·tokens forward, twice that backward), hand-overs from "
        "link bandwidth and latency, memory from parameters (16 bytes each with Adam in mixed precision) plus the "
        "simulated peak activations.")
    cmd.add_argument("--model", choices=list(MODELS), required=True, help="model preset: " + ", ".join(MODELS))
    cmd.add_argument("--gpus", type=int, required=True, help="GPUs in the pipeline (stages)")
    cmd.add_argument("--gpu", default="h100-80gb",
                     help="GPU preset, or one per GPU comma-separated for a mixed cluster: " + ", ".join(GPUS))
    cmd.add_argument("--link", choices=list(LINKS), default="nvlink", help="link preset: " + ", ".join(LINKS))
    cmd.add_argument("--node-size", type=int, default=None, help="GPUs per node (with --between-nodes)")
    cmd.add_argument("--between-nodes", choices=list(LINKS), default=None, help="link between nodes")
    cmd.add_argument("-m", type=numbers, default=None, help="micro-batches per step, comma-separated "
                     "(default: 2p,4p,8p)")
    cmd.add_argument("-v", type=int, default=2, help="chunks per GPU for interleaved (default 2)")
    cmd.add_argument("--seq", type=int, default=None, help="sequence length (default: the model's)")
    cmd.add_argument("--microbatch", type=int, default=None, help="sequences per micro-batch (default 1)")
    cmd.add_argument("--recompute", choices=RECOMPUTE, default="selective", help="activation recomputation")
    cmd.add_argument("--efficiency", type=float, default=None, help="achieved fraction of peak FLOP/s (default 0.4)")
    cmd.add_argument("--zero-dp", type=int, default=1, metavar="N",
                     help="shard Adam's state over N data-parallel replicas (ZeRO stage 1; their all-reduce is not "
                     "timed)")
    out = cmd.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--png", metavar="FILE", help="also draw the best schedule's spacetime diagram into FILE")
    cmd.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    model = MODELS[args.model]
    model = replace(model, seq=args.seq or model.seq, microbatch=args.microbatch or model.microbatch)
    names = args.gpu.split(",")
    if unknown := [n for n in names if n not in GPUS]:
        raise ValueError(f"unknown GPU preset {unknown[0]!r} (choose from {', '.join(GPUS)})")
    if args.efficiency is not None and not 0 < args.efficiency <= 1:
        raise ValueError(f"efficiency lies in (0, 1] (got {args.efficiency})")
    kinds = tuple(replace(GPUS[n], efficiency=args.efficiency or GPUS[n].efficiency) for n in names)
    between = LINKS[args.between_nodes] if args.between_nodes else None
    cluster = Cluster(kinds[0] if len(kinds) == 1 else kinds, args.gpus, LINKS[args.link], args.node_size, between)
    p = cluster.gpus
    if any(x != int(x) or x < 1 for x in (args.m or ())):
        raise ValueError(f"m (micro-batches) must be whole numbers ≥ 1 (got {args.m})")
    ms = [int(x) for x in args.m] if args.m else [2 * p, 4 * p, 8 * p]
    _positive_int("zero-dp", args.zero_dp)
    rows = plan(model, cluster, ms, v=args.v, recompute=args.recompute, optimizer_bytes=ADAM_BYTES / args.zero_dp)
    winner = best(rows)
    m_even = next((x for x in sorted(ms, reverse=True) if x % p == 0), None)
    links = interleaving_by_link(model, cluster, m_even, args.v, recompute=args.recompute) if m_even and p > 1 else []
    if args.json:
        print(json.dumps({
            "model": model.name, "params": model.params, "gpus": [cluster.device(s).name for s in range(p)],
            "link": cluster.link.name, "hand_over_bytes": model.hand_over_bytes, "recompute": args.recompute,
            "zero_dp": args.zero_dp,
            "memory_per_gpu": [cluster.device(s).memory for s in range(p)],
            "rows": [r.as_dict() for r in rows],
            "best": None if winner is None else {"schedule": winner.schedule, "v": winner.v, "m": winner.m},
            "interleaving": [{"link": link.name, "m": m_even, "v": args.v, "1f1b": a, "interleaved": b}
                             for link, a, b in links],
        }))
        return 0
    print(render_plan(model, cluster, rows, args.recompute))
    if links and m_even:
        print(f"\ninterleaving (v={args.v}) against 1F1B at m={m_even}, every hand-over over one link:")
        table = [("link", "hand-over ms", "1f1b s", "interleaved s", "pays?")] + [
            (link.name, f"{link.seconds(model.hand_over_bytes) * 1e3:.3f}", f"{a:.3f}", f"{b:.3f}",
             "yes" if b < a else "no") for link, a, b in links]
        print(columns(table))
        bw = break_even_bandwidth(model, cluster, m_even, args.v, args.recompute)
        if bw == 0 or math.isinf(bw):
            print("it pays at any bandwidth" if bw == 0 else "it does not pay at any bandwidth")
        else:
            print(f"it stops paying below {bw / GB:.3g} GB/s at {cluster.link.name}'s latency")
    if args.png:
        from ppedu.plot import plot_timeline

        shown = winner or min(rows, key=lambda r: max(r.memory.total))
        title = f"{shown.schedule} (m={shown.m}) — {model.name} on {_gpus(cluster)}" + ("" if winner else " (does not fit)")
        plot_timeline(shown.timeline, title=title).savefig(args.png, dpi=150)
        print(f"wrote {args.png}")
    return 0


def render_plan(model: Model, cluster: Cluster, rows: Sequence[PlanRow], recompute: str = "selective") -> str:
    """:func:`plan`'s rows as the CLI prints them: a header, one line per schedule and m, the best.

    >>> c = Cluster(GPUS["h100-80gb"], 2, LINKS["nvlink"])
    >>> print(render_plan(MODELS["7b"], c, plan(MODELS["7b"], c, [4], ["1f1b"])).splitlines()[-1])
    best: 1f1b at m=4, 15776 tokens/s
    """
    winner = best(rows)
    links = cluster.link.name + (f", {cluster.between_nodes.name} between nodes of {cluster.node_size}"
                                 if cluster.between_nodes else "")
    hand_over = cluster.link.seconds(model.hand_over_bytes)
    lines = [
        f"{model.name}: {model.params / 1e9:.1f} B parameters, {model.layers} blocks, {model.microbatch} × "
        f"{model.seq} tokens per micro-batch, recompute {recompute}",
        f"on {_gpus(cluster, detail=True)}, {links}; "
        f"a hand-over of {model.hand_over_bytes / 1e6:.3g} MB takes {hand_over * 1e3:.3g} ms",
        "",
    ]
    table = [("schedule", "m", "step s", "tokens/s", "idle/total", "bubble/ideal", "max GB", "fits",
              "GB per GPU (0…)")]
    for r in rows:
        table.append((r.schedule + (f" v={r.v}" if r.v > 1 else ""), str(r.m), f"{r.step_time:.3f}",
                      f"{r.tokens_per_second:.0f}", f"{r.timeline.bubble_ratio:.2%}",
                      f"{r.timeline.bubble_over_ideal:.2%}", f"{max(r.memory.total) / GB:.1f}",
                      "yes" if r.fits else "no", " ".join(f"{x / GB:.0f}" for x in r.memory.total)))
    lines.append(columns(table))
    if winner:
        lines.append(f"\nbest: {winner.schedule}" + (f" v={winner.v}" if winner.v > 1 else "")
                     + f" at m={winner.m}, {winner.tokens_per_second:.0f} tokens/s")
    else:
        least = min(rows, key=lambda r: max(r.memory.total))
        need = max(least.memory.total)
        lines.append(f"\nnothing fits (the leanest, {least.schedule} at m={least.m}, needs {need / GB:.1f} GB on one GPU): "
                     "use more GPUs, --recompute full, or shard the optimizer state (--zero-dp)")
    return "\n".join(lines)


def _gpus(cluster: Cluster, detail: bool = False) -> str:
    """``8 × H100 80GB SXM``, or the runs of a mixed cluster (``2 × H100 …, 2 × A100 …``)."""
    runs: list[list] = []
    for s in range(cluster.gpus):
        gpu = cluster.device(s)
        if runs and runs[-1][0] == gpu:
            runs[-1][1] += 1
        else:
            runs.append([gpu, 1])
    return ", ".join(f"{n} × {g.name}" + (f" ({g.tflops:g} TFLOP/s at {g.efficiency:.0%}, {g.memory / GB:g} GB)"
                                          if detail else "") for g, n in runs)
