"""ps7's keys — the scale chapters' derivations judged against :mod:`ppedu.cluster` and the simulator: a hierarchical
all-reduce as ppedu's α–β costs of its three collectives (:func:`~ppedu.cluster.collectives.cost`), a block's tensor-
and sequence-parallel collectives (:func:`~ppedu.cluster.tensor.block_collectives`, each costed as a ring), zigzag
ring attention's threshold (:func:`~ppedu.cluster.context.min_block_tokens` scaled by the block pairs a zigzag step
computes, counted here), ZeRO's collectives beside a pipeline (:func:`~ppedu.cluster.parallel.data_parallel`), FSDP2's
walk (:func:`~ppedu.cluster.sharding.fsdp_step`), the padding at the no-drop capacity
(:func:`~ppedu.cluster.experts.capacity_trade`), a mixture of experts' parameters (:class:`~ppedu.cluster.Model`'s
count), the largest job at a goodput (bisection on :mod:`~ppedu.cluster.reliability`'s first-order goodput), a
pipeline's MFU (1F1B simulated, with and without full recomputation), the batch that trains fastest (minimised
numerically), and the layouts table (:func:`~ppedu.cluster.layouts.layouts`), where every layout within the stated
tolerance of the fastest fitting one is right. The written answers are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps7", "alice")
>>> key = accepted(v)
>>> all(r.fits for r in key.values()) and len(key) >= 1
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from ppedu import Costs, simulate
from ppedu.cluster import GPUS, MODELS, Link, Model, Parallel
from ppedu.cluster.collectives import cost, ring
from ppedu.cluster.context import min_block_tokens
from ppedu.cluster.experts import capacity_trade
from ppedu.cluster.hardware import GPU
from ppedu.cluster.layouts import Layout, layouts
from ppedu.cluster.parallel import data_parallel
from ppedu.cluster.reliability import goodput, young_daly
from ppedu.cluster.sharding import PRECISIONS, fsdp_step
from ppedu.cluster.tensor import block_collectives
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps7 import LAYOUT_SCHEDULES, QUESTIONS, TOLERANCE
from ppedu.grading.students import pick
from ppedu.schedules import one_f_one_b

#: Float noise in bytes and seconds grows with them: results are right within this share.
REL = 1e-5


def _link(alpha: float, bandwidth: float) -> Link:
    return Link("the question's", bandwidth, alpha)


def _block(tokens: int, hidden: int, experts: int = 0, top_k: int = 0) -> Model:
    """A model whose micro-batch is ``tokens`` × ``hidden`` in bf16: all the collectives read of it."""
    return Model("the question's", layers=2, hidden=hidden, vocab=1, seq=tokens, experts=experts, top_k=top_k)


def _hierarchical(nodes: int, per_node: int, nbytes: float, a_in: float, b_in: float, a_out: float,
                  b_out: float) -> float:
    """A reduce-scatter inside each node, an all-reduce of each GPU's shard across the nodes (one ring per local
    rank, each GPU on its own network port), an all-gather inside each node."""
    inside, between = _link(a_in, b_in), _link(a_out, b_out)
    return (cost("reduce-scatter", nbytes, per_node, inside).seconds
            + cost("all-reduce", nbytes / per_node, nodes, between).seconds
            + cost("all-gather", nbytes, per_node, inside).seconds)


@cache
def zigzag_share(c: int) -> float:
    """The share of a full block pair each of ring attention's ``c`` steps computes on every GPU under a causal mask
    with zigzag pieces (GPU ``i`` holds pieces ``i`` and ``2c − 1 − i`` of ``2c``; a diagonal piece pair counts half):
    the same at every step and GPU, or this raises."""
    pieces = [(i, 2 * c - 1 - i) for i in range(c)]
    shares = set()
    for i in range(c):
        for step in range(c):
            mine, theirs = pieces[i], pieces[(i - step) % c]
            shares.add(sum(1.0 if k < q else 0.5 if k == q else 0.0 for q in mine for k in theirs) / 4)
    assert len(shares) == 1, shares
    return shares.pop()


def _zigzag(flops: float, bandwidth: float, width: int, kv_width: int) -> float:
    model = Model("the question's", layers=1, hidden=width, vocab=1, heads=width // 128, kv_heads=kv_width // 128)
    gpu = GPU("the question's", tflops=flops / 1e12, memory=1.0, efficiency=1.0)
    return min_block_tokens(model, gpu, _link(0.0, bandwidth)) / zigzag_share(8)


def _zero_step(stage: int, params: float, d: int, m: int) -> float:
    sent = data_parallel(params, _block(1, 1), Parallel(d=d, zero=stage), m)  # bf16 gradients and weights
    return sum(ring(nbytes, d, kind) for kind, nbytes in sent) / 1e9


def _padding(max_load: int, tokens: int, experts: int, top_k: int) -> float:
    """The buffer share left to padding at the smallest factor that drops nothing, for loads whose busiest expert
    takes ``max_load`` (the others' split does not matter: every copy is kept)."""
    copies = tokens * top_k
    rest, others = copies - max_load, experts - 1
    loads = (max_load, *(rest // others + (1 if j < rest % others else 0) for j in range(others)))
    factor = max_load * experts / copies * (1 - 1e-12)  # just below: rounding up gives the busiest load exactly
    row = capacity_trade(loads, top_k, (factor,))[0]
    assert row.capacity == max_load and row.dropped == 0, row
    return 1 - copies / (row.capacity * experts)  # unrounded: capacity_trade prints four decimals


def _largest_job(gpu_mtbf_h: float, checkpoint_s: float, restart_s: float, target: float) -> float:
    """The GPUs at which goodput at the Young–Daly interval falls to ``target`` (it falls as the job grows)."""
    def good(n: float) -> float:
        mtbf = gpu_mtbf_h * 3600 / n
        return goodput(young_daly(checkpoint_s, mtbf), checkpoint_s, mtbf, restart_s)

    low, high = 1e-9, 1e12
    for _ in range(200):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if good(mid) >= target else (low, mid)
    return (low * high) ** 0.5


def _moe(layers: int, hidden: int, kv_width: int, ffn: int, experts: int, top_k: int, vocab: int) -> Model:
    """The question's mixture of experts, as :mod:`ppedu.cluster` counts it: heads of 128, gated (SwiGLU) experts."""
    return Model("the question's", layers=layers, hidden=hidden, vocab=vocab, heads=hidden // 128,
                 kv_heads=kv_width // 128, ffn=ffn, gated=True, experts=experts, top_k=top_k)


def _best_batch(b_noise: float, p: int, d: int) -> float:
    """The global batch reaching the target in the least time: steps ``1 + B_noise/B`` over the minimum (McCandlish
    et al.), each a 1F1B step of ``(B/d + p − 1)`` forward-and-backward times; minimised numerically (golden section
    on log B), not by the derivative."""
    def time(log_b: float) -> float:
        b = math.exp(log_b)
        return (1 + b_noise / b) * (b / d + p - 1)

    low, high, ratio = math.log(1e-6), math.log(1e12), (math.sqrt(5) - 1) / 2
    for _ in range(300):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        low, high = (low, b) if time(a) < time(b) else (a, high)
    return math.exp((low + high) / 2)


def truth(name: str, args: tuple[Any, ...]) -> float:
    if name == "hierarchical_allreduce_seconds":
        return _hierarchical(*args)
    if name == "tp_block_seconds":
        t, tokens, hidden, sequence, alpha, bandwidth = args
        return sum(cost(c.kind, c.nbytes, t, _link(alpha, bandwidth)).seconds
                   for c in block_collectives(_block(tokens, hidden), t, bool(sequence)))
    if name == "zigzag_min_tokens":
        return _zigzag(*args)
    if name == "zero_step_sent_gb":
        return _zero_step(*args)
    if name == "fsdp_peak_gb":
        units, unit_params, d, reshard = args
        return fsdp_step([unit_params] * int(units), d, PRECISIONS["bf16"], bool(reshard)).peak / 1e9
    if name == "no_drop_padding":
        return _padding(*args)
    if name == "largest_job_gpus":
        return _largest_job(*args)
    if name in ("moe_total_params", "moe_active_params"):
        model = _moe(*args)
        return float(model.params if name == "moe_total_params" else model.active_params)
    if name == "best_batch":
        return _best_batch(*args)
    efficiency, p, m, full = args  # pipeline_mfu: the model's 3 forwards' worth over what the GPUs could do meanwhile
    step = simulate(one_f_one_b(int(p), int(m)), Costs(f=1, b=3 if full else 2)).makespan
    return efficiency * 3 * m / step


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    close = lambda x: abs(got - x) <= REL * abs(x) + 1e-15  # noqa: E731  (seconds are small: relative)
    if name == "hierarchical_allreduce_seconds":
        nodes, k, nbytes, a_in, b_in, a_out, b_out = args
        n = nodes * k
        if close(2 * (n - 1) * a_out + 2 * (n - 1) / n * nbytes / b_out):
            return "that is one flat ring over every GPU at the slower link's pace; the hierarchy sends less across."
        if close(2 * (k - 1) * a_in + 2 * (k - 1) / k * nbytes / b_in + 2 * (nodes - 1) * a_out
                 + 2 * (nodes - 1) / nodes * nbytes / b_out):
            return "across the nodes each GPU all-reduces only its shard, 1/(GPUs per node) of the bucket."
        return ("three collectives one after another: a reduce-scatter inside the node, an all-reduce across, an "
                "all-gather.")
    if name == "tp_block_seconds":
        t, tokens, hidden, sequence, alpha, bandwidth = args
        if sequence and close(4 * (2 * (t - 1) * alpha + 2 * (t - 1) / t * 2 * tokens * hidden / bandwidth)):
            return ("that is tensor parallelism's four all-reduces; with sequence parallelism each is a reduce-scatter "
                    "and an all-gather, and the backward gathers each column-parallel layer's input again.")
        return ("list the block's collectives, forward and backward (chapter 12), each on s·b·h bf16 values, and cost "
                "each as a ring: its steps' latencies and the bytes a GPU sends.")
    if name == "zigzag_min_tokens":
        flops, bandwidth, width, kv_width = args
        if close(flops * kv_width * 2 / (2 * width * bandwidth)):
            return ("that is chapter 12's threshold for a full block pair; under the causal mask a zigzag step "
                    "computes less.")
        return "set one step's transfer (keys and values, bf16) equal to its compute under the causal mask, per GPU."
    if name == "zero_step_sent_gb":
        return ("per step, with m micro-batches: stage 1 reduces once; stage 2 reduce-scatters after every "
                "micro-batch; stage 3 gathers the weights before every forward and backward; rings, bf16, "
                "GB = 10⁹ bytes.")
    if name == "fsdp_peak_gb":
        return ("the shards of everything (16 bytes a parameter, over d), plus what is whole at the worst moment: "
                "the units gathered at once and one unit's gradients; GB = 10⁹ bytes.")
    if name == "no_drop_padding":
        return ("at the smallest factor that drops nothing, the capacity is the busiest expert's load; every copy is "
                "kept.")
    if name == "largest_job_gpus":
        return ("the job's MTBF is the GPU's over N; at the Young–Daly interval the goodput is "
                "1 − √(2C/MTBF) − R/MTBF: solve for N (a real number).")
    if name in ("moe_total_params", "moe_active_params"):
        return ("per block: attention's four matrices (queries and output h × h, keys and values h × kv), each "
                "expert's three (gated), the router (h × experts) and two norms; the embedding and the output layer "
                "(and a final norm) once. Used: only top-k experts, the router whole.")
    if name == "best_batch":
        return "time = steps × step: (1 + B_noise/B) × (B/d + p − 1); set its derivative in B to zero."
    efficiency, p, m, full = args
    if close(efficiency * m / (m + p - 1)) and full:
        return "full recomputation runs each forward again in the backward: the GPUs do more than the model counts."
    return ("MFU = the kernels' efficiency × the share of the step the GPUs compute × the model's FLOPs over those "
            "computed; 1F1B under equal costs: m + p − 1 forward-and-backward times a step.")


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on, never shown: the student's own (a hash of their id)."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps7-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name == "hierarchical_allreduce_seconds":
        return ((choose("N", (3, 6, 32)), choose("k", (2, 4, 8)), choose("M", (1e5, 3e7, 2e9)), 3e-6, 4.5e11,
                 choose("a", (2e-6, 2e-5)), choose("B", (1.25e10, 5e10))),)
    if name == "tp_block_seconds":
        t, a, b = choose("t", (3, 8, 16)), choose("a", (2e-6, 1e-5)), choose("B", (5e10, 4.5e11))
        return (t, choose("s", (1024, 8192)), choose("h", (2048, 12288)), True, a, b), (t, 2048, 5120, False, a, b)
    if name == "zigzag_min_tokens":
        return ((choose("F", (1.2e14, 4e14)), choose("B", (2.5e10, 4.5e11)), choose("w", (5120, 8192)),
                 choose("kv", (512, 1024, 5120))),)
    if name == "zero_step_sent_gb":
        return (choose("stage", range(4)), choose("P", (1.3e9, 3.3e10)), choose("d", (2, 48, 128)),
                choose("m", (1, 6, 64))),
    if name == "fsdp_peak_gb":
        return (choose("n", (2, 24, 126)), choose("u", (5e7, 1.7e9)), choose("d", (4, 128)),
                choose("r", (True, False))),
    if name == "no_drop_padding":
        e, k = choose("E", (16, 160)), choose("k", (1, 6))
        return (math.ceil(2048 * k / e * choose("over", (1.2, 3.0))), 2048, e, k),
    if name == "largest_job_gpus":
        return ((choose("M", (5_000, 80_000)), choose("C", (5, 300)), choose("R", (60, 1800)),
                 choose("g", (0.8, 0.97))),)
    if name in ("moe_total_params", "moe_active_params"):
        return ((choose("L", (24, 61)), choose("h", (2048, 7168)), choose("kv", (512, 1024)), choose("f", (1408, 2048)),
                 choose("E", (64, 256)), choose("k", (6, 8)), choose("V", (102400, 129280))),)
    if name == "best_batch":
        return (choose("B", (30.0, 5000.0)), choose("p", (2, 3, 32)), choose("d", (2, 64))),
    return ((choose("e", (0.3, 0.6)), choose("p", (2, 6, 24)), choose("m", (3, 50)), choose("full", (False, True))),)


def accepted(v: Mapping[str, Any]) -> dict[tuple[int, int, int, str], Layout]:
    """The layouts that count as right: each (t, p, d, schedule) that fits, in any recomputation mode and ZeRO stage,
    within :data:`TOLERANCE` of the fastest fitting layout's tokens per second."""
    return _accepted(v["layout_model"], v["gpu"], v["gpus"], v["batch"])


@cache
def _accepted(model: str, gpu: str, gpus: int, batch: int) -> dict[tuple[int, int, int, str], Layout]:
    rows = [r for r in layouts(MODELS[model], GPUS[gpu], gpus, batch, schedules=LAYOUT_SCHEDULES) if r.fits]
    fastest = max(r.tokens_per_s for r in rows)
    out: dict[tuple[int, int, int, str], Layout] = {}
    for r in rows:
        if r.tokens_per_s >= (1 - TOLERANCE) * fastest:
            out.setdefault((r.t, r.p, r.d, r.schedule), r)
    return out


@cache
def _all(model: str, gpu: str, gpus: int, batch: int) -> tuple[Layout, ...]:
    return tuple(layouts(MODELS[model], GPUS[gpu], gpus, batch, schedules=LAYOUT_SCHEDULES))


@dataclass(frozen=True)
class NearBest:
    """The layout question: right if the student's layout is one of :func:`accepted`; else what is off with it."""

    form: Any

    def judge(self, data: Mapping[str, object], v: Values) -> str:
        got = self.form.read(data)
        choice = (got["t"], got["p"], got["d"], got["schedule"])
        right = accepted(v)
        if choice in right:
            return "correct"
        if got["t"] * got["p"] * got["d"] != v["gpus"]:
            raise Wrong(f"t·p·d = {got['t'] * got['p'] * got['d']}, but the layout must use all {v['gpus']} GPUs.")
        tried = [r for r in _all(v["layout_model"], v["gpu"], v["gpus"], v["batch"])
                 if (r.t, r.p, r.d, r.schedule) == choice]
        if not tried:
            raise Wrong("That layout is not one the table tries: t divides a node of 8, p is at most 16, and the "
                        "global batch must split into whole micro-batches per replica.")
        if not any(r.fits for r in tried):
            raise Wrong("That layout does not fit in the GPU's memory in any recomputation mode or ZeRO stage.")
        fastest = max(r.tokens_per_s for r in right.values())
        mine = max(r.tokens_per_s for r in tried if r.fits)
        raise Wrong(f"That layout fits, but it is {1 - mine / fastest:.1%} slower than the fastest that does (within "
                    f"{TOLERANCE:.0%} counts as right): what do the faster rows change?")


KEYS: dict[str, Any] = {
    **{q: FormulaJudge(QUESTIONS[q], truth, why, hidden, rel=REL)
       for q in ("hierarchical", "tensor", "ring_attention", "zero_step", "fsdp", "capacity", "moe", "failures", "mfu",
                 "batch")},
    "layout": NearBest(QUESTIONS["layout"]),
}
