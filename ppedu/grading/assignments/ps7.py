"""ps7 — the scale chapters (8, 12–14): the α–β cost of a ring and a tree all-reduce and where they cross, what
tensor parallelism sends per block with and without sequence parallelism, ZeRO's memory and traffic per GPU, an
expert-parallel all-to-all, and a layout for a model on a cluster. Each derivation is a function checked in an
interpreter without ppedu (a closed form, not :mod:`ppedu.cluster`'s code) on the student's own values and on
inputs they do not see; the layout is chosen with the library, within a stated tolerance, and defended in writing.

>>> sorted(values("alice"))
['batch', 'd', 'e', 'gpu', 'gpus', 'hidden', 'layout_model', 'link', 'model', 'n', 'nbytes', 't', 'tokens', 'top_k']
"""

from __future__ import annotations

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


def values(student: str) -> dict[str, Any]:
    return draw("ps7", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    return {
        # question 1: an all-reduce of a gradient bucket
        "n": pick("n", (8, 16, 32, 64)), "nbytes": pick("mb", (2, 8, 32, 128)) * 10**6,
        "link": pick("link", ("nvlink", "ib-400", "ib-200")),
        # question 2: one block under tensor parallelism
        "t": pick("t", (2, 4, 8)), "model": pick("model", ("7b", "13b", "70b")),
        # question 3: ZeRO over d replicas (of question 2's model)
        "d": pick("d", (8, 16, 32, 64)),
        # question 4: an expert-parallel all-to-all of one micro-batch
        "tokens": pick("tokens", (2048, 4096, 8192)), "hidden": pick("hidden", (4096, 7168)),
        "top_k": pick("top_k", (2, 4, 8)), "e": pick("e", (8, 16, 32, 64)),
        # question 5: a layout
        "layout_model": pick("layout_model", ("13b", "70b")), "gpu": pick("gpu", ("a100-80gb", "h100-80gb")),
        "gpus": pick("gpus", (32, 64)), "batch": pick("batch", (64, 128)),
    }


def _sound(v: Mapping[str, Any]) -> bool:
    """The bucket is not within 10 % of the ring–tree crossover: on either side the written answer has a clear
    choice (at the crossover both are right and the question would test nothing)."""
    from ppedu.cluster import LINKS
    from ppedu.cluster.collectives import crossover

    x = crossover(v["n"], LINKS[v["link"]])
    return not 0.9 * x <= v["nbytes"] <= 1.1 * x


QUESTIONS: dict[str, Any] = {
    "allreduce": FormulaQuestion({"ring_allreduce_seconds": ((8, 1e9, 3e-6, 450e9), (2, 1e6, 1e-5, 50e9)),
                                  "tree_allreduce_seconds": ((8, 1e9, 3e-6, 450e9), (2, 1e6, 1e-5, 50e9))},
                                 lambda name, v: ((v["n"], v["nbytes"], *_link(v)),)),
    "crossover": FormulaQuestion({"crossover_bytes": ((8, 3e-6, 450e9), (3, 1e-5, 50e9))},
                                 lambda name, v: ((v["n"], *_link(v)),)),
    "tensor": FormulaQuestion({"tp_sent_bytes": ((4, 4096, 4096, False), (4, 4096, 4096, True))},
                              lambda name, v: tuple((v["t"], *_shape(v), sp) for sp in (False, True))),
    "zero_memory": FormulaQuestion({"zero_gb": ((0, 7e9, 8), (3, 7e9, 8))},
                                   lambda name, v: tuple((stage, _params(v), v["d"]) for stage in range(4))),
    "zero_traffic": FormulaQuestion({"zero_sent_gb": ((0, 7e9, 8), (3, 7e9, 8))},
                                    lambda name, v: tuple((stage, _params(v), v["d"]) for stage in range(4))),
    "all_to_all": FormulaQuestion({"dispatch_bytes": ((4096, 4096, 2, 8), (1024, 7168, 8, 2))},
                                  lambda name, v: ((v["tokens"], v["hidden"], v["top_k"], v["e"]),)),
    "layout": Question((Number("t", whole=True), Number("p", whole=True), Number("d", whole=True),
                        Choice("schedule", LAYOUT_SCHEDULES))),
}


def _link(v: Mapping[str, Any]) -> tuple[float, float]:
    """The student's link as (α, bandwidth): its latency in seconds and its bytes per second each way."""
    from ppedu.cluster import LINKS

    link = LINKS[v["link"]]
    return link.latency, link.bandwidth


def _shape(v: Mapping[str, Any]) -> tuple[int, int]:
    """Question 2's micro-batch: (tokens, hidden) of the student's model."""
    from ppedu.cluster import MODELS

    model = MODELS[v["model"]]
    return model.tokens, model.hidden


def _params(v: Mapping[str, Any]) -> float:
    from ppedu.cluster import MODELS

    return float(MODELS[v["model"]].params)
