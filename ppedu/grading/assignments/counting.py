"""counting — the slot-counting exam, answered in :class:`~ppedu.widgets.SlotCountingExercise` itself: the
counts typed into one exercise (``count``) and the idle cells clicked in another (``mark``), each on the
student's own grid under equal costs; then a grid no chapter draws (1F1B's pattern with every GPU warming up as
GPU 0 does, or one more) read for a critical path (``path``) and its idle cells' causes (``causes``). The answers
are saved beside the notebook (``counting.json``) and graded from there by the instructors' judge, so there is no
visible test beyond "something is saved".

>>> v = values("alice")
>>> timeline("count", v).schedule.p == v["p"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw
from ppedu.grid import grid
from ppedu.idle import SORTS
from ppedu.reading import readable
from ppedu.schedules import build
from ppedu.schedules.one_f_one_b import with_warmups
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
            "mark_schedule": mark, "mark_p": pick("mark_p", range(2, 5)), "mark_m": pick("mark_m", range(2, 5)),
            "read_p": pick("read_p", (3, 4)), "read_m": pick("read_m", (5, 6)),
            "read_warmup": pick("read_warmup", (0, 1))}


def warmups(v: Mapping[str, Any]) -> tuple[int, ...]:
    """The read grid's warm-ups: every GPU runs GPU 0's ``p - 1`` forwards before its first backward, plus
    ``read_warmup`` (1F1B's GPU ``j`` runs ``p - 1 - j``)."""
    return (v["read_p"] - 1 + v["read_warmup"],) * v["read_p"]


def _sound(v: Mapping[str, Any]) -> bool:
    """The counted grid has as many busy as idle slots where m = p - 1: counting the busy ones would score. The read
    grid must have idle cells of the order's own (else "fill or drain" would do) and be readable cell by cell."""
    t, read = timeline("count", v), grid(timeline("path", v))
    return t.idle_slots != t.busy_slots and readable(read) is None and \
        any(SORTS.get(c) == "order" for row in read.causes() for c in row)


def timeline(question: str, v: Mapping[str, Any]) -> Timeline:
    """The grid of ``question`` ("count", "mark", "path" or "causes") that the notebook's exercise shows this
    student; the last two read the same grid."""
    if question == "count":
        return simulate(build(v["count_schedule"], v["p"], v["m"]))
    if question == "mark":
        return simulate(build(v["mark_schedule"], v["mark_p"], v["mark_m"]))
    return simulate(with_warmups(warmups(v), v["read_m"], "eager warm-up"))
