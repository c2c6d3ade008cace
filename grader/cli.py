"""``ppedu grade``'s work, once ``ppedu`` (ppedu/grading/cli.py) has found the course directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader import runner


def grade(args: argparse.Namespace, root: Path) -> int:
    students = args.student or runner.submitted_students(root, args.assignment)
    results = runner.autograde(root, args.assignment, students, args.jobs, args.timeout, sandbox=not args.no_sandbox)
    print(f"autograding {len(students)} submission(s) of {args.assignment} in {root}, {args.jobs} at a time"
          + ("" if not args.no_sandbox else ", WITHOUT a sandbox (--no-sandbox)"))
    done = runner.report(results, len(students))
    failed = sum(not r.ok for r in done)
    print(f"done: {len(done) - failed} graded" + (f", {failed} could not be autograded" if failed else ""))
    return 1 if failed else 0
