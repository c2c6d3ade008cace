"""A temporary copy of the course (its nbgrader_config.py, grader/ and solutions/), with the
assignments generated into its gradebook, shared by the grading tests (nbgrader is slow to start:
everything that can share one set-up does)."""

import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)
from ppedu.grading.assignments import ASSIGNMENTS as READY  # noqa: E402
sys.path.insert(0, str(ROOT))  # the instructors' grader/ package


def assignments():
    return [a for a in READY if (ROOT / "solutions" / a).is_dir()]


def make_course(root, names=None):
    """A course directory at ``root`` with nbgrader_config.py, grader/ and solutions/, the assignments ``names``
    (all by default) generated into its gradebook."""
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copytree(ROOT / "grader", root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    os.environ["PATH"] = BIN + os.pathsep + os.environ["PATH"]  # nbgrader runs `alembic` from PATH
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    cwd = os.getcwd()
    os.chdir(root)
    try:
        api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
        for name in names or assignments():
            outcome = api.generate_assignment(name)
            assert outcome["success"], outcome.get("error")
    finally:
        os.chdir(cwd)
    return root


def copy_course(course, copy, *ignore):
    """A copy of the shared ``course`` for a test of its own: no student of the others (their submissions go with
    them from its gradebook, and from its folders ``submitted`` to ``downloaded``), nor what ``ignore`` names."""
    shutil.copytree(course, copy, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback", "intake",
                                                                "downloaded", *ignore))
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{copy / 'gradebook.db'}", "ppedu") as gb:
        for student in gb.students:
            gb.remove_student(student.id)
    return copy


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    """A course directory with nbgrader_config.py and solutions/, every assignment generated."""
    return make_course(tmp_path_factory.mktemp("course"))


def cells(path):
    return nbformat.read(path, as_version=4).cells


def graded_cells(path):
    """(grade_id, points) of every graded cell, in order."""
    return [(c.metadata.nbgrader["grade_id"], c.metadata.nbgrader["points"]) for c in cells(path)
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def autograded_cells(path):
    """(grade_id, points) of every autograded (code) cell: a graded text cell is scored by hand in the formgrader."""
    return [(c.metadata.nbgrader["grade_id"], c.metadata.nbgrader["points"]) for c in cells(path)
            if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c.cell_type == "code"]
