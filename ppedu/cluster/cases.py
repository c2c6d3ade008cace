"""Two published trainings computed end to end from their published figures (:mod:`ppedu.cluster.published`): Llama 3
405B's 4D layout on 16,384 H100s and DeepSeek-V3's DualPipe with 64-way expert parallelism on 2,048 H800s. For each,
on its fullest GPU: memory (model state in the run's precision and sharding, and the simulated schedule's peak
activations), the pipeline's bubble, the bytes each parallelism sends per step, and MFU — from the published
throughput. Which figures are checks and which restate the report: Llama 3's throughput is derived from Table 4's
TFLOP/s per GPU, so the MFU ppedu prints for it is Table 4's own ratio (TFLOP/s over peak), not a check of it; the
independent figure is the whole run's, from the model card's GPU hours and the report's tokens. DeepSeek-V3's
throughput comes from its GPU hours per trillion tokens, so its MFU rests on ppedu's FLOP count.

What the reports do not publish is an assumption, a parameter with its default named: the micro-batch (one
sequence, so ``m`` is the sequences per pipeline), Llama 3's chunks per GPU ``v``, and ppedu's kernel efficiency
(:attr:`ppedu.cluster.GPU.efficiency`) where a time is simulated.

>>> case = llama3_405b()
>>> case.gpus, case.m, round(case.mfu_from_tflops, 3)  # Table 4's 400 TFLOP/s on a 989 TFLOP/s peak
(16384, 16, 0.404)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ppedu.cluster.collectives import ring
from ppedu.cluster.costing import costs_for, on_gpus
from ppedu.cluster.experts import moe_layer_overlap, nodes_crossed
from ppedu.cluster.hardware import GB, GPUS, LINKS, Cluster, Model
from ppedu.cluster.parallel import Parallel
from ppedu.cluster.planning import plan
from ppedu.cluster.published import (
    DEEPSEEK_V3, DEEPSEEK_V3_RUN, H800_IB, LLAMA3_405B, LLAMA3_GPU_HOURS, LLAMA3_TABLE4, LLAMA3_TOKENS, Layout4D,
)
from ppedu.cluster.sharding import PRECISIONS, Precision
from ppedu.costs import EQUAL, Costs
from ppedu.lesson import Table
from ppedu.schedules import dualpipe, one_f_one_b, zero_bubble_h1
from ppedu.simulate import Timeline, simulate


@dataclass(frozen=True)
class Finding:
    """One computed figure of a case study, and how it was computed."""

    what: str
    value: str
    how: str


@dataclass(frozen=True)
class Case:
    """A training run computed on its fullest GPU: bytes of model state and activations, the simulated pipeline
    step, bytes sent per step by each parallelism, and MFU."""

    name: str
    layout: str
    gpus: int
    m: int
    precision: Precision
    weights: float
    grads: float
    optimizer: float
    activations: float
    timeline: Timeline
    traffic: dict[str, float]
    flops_per_token: float
    tokens_per_second_per_gpu: float
    peak_tflops: float
    mfu_from_tflops: float | None = None
    mfu_published: float | None = None
    mfu_whole_run: float | None = None
    throughput_source: str = "from the published figures"

    @property
    def memory(self) -> float:
        return self.weights + self.grads + self.optimizer + self.activations

    @property
    def achieved_tflops(self) -> float:
        """Model FLOPs per second per GPU the published throughput implies."""
        return self.flops_per_token * self.tokens_per_second_per_gpu / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization from the published throughput and ppedu's FLOP count."""
        return self.achieved_tflops / self.peak_tflops

    @property
    def kernel_efficiency_needed(self) -> float:
        """The share of peak the kernels must reach, while they compute, for this MFU when the simulated bubble is
        the only idle time (communication all hidden): ``MFU / (1 − bubble)``."""
        return self.mfu / (1 - self.timeline.bubble_ratio)

    def findings(self) -> Table[Finding]:
        """The case's figures as a table, each with how it was computed."""
        gb = {k: f"{getattr(self, k) / GB:.1f} GB" for k in ("weights", "grads", "optimizer", "activations", "memory")}
        rows = [
            Finding("layout", self.layout, "published"),
            Finding("model state", f"{gb['weights']} + {gb['grads']} + {gb['optimizer']}",
                    f"weights + gradients + optimizer in {self.precision.name}, sharded as published; the "
                    "gradients whole while they accumulate over the micro-batches"),
            Finding("activations", gb["activations"], f"the schedule's simulated peak at m = {self.m}, no recomputation"),
            Finding("memory per GPU", gb["memory"], "the fullest GPU"),
            Finding("bubble (idle/total)", f"{self.timeline.bubble_ratio:.1%}",
                    f"{self.timeline.schedule.name} simulated at p = {self.timeline.p}, m = {self.m}"),
            *(Finding(f"sent per step: {k}", f"{v / GB:.1f} GB", "by the fullest GPU")
              for k, v in self.traffic.items()),
            Finding("model FLOPs per token", f"{self.flops_per_token / 1e9:.0f} GFLOP",
                    "3 × forward: matrices a token passes (2 per parameter) + the attention core"),
            Finding("tokens per second per GPU", f"{self.tokens_per_second_per_gpu:.0f}", self.throughput_source),
            Finding("MFU", f"{self.mfu:.1%}", f"model FLOP/s over the {self.peak_tflops:g} TFLOP/s BF16 peak"
                    + (": Table 4's TFLOP/s over the peak again, whatever the FLOP count — a restatement, not a check"
                       if self.mfu_from_tflops is not None else "")),
        ]
        if self.mfu_from_tflops is not None and self.mfu_published is not None:
            rows.append(Finding("MFU as published", f"{self.mfu_published:.0%}",
                                f"Table 4; its TFLOPs/GPU over the peak give {self.mfu_from_tflops:.1%} (the table "
                                "agrees with itself)"))
        if self.mfu_whole_run is not None:
            rows.append(Finding("MFU over the whole run", f"{self.mfu_whole_run:.1%}",
                                "the independent check: ppedu's FLOPs (8K tokens) × the report's 15.6T tokens ÷ (the "
                                "card's GPU hours × peak); failures and the long-context stage included"))
        return Table(tuple(rows))


