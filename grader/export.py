"""``nbgrader export``: one row per student of the class list and assignment, with the course's policies applied to
the final total (:mod:`grader.policy`) and a ``status`` column saying what the score is: "graded", "awaiting manual
grading (N points)", "no submission", "not autograded yet", "ungradeable (reason)" or "not autograded (reason)",
with "late N days" or "no usable submission time (timestamp.txt): lateness not judged" where that applies. A
student without a grade (ungradeable, not autograded) has empty score columns, never a silent 0.

The assignments exported are those students were given: an assignment only generated (in the gradebook, never
released to the exchange, nobody's submission) would otherwise be a column of zeros for the whole class; the ones
left out are named in a warning, and ``--assignment`` exports exactly what it names. The file is the grader's only
(mode 0600), and a summary line says how many rows need a look."""

from __future__ import annotations

import csv
import os
from collections import Counter
from pathlib import Path
from typing import Any

from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.exchange import Exchange
from nbgrader.plugins import ExportPlugin

from grader.policy import LatePolicy, class_standings

COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
           "late_submission_penalty", "score", "max_score", "status")


class ClassGrades(ExportPlugin):
    def export(self, gradebook: Any) -> None:
        root = Path(CourseDirectory(config=self.config).root)
        names = [str(a) for a in self.assignment]
        if not names:
            names = [a.name for a in gradebook.assignments if self._given(a)]
            held = sorted({a.name for a in gradebook.assignments} - set(names))
            if held:
                self.log.warning("Not exported, never released and without submissions: %s", ", ".join(held))
        dest = Path(self.to or "grades.csv")
        people = {s.id: s for s in gradebook.students}
        duedates = {a.name: a.duedate for a in gradebook.assignments}
        counts: Counter[str] = Counter()
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # grades are the grader's: an older export may have been readable by all
        with os.fdopen(fd, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(COLUMNS)
            for row in class_standings(gradebook, root, names, [str(s) for s in self.student], LatePolicy(parent=self)):
                person = people.get(row.student)
                writer.writerow([row.assignment, _text(duedates.get(row.assignment)), _text(row.timestamp), row.student,
                                 _text(getattr(person, "last_name", None)), _text(getattr(person, "first_name", None)),
                                 _text(getattr(person, "email", None)), _text(row.raw),
                                 _text(row.penalty if row.raw is not None else None), _text(row.score),
                                 _text(row.max_score), row.text()])
                counts[row.status] += 1
                counts["untimed"] += row.untimed
        self.log.info("Exported %d row(s) to %s: %s", sum(v for k, v in counts.items() if k != "untimed"), dest,
                      ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if n and k != "untimed"))
        if counts["untimed"]:
            self.log.warning("%d submission(s) without a usable time: lateness not judged (status column)",
                             counts["untimed"])
        for kind in ("ungradeable", "not autograded", "not autograded yet", "awaiting manual grading"):
            if counts[kind]:
                self.log.warning("%d row(s) %s: their score is not final (status column)", counts[kind], kind)

    def _given(self, assignment: Any) -> bool:
        root = Path(Exchange(config=self.config).root)
        course = self.config.CourseDirectory.get("course_id", "")
        return assignment.num_submissions > 0 or (root / course / "outbound" / assignment.name).is_dir()


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
