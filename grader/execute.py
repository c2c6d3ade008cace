"""Autograding's evaluation: :class:`ppedu.grading.execute.Evaluate` (generic, shipped with ppedu for the students'
own check), with every question's functions called on the inputs its key chooses — the student's visible and own
inputs, and inputs of the autograder's own that no feedback names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grader import keys
from ppedu.grading.execute import Evaluate as StudentsEvaluate, SandboxedExecute


class Evaluate(StudentsEvaluate):
    def calls(self, question: str, form: Any, values: Any) -> Mapping[str, Sequence[Sequence[Any]]]:
        judge = keys.load(self._assignment or "").KEYS.get(question)
        return judge.calls(values) if judge is not None and hasattr(judge, "calls") else super().calls(question, form, values)

    def secret(self, question: str, values: Any) -> Mapping[str, Sequence[Sequence[Any]]]:
        judge = keys.load(self._assignment or "").KEYS.get(question)
        return judge.secret(values) if judge is not None and hasattr(judge, "secret") else {}


__all__ = ["Evaluate", "SandboxedExecute"]
