"""The timed final exam's deadline: a submission of a timed assignment collected after its due date scores zero;
every other assignment keeps nbgrader's default (no penalty). Set the due date when the exam starts
(``nbgrader db assignment add final --duedate "…"``, docs/instructor.md § 9).

>>> from types import SimpleNamespace
>>> rule = TimedExamLateness(parent=None)
>>> rule.penalty_for("final", 17.0, 60), rule.penalty_for("ps1", 8.0, 3600), rule.penalty_for("final", 17.0, 0)
(17.0, None, None)
"""

from __future__ import annotations

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import List, Unicode


class TimedExamLateness(LateSubmissionPlugin):
    """Zero for a late submission of a timed assignment (``timed``), nothing for the others."""

    timed = List(Unicode(), default_value=["final"], help="The assignments that are timed exams.").tag(config=True)

    def penalty_for(self, assignment: str, score: float, seconds_late: float) -> float | None:
        return score if assignment in self.timed and seconds_late > 0 else None

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        return self.penalty_for(getattr(self.parent, "assignment_id", ""), score, total_seconds_late)
