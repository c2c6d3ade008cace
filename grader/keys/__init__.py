"""The answer keys: ``grader.keys.psN.KEYS`` maps each graded cell's ``grade_id`` to a judge with a
``judge(data, values)`` method, which returns ``"correct"`` or a report with a ``score``, or raises
:class:`~ppedu.grading.answers.Wrong` with the message for the student."""

from __future__ import annotations

import importlib
from types import ModuleType

from ppedu.grading.assignments import ASSIGNMENTS


def load(assignment: str) -> ModuleType:
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"unknown assignment {assignment!r} (the assignments are {', '.join(ASSIGNMENTS)})")
    return importlib.import_module(f"grader.keys.{assignment}")
