"""The formula sheet's scale part: the closed forms of chapters 12–14 — collectives, NCCL-tests' bandwidths, ZeRO,
tensor and sequence parallelism, the activation inventory, ring attention, experts, checkpoints, MFU — each evaluated
by :mod:`ppedu.formulas` at the chapter's worked example, beside the value :mod:`ppedu.cluster` computes its own way
(from a collective's steps and bytes, a search for where two costs cross, a maximum of goodput found numerically, …).

A law is one :class:`ScaleLaw` record in :data:`SCALE_LAWS`; adding a line to the sheet is adding a record.

>>> [law.topic for law in SCALE_LAWS][:3]
['ring all-reduce', 'ring reduce-scatter, all-gather', 'tree all-reduce (double binary)']
>>> scale_agreement()
[]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

from ppedu import formulas as closed_form
from ppedu.cluster import GPU, GPUS, LINKS, MODELS, Model
from ppedu.cluster import collectives, context, experts, reliability, sharding, tensor
from ppedu.cluster.cases import deepseek_v3
from ppedu.cluster.published import DEEPSEEK_V3, H800_IB, ZERO_FIGURE_1
from ppedu.batch_size import steps_and_examples
from ppedu.lesson import Table

Values = tuple[float, ...]


@dataclass(frozen=True)
class ScaleLaw:
    """One closed form of the scale chapters: as the sheet prints it, the example it is evaluated at, and two
    functions giving the same figures — ``closed`` from the formula alone (:mod:`ppedu.formulas`), ``computed`` by
    :mod:`ppedu.cluster` — in ``unit`` (one figure, or several separated by " / " as ``example`` names them)."""

    topic: str
    formula: str
    example: str
    unit: str
    closed: Callable[[], Values]
    computed: Callable[[], Values]
    source: str
    rel: float = 1e-6  # how close the two must agree (the library rounds a few of its tables to six digits)


NVLINK, IB = LINKS["nvlink"], LINKS["ib-400"]
H100 = GPUS["h100-80gb"]
#: Korthikanti et al.'s GPT-3-shaped block: eager attention, dropout, a plain MLP of 4h (the 34 of their count).
GPT3 = Model("GPT-3 shape", layers=96, hidden=12288, vocab=50257, seq=2048, heads=96, dropout=True,
             flash_attention=False)


def _crossing(n: int, link: collectives.Link) -> float:
    """The all-reduce size where ppedu's ring and tree times meet, found by bisection on :func:`collectives.cost`."""
    lo, hi = 0.0, 1e15
    for _ in range(200):
        mid = (lo + hi) / 2
        tree_wins = collectives.cost("all-reduce", mid, n, link, "tree").seconds < \
            collectives.cost("all-reduce", mid, n, link, "ring").seconds
        lo, hi = (mid, hi) if tree_wins else (lo, mid)
    return lo


def _best_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """The checkpoint interval that maximises :func:`reliability.goodput`, by golden-section search."""
    lo, hi = checkpoint_s, mtbf_s
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if reliability.goodput(a, checkpoint_s, mtbf_s, 0.0) > reliability.goodput(b, checkpoint_s, mtbf_s, 0.0):
            hi = b
        else:
            lo = a
    return (lo + hi) / 2


def _shortest_hidden_block(model: Model, gpu: GPU, link: collectives.Link) -> float:
    """The fewest tokens per GPU whose ring-attention step (:func:`context.ring_step`) hides its transfer on ``link``
    without its latency, found by bisection over whole blocks."""
    free = replace(link, latency=0.0)
    lo, hi = 1, 1 << 24
    while lo < hi:
        mid = (lo + hi) // 2
        if context.ring_step(replace(model, seq=mid), 1, gpu, free).hidden:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


