"""`ppedu check` agrees with the grade (issues 27 and 35): for every released assignment whose answers are in the
notebook, notebooks made from its solution — each answer cell changed in a way nbgrader's semantics accepts (the answer
moved to a cell of the student's own, fixed in a later cell, given as numpy numbers, the answer cell itself moved or
copied above the answers before it) or breaks (left blank, text where a number goes, broken in a later cell) — are
checked as a student checks them and graded as the autograder grades them, and on every graded cell: a check that
passes earns the cell's points, a check that fails does not. One semantics, nbgrader's: the notebook as written, top to
bottom (a moved answer cell runs where it was put; of a copied one, the last copy is the graded cell). (A wrong
value is invisible to the check, which has no key, and may lose points it did not warn of: those are the only
differences, and none is made here.) The widget exam is left out: its answers are the saved file's, not the
notebook's."""

import ast
import json
import os
import random
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbgrader.api import Gradebook

from conftest import ROOT, autograded_cells

from ppedu.grading.verdict import check_notebook

#: What a change does to an answer cell, and whether nbgrader's semantics still grade the answer right.
KEEPS = ("moved", "fixed_later", "numpy", "moved_up", "copied_up")
BREAKS = ("blank", "text", "broken_later")
#: Notebooks made per assignment.
EXAMPLES = {"ps1": 4, "ps2": 3, "ps3": 3, "ps4": 3, "ps5": 2, "ps6": 3, "ps7": 3, "ps8": 2, "final": 3}


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
    """Apply ``how`` to the answer cell at ``index``; the cells it adds go right after it, before its test. An answer
    cell moved or copied up (with its metadata, as JupyterLab moves and copies cells) is only marked here: see
    :func:`move_up`."""
    cell = nb.cells[index]
    functions, names = _defined(cell.source)
    after = []
    if how in ("moved_up", "copied_up"):
        cell.metadata["moving"] = how
    elif how == "moved":
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


def move_up(nb):
    """The answer cells marked by :func:`change` moved (or copied) to just before the first answer cell: above the
    answers, and the test cells, before them."""
    first = nb.cells[_answer_cells(nb)[0]]
    for cell in [c for c in nb.cells if c.metadata.get("moving")]:
        how = cell.metadata.pop("moving")
        if how == "moved_up" and cell is first:
            continue
        if how == "moved_up":
            nb.cells.remove(cell)
        new = cell if how == "moved_up" else nbformat.from_dict(json.loads(json.dumps(cell)))
        nb.cells.insert(next(i for i, c in enumerate(nb.cells) if c is first), new)


def _answer_cells(nb):
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
            and c.metadata.get("nbgrader", {}).get("grade_id") not in ("setup",)]


def _points(course, assignment, student):
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {gid: gradebook.find_grade(gid, assignment, assignment, student).score
                for gid, _ in autograded_cells(ROOT / "solutions" / assignment / f"{assignment}.ipynb")}


def _draws(assignment, cells):
    """``EXAMPLES[assignment]`` changes per answer cell, drawn at random (seeded: the same notebooks each run) so that
    every change is made somewhere."""
    rng, kinds = random.Random(assignment), KEEPS + BREAKS
    draws = [[rng.choice(kinds) for _ in cells] for _ in range(EXAMPLES[assignment])]
    # Each change at least once, each in a cell of its own where there are enough; keeps take the even places and
    # breaks the odd, so that a notebook of one answer cell (ps5) is kept in one example and broken in the other.
    for k, how in [*((2 * j, how) for j, how in enumerate(KEEPS)), *((2 * j + 1, how) for j, how in enumerate(BREAKS))]:
        draws[k % len(draws)][k // len(draws) % len(cells)] = how
    return draws


@pytest.mark.parametrize("assignment", list(EXAMPLES))
def test_check_passes_exactly_where_the_autograder_gives_the_points(course, assignment, tmp_path_factory):
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    cells, full = _answer_cells(nbformat.read(path, as_version=4)), dict(autograded_cells(path))
    checked, students = {}, []
    for n, hows in enumerate(_draws(assignment, cells)):
        student = f"agree{n}_{assignment}"
        nb = nbformat.read(path, as_version=4)
        for index, how in sorted(zip(cells, hows), reverse=True):  # from the end: indices before stay put
            change(nb, index, how)
        move_up(nb)
        folder = tmp_path_factory.mktemp(student) / assignment
        shutil.copytree(ROOT / "exercises" / assignment, folder)  # as fetched: the question data beside it
        nbformat.write(nb, folder / f"{assignment}.ipynb")
        os.environ["PPEDU_STUDENT_ID"] = student  # the check runs as that student, with their values
        try:
            checked[student] = {c.grade_id: c.score for c in check_notebook(folder / f"{assignment}.ipynb").cells}
        finally:
            del os.environ["PPEDU_STUDENT_ID"]
        submitted = course / "submitted" / student / assignment
        submitted.mkdir(parents=True)
        nbformat.write(nb, submitted / f"{assignment}.ipynb")
        students.append((student, hows))
    run = subprocess.run([sys.executable, "-m", "ppedu", "grade", assignment, "--jobs", "2",
                          *(f"--student={s}" for s, _ in students)], cwd=course, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = set()
    for student, hows in students:
        graded = _points(course, assignment, student)
        for gid, points in full.items():
            assert (checked[student][gid] >= points) == (graded[gid] >= points), (hows, gid, checked[student][gid],
                                                                                   graded[gid])
            seen.add(graded[gid] >= points)
    assert seen == {True, False}  # the changes reached both sides of the property
