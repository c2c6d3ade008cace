"""ps7 — the scale chapters (12–14), each question a variant that :mod:`ppedu.cluster` does not compute: a
hierarchical all-reduce whose node step is one NVSwitch exchange, not a ring; DeepSpeed-Ulysses' all-to-alls per block;
when zigzag ring attention hides its transfers under the causal mask; hybrid sharding (HSDP) beside a pipeline and
FSDP2's peak when it reshards after the forward only within a node; an expert's capacity; a mixture of experts with a
gated shared expert of its own width, and its routing across nodes; the largest job under asynchronous checkpoints; a
pipeline's MFU with the output layer on its last stage; Llama 3's Table 4 and DeepSeek-V3's hours; the batch that trains
fastest on an interleaved pipeline with a per-step overhead; and a layout chosen with the library (open-library by
design) and defended. Each derivation is a function checked in an interpreter without ppedu (a closed form, not
:mod:`ppedu.cluster`'s code) on the student's own values and on inputs they do not see; the layout is chosen within a
stated tolerance; the written answers — the derivations of questions 6 and 9 among them — are graded by hand.

>>> v = values("alice")
>>> v["nodes"] * v["per_node"] > v["per_node"] and widths(v)[1] <= widths(v)[0]
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ppedu.grading.answers import Choice, Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw

#: The layouts question's schedules (those :func:`ppedu.cluster.layouts.layouts` tries by default).
LAYOUT_SCHEDULES = ("1f1b", "interleaved", "zb-h1", "zb-v", "dualpipe-v")
#: A layout whose tokens per second are within this share of the fastest fitting one's is as good an answer: the
#: schedules at the top of the table are often this close, and the cost model is not finer than that.
TOLERANCE = 0.01
#: Question 3's attention: one of these models' (grouped-query attention in the larger two).
ATTENTION = ("7b", "70b", "405b")
#: Question 5b's shape (layers, width, the keys' and values' width, an expert's width) and vocabulary: Mixtral 8x7B's
#: (Jiang et al., "Mixtral of Experts", 2024, Table 1), the experts' number and top-k the student's own.
MOE_SHAPE, MOE_VOCAB = (32, 4096, 1024, 14336), 32000


def values(student: str) -> dict[str, Any]:
    drawn = draw("ps7", student, _draw, _sound)
    return {**drawn, "max_load": max_load(drawn)}


def _draw(pick: Picker) -> dict[str, Any]:
    return {
        # question 1: a gradient bucket all-reduced over nodes of GPUs on NVSwitch, InfiniBand between the nodes
        "nodes": pick("nodes", (2, 4, 8, 16)), "per_node": pick("per_node", (4, 8)),
        "nbytes": pick("mb", (1, 4, 25, 100, 400)) * 10**6, "between": pick("between", ("ib-200", "ib-400")),
        # question 2: one block under t-way Ulysses sequence parallelism (and Megatron-LM's, for the written part)
        "t": pick("t", (2, 4, 8)), "model": pick("model", ("7b", "13b", "70b")),
        # question 3: ring attention on a GPU and a link, the attention of one of ppedu's models
        "attention": pick("attention", ATTENTION),
        "cp_gpu": pick("cp_gpu", ("a100-80gb", "h100-80gb")), "cp_link": pick("cp_link", ("nvlink", "ib-400")),
        # question 4: question 2's model, m micro-batches per step; HSDP over nodes of 8, FSDP2 over d with a
        # post-forward reshard onto g GPUs
        "d": pick("d", (16, 32, 64)), "m": pick("m", (4, 8, 16, 32)), "hsdp_nodes": pick("hsdp_nodes", (2, 4, 8)),
        "g": pick("g", (2, 4, 8)),
        # question 5: experts over nodes with a node limit, and the busiest expert's load
        "tokens": pick("tokens", (2048, 4096, 8192)), "hidden": pick("hidden", (4096, 7168)),
        "top_k": pick("top_k", (2, 4, 8)), "experts": pick("experts", (64, 128, 256)),
        "ep_nodes": pick("ep_nodes", (4, 8)), "node_limit": pick("node_limit", (2, 3)),
        "overload": pick("overload", (1.3, 1.7, 2.5)),
        # question 6: failures — a GPU's mean time between failures (hours); an asynchronous checkpoint's stall and the
        # seconds until it is durable; a restart's seconds
        "gpu_mtbf_h": pick("gpu_mtbf_h", (25_000, 50_000, 100_000)), "stall_s": pick("stall_s", (2, 5, 10)),
        "persist_s": pick("persist_s", (60, 120, 240)),
        "restart_s": pick("restart_s", (300, 600, 1200)), "goodput": pick("goodput", (0.85, 0.9, 0.95)),
        # question 7: a pipeline's MFU — its kernels' efficiency, p stages, m micro-batches, the output layer's share
        "efficiency": pick("efficiency", (0.35, 0.45, 0.55)), "mfu_p": pick("mfu_p", (4, 8, 16)),
        "mfu_m": pick("mfu_m", (8, 16, 32, 64)), "output": pick("output", (0.1, 0.2, 0.4)),
        # question 5b: a mixture of experts of the student's own shape (Mixtral's attention and experts' width)
        "moe_experts": pick("moe_experts", (8, 16, 64)), "moe_top_k": pick("moe_top_k", (1, 2, 4)),
        "shared_ffn": pick("shared_ffn", (5632, 8192, 20480)),
        # question 9: a batch size — the gradient noise scale (examples), p stages of v chunks in d replicas, and the
        # step's overhead in forward-and-backward times
        "b_noise": pick("b_noise", (200, 800, 3000)), "batch_p": pick("batch_p", (4, 8, 16)),
        "batch_d": pick("batch_d", (1, 4, 16)), "batch_v": pick("batch_v", (2, 4)),
        "overhead": pick("overhead", (0.5, 2.0, 6.0)),
        # question 8: a layout
        "layout_model": pick("layout_model", ("13b", "70b")), "gpu": pick("gpu", ("a100-80gb", "h100-80gb")),
        "gpus": pick("gpus", (32, 64)), "batch": pick("batch", (64, 128)),
    }


def _sound(v: Mapping[str, Any]) -> bool:
    """Every draw will do."""
    return True


def max_load(v: Mapping[str, Any]) -> int:
    """Question 5a's busiest expert: ``overload`` times the even share of the batch's token copies, rounded up."""
    return math.ceil(v["tokens"] * v["top_k"] / v["experts"] * v["overload"])


def _links(v: Mapping[str, Any]) -> tuple[float, float, float, float]:
    """Question 1's links as (α, bandwidth) inside a node (NVLink) and between nodes."""
    from ppedu.cluster import LINKS

    inside, between = LINKS["nvlink"], LINKS[v["between"]]
    return inside.latency, inside.bandwidth, between.latency, between.bandwidth


