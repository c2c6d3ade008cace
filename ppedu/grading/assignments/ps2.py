"""ps2 — memory: peak activations of GPipe and 1F1B per GPU, activation memory in GB for a
transformer, and which schedule fits an 80 GB GPU.

>>> values("alice")["p"] in (4, 6, 8)
True
"""

from __future__ import annotations

from typing import Any

from ppedu.grading.answers import Counts, Flag, Number
from ppedu.grading.questions import Question
from ppedu.grading.students import pick


def values(student: str) -> dict[str, Any]:
    return {
        "p": pick("ps2", student, "p", (4, 6, 8)),
        "m": pick("ps2", student, "m", range(8, 33, 4)),
        "layers_per_gpu": pick("ps2", student, "layers", (2, 3, 4)),
        "hidden": pick("ps2", student, "hidden", (4096, 5120, 8192)),
        "seq": pick("ps2", student, "seq", (2048, 4096)),
        "microbatch_size": pick("ps2", student, "b", (1, 2)),
    }


QUESTIONS: dict[str, Any] = {
    "peaks": Question((Counts("peak_gpipe"), Counts("peak_1f1b"))),
    "s_act": Question((Number("S_act_GB"), Number("weights_GB"))),
    "gpu0": Question((Number("gpipe_gpu0_GB"), Number("one_f_one_b_gpu0_GB"))),
    "fits": Question((Number("max_m_gpipe", whole=True), Flag("fits_1f1b"))),
}
