"""The course's late policy: a share of the score off per day (or part of a day) late, never below zero. nbgrader
applies it where an assignment has a due date (set when releasing it: the formgrader's due date field, or
``nbgrader db assignment add ps1 --duedate="2026-12-01 17:00:00 Europe/Berlin"``) and a submission's time is after
it; ``c.LateByDay.percent_per_day`` in nbgrader_config.py sets the share (100: nbgrader's own "zero" policy).

>>> LateByDay(percent_per_day=10).late_submission_penalty("alice", 9.0, 3600)  # an hour late: one day's share
0.9
>>> LateByDay(percent_per_day=10).late_submission_penalty("alice", 9.0, 20 * 86400)  # never more than the score
9.0
"""

from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float


class LateByDay(LateSubmissionPlugin):
    percent_per_day = Float(10.0, help="Percent of the score taken off per day or part of a day late").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        days = math.ceil(total_seconds_late / 86400)
        return round(min(score, score * self.percent_per_day / 100 * days), 2)
