"""``ppedu grade``'s work (run as ``python -m grader`` in the course directory, see grader/__main__.py)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from grader import runner


def grade(args: argparse.Namespace, root: Path) -> int:
    students = args.student or runner.submitted_students(root, args.assignment)
    results = runner.autograde(root, args.assignment, students, args.jobs, args.timeout, sandbox=not args.no_sandbox)
    print(f"autograding {len(students)} submission(s) of {args.assignment} in {root}, {args.jobs} at a time"
          + ("" if not args.no_sandbox else ", WITHOUT a sandbox (--no-sandbox)"))
    done = runner.report(results, len(students))
    failed = [r for r in done if not r.ok]
    kinds = Counter(r.standing.status if r.standing.reason else "could not be autograded" for r in failed)
    print(f"done: {len(done) - len(failed)} graded" + "".join(f", {n} {kind}" for kind, n in sorted(kinds.items())))
    waiting = [r.standing for r in done if r.standing.awaiting]
    if waiting:
        print(f"{sum(s.awaiting for s in waiting):g} point(s) in {len(waiting)} submission(s) await manual grading "
              "(the formgrader's Manual Grading)")
    if untimed := [r.student for r in done if r.standing.untimed]:
        print(f"{len(untimed)} submission(s) without a usable time, lateness not judged: {', '.join(sorted(untimed))}")
    if lost := [r.student for r in done if r.unrecorded]:
        print(f"ppedu: error: {runner.gradebook_trouble() or 'the gradebook stopped answering'}: {len(lost)} "
              f"submission(s) not recorded; once it is back, grade them again: ppedu grade {args.assignment} "
              + " ".join(f"--student {s}" for s in lost), file=sys.stderr)
        return 2
    return 1 if failed else 0
