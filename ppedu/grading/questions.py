"""A graded part of an assignment, as a student's notebook sees it: the answers it reads, the data
it hands to the autograder, and the visible test (form and consistency, never the key).

A question answered in variables (:class:`Question`) has ``data(namespace, values)``, the student's answers
as plain data (what the autograder reads out of the kernel after the question's test cell, to compare with
its key outside it), and ``check(namespace, values)``, the visible test. A question answered by functions
has a ``code`` (:class:`~ppedu.grading.evaluate.Code`): the autograder runs that answer cell on its own in a
fresh interpreter and calls the functions there; its visible test does the same (:func:`run_alone`).

>>> from ppedu.grading.answers import Number
>>> q = Question((Number("T", whole=True),))
>>> q.data({"T": 14.0, "other": 1}, {})
{'T': 14.0}
>>> q.check({"T": 14}, {})
'answers well-formed and consistent (the autograder checks their values)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ppedu.grading.answers import Missing, Wrong, plain
from ppedu.grading.evaluate import Code, Evaluation


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
        """Every answer read from ``data``, or :class:`Wrong` with one line per malformed one (and one for all
        those missing, first)."""
        problems: list[str] = []
        missing: list[str] = []
        got: dict[str, Any] = {}
        for answer in self.answers:
            try:
                got[answer.name] = answer.read(data)
            except Missing as gone:
                missing += gone.names
            except Wrong as wrong:
                problems.append(str(wrong))
        if missing:
            problems.insert(0, str(Missing(*missing)))
        if problems:
            raise Wrong("\n".join(problems))
        return got

    def check(self, namespace: Mapping[str, object], values: Values) -> str:
        """The visible test: every answer present, well-formed and consistent with the others."""
        got = self.read(self.data(namespace, values))
        if problems := self.sanity(got, values):
            raise Wrong("\n".join(problems))
        return "answers well-formed and consistent (the autograder checks their values)"


def cell_of(function: object) -> str | None:
    """The text of the notebook cell ``function`` was defined in (IPython keeps each cell's text for its
    tracebacks), or ``None`` if it was not defined in a cell."""
    import linecache

    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    entry = linecache.cache.get(filename) if isinstance(filename, str) else None
    return "".join(entry[2]) if entry is not None and len(entry) == 4 and entry[1] is None else None  # a cell: no mtime


def run_alone(code: Code, namespace: Mapping[str, object], calls: Mapping[str, Sequence[Sequence[Any]]],
              values: Values) -> Evaluation:
    """The visible test's run of a function question: the answer cell its functions were written in, run on
    its own as the autograder runs it (:func:`ppedu.grading.evaluate.evaluate`), in a sandbox where one can
    be had; :class:`Wrong` if the functions come from elsewhere."""
    from ppedu.grading.evaluate import evaluate
    from ppedu.grading.sandbox import unavailable

    cells = {name: cell_of(namespace[name]) for name in calls if callable(namespace.get(name))}
    if elsewhere := [name for name, cell in cells.items() if cell is None]:
        raise Wrong(f"`{elsewhere[0]}` is not a function written in your answer cell: write it there with "
                    f"`def {elsewhere[0]}(...)` — the autograder runs that cell on its own.")
    if len(set(cells.values())) > 1:
        raise Wrong(" and ".join(f"`{n}`" for n in cells) + " must be written in the same answer cell: the "
                    "autograder runs that cell on its own.")
    source = next((cell for cell in cells.values() if cell is not None), "")
    return evaluate(code, source, calls, values, timeout=120, use_sandbox=unavailable() is None)


def explain(evaluation: Evaluation) -> str:
    """What went wrong running an answer cell on its own, as sentences to add to a lost question's message."""
    lines = []
    if evaluation.load_errors:
        first = evaluation.load_errors[0]
        kind, _, what = first.partition(": ")
        if kind in ("ImportError", "ModuleNotFoundError"):
            lines.append(f"Run on its own, your answer cell could not import what it asks for ({what}): only what "
                         "the question allows is installed while it is checked, and the answer must be your own code.")
        else:
            lines.append(f"Run on its own, your answer cell raised {first}: does it use something defined in "
                         "another cell?")
    if evaluation.stopped:
        lines.append(f"Run on its own, your answer cell {evaluation.stopped}.")
    return "".join(f"\n({line})" for line in lines)
