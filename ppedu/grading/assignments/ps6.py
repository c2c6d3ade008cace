"""ps6 — derivations: zero bubble's idle time and where its formula holds, interleaving's warm-up count, and
DualPipe's middle rank — the floor under DeepSeek's formula and where the formula breaks. Each derivation is a
function checked on its own in an interpreter without ppedu (a closed form, not a simulation) on inputs the
student does not see, beside a written derivation graded by hand; one answer, found by scanning DeepSeek's
table with the library, is a value.

>>> sorted(values("alice"))
['F', 'b', 'f', 'j', 'p', 'v', 'w']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.answers import Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw


def values(student: str) -> dict[str, Any]:
    return draw("ps6", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("p", (4, 6, 8))
    f, b = pick("f", (1.0, 1.5, 2.0)), pick("b", (1.0, 1.5, 2.0, 2.5))
    return {"p": p, "v": pick("v", (2, 3, 4)), "j": pick("j", range(8)) % p, "f": f, "b": b,
            "w": pick("w_share", (0.25, 0.5, 0.75)) * min(f, b), "F": pick("F", (1.0, 2.0))}


def _sound(v: Mapping[str, Any]) -> bool:
    """On the last GPU the warm-up has no turn to wait for (2(p−j−1) = 0): a count that forgets the turn would come
    out right on the student's own GPU."""
    return v["j"] != v["p"] - 1


def scan_costs(v: Mapping[str, Any]) -> tuple[float, float, float]:
    """Question 3c's costs, per chunk: a forward and an input-gradient pass of ``F`` each, a weight-gradient pass
    of ``F/2`` (a full backward ``1.5 F``)."""
    return v["F"], v["F"], v["F"] / 2


QUESTIONS: dict[str, Any] = {
    "zb_idle": FormulaQuestion({"zb_h1_idle": ((4, 1, 1, 1), (4, 1, 2, 0.5))},
                               lambda name, v: ((v["p"], v["f"], v["b"], v["w"]),)),
    "zb_region": FormulaQuestion({"zb_h1_largest_w": ((1, 1), (2, 1))},
                                 lambda name, v: ((v["f"], v["b"]),)),
    "warmup": FormulaQuestion({"warmup": ((4, 2, 0), (4, 2, 3))},
                              lambda name, v: ((v["p"], v["v"], v["j"]),)),
    "middle_fill": FormulaQuestion({"middle_fill": ((4, 1), (8, 2))}, lambda name, v: ((v["p"], v["f"]),)),
    "floor": FormulaQuestion({"dualpipe_fb_floor": ((1, 2, 1),)},
                             lambda name, v: ((v["F"], 1.5 * v["F"], 0.5 * v["F"]),)),
    "scan": Question((Number("smallest_fb"),)),
}
