"""`ppedu check`: a verdict with an exit status (nbgrader validate exits 0 even when tests fail)."""

import subprocess
import sys

from conftest import ROOT


def ppedu(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ppedu", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_release_fails_with_a_message_per_cell_and_exit_status_1():
    run = ppedu("check", "exercises/ps1/ps1.ipynb")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "✗ gpipe_slots  0/1" in run.stdout and "`T` is not defined" in run.stdout
    assert "0/10 points" in run.stdout and "Traceback" not in run.stdout


def test_a_solved_notebook_passes_with_exit_status_0():
    run = ppedu("check", "solutions/ps1/ps1.ipynb")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "10/10 points" in run.stdout and "all pass" in run.stdout


def test_bad_input_is_one_line_and_exit_status_2():
    run = ppedu("check", "README.md")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not a notebook" in run.stderr
    run = ppedu("grade", "ps9", "--course", str(ROOT))
    assert run.returncode == 2 and run.stderr.count("\n") == 1
