"""ps3's judge — the student's schedules, as the op lists their functions returned when their answer
cell ran on its own (where ppedu's generators are not installed), checked per property against
ppedu's on the fixed sizes, an edge case, the student's own sizes (from the student's id, never the
notebook's) and sizes of the autograder's own, never named in the feedback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps3 import QUESTIONS, ScheduleQuestion
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick


@dataclass(frozen=True)
class ScheduleJudge:
    form: ScheduleQuestion

    def hidden(self, v: Values) -> tuple[tuple[int, ...], ...]:
        """A size per student the notebook never shows (past the sizes it tries, m ≥ p and m < p alike)."""
        p = pick("ps3-hidden", v.student, self.form.name + ":p", (3, 5, 6, 7))
        if self.form.reference == "interleaved":
            return ((p, p * pick("ps3-hidden", v.student, "k", (1, 3)), pick("ps3-hidden", v.student, "v", (2, 3, 4))),)
        return ((p, pick("ps3-hidden", v.student, self.form.name + ":m", (p - 2, p + 3, 3 * p + 1))),)

    def calls(self, v: Values) -> dict[str, tuple[tuple[int, ...], ...]]:
        return {self.form.name: (*self.form.graded_sizes(v), *self.hidden(v))}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        return grade_schedule(data.get(self.form.name), self.form.reference, self.calls(v)[self.form.name],
                              self.form.points, hidden=self.hidden(v))


KEYS: dict[str, Any] = {name: ScheduleJudge(q) for name, q in QUESTIONS.items()}
