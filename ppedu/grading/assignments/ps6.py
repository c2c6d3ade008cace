"""ps6 — derivations the chapters do not make: ZB-H2's step on any costs (where it stops reaching the one-chunk
bound), interleaving's warm-up with Megatron-LM's micro-batch group of any size (a written proof), DualPipeV's floor —
the V-shaped cut of DualPipe, whose fill and whose place in DeepSeek's table the student derives and checks with a scan
of their own — and the staleness zero-bubble orders would have if their weight-gradient passes updated the weights at
once; and a written choice among ZB-V, DualPipeV and interleaved zero bubble, read off the formula sheet and tried on
the simulator off its costs.
Each closed form is a function checked in an interpreter without ppedu (not a simulation) on inputs the student does
not see, beside a written proof graded by hand with a rubric of steps; the scan is a value found with the library.

>>> v = values("alice")
>>> v["g"] > v["p"] > v["j"] + 1
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.answers import Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw

#: The scan of question 3b steps F&B by this share of the forward, up to :data:`SCAN_STEPS` steps.
SCAN_STEP, SCAN_STEPS = 0.25, 16


def values(student: str) -> dict[str, Any]:
    return draw("ps6", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("p", (4, 5, 6, 8))
    return {"p": p, "m": 2 * p + pick("extra", (0, 1, 3, 5)),
            # question 1: ZB-H2's costs (a forward, an input-gradient pass, a weight-gradient pass)
            "f": pick("f", (1.0, 1.5, 2.0)), "b": pick("b", (2.0, 2.5, 3.0, 4.0)),
            "w": pick("w", (0.5, 0.75, 1.0, 1.5)),
            # question 2: v chunks per GPU, micro-batches in groups of g > p, GPU j
            "v": pick("v", (2, 3, 4)), "g": p + pick("g_extra", (1, 2, 3)), "j": pick("j", range(8)) % (p - 1),
            # question 3: DualPipeV's forward per chunk, its weight-gradient pass a share of it
            "F": pick("F", (1.0, 1.5, 2.0, 3.0)), "W": pick("W_share", (0.25, 0.5, 0.75))}


def _sound(v: Mapping[str, Any]) -> bool:
    """Costs on which a shortcut the question warns against would not come out right by chance (the instructors'
    key, ``grader/keys/ps6.py``, says which)."""
    return v["b"] > 2 * min(v["f"], v["w"])


def scan_costs(v: Mapping[str, Any]) -> tuple[float, float, float]:
    """Question 3b's costs per chunk: a forward and an input-gradient pass of ``F`` each, a weight-gradient pass of
    ``W·F`` (a full backward ``F + W·F``)."""
    return v["F"], v["F"], v["W"] * v["F"]


QUESTIONS: dict[str, Any] = {
    "zb_h2": FormulaQuestion({"zb_h2_makespan": ((4, 8, 1, 1, 1), (3, 6, 2, 1, 0.5))},
                             lambda name, v: ((v["p"], v["m"], v["f"], v["b"], v["w"]),)),
    "dpv_fill": FormulaQuestion({"dualpipev_fill": ((4, 1), (6, 2))}, lambda name, v: ((v["p"], v["F"]),)),
    "scan": Question((Number("smallest_fb"),)),
    "staleness": FormulaQuestion({"async_staleness": ((4, 0, 0), (4, 2, 1))},
                                 lambda name, v: tuple((v["p"], v["j"], h) for h in (0, 1, 2))),
}
