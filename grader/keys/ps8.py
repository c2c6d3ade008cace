"""ps8's judge — the student's code as the relay saw it run across ranks (every collective and message, each rank's
final word; see :mod:`ppedu.grading.relay`), against the grader's unsharded run of the same steps on the whole batch,
on the visible runs, the student's own (from the student's id) and one of the autograder's own on more ranks, never
named in the feedback. Nothing here was computed by a process that ran the student's code: the relay's record is the
evaluating process's, and the reference is computed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps8 import FUNCTIONS, QUESTIONS, RanksQuestion, Report, Spec, report, unwrap
from ppedu.grading.students import pick


@dataclass(frozen=True)
class RanksJudge:
    """A question run across ranks, judged on what the relay saw: what a rank's process reports of itself counts only
    as its claim (its parameters, its result), checked against the reference the judge computes."""

    form: RanksQuestion

    def hidden(self, v: Values) -> tuple[Spec, ...]:
        n = pick("ps8-hidden", v.student, "n", (3, 4))
        size = {"ring": pick("ps8-hidden", v.student, "length", range(2001, 5001)),
                "buckets": pick("ps8-hidden", v.student, "cap", (2500, 5000, 10000))}.get(self.form.name, 0)
        return ([self.form.name, n, size, pick("ps8-hidden", v.student, "seed", range(1000, 2000))],)

    def calls(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        specs = [*self.form.graded_specs(v), *self.hidden(v)]
        return {FUNCTIONS[self.form.name]: tuple((spec,) for spec in specs)}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        specs = [args[0] for args in self.calls(v)[FUNCTIONS[self.form.name]]]
        return report(self.form.name, unwrap(data.get(FUNCTIONS[self.form.name])), specs, self.form.points,
                      hidden={tuple(s) for s in self.hidden(v)})


KEYS: dict[str, Any] = {name: RanksJudge(q) for name, q in QUESTIONS.items()}
