"""The widget exam (`counting`): what a SlotCountingExercise saves is what nbgrader's autograder grades, judged in
the grading process on the student's own grids, whatever the notebook does while it runs again."""

import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbgrader.apps.api import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT, autograded_cells, graded_cells
from grader.exam import POINTS, judge
from ppedu.grading.assignments import counting
from ppedu.answer_file import read
from ppedu.grading.students import student_id
from ppedu.grid import grid
from ppedu.widgets import SlotCountingExercise

RELEASED = ROOT / "exercises" / "counting" / "counting.ipynb"
TOTAL = sum(points for _, points in graded_cells(ROOT / "solutions" / "counting" / "counting.ipynb"))  # with q3, by hand


def _answer(student, right_counts=True, right_marks=True):
    """The student's two exercises, worked through the widgets' own API in their folder (as clicks and typing do)."""
    v = counting.values(student)
    count = SlotCountingExercise(v["count_schedule"], p=v["p"], m=v["m"], answers=counting.ANSWERS, question="count")
    g = grid(count.timeline)
    idle = g.idle_slots if right_counts else g.busy_slots
    count.fields["total slots"].value = str(int(g.total_slots))
    count.fields["idle slots"].value = str(int(idle))
    count.fields["bubble ratio"].value = f"{int(idle)}/{int(g.total_slots)}"
    mark = SlotCountingExercise(v["mark_schedule"], p=v["mark_p"], m=v["mark_m"], mode="mark",
                                answers=counting.ANSWERS, question="mark")
    for s, t in zip(*(~grid(mark.timeline).idle_mask if not right_marks else grid(mark.timeline).idle_mask).nonzero()):
        mark.toggle(int(s), int(t))
    return count, mark


def test_the_notebook_carries_the_judges_points():
    assert dict(autograded_cells(ROOT / "solutions" / "counting" / "counting.ipynb")) == POINTS
    assert dict(graded_cells(ROOT / "solutions" / "counting" / "counting.ipynb"))["q3_answer"] == 2  # the reasoning, by hand


def test_the_exercises_save_every_change_and_start_from_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    count, mark = _answer("alice")
    saved = read(tmp_path / counting.ANSWERS)
    assert saved["count"] == count.answer and saved["mark"].marked == frozenset(mark.marked)
    again = SlotCountingExercise(mark.timeline, mode="mark", answers=counting.ANSWERS, question="mark")
    assert again.marked == mark.marked  # re-running the notebook restores the marks and saves nothing
    assert read(tmp_path / counting.ANSWERS) == saved
    assert judge("alice", saved).points == POINTS
    with pytest.raises(ValueError, match="without a folder"):
        SlotCountingExercise("gpipe", answers="../bob/counting.json")


def test_the_judge_grades_the_grid_of_the_student_it_is_told(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _answer("alice")
    alices = read(tmp_path / counting.ANSWERS)
    others = [s for s in ("bob", "carol", "dave", "erin") if counting.values(s) != counting.values("alice")]
    assert others and all(sum(judge(s, alices).points.values()) < sum(POINTS.values()) for s in others)


STUDENTS = {  # student -> how they answer (None: they save nothing), expected points per question
    "solved": ((True, True), POINTS),
    "busy_as_idle": ((False, True), {"count": 1.0, "mark": 2.0}),  # total right; idle and the ratio on it wrong
    "marks_busy_cells": ((True, False), {"count": 3.0, "mark": 0.0}),
    "saved_nothing": (None, {"count": 0.0, "mark": 0.0}),
    "rewriter": ((False, False), {"count": 1.0, "mark": 0.0}),  # its notebook rewrites its answers as it runs
}


def _submission(course, student):
    folder = course / "submitted" / student / "counting"
    folder.mkdir(parents=True)
    shutil.copy(RELEASED, folder)
    return folder


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """Every submission below autograded by nbgrader with the course's own config; student -> autograded folder."""
    cwd = os.getcwd()
    try:
        for student, (how, _) in STUDENTS.items():
            if student == "rewriter":
                continue
            folder = _submission(course, student)
            if how:
                os.chdir(folder)
                _answer(student, *how)
        # Links to a classmate's file and text that is not the exercise's are refused, not followed or crashed on.
        os.symlink(course / "submitted" / "solved" / "counting" / counting.ANSWERS,
                   _submission(course, "linker") / counting.ANSWERS)
        (_submission(course, "scribbler") / counting.ANSWERS).write_text('{"count": {"total": 7}}')
        # A notebook that, while it is autograded, writes a perfect answer over its own is graded on what it saved.
        os.chdir(tmp_path_factory.mktemp("perfect"))
        _answer("rewriter")
        perfect = open(counting.ANSWERS).read()
        os.chdir(_submission(course, "rewriter"))
        _answer("rewriter", False, False)
        nb = nbformat.read(RELEASED, as_version=4)
        nb.cells.insert(2, nbformat.v4.new_code_cell(f"open('counting.json', 'w').write({perfect!r})"))
        nbformat.write(nb, "counting.ipynb")
        os.chdir(course)
        api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
        for student in [*STUDENTS, "linker", "scribbler"]:
            outcome = api.autograde("counting", student)
            assert outcome["success"], outcome.get("log")
        return api
    finally:
        os.chdir(cwd)


def _scores(api, student):
    submission = api.get_submission("counting", student)
    return submission["score"], submission["max_score"]


@pytest.mark.parametrize("student", STUDENTS)
def test_autograde_scores_what_the_exercises_saved(graded, student):
    assert _scores(graded, student) == (sum(STUDENTS[student][1].values()), TOTAL)


@pytest.mark.parametrize("student", ["linker", "scribbler"])
def test_a_link_or_a_scribbled_file_scores_nothing(graded, student):
    assert _scores(graded, student) == (0, TOTAL)


def test_the_feedback_says_what_is_wrong(graded, course):
    nb = nbformat.read(course / "autograded" / "busy_as_idle" / "counting" / "counting.ipynb", as_version=4)
    outputs = {c.metadata.nbgrader["grade_id"]: "".join(o.get("text", "") for o in c.outputs)
               for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    assert "you counted the busy slots, not the idle ones" in outputs["count"]
    assert "1 of 3 points" in outputs["count"] and "2 of 2 points" in outputs["mark"]
    linker = nbformat.read(course / "autograded" / "linker" / "counting" / "counting.ipynb", as_version=4)
    assert "counting.json was a symbolic link" in "".join(o.get("text", "") for c in linker.cells
                                                         for o in c.get("outputs", []))


def test_ppedu_check_says_what_is_not_saved_yet(tmp_path, monkeypatch):
    shutil.copy(RELEASED, tmp_path)
    monkeypatch.chdir(tmp_path)
    command = [os.path.join(os.path.dirname(sys.executable), "ppedu"), "check", "counting.ipynb"]
    before = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert before.returncode == 1 and "nothing saved for this question in counting.json" in before.stdout
    count, _ = _answer(student_id())
    count.fields["idle slots"].value = ""
    after = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert after.returncode == 1 and "no answer for idle slots" in after.stdout and "✓ mark" in after.stdout
