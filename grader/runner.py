"""Autograding a whole class in parallel, through nbgrader's own API (the one its formgrader uses).

nbgrader grades one submission after another (jupyter/nbgrader#174); :func:`autograde` grades ``jobs`` at a time,
each in a process of its own made for that submission alone, running ``NbGraderAPI.autograde`` against the same
gradebook (with the course's configuration: intake, evaluation, judge), and reports each result as it arrives.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.policy import Standing

CONFIG = "nbgrader_config.py"


@dataclass(frozen=True)
class Result:
    """One student's autograding: nbgrader's verdict, the standing it left (score, policies, status: see
    :mod:`grader.policy`), how long it took, and what the instructor should know (files the intake left out, answer
    cells to read before trusting their score)."""

    student: str
    ok: bool
    standing: Standing
    seconds: float
    log: str = ""
    notes: tuple[str, ...] = ()
    #: The gradebook could not be reached while this submission was graded (or before it was started): whatever
    #: it scored may not be recorded, and it must be graded again once the gradebook is back.
    unrecorded: bool = False

    def verdict(self) -> str:
        """The score as it will leave the gradebook, or why there is none."""
        s = self.standing
        if not self.ok and not s.reason:
            return f"could not be autograded: {self.log}"
        if s.raw is None:
            return s.text()
        if s.penalty:
            score = f"{s.score:g}/{s.max_score:g} ({s.raw:g} less {s.penalty:g} for being late)"
        else:
            score = f"{s.raw:g}/{s.max_score:g}"
        return score if s.status == "graded" and not s.days_late and not s.untimed else f"{score}; {s.text()}"


def submitted_students(root: Path, assignment: str) -> list[str]:
    """The students with a submission of ``assignment`` under ``submitted/``, sorted."""
    return sorted(p.parent.name for p in (root / "submitted").glob(f"*/{assignment}") if p.is_dir())


def autograde(root: Path, assignment: str, students: Sequence[str], jobs: int = 1,
              timeout: int | None = None, sandbox: bool = True) -> Iterator[Result]:
    """Autograde ``students``' submissions of ``assignment``, ``jobs`` at a time, each notebook in a
    sandbox unless ``sandbox`` is false; yields each :class:`Result` as it finishes (so the caller
    can show progress)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1 (got {jobs})")
    if not students:
        raise ValueError(f"no submissions of {assignment} under {root / 'submitted'} (collect them first)")
    if sandbox:
        from ppedu.grading.sandbox import unavailable

        if reason := unavailable():
            raise ValueError(f"no sandbox to grade in: {reason} (or pass --no-sandbox, for notebooks you trust)")
    _prepare(root, timeout, sandbox)
    if reason := gradebook_trouble():
        raise ValueError(reason)
    _ensure_assignment(root, assignment)
    if reason := kernel_trouble(sandbox):
        raise ValueError(f"no notebook can be graded here, so none was: {reason}")
    yield from _each_in_a_process_of_its_own(root, assignment, list(students), jobs, timeout, sandbox)


def _each_in_a_process_of_its_own(root: Path, assignment: str, students: list[str], jobs: int, timeout: int | None,
                                   sandbox: bool) -> Iterator[Result]:
    """Grade each submission in a process forked for it alone (``jobs`` at once), which ends with it: nothing of one
    submission's grading — its kernel's messages, what its evaluation read — is there when the next is graded, and
    the forks inherit nbgrader already imported, which takes seconds."""
    from multiprocessing.connection import Connection, wait

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    running: dict[Connection, tuple[Any, str, float]] = {}
    gone = False  # the gradebook stopped answering: what is left is not started (each would fail the same way)
    todo = list(students)
    while todo or running:
        while todo and len(running) < jobs and not gone:
            student = todo.pop(0)
            read, write = context.Pipe(duplex=False)
            process = context.Process(target=_grade_in_child, args=(write, root, timeout, sandbox, assignment, student))
            process.start()
            write.close()
            running[read] = (process, student, time.perf_counter())
        for ready in wait(list(running)):
            assert isinstance(ready, Connection)
            process, student, start = running.pop(ready)
            try:
                result = ready.recv()
            except EOFError:  # the grading process died (out of memory, killed): that student only
                from grader.policy import Standing

                result = Result(student, False, Standing(student, assignment, "not autograded", "its grading stopped"),
                                time.perf_counter() - start, "its grading process ended without a result")
            ready.close()
            process.join()
            gone = gone or result.unrecorded
            yield result
        if gone and not running:
            from grader.policy import Standing

            for student in todo:
                yield Result(student, False, Standing(student, assignment, "not autograded", UNREACHABLE), 0.0,
                             unrecorded=True)
            todo = []


def _grade_in_child(out: Any, root: Path, timeout: int | None, sandbox: bool, assignment: str, student: str) -> None:
    from sqlalchemy.exc import OperationalError

    _prepare(root, timeout, sandbox)
    start = time.perf_counter()
    try:
        result = _grade_one(assignment, student)
    except OperationalError:  # the gradebook's server went away during this grading
        result = None
    if result is None or (not result.ok and gradebook_trouble()):
        from grader.policy import Standing

        result = Result(student, False, Standing(student, assignment, "not autograded", UNREACHABLE),
                        time.perf_counter() - start, unrecorded=True)
    out.send(result)
    out.close()


