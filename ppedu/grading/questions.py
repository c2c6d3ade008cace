"""A graded part of an assignment, as a student's notebook sees it: the answers it reads, the data
it hands to the autograder, and the visible test (form and consistency, never the key).

Every question has two methods: ``data(namespace, values)``, the student's answers as plain data
(what the hidden test hands in; the autograder's judge, outside the notebook, compares them with
its key), and ``check(namespace, values)``, the visible test.

>>> from ppedu.grading.answers import Number
>>> q = Question((Number("T", whole=True),))
>>> q.data({"T": 14.0, "other": 1}, {})
{'T': 14.0}
>>> q.check({"T": 14}, {})
'answers well-formed and consistent (the autograder checks their values)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ppedu.grading.answers import Wrong, plain


class Answer(Protocol):
    @property
    def name(self) -> str: ...

    def read(self, namespace: Mapping[str, object]) -> Any: ...

    def equal(self, got: Any, expected: Any) -> bool: ...


Values = Mapping[str, Any]
#: ``sanity(answers, values)``: problems visible without the key (inconsistent answers).
Sanity = Callable[[Mapping[str, Any], Values], list[str]]


def _no_sanity(answers: Mapping[str, Any], values: Values) -> list[str]:
    return []


@dataclass(frozen=True)
class Question:
    """Answers that are values (numbers, words, yes/no, lists), read from the notebook's variables."""

    answers: tuple[Answer, ...]
    sanity: Sanity = _no_sanity

    def data(self, namespace: Mapping[str, object], values: Values) -> dict[str, object]:
        return {a.name: plain(namespace[a.name]) for a in self.answers if a.name in namespace}

    def read(self, data: Mapping[str, object]) -> dict[str, Any]:
        """Every answer read from ``data``, or :class:`Wrong` with one line per malformed one."""
        problems, got = [], {}
        for answer in self.answers:
            try:
                got[answer.name] = answer.read(data)
            except Wrong as wrong:
                problems.append(str(wrong))
        if problems:
            raise Wrong("\n".join(problems))
        return got

    def check(self, namespace: Mapping[str, object], values: Values) -> str:
        """The visible test: every answer present, well-formed and consistent with the others."""
        got = self.read(self.data(namespace, values))
        if problems := self.sanity(got, values):
            raise Wrong("\n".join(problems))
        return "answers well-formed and consistent (the autograder checks their values)"