def _nvlink() -> tuple[float, float]:
    from ppedu.cluster import LINKS

    return LINKS["nvlink"].latency, LINKS["nvlink"].bandwidth


def _kv_width(name: str) -> int:
    """A model's keys' and values' width: one head's width times its key-value heads."""
    from ppedu.cluster import MODELS

    model = MODELS[name]
    return (model.kv_heads or model.heads) * (model.hidden // model.heads)


def _shape(v: Mapping[str, Any]) -> tuple[int, int, int]:
    """Question 2's micro-batch: (tokens, hidden, the keys' and values' width) of the student's model."""
    from ppedu.cluster import MODELS

    model = MODELS[v["model"]]
    return model.tokens, model.hidden, _kv_width(v["model"])


def widths(v: Mapping[str, Any]) -> tuple[int, int]:
    """Question 3's attention core's width and its keys' and values' width."""
    from ppedu.cluster import MODELS

    return MODELS[v["attention"]].hidden, _kv_width(v["attention"])


def _ring_attention(v: Mapping[str, Any]) -> tuple[float, float, int, int]:
    """Question 3's GPU (its achieved FLOP/s), link (bytes/s) and attention widths."""
    from ppedu.cluster import GPUS, LINKS

    return (GPUS[v["cp_gpu"]].flops_per_second, LINKS[v["cp_link"]].bandwidth, *widths(v))


def _params(v: Mapping[str, Any]) -> float:
    from ppedu.cluster import MODELS

    return float(MODELS[v["model"]].params)


def _units(v: Mapping[str, Any]) -> tuple[int, float]:
    """Question 4b's FSDP units: the student's model's blocks, each its parameters."""
    from ppedu.cluster import MODELS

    model = MODELS[v["model"]]
    return model.layers, float(model.layer_params()[1])


def _hsdp(v: Mapping[str, Any]) -> tuple[float, int, int, int, float, float, float, float]:
    """Question 4a's arguments: the model's parameters, nodes of 8 on NVLink, the student's nodes and m, both links."""
    return (_params(v), 8, v["hsdp_nodes"], v["m"], *_links(v))


QUESTIONS: dict[str, Any] = {
    "hierarchical": FormulaQuestion({"hierarchical_allreduce_seconds": ((2, 8, 1e9, 3e-6, 450e9, 1e-5, 50e9),
                                                                        (4, 4, 1e6, 3e-6, 450e9, 1e-5, 25e9))},
                                    lambda name, v: ((v["nodes"], v["per_node"], v["nbytes"], *_links(v)),)),
    "tensor": FormulaQuestion({"ulysses_block_seconds": ((4, 4096, 4096, 4096, 3e-6, 4.5e11),
                                                         (8, 8192, 8192, 1024, 1e-5, 5e10))},
                              lambda name, v: ((v["t"], *_shape(v), *_nvlink()),)),
    "ring_attention": FormulaQuestion({"zigzag_min_tokens": ((4e14, 4.5e11, 8192, 1024), (1e14, 5e10, 4096, 4096))},
                                      lambda name, v: (_ring_attention(v),)),
    "zero_step": FormulaQuestion({"hsdp_step_seconds": ((7e9, 8, 2, 4, 3e-6, 4.5e11, 1e-5, 5e10),
                                                        (7e9, 4, 8, 1, 3e-6, 4.5e11, 1e-5, 2.5e10))},
                                 lambda name, v: (_hsdp(v),)),
    "fsdp": FormulaQuestion({"fsdp_peak_gb": ((32, 2e8, 16, 4), (32, 2e8, 16, 1))},
                            lambda name, v: ((*_units(v), v["d"], v["g"]),)),
    "capacity": FormulaQuestion({"no_drop_padding": ((96, 4096, 64, 1), (300, 1024, 8, 2))},
                                lambda name, v: ((v["max_load"], v["tokens"], v["experts"], v["top_k"]),)),
    "moe": FormulaQuestion({"moe_total_params": ((32, 4096, 1024, 14336, 8, 2, 5632, 32000),),
                            "moe_active_params": ((32, 4096, 1024, 14336, 8, 2, 5632, 32000),)},
                           lambda name, v: ((*MOE_SHAPE, v["moe_experts"], v["moe_top_k"], v["shared_ffn"],
                                             MOE_VOCAB),)),
    "failures": FormulaQuestion({"largest_job_gpus": ((50_000, 5, 120, 600, 0.9), (10_000, 2, 60, 120, 0.95))},
                                lambda name, v: ((v["gpu_mtbf_h"], v["stall_s"], v["persist_s"], v["restart_s"],
                                                  v["goodput"]),)),
    "mfu": FormulaQuestion({"pipeline_mfu": ((0.5, 4, 8, 0.0), (0.4, 8, 32, 0.25))},
                           lambda name, v: ((v["efficiency"], v["mfu_p"], v["mfu_m"], v["output"]),)),
    "batch": FormulaQuestion({"best_batch": ((1000, 8, 4, 2, 0.0), (50, 2, 1, 4, 3.0))},
                             lambda name, v: ((v["b_noise"], v["batch_p"], v["batch_d"], v["batch_v"],
                                               v["overhead"]),)),
    "layout": Question((Number("t", whole=True), Number("p", whole=True), Number("d", whole=True),
                        Choice("schedule", LAYOUT_SCHEDULES))),
}
