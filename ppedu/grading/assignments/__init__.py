"""The graded assignments ps1…ps5: each module derives a student's values from their id and holds
its questions (:class:`~ppedu.grading.questions.Question` or a schedule/executor check).

A notebook uses three calls: :func:`my_values` (shows the student's numbers), :func:`check` (the
visible test) and, in the hidden tests, :func:`grade`, which nbgrader's autograder runs through
:mod:`ppedu.grading.referee` on a pristine copy of ppedu.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ppedu.grading.students import graded_student_id, student_id

ASSIGNMENTS = ("counting", "ps1", "ps2", "ps3", "ps4", "ps5")


@dataclass(frozen=True, repr=False)
class Values(Mapping[str, Any]):
    """A student's own numbers for one assignment; read them as attributes (``values.p``) or by name.

    >>> v = Values("ps1", "alice", {"p": 4, "m": 8})
    >>> v.p, v["m"], v
    (4, 8, ps1 for student 'alice': p = 4, m = 8)
    """

    assignment: str
    student: str
    numbers: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.numbers[name]
        except KeyError:
            raise AttributeError(f"{self.assignment} has no value {name!r} (it has {', '.join(self.numbers)})") from None

    def __getitem__(self, name: str) -> Any:
        return self.numbers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.numbers)

    def __len__(self) -> int:
        return len(self.numbers)

    def __repr__(self) -> str:
        return f"{self.assignment} for student {self.student!r}: " + ", ".join(f"{k} = {v}" for k, v in self.numbers.items())


def load(assignment: str) -> ModuleType:
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"unknown assignment {assignment!r} (the assignments are {', '.join(ASSIGNMENTS)})")
    return importlib.import_module(f"ppedu.grading.assignments.{assignment}")


def my_values(assignment: str, student: str | None = None) -> Values:
    """The values of ``assignment`` for this student (by default the one :func:`student_id` names).

    >>> my_values("ps1", "alice") == my_values("ps1", "alice")
    True
    """
    who = student_id() if student is None else student
    return Values(assignment, who, load(assignment).values(who))


def check(assignment: str, question: str, namespace: Mapping[str, object]) -> float | None:
    """The visible test of ``question``: prints a short verdict, or raises
    :class:`~ppedu.grading.answers.Wrong` with what to fix."""
    __tracebackhide__ = True
    return _show(question, load(assignment).QUESTIONS[question].check(namespace, my_values(assignment)))


def grade(assignment: str, question: str, namespace: Mapping[str, object]) -> float | None:
    """The hidden test of ``question`` against the key for the student being graded."""
    __tracebackhide__ = True
    values = my_values(assignment, graded_student_id())
    return _show(question, load(assignment).QUESTIONS[question].grade(namespace, values))


def _show(question: str, result: object) -> float | None:
    """Print a verdict; a question with partial credit returns its points, for nbgrader to read
    as the cell's value (all-or-nothing questions leave none: they pass, or raise)."""
    if isinstance(result, str):
        print(f"✓ {question}: {result}")
        return None
    print(result)
    return float(getattr(result, "score"))
