"""ps3 — write the schedules: GPipe, 1F1B and interleaved 1F1B as per-GPU op lists, graded per
property (every op once, dependencies, makespan, peak activations) on fixed sizes and the
student's own.

>>> v = values("alice")
>>> v["m_interleaved"] % v["p"]
0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import function
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick


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
    sizes: tuple[tuple[int, ...], ...]  # tried in the visible test and again in the hidden one

    def own(self, v: Mapping[str, Any]) -> tuple[int, ...]:
        return (v["p"], v["m_interleaved"], v["v"]) if self.reference == "interleaved" else (v["p"], v["m"])

    def _run(self, namespace: Mapping[str, object], sizes: Sequence[tuple[int, ...]]) -> Report:
        return grade_schedule(function(namespace, self.name), self.reference, sizes, self.points)

    def check(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        return self._run(namespace, self.sizes)

    def grade(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        # m < p too, where warm-up is cut short: a classic off-by-one
        edge = (4, 2) if self.reference != "interleaved" else (2, 2, 3)
        return self._run(namespace, (*self.sizes, edge, self.own(v)))


QUESTIONS: dict[str, Any] = {
    "gpipe": ScheduleQuestion("gpipe", "gpipe", 2, ((2, 2), (3, 5))),
    "one_f_one_b": ScheduleQuestion("one_f_one_b", "1f1b", 4, ((2, 3), (4, 4), (4, 8))),
    "interleaved_1f1b": ScheduleQuestion("interleaved_1f1b", "interleaved", 4, ((2, 2, 2), (2, 4, 2), (4, 8, 2))),
}
