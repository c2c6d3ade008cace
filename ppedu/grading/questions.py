"""A graded part of an assignment: the answers it reads, the right values recomputed with ppedu
from the student's own numbers, and the hints a wrong answer gets.

The visible test a student runs (:meth:`Question.check`) looks only at form and consistency, so it
cannot give the answer away; the hidden test (:meth:`Question.grade`) compares with the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ppedu.grading.answers import Wrong


class Answer(Protocol):
    @property
    def name(self) -> str: ...

    def read(self, namespace: Mapping[str, object]) -> Any: ...

    def equal(self, got: Any, expected: Any) -> bool: ...


Values = Mapping[str, Any]
#: ``hint(name, got, answers, key, values)``: a specific hint for a wrong answer, or ``None``.
Hint = Callable[[str, Any, Mapping[str, Any], Mapping[str, Any], Values], "str | None"]
#: ``sanity(answers, values)``: problems visible without the key (inconsistent answers).
Sanity = Callable[[Mapping[str, Any], Values], list[str]]


def _no_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], values: Values) -> str | None:
    return None


def _no_sanity(answers: Mapping[str, Any], values: Values) -> list[str]:
    return []


@dataclass(frozen=True)
class Question:
    """``answers`` read from the notebook; ``key(values)`` gives the right value of each."""

    answers: tuple[Answer, ...]
    key: Callable[[Values], Mapping[str, Any]]
    hint: Hint = _no_hint
    sanity: Sanity = _no_sanity

    def read(self, namespace: Mapping[str, object]) -> dict[str, Any]:
        problems, got = [], {}
        for answer in self.answers:
            try:
                got[answer.name] = answer.read(namespace)
            except Wrong as wrong:
                problems.append(str(wrong))
        if problems:
            raise Wrong("\n".join(problems))
        return got

    def check(self, namespace: Mapping[str, object], values: Values) -> str:
        """The visible test: every answer present, well-formed and consistent with the others."""
        got = self.read(namespace)
        if problems := self.sanity(got, values):
            raise Wrong("\n".join(problems))
        return "answers well-formed and consistent (the autograder checks their values)"

    def grade(self, namespace: Mapping[str, object], values: Values) -> str:
        """The hidden test: every answer equal to the key, else one message per wrong answer."""
        got = self.read(namespace)
        key = self.key(values)
        problems = []
        for answer in self.answers:
            if not answer.equal(got[answer.name], key[answer.name]):
                hint = self.hint(answer.name, got[answer.name], got, key, values)
                problems.append(f"`{answer.name}` is not right yet." + (f" {hint[:1].upper()}{hint[1:]}" if hint else ""))
        if problems:
            raise Wrong("\n".join(problems))
        return "correct"
