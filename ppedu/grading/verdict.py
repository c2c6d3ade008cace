"""``ppedu check``: the autograder's own evaluation of a notebook (:class:`ppedu.grading.execute.Evaluate`, the same
runs on the same cells in the same order), then each graded cell's visible test on the data it gave
(:func:`visible_verdict`, which the autograder's judge also runs, before its key) — so a test that fails here fails
there. nbgrader's Validate prints its findings but exits 0 even when tests fail (jupyter/nbgrader#1908); a
:class:`Verdict` says pass or fail, for a student's terminal and for CI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppedu.grading.answers import Wrong
from ppedu.grading.questions import FormOnly, explain


@dataclass(frozen=True)
class CellVerdict:
    grade_id: str
    score: float
    max_score: float
    message: str = ""
    form_only: bool = False  # its visible test checked the answers' form only: the values are the key's to judge

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


@dataclass(frozen=True)
class Verdict:
    """Every graded cell's points, and the cells a student must not have changed but did."""

    notebook: str
    cells: tuple[CellVerdict, ...]
    changed: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.changed and all(c.passed for c in self.cells)

    @property
    def score(self) -> float:
        return sum(c.score for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells)

    def render(self) -> str:
        """A few lines: one per graded cell (what to fix first, then which cell and its points), the changed
        cells, the total.

        >>> print(Verdict("ps1.ipynb", (CellVerdict("a", 1, 1), CellVerdict("b", 0, 2, "`T` is missing."),
        ...                             CellVerdict("c", 2, 2, "returns numbers", form_only=True))).render())
        ✓ a  1/1
        ✗ `T` is missing.  [b  0/2]
        ✓ returns numbers  [c  2/2]
        ps1.ipynb: 3/5 points from the checks you can see (2 of them for answers whose form alone was checked); 1 cell(s) to fix
        (the autograder runs these same checks first, then compares the values with its key: your grade may be lower, never higher)
        """
        lines = []
        for c in self.cells:
            where = f"{c.grade_id}  {c.score:g}/{c.max_score:g}"
            if c.message:
                first, *rest = c.message.splitlines()
                lines.append(f"{'✓' if c.passed else '✗'} {first}  [{where}]")
                lines += [f"  {line}" for line in rest]
            else:
                lines.append(f"{'✓' if c.passed else '✗'} {where}")
        lines += [f"! test cell changed (the autograder will put it back): {source}" for source in self.changed]
        failing = sum(not c.passed for c in self.cells)
        summary = f"{self.notebook}: {self.score:g}/{self.max_score:g} points from the checks you can see"
        if form := sum(c.score for c in self.cells if c.form_only):
            summary += f" ({form:g} of them for answers whose form alone was checked)"
        lines.append(summary + (f"; {failing} cell(s) to fix" if failing else "") +
                     ("; restore the changed test cells" if self.changed else "") + ("" if not self.passed else "; all pass"))
        lines.append("(the autograder runs these same checks first, then compares the values with its key: your grade "
                     "may be lower, never higher)")
        return "\n".join(lines)


def no_answers(index: int, facts: Mapping[str, Any]) -> str:
    """Why a test cell has no answers, as the evaluation's record says."""
    if index in facts.get("timed_out", ()):
        return (f"This test ran over its time limit ({facts.get('timeout')} s) and was stopped: does one of your "
                "cells loop forever, or take far longer than it should?")
    died = facts.get("died")
    if died is not None and died <= index:
        return (f"The notebook's kernel stopped at cell {died + 1} ({facts.get('why') or 'the code exited or crashed'}),"
                " so this test never ran.")
    return "No answers could be read after this test: did the notebook change how Python runs?"


def shown(calls: Mapping[str, Sequence[Sequence[Any]]], results: Mapping[str, Any]) -> dict[str, Any]:
    """Of what a question's functions gave, the calls its visible test makes (the autograder also calls them on
    inputs no feedback may name).

    >>> shown({"f": [(1,)]}, {"f": [[[1], 2.0], [[7], 9.0]], "g": None})
    {'f': [[[1], 2.0]]}
    """
    asked = {name: [json.loads(json.dumps(list(args))) for args in cases] for name, cases in calls.items()}
    return {name: [entry for entry in results[name] if entry[0] in asked[name]]
            if isinstance(results.get(name), list) else results.get(name) for name in asked if name in results}


