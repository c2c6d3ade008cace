"""``ppedu check``: run a notebook as nbgrader's Validate does and give each graded cell a verdict.

nbgrader's Validate prints its findings but exits 0 even when tests fail (jupyter/nbgrader#1908);
a :class:`Verdict` says pass or fail, for a student's terminal and for CI.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any



@dataclass(frozen=True)
class CellVerdict:
    grade_id: str
    score: float
    max_score: float
    message: str = ""

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

        >>> print(Verdict("ps1.ipynb", (CellVerdict("a", 1, 1), CellVerdict("b", 0, 2, "`T` is missing."))).render())
        ✓ a  1/1
        ✗ `T` is missing.  [b  0/2]
        ps1.ipynb: 1/3 points from the checks you can see; 1 cell(s) to fix
        (they check your answers' form, not their values: the autograder checks the values, so your grade may differ)
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
        lines.append(summary + (f"; {failing} cell(s) to fix" if failing else "") +
                     ("; restore the changed test cells" if self.changed else "") + ("" if not self.passed else "; all pass"))
        lines.append("(they check your answers' form, not their values: the autograder checks the values, so your "
                     "grade may differ)")
        return "\n".join(lines)


def check_notebook(path: Path, timeout: int | None = None) -> Verdict:
    """Execute ``path`` as nbgrader's Validator does, in a sandbox where bubblewrap works (else as
    the user, whose own notebook it is), and collect its graded cells' points."""
    from nbgrader import utils
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput
    from nbgrader.validator import Validator
    from traitlets.config import Config

    from ppedu.grading.execute import SandboxedExecute
    from ppedu.grading.sandbox import unavailable

    config = Config()
    config.Execute.timeout = timeout or 120
    config.SandboxedExecute.sandbox = unavailable() is None
    executed: list[Any] = []

    class Recording(Validator):
        preprocessors = [CheckCellMetadata, ClearOutput, SandboxedExecute]

        def _preprocess(self, nb: Any) -> Any:
            executed.append(super()._preprocess(nb))
            return executed[-1]

    validator = Recording(config=config)
    validator.log.setLevel("ERROR")
    cwd = os.getcwd()
    try:
        results = validator.validate(str(path))
    finally:
        os.chdir(cwd)
    if "type_changed" in results:
        raise ValueError(f"{path}: a cell's type was changed ({results['type_changed'][0]['source'][:40]!r}…); "
                         "change it back before checking")
    cells = []
    for cell in executed[0].cells:
        if utils.is_grade(cell) and cell.cell_type == "code":
            score, max_score = _points(cell)
            cells.append(CellVerdict(cell.metadata.nbgrader.grade_id, score or 0.0, max_score, _message(cell)))
    changed = tuple(c["source"].splitlines()[0][:60] for c in results.get("changed", ()))
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
