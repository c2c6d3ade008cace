"""The visible test a notebook's check cell runs (``check("ps1", "gpipe_slots", globals())``): the question's
form checked on the student's own values and, for a function question, the notebook's code run as the autograder runs
it, with the student's question data handed in. It decides no grade: the autograder's judge does, outside the
notebook."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ppedu.grading.assignments import load, my_values
from ppedu.grading.questiondata import owners_data
from ppedu.grading.questions import function_check


def check(assignment: str, question: str, namespace: Mapping[str, object]) -> float | None:
    """The visible test of ``question``: prints a short verdict, or raises
    :class:`~ppedu.grading.answers.Wrong` with what to fix. While autograding it does nothing: the
    autograder's judge decides, outside the notebook."""
    __tracebackhide__ = True
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return None
    form, values = load(assignment).QUESTIONS[question], my_values(assignment)
    result = (function_check(form, question, values, owners_data(assignment, values.student))
              if hasattr(form, "code") else form.check(namespace, values))
    if isinstance(result, str):
        print(f"✓ {question}: {result}")
        return None
    print(result)  # a question with partial credit: its report, and its points as the cell's value
    return float(getattr(result, "score"))
