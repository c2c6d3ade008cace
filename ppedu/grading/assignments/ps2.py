"""ps2 — memory: peak activations (read off the simulator, then interleaving's as a closed form, for fewer
micro-batches than GPUs too, and the textbook's claim about it checked), a parallel block's activations (GPT-J's and
PaLM's, a block ppedu does not model) part by part as a function of its shape, a stage's activations and weights in GB
for the student's own model, GPU 0 at its peak under GPipe and 1F1B, what fits in 80 GB, and the choice between a
schedule and recomputation, with its reason (graded by hand). The functions are checked where ppedu has no code.

>>> values("alice")["p"] in (4, 6, 8)
True
"""

from __future__ import annotations

from typing import Any

from ppedu.grading.answers import Counts, Flag, Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw


def values(student: str) -> dict[str, Any]:
    """The student's pipeline (p GPUs, m micro-batches, v chunks per GPU) and model (its block's shape, the layers
    of one stage, its parameters per layer: what the question's text counts)."""
    v = draw("ps2", student, _draw, lambda v: True)
    h, kv = v["hidden"], v["kv_heads"] / v["heads"]
    v["layer_params"] = int(2 * h * h + 2 * h * h * kv + (3 if v["gated"] else 2) * h * v["ffn"])
    return v


def _draw(pick: Picker) -> dict[str, Any]:
    hidden = pick("hidden", (4096, 5120, 8192))
    gated = pick("gated", (True, False))
    return {"p": pick("p", (4, 6, 8)), "m": pick("m", range(8, 33, 4)), "v": pick("v", (2, 3)),
            "layers_per_gpu": pick("layers", (2, 3, 4)), "hidden": hidden, "heads": hidden // 128,
            "kv_heads": pick("kv", (8, hidden // 128)), "ffn": int(hidden * (8 / 3 if gated else 4)) // 256 * 256,
            "gated": gated, "seq": pick("seq", (2048, 4096)), "microbatch_size": pick("b", (1, 2))}


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
    "gpu0": Question((Number("gpipe_gpu0_GB"), Number("one_f_one_b_gpu0_GB"))),
    "fits": Question((Number("max_m_gpipe", whole=True), Flag("fits_1f1b"))),
}
