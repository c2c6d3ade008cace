"""``ppedu grade`` (autograde a class in parallel; instructors, in their course directory),
``ppedu check`` (a student's verdict on one notebook, with an exit status, unlike ``nbgrader
validate``, which exits 0 even when tests fail) and ``ppedu handin`` (a student's zip to upload,
where there is no exchange)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CONFIG = "nbgrader_config.py"


def add_parser(commands: Any) -> None:
    grade = commands.add_parser(
        "grade", help="autograde every submission of an assignment, in parallel, in sandboxes (instructors)",
        description="Runs nbgrader's autograder on each submission under submitted/*/ASSIGNMENT, JOBS at a time, "
        "each notebook in a bubblewrap sandbox, into the course's gradebook, printing each student's score as it is "
        "recorded. Runs only in an instructor's course directory (nbgrader_config.py and grader/).")
    grade.add_argument("assignment", metavar="ASSIGNMENT", help="e.g. ps1")
    grade.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="submissions graded at once "
                       "(default: one per CPU core)")
    grade.add_argument("--student", action="append", metavar="ID", help="grade only this student (repeatable)")
    grade.add_argument("--timeout", type=int, metavar="SECONDS", help="per-cell time limit (default: nbgrader_config.py's)")
    grade.add_argument("--course", default=".", metavar="DIR", help="the course directory (default: here or above)")
    grade.add_argument("--no-sandbox", action="store_true", help="run the notebooks with your own rights, unconfined "
                       "(only for notebooks you trust, where no sandbox can be had)")
    grade.set_defaults(run=_grade)

    check = commands.add_parser(
        "check", help="run a notebook's tests and give a verdict (exit status 0 only if every test passes)",
        description="Executes NOTEBOOK the way nbgrader's Validate does (in a sandbox where bubblewrap works) and "
        "lists each graded cell's points. Exit status: 0 all tests pass, 1 some fail or a test cell was changed, "
        "2 bad input.")
    check.add_argument("notebook", metavar="NOTEBOOK", help="an assignment notebook (.ipynb)")
    check.add_argument("--timeout", type=int, metavar="SECONDS", help="per-cell time limit")
    check.set_defaults(run=_check)

    handin = commands.add_parser(
        "handin", help="write ASSIGNMENT+ID.zip to upload, where there is no nbgrader exchange (a laptop)",
        description="Zips the assignment's notebook and the answers its exercises saved beside it into "
        "ASSIGNMENT+ID.zip (ID: your course id) for you to upload where your instructor asked. It refuses, saying "
        "why, a folder that would not earn its grade: saved answers missing, or a notebook run with another "
        "student's values.")
    handin.add_argument("assignment", metavar="ASSIGNMENT", help="e.g. ps1")
    handin.add_argument("--folder", metavar="DIR", help="the assignment's folder (default: ASSIGNMENT/ or "
                        "exercises/ASSIGNMENT/ here)")
    handin.add_argument("--student", metavar="ID", help="your course id (default: PPEDU_STUDENT_ID, else your login)")
    handin.add_argument("--out", metavar="DIR", default=".", help="where to write the zip (default: here)")
    handin.set_defaults(run=_handin)


def course_root(path: str | Path = ".") -> Path:
    """The instructor's course directory: ``path`` or the nearest folder above it with
    nbgrader_config.py and the ``grader`` package beside it."""
    start = Path(path).resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG).is_file() and (folder / "grader" / "__init__.py").is_file():
            return folder
    raise ValueError(f"`ppedu grade` runs in an instructor's course directory (with {CONFIG} and grader/), "
                     f"and {start} is not in one")


def _grade(args: argparse.Namespace) -> int:
    """The course's own grader (``python -m grader``, in the course directory): ppedu never imports it."""
    root = course_root(args.course)
    argv = [args.assignment, "--jobs", str(args.jobs), *(a for s in args.student or () for a in ("--student", s)),
            *(("--timeout", str(args.timeout)) if args.timeout else ()), *(("--no-sandbox",) if args.no_sandbox else ())]
    return subprocess.run([sys.executable, "-m", "grader", *argv], cwd=root).returncode


def _check(args: argparse.Namespace) -> int:
    from ppedu.grading.verdict import check_notebook

    path = Path(args.notebook)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"not a notebook file: {args.notebook} (give the path of an .ipynb)")
    try:
        verdict = check_notebook(path, args.timeout)
    except ValueError:
        raise
    except Exception as error:  # a notebook nbgrader cannot read or run: one line, never a traceback
        raise ValueError(f"{path.name} could not be checked: {type(error).__name__}: {str(error).splitlines()[0][:200]}"
                         if str(error) else f"{path.name} could not be checked: {type(error).__name__}") from None
    print(verdict.render())
    return 0 if verdict.passed else 1


def _handin(args: argparse.Namespace) -> int:
    from ppedu.grading.handin import find_folder, handin

    folder = Path(args.folder) if args.folder else find_folder(args.assignment, Path.cwd())
    if not (folder / f"{args.assignment}.ipynb").is_file():
        raise ValueError(f"no {args.assignment}.ipynb in {folder}")
    zipped, files = handin(args.assignment, folder, args.student, Path(args.out))
    print(f"wrote {zipped} ({', '.join(files)}, {zipped.stat().st_size / 1024:.0f} kB): upload it where your "
          "instructor asked")
    return 0
