"""`ppedu check` agrees with the grade (issue 27): for every released assignment whose answers are in the notebook,
notebooks made from its solution — each answer cell changed in a way nbgrader's semantics accepts (the answer moved
to a cell of the student's own, fixed in a later cell, given as numpy numbers) or breaks (left blank, text where a
number goes, broken in a later cell) — are checked as a student checks them and graded as the autograder grades
them, and on every graded cell: a check that passes earns the cell's points, a check that fails does not. (A wrong
value is invisible to the check, which has no key, and may lose points it did not warn of: those are the only
differences, and none is made here.) The widget exam is left out: its answers are the saved file's, not the
notebook's."""

import ast
import os
import subprocess
import sys

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from nbgrader.api import Gradebook

from conftest import ROOT, autograded_cells

from ppedu.grading.verdict import check_notebook

#: What a change does to an answer cell, and whether nbgrader's semantics still grade the answer right.
KEEPS = ("moved", "fixed_later", "numpy")
BREAKS = ("blank", "text", "broken_later")
EXAMPLES = {"ps1": 3, "ps2": 2, "ps3": 2, "ps4": 2, "ps5": 1, "ps6": 2, "ps7": 2, "final": 2}


def _defined(source):
    """The functions and the plain names an answer cell defines."""
    tree = ast.parse(source)
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    return functions, names


def _stand_in(functions, names, value):
    return "\n".join([*(f"def {f}(*args):\n    return {value}\n" for f in functions),
                      *(f"{n} = {value}" for n in names)]) or "pass"


def change(nb, index, how):
    """Apply ``how`` to the answer cell at ``index``; the cells it adds go right after it, before its test."""
    cell = nb.cells[index]
    functions, names = _defined(cell.source)
    after = []
    if how == "moved":
        after, cell.source = [cell.source], "pass"
    elif how == "fixed_later":
        after, cell.source = [cell.source], _stand_in(functions, names, "None")
    elif how == "numpy":
        after = ["import numpy as np\n" + "\n".join(
            f"if type({n}) in (int, float):\n    {n} = np.float64({n}) if type({n}) is float else np.int64({n})"
            for n in names)] if names else []
    elif how == "blank":
        cell.source = "raise NotImplementedError()"
    elif how == "text":
        cell.source = _stand_in(functions, names, "'12 GPUs'")
    elif how == "broken_later":
        after = [_stand_in(functions, names, "float('nan')")]
    nb.cells[index + 1:index + 1] = [nbformat.v4.new_code_cell(source) for source in after]


def _answer_cells(nb):
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
            and c.metadata.get("nbgrader", {}).get("grade_id") not in ("setup",)]


def _points(course, assignment, student):
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {gid: gradebook.find_grade(gid, assignment, assignment, student).score
                for gid, _ in autograded_cells(ROOT / "solutions" / assignment / f"{assignment}.ipynb")}


@pytest.mark.parametrize("assignment", list(EXAMPLES))
def test_check_passes_exactly_where_the_autograder_gives_the_points(course, assignment, tmp_path_factory):
    solution = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    cells = _answer_cells(solution)
    full = dict(autograded_cells(ROOT / "solutions" / assignment / f"{assignment}.ipynb"))
    seen = []

    @settings(max_examples=EXAMPLES[assignment], derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(KEEPS + BREAKS), min_size=len(cells), max_size=len(cells)))
    def agrees(hows):
        student = f"agree{len(seen)}_{assignment}"
        nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
        for index, how in sorted(zip(cells, hows), reverse=True):  # from the end: indices before stay put
            if nb.cells[index].cell_type == "code":
                change(nb, index, how)
        folder = tmp_path_factory.mktemp(student) / assignment
        folder.mkdir()
        nbformat.write(nb, folder / f"{assignment}.ipynb")
        os.environ["PPEDU_STUDENT_ID"] = student  # the check runs as that student, with their values
        try:
            checked = {c.grade_id: c.score for c in check_notebook(folder / f"{assignment}.ipynb").cells}
        finally:
            del os.environ["PPEDU_STUDENT_ID"]
        submitted = course / "submitted" / student / assignment
        submitted.mkdir(parents=True)
        nbformat.write(nb, submitted / f"{assignment}.ipynb")
        run = subprocess.run([sys.executable, "-m", "ppedu", "grade", assignment, "--student", student, "--jobs", "1"],
                             cwd=course, capture_output=True, text=True, timeout=900,
                             env={**os.environ, "PPEDU_STUDENT_ID": student})
        assert run.returncode == 0, run.stdout + run.stderr
        graded = _points(course, assignment, student)
        for gid, points in full.items():
            assert (checked[gid] >= points) == (graded[gid] >= points), (hows, gid, checked[gid], graded[gid])
            seen.append(graded[gid] >= points)

    agrees()
    assert True in seen and False in seen  # the changes reached both sides of the property