def llama3_405b(row: Layout4D = LLAMA3_TABLE4[1], v: int = 2, efficiency: float | None = None) -> Case:
    """Llama 3 405B on ``row`` of Table 4 (default: 16,384 GPUs, TP 8, PP 16, DP 128, 8,192-token sequences),
    context parallelism 1. Each stage is one node of 8 GPUs (tensor and sequence parallelism over NVLink); stages
    and replicas talk over 400 Gb/s links (RoCE in the report, section 3.3.1; ppedu's 400 Gb/s InfiniBand preset has
    the same bandwidth). The pipeline runs interleaved 1F1B with ``v`` chunks per GPU (the report
    names the schedule, not its ``v``) on ``m = `` the row's sequences per DP group, one per micro-batch, nothing
    recomputed ("without activation checkpointing", section 3.3.2). Model state as ppedu reads section 3.3.2: FSDP
    shards the optimizer state; the weights stay gathered from forward to backward; the gradients accumulate whole in
    fp32 over the micro-batches and are reduce-scattered in fp32 once per step, the updated bf16 weights all-gathered.
    The report says FSDP shards the gradients too: sharded while they accumulate, they would be reduce-scattered after
    every micro-batch (ZeRO-2 beside a pipeline) and take ``grads·(1 − 1/DP)`` off the memory — an assumption the
    chapter computes both ways.

    Throughput: Table 4's TFLOP/s per GPU over ppedu's FLOPs per token, so :attr:`Case.mfu` is Table 4's own ratio;
    :attr:`Case.mfu_whole_run` (the model card's 30.84M GPU hours for the report's 15.6T tokens) is the independent
    figure."""
    if row.cp != 1:
        raise ValueError("the case study simulates the 8K-token rows (context parallelism 1); "
                         "ppedu.cluster.context prices the long-context row's attention")
    model = replace(LLAMA3_405B, seq=row.seq)
    gpu = GPUS["h100-80gb"] if efficiency is None else replace(GPUS["h100-80gb"], efficiency=efficiency)
    cluster = Cluster(gpu, row.pp, LINKS["ib-400"])
    parallel = Parallel(t=row.tp, d=row.dp, sequence=True, zero=1, tp_link=LINKS["nvlink"], dp_link=LINKS["ib-400"])
    m = row.batch_per_dp
    simulated = plan(model, cluster, [m], ["interleaved"], v=v, recompute="none", parallel=parallel)[0]
    fullest = max(range(row.pp), key=lambda s: simulated.memory.total[s])
    precision = PRECISIONS["bf16-fp32-grads"]
    params = simulated.memory.weights[fullest] / model.dtype_bytes  # this GPU's share of its stage's parameters
    traffic = {
        "tensor (NVLink)": simulated.traffic[fullest].tensor,
        "pipeline": simulated.traffic[fullest].pipeline,
        "data (FSDP)": ring(params * precision.grads, row.dp, "reduce-scatter")
        + ring(params * precision.weights, row.dp, "all-gather"),
    }
    per_token = 3 * sum(model.layer_flops()) / model.tokens
    return Case(
        "Llama 3 405B", f"TP {row.tp} × CP {row.cp} × PP {row.pp} × DP {row.dp}, interleaved v = {v}", row.gpus, m,
        precision, params * precision.weights, params * precision.grads, params * precision.optimizer / row.dp,
        simulated.memory.activations[fullest], simulated.timeline, traffic, per_token,
        row.tflops_per_gpu * 1e12 / per_token, gpu.tflops, row.tflops_per_gpu / gpu.tflops, row.mfu,
        per_token * LLAMA3_TOKENS / (LLAMA3_GPU_HOURS * 3600 * gpu.tflops * 1e12),
        f"Table 4's {row.tflops_per_gpu:g} TFLOP/s ÷ the FLOPs per token")


