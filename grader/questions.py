"""A question's form (what the notebook hands in, :mod:`ppedu.grading.questions`) joined to its key
and hints: the judge's side, which only ever sees plain data.

>>> from ppedu.grading.answers import Number
>>> from ppedu.grading.questions import Question
>>> q = Keyed(Question((Number("T", whole=True),)), lambda v: {"T": 14})
>>> q.judge({"T": 14}, {})
'correct'
>>> try:
...     q.judge({"T": 13}, {})
... except Wrong as wrong:
...     print(wrong)
`T` is not right yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Wrong
from ppedu.grading.questions import Question, Values

#: ``hint(name, got, answers, key, values)``: a specific hint for a wrong answer, or ``None``.
Hint = Callable[[str, Any, Mapping[str, Any], Mapping[str, Any], Values], "str | None"]


def _no_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], values: Values) -> str | None:
    return None


@dataclass(frozen=True)
class Keyed:
    """``form``'s answers against ``key(values)``, the right value of each."""

    form: Question
    key: Callable[[Values], Mapping[str, Any]]
    hint: Hint = _no_hint

    def judge(self, data: Mapping[str, object], values: Values) -> str:
        """Every answer equal to the key, else :class:`Wrong` with one message per wrong answer."""
        got = self.form.read(data)
        key = self.key(values)
        problems = []
        for answer in self.form.answers:
            if not answer.equal(got[answer.name], key[answer.name]):
                hint = self.hint(answer.name, got[answer.name], got, key, values)
                problems.append(f"`{answer.name}` is not right yet." + (f" {hint[:1].upper()}{hint[1:]}" if hint else ""))
        if problems:
            raise Wrong("\n".join(problems))
        return "correct"