def _width(model: Model) -> tuple[int, int]:
    return (model.kv_heads or model.heads) * (model.hidden // model.heads), model.attention_width or model.hidden


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _tp(model: Model, t: int) -> Values:
    return tuple(sum(collectives.ring(c.nbytes, t, c.kind) for c in tensor.block_collectives(model, t, sp)) / 1e9
                 for sp in (False, True))


def _zero_paper() -> Table[sharding.ZeroRow]:
    return sharding.zero_stages(_ZERO_PARAMS, _ZERO_D, sharding.PRECISIONS["bf16"])


def _nodes_hit(nodes: int, per_node: int, k: int) -> float:
    """The expected number of nodes ``k`` distinct experts drawn at random from ``nodes`` nodes of ``per_node``
    each fall on, by counting every way to draw them node by node (no closed form)."""
    ways = {(0, 0): 1}  # (experts drawn, nodes hit) -> ways
    for _ in range(nodes):
        ways_next: dict[tuple[int, int], int] = {}
        for (drawn, hit), n in ways.items():
            for x in range(min(per_node, k - drawn) + 1):
                key = (drawn + x, hit + (x > 0))
                ways_next[key] = ways_next.get(key, 0) + n * math.comb(per_node, x)
        ways = ways_next
    total = sum(n for (drawn, _), n in ways.items() if drawn == k)
    return sum(hit * n for (drawn, hit), n in ways.items() if drawn == k) / total


_LLAMA70, _LLAMA405 = MODELS["70b"], MODELS["405b"]
_P19_MTBF = 54 * 86400 * 16384 / 419 / 4096
_V3 = deepseek_v3()
_ZERO_PARAMS, _ZERO_D = cast(float, ZERO_FIGURE_1["params"]), cast(int, ZERO_FIGURE_1["d"])
_MOE_BYTES = DEEPSEEK_V3.tokens * DEEPSEEK_V3.top_k * DEEPSEEK_V3.hidden * DEEPSEEK_V3.dtype_bytes

#: The scale part of the sheet, in the chapters' order.
SCALE_LAWS: tuple[ScaleLaw, ...] = (
    ScaleLaw("ring all-reduce", "2(n−1)α + 2(n−1)/n·Mβ", "1 GB, n = 8, NVLink", "ms",
             lambda: (_ms(closed_form.ring_all_reduce_seconds(8, 1e9, NVLINK.latency, NVLINK.bandwidth)),),
             lambda: (_ms(collectives.cost("all-reduce", 1e9, 8, NVLINK).seconds),), "12; Patarasuk & Yuan 2009"),
    ScaleLaw("ring reduce-scatter, all-gather", "(n−1)α + (n−1)/n·Mβ (M the whole buffer)", "1 GB, n = 8, NVLink",
             "ms", lambda: (_ms(closed_form.ring_half_seconds(8, 1e9, NVLINK.latency, NVLINK.bandwidth)),) * 2,
             lambda: tuple(_ms(collectives.cost(k, 1e9, 8, NVLINK).seconds) for k in ("reduce-scatter", "all-gather")),
             "12; NCCL's ring"),
    ScaleLaw("tree all-reduce (double binary)", "2⌈log₂n⌉α + 2Mβ (pipelined, fill left out)", "1 MB, n = 64, IB NDR",
             "ms", lambda: (_ms(closed_form.tree_all_reduce_seconds(64, 1e6, IB.latency, IB.bandwidth)),),
             lambda: (_ms(collectives.cost("all-reduce", 1e6, 64, IB, "tree").seconds),), "12; NCCL 2.4"),
    ScaleLaw("tree beats ring below", "M* = n(n − 1 − ⌈log₂n⌉)·α·B", "n = 64, IB NDR", "GB",
             lambda: (closed_form.tree_ring_crossover(64, IB.latency, IB.bandwidth) / 1e9,),
             lambda: (_crossing(64, IB) / 1e9,), "12; where the two costs above meet"),
    ScaleLaw("NCCL-tests' bus bandwidth", "busbw = algbw·2(n−1)/n (RS, AG, all-to-all: (n−1)/n), algbw = S/t",
             "1 GB all-reduce, n = 8, NVLink", "GB/s",
             lambda: (closed_form.bus_bandwidth(1e9, closed_form.ring_all_reduce_seconds(8, 1e9, NVLINK.latency,
                                                                                          NVLINK.bandwidth), 8) / 1e9,),
             lambda: (collectives.cost("all-reduce", 1e9, 8, NVLINK).busbw / 1e9,), "12; nccl-tests PERFORMANCE.md"),
    ScaleLaw("ZeRO: model state per GPU", "(2+2+K)Ψ, (2+2+K/d)Ψ, (2+(2+K)/d)Ψ, (2+2+K)Ψ/d; K = 12",
             "stages 0 / 1 / 2 / 3, Ψ = 7.5B, d = 64", "GB",
             lambda: tuple(closed_form.zero_bytes_per_gpu(_ZERO_PARAMS, _ZERO_D, s) / 1e9 for s in range(4)),
             lambda: tuple(r.total_gb for r in _zero_paper()),
             "13; ZeRO Figure 1: 120, 31.4, 16.6, 1.9", rel=1e-5),
    ScaleLaw("ZeRO: sent per GPU and step", "2Ψ·(d−1)/d, stage 3: 3Ψ·(d−1)/d (16-bit elements; one micro-batch "
             "a step: with m accumulated, stage 2 reduce-scatters m times, (m+1)Ψ·(d−1)/d, and stage 3 gathers and "
             "reduce-scatters m times, 3mΨ·(d−1)/d)",
             "stages 0 / 1 / 2 / 3, Ψ = 7.5B, d = 64", "GB",
             lambda: tuple(closed_form.zero_bytes_sent(_ZERO_PARAMS, _ZERO_D, s) / 1e9 for s in range(4)),
             lambda: tuple(r.sent_gb for r in _zero_paper()),
             "13; ZeRO section 7", rel=1e-5),
    ScaleLaw("tensor parallelism per block", "8(t−1)/t·sbh; with SP 10(t−1)/t·sbh (2 B each)",
             "Llama 2 70B, s = 4,096, t = 8: TP / TP+SP", "GB",
             lambda: tuple(closed_form.tensor_parallel_block_bytes(_LLAMA70.tokens, _LLAMA70.hidden, 8, sp) / 1e9
                           for sp in (False, True)),
             lambda: _tp(_LLAMA70, 8), "12; Megatron-LM, layers.py's re-gather"),
    ScaleLaw("activations per block", "sbh(34 + 5as/h); TP: sbh(10 + 24/t + 5as/(ht)); TP+SP: sbh(34/t + 5as/(ht)) "
             "(16-bit, dropout masks kept, a 4h MLP without gating, s × s scores kept; without dropout "
             "sbh(32 + 2as/h); FlashAttention drops the as/h term)",
             "GPT-3 shape: t = 1 / t = 8 / t = 8 + SP", "GB",
             lambda: tuple(closed_form.block_activation_bytes(GPT3.seq, 1, GPT3.hidden, GPT3.heads, t, sp) / 1e9
                           for t, sp in ((1, False), (8, False), (8, True))),
             lambda: tuple(sum(GPT3.block_activations("none", t, sp).values()) / 1e9
                           for t, sp in ((1, False), (8, False), (8, True))), "8, 12; Korthikanti et al. Table 2"),
    ScaleLaw("ring attention hides from", "s/c ≥ F·w_kv·bytes/(2·w·B); multi-head, 16-bit: F/B (a full block "
             "pair per step: no mask; latency left out)",
             "Llama 3 405B, H100 at ppedu's efficiency, IB NDR", "tokens per GPU",
             lambda: (float(math.ceil(closed_form.ring_attention_min_block(
                 H100.flops_per_second, IB.bandwidth, *_width(_LLAMA405)))),),
             lambda: (_shortest_hidden_block(_LLAMA405, H100, IB),), "12; Liu et al. (ring attention)"),
    ScaleLaw("MoE all-to-all; capacity", "(e−1)α + (e−1)/e·T·k·h·bytes·β; C = ⌈f·T·k/E⌉",
             "DeepSeek-V3, T = 4,096 in 16 bits, e = 64 at 50 GB/s / f = 1.25", "ms / tokens",
             lambda: (_ms(closed_form.ring_half_seconds(64, _MOE_BYTES, H800_IB.latency, H800_IB.bandwidth)),
                      float(closed_form.expert_capacity(4096, 256, 8, 1.25))),
             lambda: (_ms(experts.all_to_all_seconds(DEEPSEEK_V3, 64, H800_IB)),
                      float(experts.capacity(4096, 256, 8, 1.25))), "13; GShard, Switch, DeepSeek-V3"),
    ScaleLaw("checkpoint interval", "τ* = √(2·C·MTBF)", "C = 30 s, MTBF = 3 h", "min",
             lambda: (closed_form.young_daly_interval(30, 3 * 3600) / 60,),
             lambda: (_best_interval(30, 3 * 3600) / 60,), "14; Young 1974 (goodput's maximum)"),
    ScaleLaw("goodput", "G(τ) = 1 − C/τ − (τ/2 + R)/MTBF, MTBF = MTBF_gpu/N; best at τ* = √(2C·MTBF) (first order: "
             "C ≪ τ ≪ MTBF)", "Llama 3's 419 failures in 54 days on 16,384 GPUs; a job of 4,096, C = 60 s, R = 10 min",
             "h MTBF / min τ* / goodput",
             lambda: (_P19_MTBF / 3600, math.sqrt(2 * 60 * _P19_MTBF) / 60,
                      1 - 60 / math.sqrt(2 * 60 * _P19_MTBF) - (math.sqrt(2 * 60 * _P19_MTBF) / 2 + 600) / _P19_MTBF),
             lambda: (reliability.job_mtbf_s(4096, 419, 54, 16384) / 3600,
                      _best_interval(60, reliability.job_mtbf_s(4096, 419, 54, 16384)) / 60,
                      reliability.goodput(_best_interval(60, reliability.job_mtbf_s(4096, 419, 54, 16384)), 60,
                                          reliability.job_mtbf_s(4096, 419, 54, 16384), 600)),
             "14; Young 1974, Llama 3 §3.3.4"),
    ScaleLaw("batch size past the noise scale", "S = S_min(1 + B_noise/B), E = E_min(1 + B/B_noise)",
             "B_noise = 1,024: B = 256 / B = 4,096", "× S_min / × E_min",
             lambda: (1 + 1024 / 256, 1 + 4096 / 1024),
             lambda: (steps_and_examples(1024, (256,))[0].steps_over_min,
                      steps_and_examples(1024, (4096,))[0].examples_over_min), "14; McCandlish et al. 2018"),
    ScaleLaw("node-limited dispatch", "other nodes (N−1)(1 − C(E−E/N, k)/C(E, k)); limited to M nodes: "
             "(N−1)/N·M·(1 − C((M−1)E/N, k)/C(ME/N, k))", "E = 64 over N = 8 nodes, k = 6: free / M = 3",
             "nodes / nodes",
             lambda: (7 * (1 - math.comb(56, 6) / math.comb(64, 6)),
                      7 / 8 * 3 * (1 - math.comb(16, 6) / math.comb(24, 6))),
             lambda: (_nodes_hit(8, 8, 6) * 7 / 8, _nodes_hit(3, 8, 6) * 7 / 8), "13; DeepSeek-V3 §2.1.2"),
    ScaleLaw("MFU", "model FLOPs per step ÷ (GPUs · peak · step time) = tokens · FLOPs per token ÷ (GPU-seconds · "
             "peak)", "DeepSeek-V3: 180K H800 hours per 10¹² tokens, 989 TFLOP/s", "MFU",
             lambda: (1e12 * _V3.flops_per_token / (180e3 * 3600 * 989e12),), lambda: (_V3.mfu,),
             "14; DeepSeek-V3 report, Table 1"),
    ScaleLaw("model FLOPs per token (MFU)", "6N + 12·L·s·w (N: the parameters of a token's matrix products, the "
             "output layer in, the input embedding out; attention at full width, the causal half not removed)",
             "Llama 3 405B, s = 8,192", "GFLOP",
             lambda: (closed_form.model_flops_per_token(sum(_LLAMA405.layer_active_params()[1:]), _LLAMA405.layers,
                                                        _LLAMA405.seq, _width(_LLAMA405)[1]) / 1e9,),
             lambda: (3 * sum(_LLAMA405.layer_flops()) / _LLAMA405.tokens / 1e9,), "14; PaLM Appendix B"),
)


@dataclass(frozen=True)
class ScaleEntry:
    """One row of the sheet's scale part, as printed."""

    topic: str
    closed_form: str
    at: str
    formula_gives: str
    ppedu_computes: str
    chapter_source: str


def _show(values: Values, unit: str) -> str:
    units = unit.split(" / ")
    if len(units) == len(values) > 1:
        return " / ".join(f"{x:.4g} {u}" for x, u in zip(values, units))
    return " / ".join(f"{x:.4g}" for x in values) + f" {unit}"


def scale_sheet() -> Table[ScaleEntry]:
    """The scale part: every law's closed form, its example, the formula's value and ppedu.cluster's."""
    return Table(tuple(ScaleEntry(x.topic, x.formula, x.example, _show(x.closed(), x.unit),
                                  _show(x.computed(), x.unit), x.source) for x in SCALE_LAWS))


def scale_agreement(laws: tuple[ScaleLaw, ...] = SCALE_LAWS) -> list[str]:
    """Every law whose closed form and ppedu.cluster's value differ by more than the law's ``rel``, as sentences."""
    out = []
    for x in laws:
        a, b = x.closed(), x.computed()
        if len(a) != len(b) or any(not math.isclose(u, v, rel_tol=x.rel) for u, v in zip(a, b)):
            out.append(f"{x.topic} at {x.example}: closed form {a}, ppedu {b}")
    return out
