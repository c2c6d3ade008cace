"""Grades an instructor can file: due dates and the late policy, re-grading that leaves finished manual grades
finished, an export of the assignments students were given, and a gradebook whoever opens it first; each with the
guide's own commands (docs/instructor.md, § 8 and § 9)."""

import csv
import math
import os
import shutil
import subprocess

import nbformat
import pytest
from nbgrader.api import Base, Gradebook
from sqlalchemy import create_engine, inspect

from conftest import BIN, ROOT, autograded_cells
from guide import section

SOLVED = ROOT / "solutions" / "ps1" / "ps1.ipynb"
GUIDE = section("Feedback and grades") + section("Autograde, in a sandbox") + section("Re-grading")
DUE = "2026-12-01 17:00:00 UTC"
#: (student, when nbgrader submit stamped their work)
STUDENTS = {"ontime": "2026-12-01 09:00:00 UTC", "latecomer": "2026-12-03 10:00:00 UTC"}
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]}


def run(command, cwd, like=None):
    """A command of the guide, as it is written there (``like``: the guide's example of it), in a shell."""
    assert (like or command) in GUIDE, f"`{like or command}` is not in docs/instructor.md"
    done = subprocess.run(command, shell=True, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _submit(course, student, stamp, notebook=SOLVED):
    folder = course / "submitted" / student / "ps1"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, folder / "ps1.ipynb")
    (folder / "timestamp.txt").write_text(stamp)


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """A copy of the course (its gradebook too: the due date is this copy's own) with two submissions of ps1, one
    on time and one late, graded after the due date was set."""
    copy = tmp_path_factory.mktemp("grades") / "course"
    shutil.copytree(course, copy, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback", "intake",
                                                                "downloaded"))
    run(f'nbgrader db assignment add ps1 --duedate="{DUE}"', copy)
    for student, stamp in STUDENTS.items():
        _submit(copy, student, stamp)
    log = run("ppedu grade ps1 --student ontime --student latecomer", copy, like="ppedu grade counting --student alice")
    return copy, log


def _submission(course, student):
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        s = gb.find_submission("ps1", student)
        return s.score, s.late_submission_penalty, [(g.name, g.manual_score, g.needs_manual_grade)
                                                    for nb in s.notebooks for g in nb.grades if g.auto_score is None]


def test_a_late_submission_loses_its_share_per_day(graded):
    course, _ = graded
    earned = sum(points for _, points in autograded_cells(SOLVED))
    from grader.late import LateByDay
    from nbgrader.utils import parse_utc

    days = math.ceil((parse_utc(STUDENTS["latecomer"]) - parse_utc(DUE)).total_seconds() / 86400)
    assert days == 2
    share = 10 / 100  # c.LateByDay.percent_per_day in nbgrader_config.py
    assert "c.LateByDay.percent_per_day = 10" in (ROOT / "nbgrader_config.py").read_text()
    assert LateByDay(percent_per_day=10).penalty_for("ps1", earned, 1) == pytest.approx(earned * share)
    assert LateByDay().penalty_for("final", earned, 1) == earned  # a timed exam a second late scores zero
    assert _submission(course, "ontime")[:2] == (earned, 0)
    assert _submission(course, "latecomer")[:2] == (earned, pytest.approx(earned * share * days))


def test_grading_again_keeps_a_finished_manual_grade_until_the_answer_changes(graded):
    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:  # what the formgrader's score box does
        for nb in gb.find_submission("ps1", "ontime").notebooks:
            for grade in nb.grades:
                if grade.auto_score is None:
                    grade.manual_score, grade.needs_manual_grade = grade.max_score, False
        gb.db.commit()
    written = [name for name, _, _ in _submission(course, "ontime")[2]]
    assert written  # ps1 has a written answer graded by hand
    run("ppedu grade ps1 --student ontime", course, like="ppedu grade counting --student alice")
    assert all(not needs for _, score, needs in _submission(course, "ontime")[2])
    log = run("nbgrader autograde ps1 --force", course, like="nbgrader autograde counting --force")
    assert all(not needs and score for _, score, needs in _submission(course, "ontime")[2])
    assert "SAWarning" not in log  # nbgrader's own session warnings are not the grader's business
    changed = nbformat.read(SOLVED, as_version=4)
    next(c for c in changed.cells if c.metadata.get("nbgrader", {}).get("grade_id") in written).source += "\n\nMore."
    nbformat.write(changed, course / "submitted" / "ontime" / "ps1" / "ps1.ipynb")
    run("ppedu grade ps1 --student ontime", course, like="ppedu grade counting --student alice")
    assert all(needs and score for _, score, needs in _submission(course, "ontime")[2])  # changed: look again


def test_export_writes_the_assignments_students_were_given(graded):
    course, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        gb.add_assignment("ps9")  # in the gradebook, never released: whatever else was graded in this course
    log = run("nbgrader export", course)
    rows = list(csv.DictReader((course / "grades.csv").open()))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        given = {a.name for a in gb.assignments if a.num_submissions}
        held = {a.name for a in gb.assignments} - given
    assert {r["assignment"] for r in rows} == given and "ps1" in given and "ps9" in held
    assert all(name in log for name in held) and "Not exported" in log
    late = next(r for r in rows if r["student_id"] == "latecomer")
    assert float(late["score"]) == pytest.approx(float(late["raw_score"]) - float(late["late_submission_penalty"]))


def test_a_gradebook_is_stamped_whoever_opens_it_first(course, tmp_path):
    """The formgrader of a JupyterLab whose environment was not activated opens the gradebook with no `alembic` on
    PATH; and a gradebook an older set-up left without its stamp is repaired, so `nbgrader db upgrade` works."""
    copy = tmp_path / "course"
    shutil.copytree(course, copy, ignore=shutil.ignore_patterns("gradebook.db", "submitted", "autograded", "feedback",
                                                                "intake", "downloaded"))
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}  # no environment activated
    subprocess.run([f"{BIN}/nbgrader", "db", "student", "list"], cwd=copy, env=bare, check=True, capture_output=True)
    assert "alembic_version" in inspect(create_engine(f"sqlite:///{copy / 'gradebook.db'}")).get_table_names()
    (copy / "gradebook.db").unlink()
    Base.metadata.create_all(create_engine(f"sqlite:///{copy / 'gradebook.db'}"))  # tables without a stamp
    upgraded = subprocess.run([f"{BIN}/nbgrader", "db", "upgrade"], cwd=copy, env=bare, capture_output=True, text=True)
    assert upgraded.returncode == 0 and "duplicate column" not in upgraded.stderr, upgraded.stderr[-2000:]
