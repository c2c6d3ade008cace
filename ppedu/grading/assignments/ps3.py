"""ps3 — write the schedules: GPipe, 1F1B and interleaved 1F1B as per-GPU op lists, graded per
property (every op once, dependencies, makespan, peak activations) on fixed sizes and the
student's own.

Each function is checked with the notebook run where ppedu has only its records (``ppedu.ops``: ``Op``,
``Schedule``) and no generator: the answer is the student's function, not a call of the library's.

>>> v = values("alice")
>>> v["m_interleaved"] % v["p"]
0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.evaluate import Code, Library
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick

#: What a schedule's function has: ppedu's records, nothing that generates an order.
CODE = Code(Library(("ppedu.ops",)))


def values(student: str) -> dict[str, Any]:
    p = pick("ps3", student, "p", range(3, 7))
    return {
        "p": p,
        "m": pick("ps3", student, "m", range(p + 1, 3 * p + 1)),
        "v": pick("ps3", student, "v", (2, 3)),
        "m_interleaved": p * pick("ps3", student, "k", (1, 2)),
    }


@dataclass(frozen=True)
class ScheduleQuestion:
    """The student's function ``name`` against ppedu's ``reference``, ``points`` split over the properties."""

    name: str
    reference: str
    points: float
    sizes: tuple[tuple[int, ...], ...]  # tried in the visible test and again by the autograder
    edge: tuple[int, ...]  # m < p too, where warm-up is cut short: a classic off-by-one
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> tuple[int, ...]:
        return (v["p"], v["m_interleaved"], v["v"]) if self.reference == "interleaved" else (v["p"], v["m"])

    def graded_sizes(self, v: Mapping[str, Any]) -> tuple[tuple[int, ...], ...]:
        return (*self.sizes, self.edge, self.own(v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[int, ...], ...]]:
        return {self.name: self.sizes}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        return grade_schedule(data.get(self.name), self.reference, self.sizes, self.points)


QUESTIONS: dict[str, Any] = {
    "gpipe": ScheduleQuestion("gpipe", "gpipe", 2, ((2, 2), (3, 5)), (4, 2)),
    "one_f_one_b": ScheduleQuestion("one_f_one_b", "1f1b", 4, ((2, 3), (4, 4), (4, 8)), (4, 2)),
    "interleaved_1f1b": ScheduleQuestion("interleaved_1f1b", "interleaved", 4, ((2, 2, 2), (2, 4, 2), (4, 8, 2)),
                                         (2, 2, 3)),
}
