"""ps2 — memory: peak activations (read off the simulator, then interleaving's as a closed form, for fewer
micro-batches than GPUs too, and the textbook's claim about it checked), a parallel block's activations (GPT-J's and
PaLM's, a block ppedu does not model) part by part as a function of its shape, a stage's activations and weights in GB
for the student's own model, GPU 0 at its peak under GPipe and 1F1B, what fits in 80 GB, and the choice between a
schedule and recomputation, with its reason (graded by hand). The functions are checked where ppedu has no code.

>>> values("alice")["p"] in (4, 6, 8)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Counts, Flag, Number, plain
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Answer, Question, Values
from ppedu.grading.students import Picker, draw


def values(student: str) -> dict[str, Any]:
    """The student's pipeline (p GPUs, m micro-batches, v chunks per GPU) and model (its block's shape, the layers
    of one stage, its parameters per layer: what the question's text counts)."""
    return draw("ps2", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    hidden = pick("hidden", (4096, 5120, 8192))
    gated = pick("gated", (True, False))
    v = {"p": pick("p", (4, 6, 8)), "m": pick("m", range(8, 33, 4)), "v": pick("v", (2, 3)),
         "layers_per_gpu": pick("layers", (2, 3, 4)), "hidden": hidden, "heads": hidden // 128,
         "kv_heads": pick("kv", (8, hidden // 128)), "ffn": int(hidden * (8 / 3 if gated else 4)) // 256 * 256,
         "gated": gated, "seq": pick("seq", (2048, 4096)), "microbatch_size": pick("b", (1, 2))}
    kv = v["kv_heads"] / v["heads"]
    v["layer_params"] = int(2 * hidden * hidden + 2 * hidden * hidden * kv + (3 if gated else 2) * hidden * v["ffn"])
    return v


def _sound(v: Mapping[str, Any]) -> bool:
    """Question 5's premise holds: GPipe at twice the student's m does not fit in 80 GB, even were a block to keep
    only 24·s·b·h bytes (every block of the pool keeps more)."""
    weights = v["layers_per_gpu"] * v["layer_params"] * 16
    least = v["layers_per_gpu"] * 24 * v["seq"] * v["microbatch_size"] * v["hidden"]
    return weights + 2 * v["m"] * least > 80e9


@dataclass(frozen=True)
class FollowsOn(Question):
    """Answers computed from earlier ones (``given``): those travel with them as data, so that the key can judge
    these against the student's own earlier answers too, and one slip is not paid for twice."""

    given: tuple[Answer, ...] = ()

    def data(self, namespace: Mapping[str, object], values: Values) -> dict[str, object]:
        return {a.name: plain(namespace[a.name]) for a in (*self.answers, *self.given) if a.name in namespace}


#: What questions 3 and 4 are computed from: question 1a's peaks and question 2b's GB.
_EARLIER = (Counts("peak_gpipe"), Counts("peak_1f1b"), Number("S_act_GB"), Number("weights_GB"))

QUESTIONS: dict[str, Any] = {
    "peaks": Question((Counts("peak_gpipe"), Counts("peak_1f1b"))),
    "interleaved_peak": FormulaQuestion({"interleaved_peak": ((4, 8, 2, 0), (4, 8, 2, 3), (2, 2, 3, 1), (6, 4, 3, 4))},
                                        lambda name, v: ((v["p"], 2 * v["p"], v["v"], 0),
                                                         (v["p"], v["p"] - 1, v["v"], 1))),
    "block": FormulaQuestion({"block_bytes": ((4096, 1, 4096, 32, 32, 16384, 0, 1),
                                              (2048, 2, 4096, 32, 8, 11008, 1, 0))},
                             lambda name, v: ((v["seq"], v["microbatch_size"], v["hidden"], v["heads"], v["kv_heads"],
                                               v["ffn"], int(v["gated"]), 1),)),
    "s_act": Question((Number("S_act_GB"), Number("weights_GB"))),
    "gpu0": FollowsOn((Number("gpipe_gpu0_GB"), Number("one_f_one_b_gpu0_GB")), given=_EARLIER),
    "fits": FollowsOn((Number("max_m_gpipe", whole=True), Flag("fits_1f1b")), given=_EARLIER),
}
