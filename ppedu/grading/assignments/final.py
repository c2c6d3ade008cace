"""final — the timed exam (60 minutes): a grid counted from its picture, a makespan derived as a closed form
(checked on its own without ppedu, on inputs the student does not see), and four written answers graded by hand
with the published rubric — a claim about bubbles, a schedule for a cluster, a proof, and a deadlock.

>>> sorted(values("alice"))
['gpu', 'grid_m', 'grid_p', 'link', 'm', 'model', 'p']
>>> picture(values("alice")).count("GPU ") == values("alice")["grid_p"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.answers import Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw


def values(student: str) -> dict[str, Any]:
    return draw("final", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    return {"grid_p": pick("grid_p", (2, 3)), "grid_m": pick("grid_m", (2, 3, 4)),
            "p": pick("p", (4, 8)), "m": pick("m", (16, 32)), "model": pick("model", ("7b", "13b")),
            "gpu": pick("gpu", ("a100-80gb", "h100-80gb")), "link": pick("link", ("nvlink", "pcie-gen4"))}


def timeline(v: Mapping[str, Any]) -> Any:
    """Question 1's grid: interleaved 1F1B with two chunks per GPU, each chunk's pass one step."""
    from ppedu import schedules, simulate

    return simulate(schedules.interleaved_1f1b(v["grid_p"], v["grid_m"], 2))


def _sound(v: Mapping[str, Any]) -> bool:
    """The pictured grid must not have as many busy as idle slots: counting the busy ones would score."""
    t = timeline(v)
    return t.idle_slots != t.busy_slots


def picture(v: Mapping[str, Any]) -> str:
    """The grid question 1 shows."""
    from ppedu.text import render_grid

    return render_grid(timeline(v))


QUESTIONS: dict[str, Any] = {
    "grid_T": Question((Number("T", whole=True),)),
    "grid_idle": Question((Number("idle_slots", whole=True), Number("bubble", fraction=True))),
    "makespan": FormulaQuestion({"zb_h1_makespan": ((4, 8, 1, 1, 1), (2, 4, 1, 2, 0.5))},
                                lambda name, v: ((v["p"], v["m"], 1, 1, 0.5),)),
}
