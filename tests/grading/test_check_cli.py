"""`ppedu check`: a verdict with an exit status (nbgrader validate exits 0 even when tests fail). It counts the
autograded points only: ps1's 9 (question 2b, 1 point, is graded by hand)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from conftest import ROOT, autograded_cells, graded_cells


#: ps1's autograded points, and those of the cells graded before question 4a's (its closed forms).
PS1_AUTO = autograded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb")
BEFORE_CLOSED_FORM = sum(points for _, points in PS1_AUTO[:[gid for gid, _ in PS1_AUTO].index("closed_form")])
AUTO = sum(points for _, points in PS1_AUTO)


def ppedu(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ppedu", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_release_fails_with_a_message_per_cell_and_exit_status_1():
    run = ppedu("check", "exercises/ps1/ps1.ipynb")
    assert run.returncode == 1, run.stdout + run.stderr
    first = run.stdout.splitlines()[0]  # the sentence that helps comes first, then the cell and its points
    assert first.startswith("✗ `T` and `total_slots` are not defined: ") and first.endswith("[gpipe_slots  0/1]")
    assert f"0/{AUTO:g} points" in run.stdout and "Traceback" not in run.stdout


def test_a_solved_notebook_passes_with_exit_status_0():
    run = ppedu("check", "solutions/ps1/ps1.ipynb")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{AUTO:g}/{AUTO:g} points" in run.stdout and "all pass" in run.stdout and "never higher" in run.stdout


def test_bad_input_is_one_line_and_exit_status_2():
    run = ppedu("check", "README.md")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not a notebook" in run.stderr
    run = ppedu("grade", "ps9", "--course", str(ROOT))
    assert run.returncode == 2 and run.stderr.count("\n") == 1


def test_a_notebook_whose_kernel_dies_gets_a_verdict_not_a_traceback(tmp_path):
    nb = nbformat.read(ROOT / "solutions" / "ps1" / "ps1.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q3_answer")
    cell.source = "import os\nos._exit(0)\n" + cell.source
    nbformat.write(nb, tmp_path / "ps1.ipynb")
    shutil.copy(ROOT / "exercises" / "ps1" / "questions.json", tmp_path)  # fetched with the notebook
    run = ppedu("check", str(tmp_path / "ps1.ipynb"))
    assert run.returncode == 1 and "Traceback" not in run.stdout + run.stderr
    assert f"{BEFORE_CLOSED_FORM:g}/{AUTO:g} points" in run.stdout and "exited or crashed" in run.stdout


def test_grade_runs_only_in_an_instructors_course(tmp_path):
    run = ppedu("grade", "ps1", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "course directory" in run.stderr


def test_grade_refuses_without_a_sandbox_unless_told(course):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no bwrap on PATH: no sandbox here
    (course / "submitted" / "trusted" / "ps1").mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.read(course / "solutions" / "ps1" / "ps1.ipynb", as_version=4),
                   course / "submitted" / "trusted" / "ps1" / "ps1.ipynb")
    grade = [sys.executable, "-m", "ppedu", "grade", "ps1", "--student", "trusted"]
    run = subprocess.run(grade, cwd=course, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "no sandbox" in run.stderr and "--no-sandbox" in run.stderr
    assert run.stderr.count("\n") == 1
    run = subprocess.run([*grade, "--no-sandbox"], cwd=course, env=env, capture_output=True, text=True, timeout=600)
    solved = course / "solutions" / "ps1" / "ps1.ipynb"
    auto, total = (sum(points for _, points in cells(solved)) for cells in (autograded_cells, graded_cells))
    assert run.returncode == 0 and f"trusted: {auto:g}/{total:g}" in run.stdout, run.stdout + run.stderr
