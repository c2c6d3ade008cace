"""What the gradebook cannot say about a submission: that autograding it failed, and why. nbgrader records a
submission before grading it and removes only the autograded copy when grading fails, so its gradebook shows such a
student with 0 points; here the failure is kept beside the submission in the grading area, for ``ppedu grade``, the
export and the formgrader's log to report as "ungradeable (reason)" instead of a score.

A submission is *ungradeable* when the evaluator raises :class:`ppedu.grading.evaluate.Ungradeable` (its own excess:
over the whole notebook's output cap or its time budget); any other failure is reported as "not autograded (reason)".
Each autograding of a student starts by clearing the record, so a later success leaves none.

>>> import tempfile; root = Path(tempfile.mkdtemp())
>>> record(root, "alice", "ps1", Failure("ungradeable", "its output is over 5 MB"))
>>> read(root, "alice", "ps1").text(), read(root, "bob", "ps1")
('ungradeable (its output is over 5 MB)', None)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.intake import keep, notes_path
from ppedu.grading.evaluate import Ungradeable

_KIND = "status"


@dataclass(frozen=True)
class Failure:
    """Why a submission has no grade: ``kind`` is "ungradeable" (the submission's own excess) or "not autograded"
    (anything else that stopped nbgrader's autograder), ``reason`` one line."""

    kind: str
    reason: str

    def text(self) -> str:
        return f"{self.kind} ({self.reason})"


def record(root: Path, student: str, assignment: str, failure: Failure | None) -> None:
    """Keep ``failure`` as the submission's status (``None``: clear it)."""
    path = notes_path(root, student, assignment, _KIND)
    if failure is None:
        path.unlink(missing_ok=True)
        return
    keep(root, student, assignment, _KIND, {"kind": failure.kind, "reason": failure.reason})


def read(root: Path, student: str, assignment: str) -> Failure | None:
    try:
        data = json.loads(notes_path(root, student, assignment, _KIND).read_text())
        return Failure(str(data["kind"]), str(data["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _one_line(error: BaseException) -> str:
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    return lines[0][:500] if lines else type(error).__name__


@contextmanager
def failures_recorded(autograde: Any) -> Iterator[None]:
    root, student, assignment = autograde._ppedu_graded
    try:
        yield
    except Ungradeable as error:
        record(root, student, assignment, Failure("ungradeable", _one_line(error)))
        raise
    except Exception as error:
        record(root, student, assignment, Failure("not autograded", _one_line(error)))
        raise


def record_failures() -> None:
    """Make nbgrader's Autograde (``ppedu grade``, ``nbgrader autograde``, the formgrader's button) clear a student's
    status as it starts on their submission and record why, when grading it fails."""
    from nbgrader.converters.autograde import Autograde

    if getattr(Autograde, "_ppedu_status", False):
        return
    init_assignment, convert = Autograde.init_assignment, Autograde.convert_single_notebook

    def starting(self: Any, assignment_id: str, student_id: str) -> None:
        self._ppedu_graded = (Path(self.coursedir.root), student_id, assignment_id)
        record(*self._ppedu_graded, None)
        with failures_recorded(self):
            init_assignment(self, assignment_id, student_id)

    def recording(self: Any, notebook_filename: str) -> None:
        with failures_recorded(self):
            convert(self, notebook_filename)

    Autograde.init_assignment = starting  # type: ignore[method-assign]
    Autograde.convert_single_notebook = recording  # type: ignore[method-assign]
    Autograde._ppedu_status = True  # type: ignore[attr-defined]
