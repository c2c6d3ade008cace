"""ps5's judge — what the student's executors did, as the grader saw it running the chunks itself (which examples went
through which chunk in what order, the gradients, the activations held per GPU at each backward and at the end; see
:mod:`ppedu.grading.stages`) and the loss it returned, against the unpipelined model on the fixed schedules, the
student's own (from the student's id) and one of the autograder's own, never named in the feedback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps5 import QUESTIONS, ExecutorQuestion, Report, Spec, report, unwrap
from ppedu.grading.students import pick


@dataclass(frozen=True)
class ExecutorJudge:
    """The executor, judged on what the grader saw of it: nothing its own process measured or reported counts but the
    loss it returned, so a cell that reaches into the interpreter changes nothing here (the instructor is still told
    to read it)."""

    form: ExecutorQuestion

    def hidden(self, v: Values) -> tuple[Spec, ...]:
        name, _, _, chunks = self.form.sizes[0]
        p = pick("ps5-hidden", v.student, "p", (2, 3, 4))
        m = 2 * p if name == "interleaved" else pick("ps5-hidden", v.student, "m", (p + 1, 2 * p + 1))
        return ((name, p, m, chunks, pick("ps5-hidden", v.student, "seed", range(1000, 2000))),)

    def calls(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        return {self.form.function: tuple((spec,) for spec in (*self.form.graded_specs(v), *self.hidden(v)))}

    def secret(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        return {self.form.function: tuple((spec,) for spec in self.hidden(v))}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        specs = [args[0] for args in self.calls(v)[self.form.function]]
        return report(unwrap(data.get(self.form.function)), specs, self.form.points, hidden=self.hidden(v),
                      mode=self.form.mode)


KEYS: dict[str, Any] = {name: ExecutorJudge(q) for name, q in QUESTIONS.items()}
