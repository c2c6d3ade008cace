"""The graded assignments ps1…ps5 as a student's notebook sees them: each module derives a student's
values from their id and holds its questions' forms (what each reads, the visible test), never a key.

A notebook uses three calls: :func:`my_values` (shows the student's numbers), :func:`check` (the
visible test) and, in the hidden tests, :func:`hand_in`, which puts the student's answers into the
test cell's output as plain data (:data:`MIME`). The autograder's judge, outside the notebook,
compares them with its key (the course's ``grader`` package, for instructors only).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ppedu.grading.students import student_id

ASSIGNMENTS = ("ps1", "ps2", "ps3", "ps4", "ps5")
#: The media type of a test cell's answers, as the hidden test hands them in (a JSON text).
MIME = "text/x-ppedu-answers"


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
    :class:`~ppedu.grading.answers.Wrong` with what to fix. While autograding it does nothing: the
    autograder's judge decides, from what :func:`hand_in` gave it."""
    __tracebackhide__ = True
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return None
    result = load(assignment).QUESTIONS[question].check(namespace, my_values(assignment))
    if isinstance(result, str):
        print(f"✓ {question}: {result}")
        return None
    print(result)  # a question with partial credit: its report, and its points as the cell's value
    return float(getattr(result, "score"))


def hand_in(assignment: str, question: str, namespace: Mapping[str, object]) -> None:
    """Put the answers of ``question`` into this cell's output as plain data, for the autograder.

    Nothing here decides a grade: the judge reads this data outside the notebook.
    """
    try:
        answers = load(assignment).QUESTIONS[question].data(namespace, my_values(assignment))
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: B036 (whatever broke, the judge says so; no traceback)
        answers = {"__raised__": type(error).__name__, "message": str(error)[:300]}
    text = json.dumps({"assignment": assignment, "question": question, "answers": answers})
    try:
        from IPython.display import display

        display({MIME: text}, raw=True)
    except ImportError:  # not in a notebook
        print(text)
