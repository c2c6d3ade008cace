"""ps5's judge — what the student's executor did (loss, gradients, activations alive per GPU, left
over, measured from the tensors), run with its answer cell alone where no executor is installed,
against the unpipelined model on the fixed schedules, the student's own (from the student's id) and
one of the autograder's own, never named in the feedback.
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
    """The executor, run by ps5's harness, which measures memory in the same process as the student's code: a
    cell that reaches for these (the grading code, the interpreter's frames and objects) could rewrite what
    is measured, so what was measured is not believed (``data["__reaches__"]``, from the judge)."""

    form: ExecutorQuestion
    tampering = ("ppedu.grading", "ctypes", "sys._getframe", "sys.settrace", "sys.setprofile", "__code__",
                 "__closure__", "__globals__", "f_back", "f_locals", "f_globals", "gc.get_objects", "gc.get_referrers",
                 "gc.get_referents")

    def hidden(self, v: Values) -> tuple[Spec, ...]:
        name, _, _, chunks = self.form.sizes[0]
        p = pick("ps5-hidden", v.student, "p", (2, 3, 4))
        m = 2 * p if name == "interleaved" else pick("ps5-hidden", v.student, "m", (p + 1, 2 * p + 1))
        return ((name, p, m, chunks, pick("ps5-hidden", v.student, "seed", range(1000, 2000))),)

    def calls(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        return {"run_pipeline": tuple((spec,) for spec in (*self.form.graded_specs(v), *self.hidden(v)))}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        specs = [args[0] for args in self.calls(v)["run_pipeline"]]
        return report(unwrap(data.get("run_pipeline")), specs, self.form.points, hidden=self.hidden(v),
                      untrusted=data.get("__reaches__", ()))


KEYS: dict[str, Any] = {name: ExecutorJudge(q) for name, q in QUESTIONS.items()}
