"""ps4 — DualPipe and the trade-offs: DeepSeek's ZB1P row on costs its formula was not written for (a closed form
checked where ppedu has no code, and its derivation), a schedule run in waves that ppedu does not build, read from its
picture (instructor-made question data, :mod:`ppedu.grading.questiondata`) and put in closed form, a schedule for a
real model on a given cluster chosen with the library and defended in writing, and DualPipe's copies and pairs.

The written answers are graded by hand in nbgrader's formgrader; this module holds only the forms of the autograded
ones. The pictured order and its simulation are the grader's (``grader/keys/ps4.py``).

>>> v = values("alice")
>>> v["B"] > v["W"] > 0 and v["variant"] in range(VARIANTS)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Choice, Counts, Number, results
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.evaluate import Code
from ppedu.grading.questions import FormOnly, Question
from ppedu.grading.students import Picker, draw, variant
from ppedu.schedules import SCHEDULES

#: ``"none"``: nothing fits in the cluster's memory.
CHOICES = (*SCHEDULES, "none")
#: The pictured schedule runs its micro-batches in this many waves.
WAVES = 2
#: The question data's pool: each student reads one of these variants' pictures.
VARIANTS = 24


def values(student: str) -> dict[str, Any]:
    return {**draw("ps4", student, _draw, _sound), "variant": variant("ps4", student, VARIANTS)}


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("p", (4, 6, 8))
    b, w = pick("b", (1.0, 1.5, 2.0)), pick("w", (1.5, 2.0, 3.0))
    return {
        # question 1: DeepSeek's notation, B the full backward (input-gradient pass b plus W)
        "p": p, "F": pick("F", (1.0, 2.0)), "B": b + w, "W": w,
        # question 4: a model on p GPUs of a kind, neighbours joined by a link, at m micro-batches
        "m": p * pick("k", (2, 3, 4)),
        # question 3b: the most micro-batches' activations a GPU of the waves' pipeline can hold (fewer than p)
        "room": pick("room", (2, 3)),
        # question 6: a snake of this many rounds
        "rounds": pick("rounds", (3, 4, 5)),
        "model": pick("model", ("7b", "13b")),
        "gpu": pick("gpu", ("a100-40gb", "a100-80gb", "h100-80gb", "h200")),
        "link": pick("link", ("nvlink", "pcie-gen4", "ib-200")),
    }


def _sound(v: Mapping[str, Any]) -> bool:
    """Costs on which a shortcut the question warns against would not come out right by chance (the instructors'
    key, ``grader/keys/ps4.py``, says which)."""
    return v["W"] > min(v["F"], v["B"] - v["W"])


def _grid_sanity(a: Mapping[str, Any], v: Mapping[str, Any]) -> list[str]:
    problems = []
    gpus = len(a["peak_activations"]) if "peak_activations" in a else None
    if gpus and "T" in a and "idle_slots" in a and a["idle_slots"] >= gpus * a["T"]:
        problems.append("`idle_slots` must be fewer than the picture's GPUs × T slots: some slots are busy.")
    return problems


@dataclass(frozen=True)
class Formula:
    """A function the student writes, called on an example and (by the autograder) on inputs they do not see, where
    ppedu has no code: a closed form, not a simulation."""

    name: str
    example: tuple[Any, ...]
    code: Code = Code()

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Any, ...], ...]]:
        return {self.name: (self.example,)}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> str:
        results(data, self.name)
        return FormOnly(f"{self.name} returns numbers (the autograder checks them, on inputs you do not see too)")


QUESTIONS: dict[str, Any] = {
    "zb1p": FormulaQuestion({"zb1p_bubble": ((4, 1, 2, 1), (6, 2, 3, 0.5))},
                            lambda name, v: ((v["p"], v["F"], v["B"], v["W"]),)),
    "grid": Question((Number("T", whole=True), Number("idle_slots", whole=True), Counts("peak_activations")),
                     _grid_sanity),
    "waves": Formula("waves_makespan", (6, 12, 3, 1, 2)),
    "choose": Question((Choice("schedule", CHOICES),)),
    "handovers": FormulaQuestion({"snake_handovers": ((4, 8, 2), (3, 9, 4))},
                                 lambda name, v: ((v["p"], v["m"], v["rounds"]),)),
}
