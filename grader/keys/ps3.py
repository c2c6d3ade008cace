"""ps3's judge — the student's schedules, as the op lists their functions returned in the notebook
(where ppedu's own generators were not available), checked per property against ppedu's on the
fixed sizes, an edge case and the student's own sizes (from the student's id, never the notebook's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments.ps3 import QUESTIONS, ScheduleQuestion
from ppedu.grading.schedule_checks import Report, grade_schedule


@dataclass(frozen=True)
class ScheduleJudge:
    form: ScheduleQuestion

    def judge(self, data: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        return grade_schedule(data.get(self.form.name), self.form.reference, self.form.graded_sizes(v), self.form.points)


KEYS: dict[str, Any] = {name: ScheduleJudge(q) for name, q in QUESTIONS.items()}
