"""The course's policies on a grade, applied to the final total: the points a submission earned, autograded and
graded by hand (after any regrade), less what it loses for being late. They apply where grades leave the gradebook —
the export (:mod:`grader.export`), the feedback (:class:`FinalGrades`) and ``ppedu grade``'s report — never while
autograding, so a written answer graded by hand afterwards loses the same share as the rest.

The late rule: an assignment with a due date (set when releasing it: the formgrader's due date field, or ``nbgrader
db assignment add ps1 --duedate="2026-12-01 17:00:00 Europe/Berlin"``) loses ``c.LatePolicy.percent_per_day`` of the
total per day or part of a day after it (an extension given in the gradebook moves a student's due date), never more
than the total; a timed exam (ppedu's ``TIMED``: the counting exam and the final) late by any time scores zero. A submission of an
assignment with a due date but without a usable time (none recorded, or one that cannot be read) is never taken as
on time: it is flagged, and loses nothing until you say when it came.

>>> rule = LatePolicy(percent_per_day=10)
>>> rule.penalty("ps1", 9.0, 3600), rule.penalty("ps1", 9.0, 20 * 86400)  # one day's share; never more than all
(0.9, 9.0)
>>> rule.penalty("final", 17.0, 60), rule.penalty("final", 17.0, 0)  # a timed exam a minute late: all of it
(17.0, 0.0)
>>> rule.penalty("counting", 15.0, 60)  # the counting exam is timed too
15.0
>>> Standing("alice", "ps1", "graded", raw=8.0, penalty=0.8, max_score=10.0, days_late=1).text()
'graded; late 1 day'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import GetGrades
from traitlets import Float, List, Unicode
from traitlets.config import Configurable

from grader import status
from ppedu.grading.assignments import TIMED


class LatePolicy(Configurable):
    percent_per_day = Float(10.0, help="Percent of the total taken off per day or part of a day late").tag(config=True)
    timed = List(Unicode(), default_value=list(TIMED),
                 help="Timed exams: late by any time scores zero").tag(config=True)

    def penalty(self, assignment: str, total: float, seconds_late: float) -> float:
        """What a total of ``total`` points loses for being ``seconds_late``."""
        if seconds_late <= 0 or total <= 0:
            return 0.0
        if assignment in self.timed:
            return total
        return round(min(total, total * self.percent_per_day / 100 * days(seconds_late)), 2)


def days(seconds_late: float) -> int:
    """Days late, a part of a day counting as one."""
    return math.ceil(seconds_late / 86400) if seconds_late > 0 else 0


@dataclass(frozen=True)
class Standing:
    """One student's standing on one assignment as it leaves the gradebook. ``status``: "graded", "awaiting manual
    grading", "no submission", "not autograded yet", or a :class:`grader.status.Failure`'s kind ("ungradeable", "not
    autograded") with its ``reason``; ``raw`` the final total before policies (``None``: no grade); ``awaiting`` the
    points of answers still to be graded by hand; ``untimed``: the assignment has a due date and the submission no
    usable time."""

    student: str
    assignment: str
    status: str
    reason: str = ""
    raw: float | None = None
    penalty: float = 0.0
    max_score: float = 0.0
    timestamp: datetime | None = None
    days_late: int = 0
    awaiting: float = 0.0
    untimed: bool = False

    @property
    def score(self) -> float | None:
        return None if self.raw is None else round(max(0.0, self.raw - self.penalty), 2)

    def text(self) -> str:
        """The status in words, for the export's ``status`` column and ``ppedu grade``."""
        said = [f"{self.status} ({self.reason})" if self.reason else self.status]
        if self.awaiting:
            said[0] += f" ({self.awaiting:g} point{'s' if self.awaiting != 1 else ''})"
        if self.days_late:
            said.append(f"late {self.days_late} day{'s' if self.days_late > 1 else ''}")
        if self.untimed:
            said.append("no usable submission time (timestamp.txt): lateness not judged")
        return "; ".join(said)


def standing(gb: Gradebook, root: Path, assignment: Any, student: str, policy: LatePolicy) -> Standing:
    """``student``'s :class:`Standing` on ``assignment`` (a gradebook Assignment), from the gradebook, the grader's
    status records and ``submitted/``."""
    name = assignment.name
    try:
        submission = gb.find_submission(name, student)
    except MissingEntry:
        collected = (root / "submitted" / student / name).is_dir()
        return Standing(student, name, "not autograded yet" if collected else "no submission",
                        raw=None if collected else 0.0, max_score=assignment.max_score)
    failure = status.read(root, student, name)
    untimed = assignment.duedate is not None and submission.timestamp is None
    if failure is not None:
        return Standing(student, name, failure.kind, failure.reason, max_score=assignment.max_score,
                        timestamp=submission.timestamp, untimed=untimed)
    raw = float(submission.score)
    awaiting = sum(g.max_score for nb in submission.notebooks for g in nb.grades if g.needs_manual_grade)
    late = submission.total_seconds_late
    return Standing(student, name, "awaiting manual grading" if awaiting else "graded", raw=raw,
                    penalty=policy.penalty(name, raw, late), max_score=float(submission.max_score),
                    timestamp=submission.timestamp, days_late=days(late), awaiting=float(awaiting), untimed=untimed)


def class_standings(gb: Gradebook, root: Path, assignments: Iterable[str], students: Iterable[str] = (),
                    policy: LatePolicy | None = None) -> Iterator[Standing]:
    """Every student's standing on each of ``assignments``: the class list (the gradebook's students, ``nbgrader db
    student import``), and anyone else with a submission under ``submitted/``; only ``students`` if given."""
    policy = policy or LatePolicy()
    for name in assignments:
        assignment = gb.find_assignment(name)
        everyone = sorted(set(students) or {s.id for s in gb.students} | set(_collected(root, name)))
        for student in everyone:
            yield standing(gb, root, assignment, student, policy)


def _collected(root: Path, assignment: str) -> list[str]:
    return [p.parent.name for p in (root / "submitted").glob(f"*/{assignment}") if p.is_dir()]


class FinalGrades(GetGrades):
    """The feedback's score and late penalty from the policy on the notebook's final total (nbgrader's GetGrades takes
    the penalty the autograder recorded, on the autograded points alone)."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        nb, resources = super().preprocess(nb, resources)
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            notebook = gb.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
            late = gb.find_submission(info["assignment"], info["student"]).total_seconds_late
            penalty = LatePolicy(parent=self).penalty(info["assignment"], notebook.score, late)
            info.update(score=notebook.score - penalty, late_penalty=penalty)
        return nb, resources
