"""``ppedu grade`` (autograde a class in parallel) and ``ppedu check`` (a student's verdict on one
notebook, with an exit status, unlike ``nbgrader validate``, which exits 0 even when tests fail)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ppedu.grading import runner


def add_parser(commands: Any) -> None:
    grade = commands.add_parser(
        "grade", help="autograde every submission of an assignment, in parallel, through nbgrader",
        description="Runs nbgrader's autograder on each submission under submitted/*/ASSIGNMENT, JOBS at a time, "
        "into the course's gradebook, printing each student's score as it is recorded.")
    grade.add_argument("assignment", metavar="ASSIGNMENT", help="e.g. ps1")
    grade.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="submissions graded at once "
                       "(default: one per CPU core)")
    grade.add_argument("--student", action="append", metavar="ID", help="grade only this student (repeatable)")
    grade.add_argument("--timeout", type=int, metavar="SECONDS", help="per-cell time limit (default: nbgrader_config.py's)")
    grade.add_argument("--course", default=".", metavar="DIR", help="the course directory (default: here or above)")
    grade.set_defaults(run=_grade)

    check = commands.add_parser(
        "check", help="run a notebook's tests and give a verdict (exit status 0 only if every test passes)",
        description="Executes NOTEBOOK the way nbgrader's Validate does and lists each graded cell's points. "
        "Exit status: 0 all tests pass, 1 some fail or a test cell was changed, 2 bad input.")
    check.add_argument("notebook", metavar="NOTEBOOK", help="an assignment notebook (.ipynb)")
    check.add_argument("--timeout", type=int, metavar="SECONDS", help="per-cell time limit")
    check.set_defaults(run=_check)


def _grade(args: argparse.Namespace) -> int:
    root = runner.course_root(args.course)
    students = args.student or runner.submitted_students(root, args.assignment)
    print(f"autograding {len(students)} submission(s) of {args.assignment} in {root}, {args.jobs} at a time")
    results = runner.report(runner.autograde(root, args.assignment, students, args.jobs, args.timeout), len(students))
    failed = sum(not r.ok for r in results)
    print(f"done: {len(results) - failed} graded" + (f", {failed} could not be autograded" if failed else ""))
    return 1 if failed else 0


def _check(args: argparse.Namespace) -> int:
    from ppedu.grading.verdict import check_notebook

    path = Path(args.notebook)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"not a notebook file: {args.notebook} (give the path of an .ipynb)")
    verdict = check_notebook(path, args.timeout)
    print(verdict.render())
    return 0 if verdict.passed else 1
