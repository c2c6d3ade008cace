"""The course's late policy: a share of the score off per day (or part of a day) late, never below zero, and the
whole score for a timed exam (``final``). nbgrader applies it where an assignment has a due date (set when releasing
it: the formgrader's due date field, or ``nbgrader db assignment add ps1 --duedate="2026-12-01 17:00:00 Europe/Berlin"``)
and a submission's time is after it; ``c.LateByDay.percent_per_day`` in nbgrader_config.py sets the share (100:
nbgrader's own "zero" policy); the timed exams are ppedu's ``TIMED``.

>>> rule = LateByDay(percent_per_day=10)
>>> rule.penalty_for("ps1", 9.0, 3600), rule.penalty_for("ps1", 9.0, 20 * 86400)  # one day's share; never more
(0.9, 9.0)
>>> rule.penalty_for("final", 17.0, 60), rule.penalty_for("final", 17.0, 0)  # a timed exam a minute late: all of it
(17.0, 0.0)
"""

from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float, List, Unicode

from ppedu.grading.assignments import TIMED


class LateByDay(LateSubmissionPlugin):
    percent_per_day = Float(10.0, help="Percent of the score taken off per day or part of a day late").tag(config=True)
    timed = List(Unicode(), default_value=list(TIMED), help="Timed exams: late by any time scores zero").tag(config=True)

    def penalty_for(self, assignment: str, score: float, seconds_late: float) -> float:
        if seconds_late <= 0:
            return 0.0
        if assignment in self.timed:
            return score
        return round(min(score, score * self.percent_per_day / 100 * math.ceil(seconds_late / 86400)), 2)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        # nbgrader makes the plugin with its AssignLatePenalties as parent, which knows the assignment
        return self.penalty_for(getattr(self.parent, "assignment_id", ""), score, total_seconds_late)
