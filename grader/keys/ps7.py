"""ps7's keys — the scale chapters' variants, each judged against :mod:`ppedu.cluster`'s pieces and the simulator, none
of them a call of the library: a hierarchical all-reduce whose node step is one NVSwitch exchange (the step's rule here,
the bytes :func:`~ppedu.cluster.collectives.ring`'s) and whose cross-node ring is
:func:`~ppedu.cluster.collectives.cost`'s; DeepSpeed-Ulysses' eight all-to-alls per block, each
:func:`~ppedu.cluster.collectives.cost`'s; zigzag ring attention's threshold
(:func:`~ppedu.cluster.context.min_block_tokens` scaled by the block pairs a zigzag step computes, counted here);
hybrid sharding beside a pipeline (ZeRO-3's collectives inside a node, an all-reduce of the shard across); FSDP2's
walk with a post-forward reshard onto ``g`` GPUs (walked here, unit by unit); the padding at the no-drop capacity
(:func:`~ppedu.cluster.experts.capacity_trade`); a mixture of experts with a gated shared expert
(:class:`~ppedu.cluster.Model`'s count and the shared expert's); the largest job under asynchronous checkpoints (the
interval and the job's size both searched numerically, never the closed form); a pipeline's MFU with the output layer
on its last stage (1F1B simulated); the batch that trains fastest on an interleaved pipeline with an overhead
(minimised numerically); and the layouts table (:func:`~ppedu.cluster.layouts.layouts`), where every layout within the
stated tolerance of the fastest fitting one is right. The written answers are graded by hand.

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
from ppedu.cluster.reliability import goodput
from ppedu.cluster.sharding import PRECISIONS, fsdp_step
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


def _one_shot(nbytes: float, k: int, link: Link) -> float:
    """A reduce-scatter or an all-gather inside an NVSwitch node as one step: every GPU sends its ``k − 1`` pieces at
    once (the question's rule), the bytes those of a ring."""
    return link.latency + ring(nbytes, k, "reduce-scatter") / link.bandwidth if k > 1 else 0.0


def _hierarchical(nodes: int, per_node: int, nbytes: float, a_in: float, b_in: float, a_out: float,
                  b_out: float) -> float:
    """One NVSwitch step reduce-scatters inside each node, one ring per local rank all-reduces each GPU's shard across
    the nodes, one NVSwitch step all-gathers inside each node."""
    inside, between = _link(a_in, b_in), _link(a_out, b_out)
    return 2 * _one_shot(nbytes, per_node, inside) + cost("all-reduce", nbytes / per_node, nodes, between).seconds


def _ulysses(t: int, tokens: int, hidden: int, kv_width: int, alpha: float, bandwidth: float) -> float:
    """DeepSpeed-Ulysses' block: queries, keys and values each all-to-all'd from sequence shards to head shards before
    attention, its output back after, and the mirror images in the backward; bf16, each GPU's ``tokens/t`` rows."""
    link = _link(alpha, bandwidth)
    return 2 * sum(cost("all-to-all", 2 * tokens / t * width, t, link).seconds
                   for width in (hidden, kv_width, kv_width, hidden))


def _hsdp(params: float, per_node: int, nodes: int, m: int, a_in: float, b_in: float, a_out: float,
          b_out: float) -> float:
    """Hybrid sharding: ZeRO-3's per-micro-batch collectives over the node's GPUs (:func:`data_parallel`), then once a
    step an all-reduce of each GPU's accumulated gradient shard among the GPUs of its local rank across the nodes."""
    inside, between = _link(a_in, b_in), _link(a_out, b_out)
    node = sum(cost(kind, nbytes, per_node, inside).seconds
               for kind, nbytes in data_parallel(params, _block(1, 1), Parallel(d=per_node, zero=3), m))
    return node + cost("all-reduce", 2 * params / per_node, nodes, between).seconds


def _fsdp_to_g(units: int, unit_params: float, d: int, g: int) -> float:
    """FSDP2's walk (as :func:`~ppedu.cluster.sharding.fsdp_step`, one unit prefetched) with ``reshard_after_forward
    = g``: after its forward a unit's whole weights give way to a ``g``-way shard, held until its backward gathers them
    whole again. The most bytes one GPU holds (GB)."""
    units, bf16 = int(units), PRECISIONS["bf16"]
    sharded, w, grad = units * unit_params * bf16.total / d, unit_params * bf16.weights, unit_params * bf16.grads
    whole_, small, peak = set(), set(), 0.0
    for i in range(units):
        whole_ |= {j for j in (i, i + 1) if j < units}
        peak = max(peak, len(whole_) * w + len(small) * w / g)
        whole_.discard(i)
        small.add(i)
    for i in reversed(range(units)):
        for j in (i, i - 1):
            if j >= 0 and j not in whole_:
                whole_.add(j)
                small.discard(j)
        peak = max(peak, len(whole_) * w + len(small) * w / g + grad)
        whole_.discard(i)
    return (sharded + peak) / 1e9


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


def _golden(f: Any, low: float, high: float) -> float:
    """The argument in ``[low, high]`` at which ``f`` (unimodal) is least: golden-section search."""
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(300):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        low, high = (low, b) if f(a) < f(b) else (a, high)
    return (low + high) / 2


def _largest_job(gpu_mtbf_h: float, stall_s: float, persist_s: float, restart_s: float, target: float) -> float:
    """The GPUs at which the best goodput falls to ``target`` under asynchronous checkpoints: training stalls
    ``stall_s`` per checkpoint, which is durable ``persist_s`` later, so a failure loses the work since the last
    *durable* one (on average half an interval and the persist time) and a restart. The best interval is searched
    numerically for each size, the size by bisection: no closed form."""
    def good(n: float) -> float:
        mtbf = gpu_mtbf_h * 3600 / n
        lost = lambda log_tau: -goodput(math.exp(log_tau), stall_s, mtbf, persist_s + restart_s)  # noqa: E731
        return -lost(_golden(lost, math.log(1e-3), math.log(1e9)))

    low, high = 1e-9, 1e12
    for _ in range(200):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if good(mid) >= target else (low, mid)
    return (low * high) ** 0.5


def _moe(layers: int, hidden: int, kv_width: int, ffn: int, experts: int, top_k: int, shared_ffn: int, vocab: int,
         active: bool) -> float:
    """The question's mixture of experts: :mod:`ppedu.cluster`'s count (heads of 128, gated experts, a router) and, in
    every block, a gated shared expert ``shared_ffn`` wide with its gate (``hidden`` weights), which every token
    uses."""
    model = Model("the question's", layers=layers, hidden=hidden, vocab=vocab, heads=hidden // 128,
                  kv_heads=kv_width // 128, ffn=ffn, gated=True, experts=experts, top_k=top_k)
    return float(model.active_params if active else model.params) + layers * (3 * hidden * shared_ffn + hidden)


def _mfu(efficiency: float, p: int, m: int, output: float) -> float:
    """1F1B simulated with the last stage's forward and backward ``1 + output`` times the others' (backward twice a
    forward): the model's FLOPs, ``(p + output)`` stages' forward and backward per micro-batch, over what the ``p``
    GPUs could do at peak in the step."""
    slow = lambda x: tuple([x] * (int(p) - 1) + [x * (1 + output)])  # noqa: E731
    step = simulate(one_f_one_b(int(p), int(m)), Costs(f=slow(1.0), b=slow(2.0))).makespan
    return efficiency * 3 * m * (p + output) / (p * step)


def _best_batch(b_noise: float, p: int, d: int, v: int, overhead: float) -> float:
    """The global batch reaching the target in the least time: steps ``1 + B_noise/B`` over the minimum (McCandlish
    et al.), each an interleaved 1F1B step of ``B/d + (p − 1)/v`` forward-and-backward times (the simulator's, equal
    costs; tests/grading/test_derivations.py) and the overhead; minimised numerically on log B, not by the
    derivative."""
    time = lambda log_b: (1 + b_noise / math.exp(log_b)) * (math.exp(log_b) / d + (p - 1) / v + overhead)  # noqa: E731
    return math.exp(_golden(time, math.log(1e-6), math.log(1e12)))


def truth(name: str, args: tuple[Any, ...]) -> float:
    if name == "hierarchical_allreduce_seconds":
        return _hierarchical(*args)
    if name == "ulysses_block_seconds":
        return _ulysses(*args)
    if name == "zigzag_min_tokens":
        return _zigzag(*args)
    if name == "hsdp_step_seconds":
        return _hsdp(*args)
    if name == "fsdp_peak_gb":
        return _fsdp_to_g(*args)
    if name == "no_drop_padding":
        return _padding(*args)
    if name == "largest_job_gpus":
        return _largest_job(*args)
    if name in ("moe_total_params", "moe_active_params"):
        return _moe(*args, active=name == "moe_active_params")
    if name == "best_batch":
        return _best_batch(*args)
    return _mfu(*args)


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    """What a wrong result on a shown input is off by, where a known route gives it; never the remedy."""
    close = lambda x: abs(got - x) <= REL * abs(x) + 1e-15  # noqa: E731  (seconds are small: relative)
    if name == "hierarchical_allreduce_seconds":
        nodes, k, nbytes, a_in, b_in, a_out, b_out = args
        if close(cost("reduce-scatter", nbytes, k, _link(a_in, b_in)).seconds * 2
                 + cost("all-reduce", nbytes / k, nodes, _link(a_out, b_out)).seconds):
            return "that costs the node's steps as a ring's, which is not the NVSwitch step the question describes."
        return "the node's two steps and the ring across, as the question describes them, do not add up to that."
    if name == "ulysses_block_seconds":
        return ("that is not the time of the block's all-to-alls as the question describes them (what each GPU holds, "
                "how many, forward and backward).")
    if name == "zigzag_min_tokens":
        flops, bandwidth, width, kv_width = args
        if close(flops * kv_width * 2 / (2 * width * bandwidth)):
            return "that is chapter 12's threshold for a full block pair, without the causal mask."
        return "that is not where one step's transfer (keys and values, bf16) meets its compute under the mask."
    if name == "hsdp_step_seconds":
        params, k, nodes, m, a_in, b_in, a_out, b_out = args
        n = k * nodes
        flat = sum(cost(kind, b, n, _link(a_out, b_out)).seconds
                   for kind, b in data_parallel(params, _block(1, 1), Parallel(d=n, zero=3), m))
        if close(flat):
            return "that is ZeRO-3 over every GPU on the slower link, not hybrid sharding."
        return "the collectives inside the node and across, as the question places them, do not add up to that."
    if name == "fsdp_peak_gb":
        units, unit_params, d, g = args
        for reshard in (True, False):
            if close(fsdp_step([unit_params] * int(units), d, PRECISIONS["bf16"], reshard).peak / 1e9):
                return f"that is FSDP2's peak with reshard_after_forward={reshard}, not with a reshard onto g GPUs."
        return "that is not the most one GPU holds at once in the walk the question describes."
    if name == "no_drop_padding":
        return "that is not the padding share of the buffers at the smallest factor that drops nothing."
    if name == "largest_job_gpus":
        gpu_mtbf_h, stall_s, persist_s, restart_s, target = args
        if close(_largest_job(gpu_mtbf_h, stall_s, 0.0, restart_s, target)):
            return "that job size leaves out what a failure loses while a checkpoint is not yet durable."
        return "at that many GPUs the best goodput under the question's checkpoints is not the target."
    if name in ("moe_total_params", "moe_active_params"):
        if close(_moe(*args[:6], 0, args[7], active=name == "moe_active_params")):
            return "that count has no shared expert."
        return "that count is off: compare it, block part by block part, with what the question lists."
    if name == "best_batch":
        return "at that batch the time to the loss is not the least for the question's pipeline and overhead."
    efficiency, p, m, output = args
    if close(efficiency * m / (m + p - 1)):
        return "that is the MFU of equal stages: the output layer's work on the last stage is not in it."
    return "that is not the model's FLOPs over what the GPUs could do in the step the question describes."


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on, never shown: the student's own (a hash of their id)."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps7-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name == "hierarchical_allreduce_seconds":
        return ((choose("N", (3, 6, 32)), choose("k", (3, 4, 8, 16)), choose("M", (1e5, 3e7, 2e9)), 3e-6, 4.5e11,
                 choose("a", (2e-6, 2e-5)), choose("B", (1.25e10, 5e10))),)
    if name == "ulysses_block_seconds":
        t = choose("t", (3, 8, 16))
        return ((t, choose("s", (1024, 8192)) * t, choose("h", (2048, 12288)), choose("kv", (512, 2048)),
                 choose("a", (2e-6, 1e-5)), choose("B", (5e10, 4.5e11))),)
    if name == "zigzag_min_tokens":
        return ((choose("F", (1.2e14, 4e14)), choose("B", (2.5e10, 4.5e11)), choose("w", (5120, 8192)),
                 choose("kv", (512, 1024, 5120))),)
    if name == "hsdp_step_seconds":
        return ((choose("P", (1.3e9, 3.3e10)), choose("k", (2, 4, 8)), choose("N", (3, 16)), choose("m", (1, 6, 64)),
                 3e-6, 4.5e11, choose("a", (2e-6, 2e-5)), choose("B", (1.25e10, 5e10))),)
    if name == "fsdp_peak_gb":
        return (choose("n", (3, 24, 126)), choose("u", (5e7, 1.7e9)), choose("d", (16, 128)), choose("g", (2, 8))),
    if name == "no_drop_padding":
        e, k = choose("E", (16, 160)), choose("k", (1, 6))
        return (math.ceil(2048 * k / e * choose("over", (1.2, 3.0))), 2048, e, k),
    if name == "largest_job_gpus":
        return ((choose("M", (5_000, 80_000)), choose("S", (1, 8)), choose("P", (30, 200)), choose("R", (60, 1800)),
                 choose("g", (0.8, 0.97))),)
    if name in ("moe_total_params", "moe_active_params"):
        return ((choose("L", (24, 61)), choose("h", (2048, 7168)), choose("kv", (512, 1024)), choose("f", (1408, 2048)),
                 choose("E", (60, 256)), choose("k", (4, 8)), choose("s", (2816, 5632)),
                 choose("V", (102400, 151936))),)
    if name == "best_batch":
        return (choose("B", (30.0, 5000.0)), choose("p", (2, 3, 32)), choose("d", (2, 64)), choose("v", (2, 3, 5)),
                choose("o", (0.25, 4.0))),
    return ((choose("e", (0.3, 0.6)), choose("p", (2, 6, 24)), choose("m", (3, 50)), choose("x", (0.15, 0.7))),)


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
