"""Grades an instructor can file: due dates and the late policy on the final total, a class list exported whole with
each student's status, re-grading that leaves finished manual grades finished, a submission that could not be graded
reported as such, and a gradebook whoever opens it first; each with the guide's own commands (docs/instructor.md,
§ 7 to § 9)."""

import csv
import math
import os
import shutil
import subprocess

import nbformat
import pytest
from nbgrader.api import Base, Gradebook
from nbgrader.utils import parse_utc
from sqlalchemy import create_engine, inspect

from conftest import BIN, ROOT, autograded_cells, copy_course
from guide import section

SOLVED = ROOT / "solutions" / "ps1" / "ps1.ipynb"
GUIDE = (section("Feedback and grades") + section("Autograde, in a sandbox") + section("Re-grading")
         + section("The exchange, the class list, release and collect"))
DUE = "2026-12-01 17:00:00 UTC"
#: (student, when nbgrader submit stamped their work; None: no time came with it)
STUDENTS = {"ontime": "2026-12-01 09:00:00 UTC", "latecomer": "2026-12-03 10:00:00 UTC", "untimed": None}
ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]}
EARNED = sum(points for _, points in autograded_cells(SOLVED))


def run(command, cwd, like=None, status=0):
    """A command of the guide, as it is written there (``like``: the guide's example of it), in a shell."""
    assert (like or command) in GUIDE, f"`{like or command}` is not in docs/instructor.md"
    done = subprocess.run(command, shell=True, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == status, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _submit(course, student, stamp, notebook=SOLVED):
    folder = course / "submitted" / student / "ps1"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(notebook, folder / "ps1.ipynb")
    if stamp:
        (folder / "timestamp.txt").write_text(stamp)


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """A copy of the course (its gradebook too: the due date is this copy's own) with a class list of four, three of
    whom handed ps1 in (on time, late, without a time), graded after the due date was set."""
    copy = copy_course(course, tmp_path_factory.mktemp("grades") / "course")
    run(f'nbgrader db assignment add ps1 --duedate="{DUE}"', copy)
    (copy / "students.csv").write_text("id,first_name,last_name,email\nontime,On,Time,\nlatecomer,Late,Comer,\n"
                                       "untimed,Un,Timed,\nabsent,Ab,Sent,absent@example.org\n")
    run("nbgrader db student import students.csv", copy, like="nbgrader db student import students.csv")
    for student, stamp in STUDENTS.items():
        _submit(copy, student, stamp)
    log = run("ppedu grade ps1 --student ontime --student latecomer --student untimed", copy,
              like="ppedu grade counting --student alice")
    return copy, log


def _grade_written(course, student, share=1.0):
    """What the formgrader's score box does: every written answer of ``student`` scored (``share`` of its points)."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        for nb in gb.find_submission("ps1", student).notebooks:
            for grade in nb.grades:
                if grade.auto_score is None:
                    grade.manual_score, grade.needs_manual_grade = grade.max_score * share, False
        gb.db.commit()


def _export(course):
    run("nbgrader export", course)
    return {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}


def _submission(course, student):
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        s = gb.find_submission("ps1", student)
        return s.score, s.late_submission_penalty, [(g.name, g.manual_score, g.needs_manual_grade)
                                                    for nb in s.notebooks for g in nb.grades if g.auto_score is None]


def test_ppedu_grade_says_what_awaits_a_human_and_what_is_late_or_untimed(graded):
    _, log = graded
    written = sum(points for _, points in section_points(SOLVED)) - EARNED
    assert written > 0
    assert f"{written * 3:g} point(s) in 3 submission(s) await manual grading" in log, log
    total = sum(points for _, points in section_points(SOLVED))
    assert f"latecomer: {EARNED:g}/{total:g}" not in log and "late 2 days" in log  # a late score never shown on time
    assert "untimed" in log.split("without a usable time")[1], log


def section_points(path):
    return [(c.metadata.nbgrader["grade_id"], c.metadata.nbgrader["points"]) for c in nbformat.read(path, 4).cells
            if c.metadata.get("nbgrader", {}).get("grade")]


def test_a_late_submission_loses_its_share_of_the_final_total_written_answers_included(graded):
    """nbgrader's own late penalty is computed while autograding, on the autograded points alone: a written answer
    graded afterwards escaped it. Here the share comes off the total as it leaves the gradebook."""
    course, _ = graded
    days = math.ceil((parse_utc(STUDENTS["latecomer"]) - parse_utc(DUE)).total_seconds() / 86400)
    assert days == 2
    share = 10 / 100  # c.LatePolicy.percent_per_day in nbgrader_config.py
    assert "c.LatePolicy.percent_per_day = 10" in (ROOT / "nbgrader_config.py").read_text()
    before = _export(course)["latecomer"]
    assert float(before["raw_score"]) == EARNED
    assert float(before["late_submission_penalty"]) == pytest.approx(EARNED * share * days)
    _grade_written(course, "latecomer")
    rows = _export(course)
    total = sum(points for _, points in section_points(SOLVED))
    late = rows["latecomer"]
    assert float(late["raw_score"]) == total and late["status"] == "graded; late 2 days"
    assert float(late["late_submission_penalty"]) == pytest.approx(total * share * days)
    assert float(late["score"]) == pytest.approx(total * (1 - share * days))
    assert float(rows["ontime"]["late_submission_penalty"]) == 0
    run("nbgrader generate_feedback ps1", course, like="nbgrader generate_feedback counting")
    page = (course / "feedback" / "latecomer" / "ps1" / "ps1.html").read_text()
    assert f"Late submission penalty (Score: -{round(total * share * days, 2)}" in page  # the feedback agrees
    from grader.policy import LatePolicy

    assert LatePolicy().penalty("final", total, 1) == total  # a timed exam a second late scores zero


def test_the_export_lists_the_class_with_each_students_status(graded):
    course, _ = graded
    rows = _export(course)
    assert set(rows) == {"ontime", "latecomer", "untimed", "absent"}
    assert rows["absent"]["status"] == "no submission" and float(rows["absent"]["score"]) == 0
    assert rows["absent"]["email"] == "absent@example.org"
    untimed = rows["untimed"]["status"]
    assert "no usable submission time" in untimed and float(rows["untimed"]["late_submission_penalty"]) == 0
    assert untimed.startswith("awaiting manual grading (") and rows["untimed"]["raw_score"]
    assert (course / "grades.csv").stat().st_mode & 0o077 == 0  # the grades are the grader's only
    _submit(course, "newcomer", STUDENTS["ontime"])  # collected, not on the class list, never autograded
    row = _export(course)["newcomer"]
    assert row["status"] == "not autograded yet" and row["score"] == row["raw_score"] == "", row


def test_a_submission_given_its_time_afterwards_is_judged_late_or_not(graded):
    """The guide's way for a hand-in without a usable time: write when it came into its timestamp.txt, grade it
    again."""
    course, _ = graded
    (course / "submitted" / "untimed" / "ps1" / "timestamp.txt").write_text("2026-12-02 09:00:00 UTC")
    said = run("ppedu grade ps1 --student untimed", course, like="ppedu grade counting --student alice")
    assert "untimed: " in said and "late 1 day" in said and "without a usable time" not in said, said
    row = _export(course)["untimed"]
    assert row["status"].endswith("; late 1 day") and float(row["late_submission_penalty"]) == pytest.approx(
        float(row["raw_score"]) * 0.1)


def test_grading_again_keeps_a_finished_manual_grade_until_the_answer_changes(graded):
    course, _ = graded
    _grade_written(course, "ontime")
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


def test_a_submission_that_cannot_be_graded_is_reported_ungradeable_never_zero(graded, tmp_path):
    """The evaluator raises Ungradeable for a submission over its own caps; nbgrader's autograde then fails for that
    student. ``ppedu grade``, plain ``nbgrader autograde`` and the export say so, with the reason; grading again once
    it can be graded clears it. (Here a stand-in preprocessor raises it for one student.)"""
    course, _ = graded
    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    (copy / "too_much.py").write_text(
        "from nbgrader.preprocessors import NbGraderPreprocessor\n"
        "from ppedu.grading.evaluate import Ungradeable\n"
        "class TooMuch(NbGraderPreprocessor):\n"
        "    def preprocess(self, nb, resources):\n"
        "        if resources['nbgrader']['student'] == 'ontime' and not __import__('os').path.exists('fixed'):\n"
        "            raise Ungradeable('its output is over the notebook\\'s 5 MB, graded: 1 of 9 cells')\n"
        "        return nb, resources\n")
    with (copy / "nbgrader_config.py").open("a") as config:
        config.write("\nfrom too_much import TooMuch\nc.Autograde.autograde_preprocessors.insert(0, TooMuch)\n")
    said = run("ppedu grade ps1 --student ontime --student latecomer", copy,
               like="ppedu grade counting --student alice", status=1)
    assert "ontime: ungradeable (its output is over the notebook's 5 MB, graded: 1 of 9 cells)" in said, said
    assert "done: 1 graded, 1 ungradeable" in said
    run("nbgrader autograde ps1 --force", copy, like="nbgrader autograde counting --force", status=1)
    row = _export(copy)["ontime"]
    assert row["status"] == "ungradeable (its output is over the notebook's 5 MB, graded: 1 of 9 cells)"
    assert row["score"] == row["raw_score"] == ""  # never a silent 0
    (copy / "fixed").write_text("")
    run("ppedu grade ps1 --student ontime", copy, like="ppedu grade counting --student alice")
    row = _export(copy)["ontime"]
    assert "ungradeable" not in row["status"] and float(row["raw_score"]) >= EARNED, row


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
