"""Autograding a class: `ppedu grade --jobs 2` against plain sequential `nbgrader autograde`, on the
same 30 submissions of ps1, both in this one run.

Run: ``.venv/bin/python benchmarks/bench_grade.py [N] [JOBS]``. Prints both wall times and the ratio.
Target on this course's 2-core machine: 30 submissions in under 2 minutes with --jobs 2, at least
1.6 × faster than sequential nbgrader. Each side gets its own fresh copy of the course.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)


def course(where: Path, n: int) -> Path:
    """A course copy with ps1 generated and ``n`` submissions: solutions, with every third one wrong."""
    root = where / "course"
    root.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions")
    subprocess.run(["nbgrader", "generate_assignment", "ps1", "--log-level=ERROR"], cwd=root, check=True)
    solution = nbformat.read(root / "solutions" / "ps1" / "ps1.ipynb", as_version=4)
    for i in range(n):
        nb = nbformat.from_dict(solution)
        if i % 3 == 2:  # busy counted as idle
            cell = next(c for c in nb.cells if c.metadata.nbgrader.get("grade_id") == "q1b_answer")
            cell.source = "idle_slots = 3 * values.p * values.m\nbubble = idle_slots / total_slots"
        folder = root / "submitted" / f"student{i:02d}" / "ps1"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "ps1.ipynb")
    return root


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def scores(root: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "ppedu") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("ps1")}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    jobs = sys.argv[2] if len(sys.argv) > 2 else "2"
    os.environ["PATH"] = BIN + os.pathsep + os.environ["PATH"]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        sequential_course, parallel_course = course(Path(a), n), course(Path(b), n)
        sequential = timed(["nbgrader", "autograde", "ps1", "--log-level=ERROR"], sequential_course)
        parallel = timed([sys.executable, "-m", "ppedu", "grade", "ps1", "--jobs", jobs], parallel_course)
        same = scores(sequential_course) == scores(parallel_course)
    print(f"{n} submissions of ps1, {os.cpu_count()} CPU cores")
    print(f"  nbgrader autograde (sequential): {sequential:7.1f} s")
    print(f"  ppedu grade --jobs {jobs}:          {parallel:7.1f} s")
    print(f"  speed-up: {sequential / parallel:.2f}×; same scores in both gradebooks: {same}")


if __name__ == "__main__":
    main()