def deepseek_v3(m: int = 120, model: Model = DEEPSEEK_V3) -> Case:
    """DeepSeek-V3 on 2,048 H800s as section 3.2 lays it out: 16 DualPipe stages, GPU ``j`` holding model stages
    ``j`` and ``15 − j``; each layer's 256 experts over 64 GPUs of 8 nodes (4 per GPU); ZeRO-1 over the 128 GPUs
    that share a stage (expert parallelism taken out of that data parallelism: each expert's optimizer state is
    sharded over its 2 replicas, the rest over all 128); no tensor parallelism. ``m``: the batch of 15,360 (the
    report's "batch size", read as sequences of 4,096 tokens) over 128 pipelines, one sequence per micro-batch — an
    assumption: the report gives neither the micro-batch nor ``m``.

    Memory in its FP8 recipe (:data:`~ppedu.cluster.sharding.PRECISIONS`); activations from the generic inventory in
    16 bits, an upper bound (the report caches them in FP8 and recomputes its norms and up-projections, sections
    3.2.3, 3.3.3). Traffic: each MoE block's dispatch (FP8) and combine (BF16) crossing InfiniBand to
    :func:`~ppedu.cluster.experts.nodes_crossed` other nodes at most 4, forward and backward; the pipeline's sends;
    ZeRO-1's reduce-scatter of fp32 gradients and all-gather of the weights. MFU from the 180K H800 GPU hours per
    trillion tokens (section 1)."""
    run = DEEPSEEK_V3_RUN
    p, ep = run.pp, run.ep
    d = run.gpus // p  # the GPUs that hold one stage
    gpu = GPUS["h800"]
    schedule = dualpipe(p, m)
    _, cut = costs_for(model, Cluster(gpu, p, H800_IB), schedule, "none")
    params = on_gpus(schedule, cut.totals(model.layer_params()))
    experts = on_gpus(schedule, cut.totals(model.layer_expert_params()))
    precision = PRECISIONS["fp8-deepseek"]
    per_gpu = [(x - e) + e / ep for x, e in zip(params, experts)]
    # ZeRO-1: the non-expert state over the stage's d GPUs, each expert's over its d/ep replicas: x/d either way.
    optimizer = [x / d * precision.optimizer for x in params]
    timeline = simulate(schedule, EQUAL)  # chunks of equal cost, W split off, a pair F + B + W: the course's model
    activations = timeline.peak_activation_memory(cut.totals(model.layer_activation_bytes("none")))
    state = [w * (precision.weights + precision.grads) + o for w, o in zip(per_gpu, optimizer)]
    fullest = max(range(p), key=lambda s: state[s] + activations[s])
    moe_blocks = cut.totals(model.layer_moe())
    passes = sum(moe_blocks[op.chunk] for op in schedule.stages[fullest] if op.kind == "F")
    crossed = nodes_crossed(model.experts, model.top_k, run.ep_nodes, run.node_limit)
    dense, expert = params[fullest] - experts[fullest], experts[fullest] / ep
    traffic = {
        "expert all-to-all (InfiniBand)": 2 * passes * model.tokens * model.hidden * crossed * (1 + 2),
        "pipeline": schedule.sent[fullest] * model.hand_over_bytes,
        "data (ZeRO-1)": sum(ring(x * precision.grads, n, "reduce-scatter") + ring(x * precision.weights, n, "all-gather")
                             for x, n in ((dense, d), (expert, d // ep))),
    }
    per_token = 3 * sum(model.layer_flops()) / model.tokens
    return Case(
        "DeepSeek-V3", f"PP {p} (DualPipe) × EP {ep} over {run.ep_nodes} nodes, ZeRO-1 DP", run.gpus, m, precision,
        per_gpu[fullest] * precision.weights, per_gpu[fullest] * precision.grads, optimizer[fullest],
        activations[fullest], timeline, traffic, per_token, 1e12 / (run.gpu_hours_per_trillion * 3600), gpu.tflops,
        throughput_source="180K H800 GPU hours per trillion tokens (section 1)")


@dataclass(frozen=True)
class Hidden:
    """One schedule of DeepSeek-V3's pipeline with its all-to-all hidden in overlapped pairs or exposed."""

    schedule: str
    all_to_all: str
    step: float
    bubble: str


def dualpipe_against_exposed(p: int = 16, m: int = 120, fp8: bool = True) -> Table[Hidden]:
    """DeepSeek-V3's pipeline in units of a chunk's forward (``f = b = w = 1``, W split off), its all-to-all taking
    ``r`` of each pass's time (``r`` from :func:`~ppedu.cluster.experts.moe_layer_overlap`, FP8 matrices by default):
    every forward and input-gradient pass not in a pair is ``1 + r`` long (W sends nothing). 1F1B and ZB-H1 have no
    pairs; DualPipe hides the all-to-all only inside its overlapped pairs (a pair costs ``f + b + w``, the all-to-all
    of the one under the other's computation, as the report's Figure 4 shows), while its unpaired forwards and
    backwards (warm-up and cool-down) still pay it. ``m = 120`` is ppedu's assumption (one sequence per micro-batch,
    :func:`deepseek_v3`).

    >>> rows = {r.schedule: r for r in dualpipe_against_exposed()}
    >>> rows["DualPipe"].step < rows["ZB-H1"].step < rows["1F1B"].step
    True
    """
    r = moe_layer_overlap(DEEPSEEK_V3, GPUS["h800"], H800_IB, DEEPSEEK_V3_RUN.ep_nodes, DEEPSEEK_V3_RUN.node_limit,
                          fp8=fp8).ratio
    exposed = Costs(f=1 + r, b=1 + r, w=1)
    rows = []
    for name, timeline in (("1F1B", simulate(one_f_one_b(p, m), exposed)),
                           ("ZB-H1", simulate(zero_bubble_h1(p, m), exposed)),
                           ("DualPipe", simulate(dualpipe(p, m), Costs(f=1 + r, b=1 + r, w=1, fb=3)))):
        rows.append(Hidden(name, f"hidden in pairs, exposed outside them, r = {r:.2f}" if name == "DualPipe"
                           else f"exposed, r = {r:.2f}",
                           round(timeline.makespan, 1), f"{timeline.bubble_ratio:.1%}"))
    return Table(tuple(rows))
