"""counting — the slot-counting exam, answered in :class:`~ppedu.widgets.SlotCountingExercise` itself: the
counts typed into one exercise (``count``) and the idle cells clicked in another (``mark``), each on the
student's own grid under equal costs. The answers are saved beside the notebook (``counting.json``) and
graded from there by the instructors' judge, so there is no visible test beyond "something is saved".

>>> v = values("alice")
>>> timeline("count", v).schedule.p == v["p"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw
from ppedu.schedules import build
from ppedu.simulate import Timeline, simulate

#: Where the exercises save, beside the notebook.
ANSWERS = "counting.json"
#: No key and no form check here: the answers are in the widgets' file, not in variables.
QUESTIONS: dict[str, Question] = {}


def values(student: str) -> dict[str, Any]:
    return draw("counting", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    count, mark = pick("schedules", (("gpipe", "1f1b"), ("1f1b", "gpipe")))
    return {"count_schedule": count, "p": pick("p", range(3, 6)), "m": pick("m", range(3, 7)),
            "mark_schedule": mark, "mark_p": pick("mark_p", range(2, 5)), "mark_m": pick("mark_m", range(2, 5))}


def _sound(v: Mapping[str, Any]) -> bool:
    """The counted grid has as many busy as idle slots where m = p - 1: counting the busy ones would score."""
    t = timeline("count", v)
    return t.idle_slots != t.busy_slots


def timeline(question: str, v: Mapping[str, Any]) -> Timeline:
    """The grid of ``question`` ("count" or "mark") that the notebook's exercise shows this student."""
    if question == "count":
        return simulate(build(v["count_schedule"], v["p"], v["m"]))
    return simulate(build(v["mark_schedule"], v["mark_p"], v["mark_m"]))
