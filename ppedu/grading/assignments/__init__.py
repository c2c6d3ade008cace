"""The graded assignments (counting, ps1…ps8, the final) as a student's notebook sees them: each module derives a student's
values from their id and holds its questions' forms (what each reads, the visible test), never a key.

A notebook uses two calls: :func:`my_values` (shows the student's numbers) and :func:`check` (the
visible test). While autograding, the grader itself asks the kernel for each question's answers
right after its test cell has run (:func:`answers`, as plain data) and compares them with its key
outside the notebook (the course's ``grader`` package, for instructors only); a question answered
by functions is not asked of the kernel at all: the grader runs its answer cell on its own.
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

ASSIGNMENTS = ("counting", "ps1", "ps2", "ps3", "ps4", "ps5", "ps6", "ps7", "ps8", "final")
#: Timed exams: released through the exchange when they start, never in the student release; late scores zero. Both
#: are exams whose notebooks import nothing that simulates while the student's kernel can still import the library:
#: the proctored, timed sitting is what keeps a question from being answered by transcribing it into a call.
TIMED = ("counting", "final")


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


#: Values (and question data) handed in by whoever runs a notebook's code outside a kernel (the evaluator's harness,
#: where the modules that derive them may be absent, and no ``questions.json`` is beside it): :func:`my_values` and
#: :func:`~ppedu.grading.questiondata.my_data` give these.
_given: dict[str, Values] = {}
_given_data: dict[str, dict[str, Any]] = {}


def give(assignment: str, student: str, numbers: Mapping[str, Any], data: Mapping[str, Any] | None = None) -> None:
    """From now on :func:`my_values` of ``assignment`` is ``numbers``, the values of ``student``, and its question
    data ``data`` (their variant's entries), if given."""
    _given[assignment] = Values(assignment, student, dict(numbers))
    if data is not None:
        _given_data[assignment] = dict(data)


def my_values(assignment: str, student: str | None = None) -> Values:
    """The values of ``assignment`` for this student (by default the one :func:`student_id` names).

    >>> my_values("ps1", "alice") == my_values("ps1", "alice")
    True
    """
    if student is None and assignment in _given:
        return _given[assignment]
    who = student_id() if student is None else student
    return Values(assignment, who, load(assignment).values(who))


def answers(assignment: str, question: str, namespace: Mapping[str, object]) -> str:
    """The answers of ``question`` in ``namespace`` as a JSON text (``""`` for a question that is not answered in
    variables): what the autograder asks the kernel for after the question's test cell. Nothing here decides a
    grade: the judge reads this data outside the notebook."""
    form = load(assignment).QUESTIONS.get(question)
    if form is None or not hasattr(form, "data"):
        return ""
    try:
        data = form.data(namespace, my_values(assignment))
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: B036 (whatever broke, the judge says so; no traceback)
        data = {"__raised__": type(error).__name__, "message": str(error)[:300]}
    return json.dumps(data)