UNREACHABLE = "the gradebook could not be reached"


def gradebook_url(hide_password: bool = True) -> str:
    """The course's gradebook (``c.CourseDirectory.db_url``), its password hidden."""
    from sqlalchemy.engine import make_url

    return make_url(_api().coursedir.db_url).render_as_string(hide_password=hide_password)


def gradebook_trouble() -> str | None:
    """Why the course's gradebook cannot be reached (one line naming it, never its password), or ``None``."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    url = gradebook_url(hide_password=False)
    if url.startswith("sqlite"):
        return None  # a file beside the course (connecting would make an empty one where there is none yet)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return None
    except OperationalError as error:
        said = str(error.orig or error).strip().splitlines()[0]
        return f"the gradebook {gradebook_url()} cannot be reached ({said})"
    finally:
        engine.dispose()


def _prepare(root: Path, timeout: int | None, sandbox: bool = True) -> None:
    # nbgrader's gradebook code trips SQLAlchemy 2's autoflush warnings; they change nothing recorded.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    # nbgrader logs each session it rolls back with a traceback; when the gradebook is gone, the command says what
    # was not recorded, once, in one line
    logging.getLogger("tornado.application").addFilter(
        lambda record: not record.getMessage().startswith("Rolling back session"))
    os.chdir(root)
    # nbgrader runs `alembic` (the gradebook's migrations) as a command: it must be on PATH.
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    if timeout is not None:
        os.environ["PPEDU_CELL_TIMEOUT"] = str(timeout)
    os.environ["PPEDU_SANDBOX"] = "on" if sandbox else "off"


def kernel_trouble(sandbox: bool = True) -> str | None:
    """Why a kernel cannot run a notebook here as autograding runs it (one line), or ``None``: one kernel is
    started and asked to import what every assignment imports, before a class's grades depend on it."""
    import tempfile

    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from ppedu.grading.execute import SandboxedExecute

    notebook = new_notebook(cells=[new_code_cell("import ppedu.grading, ppedu.widgets")])
    with tempfile.TemporaryDirectory() as folder:
        try:
            ran, _ = SandboxedExecute(sandbox=sandbox, timeout=120).preprocess(notebook, {"metadata": {"path": folder}})
        except Exception as error:
            return str(error).splitlines()[0] if str(error) else type(error).__name__
    errors = [o for o in ran.cells[0].outputs if o.output_type == "error"]
    return f"the kernel cannot import ppedu ({errors[0].ename}: {errors[0].evalue})" if errors else None


def _api() -> Any:
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(CONFIG, path=os.getcwd()).load_config()
    config.NbGraderAPI.log_level = "ERROR"
    return NbGraderAPI(config=config)


def _ensure_assignment(root: Path, assignment: str) -> None:
    from nbgrader.api import MissingEntry

    with _api().gradebook as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise ValueError(f"{assignment} is not in the gradebook yet: run `nbgrader generate_assignment {assignment}`"
                             " once in the course directory") from None


def _grade_one(assignment: str, student: str) -> Result:
    from grader.intake import intake_notes
    from grader.policy import LatePolicy, standing

    start = time.perf_counter()
    api = _api()
    outcome = api.autograde(assignment, student)
    with api.gradebook as gb:
        now = standing(gb, Path.cwd(), gb.find_assignment(assignment), student, LatePolicy(config=api.config))
    notes = (*intake_notes(Path.cwd(), student, assignment), *intake_notes(Path.cwd(), student, assignment, "review"))
    return Result(student, bool(outcome["success"]), now, time.perf_counter() - start,
                  "" if outcome["success"] else _reason(outcome.get("error", "") or "", outcome.get("log", "") or ""),
                  notes)


def _reason(error: str, log: str) -> str:
    """Why nbgrader could not autograde a submission, in a line or two: its own error lines,
    without tracebacks or this machine's paths."""
    lines = [m[1].strip() for m in re.finditer(r"\[(?:ERROR|CRITICAL)\]\s*(.*)", log)]
    lines = [ln for ln in lines if ln and "traceback" not in ln.lower()] or [
        ln.strip() for ln in error.strip().splitlines()[-1:]] or ["nbgrader gave no reason"]
    home = str(Path.cwd())
    return "; ".join(dict.fromkeys(ln.replace(home + os.sep, "") for ln in lines[-3:]))


def report(results: Iterator[Result], total: int, write: Callable[[str], Any] = print) -> list[Result]:
    """Print one progress line per finished student, then a summary; returns the results."""
    done = []
    width = len(str(total))
    for r in results:
        done.append(r)
        write(f"[{len(done):>{width}}/{total}] {r.student}: {r.verdict()}  ({r.seconds:.1f} s)")
        for note in r.notes:
            write(f"{'':>{2 * width + 3}} {note}")
    return done
