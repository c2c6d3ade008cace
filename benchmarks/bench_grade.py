"""Autograding a class, three ways on the same 30 submissions of ps1 (made once, copied into three fresh course
copies), in this one run:

* plain sequential ``nbgrader autograde``, unconfined (``PPEDU_SANDBOX=off``: nbgrader's own way);
* sequential ``nbgrader autograde`` with the course's sandbox (every kernel, and every answer cell run on
  its own, in bubblewrap);
* ``ppedu grade --jobs 2`` (sandboxed, two submissions at a time);

and, apart, the per-question interpreters alone: each submission's three function questions (ps1's closed
forms, fewest micro-batches, conversion) run on their own cells as the judge runs them.

Run: ``.venv/bin/python benchmarks/bench_grade.py [N] [JOBS]``. Prints the wall times and three ratios.
Targets on this course's 2-core machine: the sandbox costs under 1.2 × per submission (sandboxed ÷
plain, both sequential); ``ppedu grade --jobs 2`` at least 1.5 × faster than plain sequential
nbgrader; the per-question interpreters add at most 1.5 × to a sandboxed submission's time (its time ÷
its time without them). Each run gets its own fresh copy of the course, with the same submissions.
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


def submissions(where: Path, n: int) -> Path:
    """``n`` submissions of ps1 (submitted/<student>/ps1/ps1.ipynb): solutions, with every third one wrong."""
    solution = nbformat.read(ROOT / "solutions" / "ps1" / "ps1.ipynb", as_version=4)
    for i in range(n):
        nb = nbformat.from_dict(solution)
        if i % 3 == 2:  # busy counted as idle
            cell = next(c for c in nb.cells if c.metadata.nbgrader.get("grade_id") == "q1b_answer")
            cell.source = "idle_slots = 3 * values.p * values.m\nbubble = idle_slots / total_slots"
        folder = where / "submitted" / f"student{i:02d}" / "ps1"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "ps1.ipynb")
    return where / "submitted"


def course(where: Path, submitted: Path) -> Path:
    """A course copy with ps1 generated and a copy of ``submitted``."""
    root = where / "course"
    root.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["nbgrader", "generate_assignment", "ps1", "--log-level=ERROR"], cwd=root, check=True)
    shutil.copytree(submitted, root / "submitted")
    return root


def timed(command: list[str], cwd: Path, **env: str) -> float:
    start = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **env})
    if run.returncode:
        sys.exit(f"{' '.join(command[-4:])} failed (exit {run.returncode}):\n{(run.stdout + run.stderr)[-2000:]}")
    return time.perf_counter() - start


def scores(root: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "ppedu") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("ps1")}


def interpreters(root: Path) -> float:
    """Seconds the judge's per-question interpreters take over every submission of ``root`` (sandboxed)."""
    sys.path.insert(0, str(root))
    from grader import keys
    from grader.judge import answer_cell, run_functions
    from ppedu.grading import my_values

    judges = [j for j in keys.load("ps1").KEYS.values() if hasattr(j, "calls")]
    start = time.perf_counter()
    for folder in sorted((root / "submitted").iterdir()):
        nb = nbformat.read(folder / "ps1" / "ps1.ipynb", as_version=4)
        values = my_values("ps1", folder.name)
        for judge in judges:
            run_functions(judge, answer_cell(nb, judge.form.code.cell, judge.calls(values)), values, 120)
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    jobs = sys.argv[2] if len(sys.argv) > 2 else "2"
    os.environ["PATH"] = BIN + os.pathsep + os.environ["PATH"]
    autograde = ["nbgrader", "autograde", "ps1", "--log-level=ERROR"]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, tempfile.TemporaryDirectory() as c:
        made = submissions(Path(a) / "class", n)
        plain_course, boxed_course, parallel_course = (course(Path(x), made) for x in (a, b, c))
        plain = timed(autograde, plain_course, PPEDU_SANDBOX="off")
        boxed = timed(autograde, boxed_course)
        parallel = timed([sys.executable, "-m", "ppedu", "grade", "ps1", "--jobs", jobs], parallel_course)
        alone = interpreters(boxed_course)
        graded = [scores(plain_course), scores(boxed_course), scores(parallel_course)]
        same = graded[0] == graded[1] == graded[2]
        if not same:
            print("scores differ:", {s: [g.get(s) for g in graded] for s in graded[0] if len({g.get(s) for g in graded}) > 1})
    print(f"{n} submissions of ps1, {os.cpu_count()} CPU cores")
    print(f"  nbgrader autograde, plain (sequential):     {plain:7.1f} s  ({plain / n:.2f} s per submission)")
    print(f"  nbgrader autograde, sandboxed (sequential): {boxed:7.1f} s  ({boxed / n:.2f} s per submission)")
    print(f"  ppedu grade --jobs {jobs} (sandboxed):          {parallel:7.1f} s")
    print(f"  sandbox overhead per submission: {boxed / plain:.2f}× (target < 1.2×)")
    print(f"  the per-question interpreters alone:       {alone:7.1f} s  ({alone / n:.2f} s per submission)")
    print(f"  ppedu grade --jobs {jobs} vs plain sequential nbgrader: {plain / parallel:.2f}× faster (target ≥ 1.5×)")
    print(f"  per-question interpreters' share of a sandboxed submission: {boxed / (boxed - alone):.2f}× (target ≤ 1.5×)")
    print(f"  same scores in all three gradebooks: {same}")


if __name__ == "__main__":
    main()
