"""Autograding a class, three ways on the same 30 submissions of ps1 (made once, copied into three fresh course
copies), in this one run:

* plain nbgrader: ``nbgrader autograde``, sequential, with nbgrader's own preprocessors only (a course
  configuration that names the folders and nothing else: the notebook run top to bottom in one unconfined kernel,
  its test cells deciding);
* the course's grading through ``nbgrader autograde``, sequential: intake, the sandboxed run, the function
  questions' sandboxed runs, the judge;
* ``ppedu grade --jobs 2``: the same, a fresh process per submission, two at a time;

and, apart, the function questions' runs alone (each submission's notebook run where the question's forbidden
library is absent, as the evaluator runs it).

Run: ``.venv/bin/python benchmarks/bench_grade.py [N] [JOBS]``. Prints the wall times and the ratios. Target on
this course's 2-core machine: ``ppedu grade --jobs 2`` at least 1.5 × faster than plain sequential nbgrader
(issue 27); the other ratios say what the boundary costs. The course's two ways must give the same scores.
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


def course(where: Path, submitted: Path, plain: bool = False) -> Path:
    """A course copy with ps1 generated and a copy of ``submitted``; ``plain``: nbgrader's own grading only."""
    root = where / "course"
    root.mkdir()
    if plain:
        (root / "nbgrader_config.py").write_text(
            "c = get_config()\nc.CourseDirectory.course_id = 'ppedu'\n"
            "c.CourseDirectory.source_directory = 'solutions'\nc.CourseDirectory.release_directory = 'exercises'\n")
    else:
        shutil.copy(ROOT / "nbgrader_config.py", root)
        shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", root / "solutions")
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


def function_runs(root: Path) -> float:
    """Seconds the function questions' sandboxed runs take over every submission of ``root``, as the evaluator
    makes them (one run per group of questions, on the inputs the key chooses)."""
    sys.path.insert(0, str(root))
    from grader import keys
    from ppedu.grading import my_values
    from ppedu.grading.assignments import load
    from ppedu.grading.evaluate import Cell, run_functions

    judges, groups = keys.load("ps1").KEYS, {}
    for question, form in load("ps1").QUESTIONS.items():
        if hasattr(form, "code"):
            groups.setdefault(form.code, []).append(question)
    start = time.perf_counter()
    for folder in sorted((root / "submitted").iterdir()):
        nb = nbformat.read(folder / "ps1" / "ps1.ipynb", as_version=4)
        values = my_values("ps1", folder.name)
        for code, questions in groups.items():
            requests = {q: judges[q].calls(values) for q in questions}
            cells = [Cell(str(c.source), c.metadata.get("nbgrader", {}).get("grade_id")
                          if c.metadata.get("nbgrader", {}).get("grade_id") in requests else None)
                     for c in nb.cells if c.cell_type == "code"]
            run_functions(cells, code.library, requests, "ps1", folder.name, dict(values), 600, driver=code.driver)
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    jobs = sys.argv[2] if len(sys.argv) > 2 else "2"
    os.environ["PATH"] = BIN + os.pathsep + os.environ["PATH"]
    autograde = ["nbgrader", "autograde", "ps1", "--log-level=ERROR"]
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, tempfile.TemporaryDirectory() as c:
        made = submissions(Path(a) / "class", n)
        plain_course, course_course, parallel_course = course(Path(a), made, plain=True), course(Path(b), made), \
            course(Path(c), made)
        plain = timed(autograde, plain_course)
        sequential = timed(autograde, course_course)
        parallel = timed([sys.executable, "-m", "ppedu", "grade", "ps1", "--jobs", jobs], parallel_course)
        alone = function_runs(course_course)
        same = scores(course_course) == scores(parallel_course)
    print(f"{n} submissions of ps1, {os.cpu_count()} CPU cores")
    print(f"  plain nbgrader autograde (sequential):         {plain:7.1f} s  ({plain / n:.2f} s per submission)")
    print(f"  the course's nbgrader autograde (sequential):  {sequential:7.1f} s  "
          f"({sequential / n:.2f} s per submission)")
    print(f"  ppedu grade --jobs {jobs}:                          {parallel:7.1f} s")
    print(f"  the function questions' runs alone:            {alone:7.1f} s  ({alone / n:.2f} s per submission)")
    print(f"  ppedu grade --jobs {jobs} vs plain sequential nbgrader: {plain / parallel:.2f}× faster "
          "(target ≥ 1.5×)")
    print(f"  the course's grading vs plain nbgrader, both sequential: {sequential / plain:.2f}× the time")
    print(f"  the same scores from the course's two ways: {same}")


if __name__ == "__main__":
    main()
