"""A graded part of an assignment, as a student's notebook sees it: the answers it reads, the data it hands to the
autograder, and the visible test — form and consistency, on plain data, never the key. The autograder's judge runs
the same visible test on the same data before its key, so a test the student sees failing fails there too.

A question answered in variables (:class:`Question`) has ``data(namespace, values)``, the student's answers as
plain data (what the evaluator reads out of the kernel after the question's test cell), and ``visible(data,
values)``. A question answered by functions has a ``code`` (:class:`~ppedu.grading.evaluate.Code`), ``calls(values)``
(the inputs the student's check calls its functions on) and ``visible(results, values)``, on what the functions gave
when the notebook was run as the autograder runs it, where the question's forbidden modules have no code
(:func:`run_here` inside a notebook; :class:`ppedu.grading.execute.Evaluate` for a notebook file).

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

from ppedu.grading.answers import Missing, Wrong, plain
from ppedu.grading.evaluate import Cell, run_functions


class FormOnly(str):
    """What a visible test says when it passes having checked the answers' form (present, numbers, consistent), not
    their values: ``ppedu check`` counts its points apart, as points the key has still to judge."""


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

    def visible(self, data: Mapping[str, object], values: Values) -> str:
        """The visible test: every answer present, well-formed and consistent with the others."""
        got = self.read(data)
        if problems := self.sanity(got, values):
            raise Wrong("\n".join(problems))
        return FormOnly("answers well-formed and consistent (the autograder checks their values)")

    def check(self, namespace: Mapping[str, object], values: Values) -> str:
        return self.visible(self.data(namespace, values), values)


def run_here(form: Any, question: str, values: Any, data: Mapping[str, Any] | None = None
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inside a notebook: what ``form``'s functions give when the cells run so far (IPython's history: under
    Validate, the notebook top to bottom) are run as the autograder runs them, up to this test cell; also what went
    wrong getting there (as :class:`~ppedu.grading.execute.Evaluate` records it). ``data``: the student's question
    data, handed to the run (it has no ``questions.json`` beside it)."""
    from IPython import get_ipython

    from ppedu.grading.ranked import once
    from ppedu.grading.sandbox import unavailable

    shell = get_ipython()
    if shell is None:
        raise Wrong("This check runs in the assignment's notebook (or run `ppedu check` on the notebook's file).")
    history = list(shell.history_manager.input_hist_raw)[1:-1]  # the cells run before this one, in order
    cells = [*(Cell(source) for source in history), Cell("", test=question)]
    requests = {question: form.calls(values)}
    run = run_functions(cells, form.code.library, requests, values.assignment, values.student, dict(values), 600,
                        driver=form.code.driver, use_sandbox=unavailable() is None, service=form.code.service,
                        runner=once(form.code.ranks), data=data, call_timeout=form.code.call_timeout)
    return run.results.get(question, {}), run.account(cells, question, requests[question])


def explain(run: Mapping[str, Any]) -> str:
    """What went wrong running the notebook for a function question (an :class:`Evaluate` record: the errors of
    cells meant to define a missing function, why the run stopped), as sentences to add to a lost question's
    message."""
    lines = []
    if run.get("errors") and not run.get("stopped"):  # the cell that should define a function raised
        index, error = run["errors"][-1]
        kind, _, what = str(error).partition(": ")
        if kind == "NotAvailable":
            lines.append(f"Run as the autograder runs it, cell {index + 1} stopped where it used "
                         f"{what.split(' is not')[0]}, which is not available while this question is checked, so "
                         "what that cell defines after it is missing: the answer must be your own code.")
        else:
            lines.append(f"Run as the autograder runs it (every cell in order, where what the question forbids is "
                         f"not installed), cell {index + 1} raised {error}")
    if run.get("stopped"):
        lines.append(f"Run as the autograder runs it, your notebook {run['stopped']}.")
    return "".join(f"\n({line})" for line in lines)


def function_check(form: Any, question: str, values: Any, data: Mapping[str, Any] | None = None) -> Any:
    """A function question's visible test, inside the notebook: :func:`run_here`, then ``form.visible``; what went
    wrong on the way is added to a failing message."""
    results, run = run_here(form, question, values, data)
    try:
        return form.visible(results, values)
    except Wrong as wrong:
        raise Wrong(str(wrong) + explain(run)) from None
