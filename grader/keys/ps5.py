"""ps5's judge — what the student's executor did in the notebook (loss, gradients, activations
alive per GPU, left over), run where ppedu's own executor was not available, against the
unpipelined model on the fixed schedules and the student's own (from the student's id).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments.ps5 import QUESTIONS, ExecutorQuestion, Report, _unwrap, report


@dataclass(frozen=True)
class ExecutorJudge:
    form: ExecutorQuestion

    def judge(self, data: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        return report(_unwrap(data.get("run_pipeline")), self.form.graded_specs(v), self.form.points)


KEYS: dict[str, Any] = {name: ExecutorJudge(q) for name, q in QUESTIONS.items()}