def visible_verdict(form: Any, question: str, facts: Mapping[str, Any], values: Any, index: int,
                    points: float) -> tuple[float, str]:
    """The points and message of ``question``'s visible test (``form``, cell ``index``) on the evaluation ``facts``:
    a question answered by functions on what they gave, one answered in variables on the answers read after its test
    cell. The student's check and the autograder's judge both decide with this."""
    functions = hasattr(form, "code")
    try:
        if functions:
            result = form.visible(shown(form.calls(values), facts.get("functions", {}).get(question, {})), values)
        elif (answers := facts.get("answers", {}).get(question)) is None:
            return 0.0, no_answers(index, facts)
        elif isinstance(answers, dict) and "__raised__" in answers:  # reading the answers itself broke
            raise Wrong(f"Your answers could not be read ({answers['__raised__']}: {answers.get('message', '')}).")
        else:
            result = form.visible(answers, values)
    except Wrong as wrong:
        return 0.0, str(wrong) + (explain(facts.get("function_runs", {}).get(question, {})) if functions else "")
    except Exception as error:  # data the checks cannot take: this question's loss only, never the notebook's
        return 0.0, f"This answer could not be checked ({type(error).__name__}): your instructor will look at it."
    if isinstance(result, str):
        return points, result
    return min(points, float(result.score)), str(result)


def assignment_of(path: Path, nb: Any) -> str | None:
    """Which assignment a notebook is: its file's name, else the one its test cells check."""
    from ppedu.grading.assignments import ASSIGNMENTS

    if path.stem in ASSIGNMENTS:
        return path.stem
    named = {m for c in nb.cells if c.cell_type == "code"
             for m in re.findall(r"""check\(\s*["'](\w+)["']""", str(c.source))}
    return next(iter(sorted(named & set(ASSIGNMENTS))), None)


def check_notebook(path: Path, timeout: int | None = None) -> Verdict:
    """Evaluate ``path`` as the autograder does (in sandboxes where bubblewrap works, else as the user, whose own
    notebook it is) and give each graded cell its visible test's points."""
    import nbformat
    from nbgrader import utils
    from nbgrader.preprocessors import ClearOutput
    from nbgrader.validator import Validator
    from traitlets.config import Config

    from ppedu.grading.assignments import load, my_values
    from ppedu.grading.execute import Evaluate, graded_at
    from ppedu.grading.sandbox import unavailable
    from ppedu.grading.students import student_id

    nb = nbformat.read(str(path), as_version=4)
    validator = Validator()
    if changed_type := validator._get_type_changed_cells(nb):
        raise ValueError(f"{path}: a cell's type was changed ({changed_type[0].source.strip()[:40]!r}…); "
                         "change it back before checking")
    assignment, student = assignment_of(path, nb), student_id()
    config = Config()
    config.Execute.timeout = timeout or 120
    config.SandboxedExecute.sandbox = unavailable() is None
    resources: dict[str, Any] = {"metadata": {"path": str(path.parent)},
                                 "nbgrader": {"assignment": assignment, "student": student}}
    # the test cells leave their verdict to the evaluation's data, as they do while autograding
    with utils.setenv(NBGRADER_EXECUTION="autograde"):
        nb, resources = ClearOutput().preprocess(nb, resources)
        nb, resources = Evaluate(config=config).preprocess(nb, resources)
    forms = load(assignment).QUESTIONS if assignment else {}
    values = my_values(assignment, student) if assignment else {}
    cells = []
    for index, question in graded_at(nb).items():  # of a copied test cell, the last: the one nbgrader grades
        cell = nb.cells[index]
        points = float(cell.metadata.nbgrader.get("points", 0))
        if question in forms:
            score, message = visible_verdict(forms[question], question, resources["ppedu"], values, index, points)
            # a pass keeps its words too: where the visible test checks only form it says so (values at grading)
            cells.append(CellVerdict(question, score, points, message, isinstance(message, FormOnly)))
        else:  # not one of ppedu's questions (the widget exam's): nbgrader's reading of the cell's output
            score, points = _points(cell)
            cells.append(CellVerdict(question, score, points, _message(cell)))
    changed = tuple(c.source.strip().splitlines()[0][:60] for c in validator._get_changed_cells(nb))
    return Verdict(path.name, tuple(cells), changed)


def _points(cell: Any) -> tuple[float, float]:
    """nbgrader's rule (utils.determine_grade) without its stderr clause: what a right answer
    prints on stderr (a warning, a log line) costs nothing."""
    points = float(cell.metadata.nbgrader["points"])
    if any(o.output_type == "error" for o in cell.outputs):
        return 0.0, points
    for o in cell.outputs:
        if o.output_type == "execute_result":
            try:
                return min(points, float(o.data["text/plain"])), points
            except (KeyError, ValueError):
                pass
    return points, points


def _message(cell: Any) -> str:
    """What went wrong in a test cell: the error's own message (ours are written for students)."""
    for output in cell.outputs:
        if output.output_type == "error":
            if output.ename in ("KernelDied", "CellTimeoutError"):
                return output.traceback[0] if output.traceback else output.evalue
            return f"{output.ename}: {output.evalue}" if output.ename not in ("Wrong", "AssertionError") else output.evalue
    return ""
