"""The widget exam (`counting`): what a SlotCountingExercise saves is what nbgrader's autograder grades, judged in
the grading process on the student's own grids — the whole grids their pictures were cut from, covered cells
included — whatever the notebook does while it runs again; and the exam's notebook and exercises hold pictures only."""

import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbgrader.apps.api import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader

from conftest import ROOT, autograded_cells, graded_cells
from grader.exam import POINTS, grids, judge
from ppedu.grading import my_data
from ppedu.grading.assignments import counting
from ppedu.answer_file import read
from ppedu.grading.students import student_id
from ppedu.critical import critical_path
from ppedu.grid import IDLE
from ppedu.idle import SORTS
from ppedu.picture import Picture
from ppedu.widgets import SlotCountingExercise

RELEASED = ROOT / "exercises" / "counting" / "counting.ipynb"
TOTAL = sum(points for _, points in graded_cells(ROOT / "solutions" / "counting" / "counting.ipynb"))  # with q3, by hand


def _answer(student, right_counts=True, right_marks=True, path="right", causes="right"):
    """The student's four exercises, worked through the widgets' own API in their folder (as clicks and typing do), on
    the pictures their notebook shows; what is right comes from the whole grids, as a student who reasoned well would
    have it. ``path``: "right" (ppedu's critical path), "shifted" (one cell of it moved to an idle cell) or None
    (nothing); ``causes``: "right", "swapped" (fill and the order's own taken for each other) or None."""
    data, whole = my_data("counting", student, RELEASED.parent), grids(student)
    count = SlotCountingExercise(data.count, answers=counting.ANSWERS, question="count")
    g = whole["count"]
    idle = g.idle_slots if right_counts else g.busy_slots
    count.fields["total slots"].value = str(int(g.total_slots))
    count.fields["idle slots"].value = str(int(idle))
    count.fields["bubble ratio"].value = f"{int(idle)}/{int(g.total_slots)}"
    mark = SlotCountingExercise(data.mark, mode="mark", answers=counting.ANSWERS, question="mark")
    mask = whole["mark"].idle_mask
    for s, t in zip(*(mask if right_marks else ~mask).nonzero()):
        mark.toggle(int(s), int(t))
    if path:
        trace = SlotCountingExercise(data.read, mode="path", answers=counting.ANSWERS, question="path")
        for s, t in _traced(whole["path"], shifted=path == "shifted"):
            trace.toggle(s, t)
    if causes:
        sort = SlotCountingExercise(data.read, mode="causes", answers=counting.ANSWERS, question="causes")
        for (s, t), c in _sorted(whole["causes"], swapped=causes == "swapped").items():
            for _ in range(("fill", "drain", "order").index(c) + 1):
                sort.toggle(s, t)
    return count, mark


def _traced(g, shifted=False):
    """The cells of ppedu's critical path; ``shifted``: its middle cell moved to an idle cell of the same step."""
    cells = {(e.stage, t) for e in critical_path(g.timeline) for t in range(int(e.start), int(e.end))}
    if shifted:
        s, t = min(cells, key=lambda c: abs(c[1] - g.shape[1] // 2))
        cells = (cells - {(s, t)}) | {next((r, t) for r in range(g.shape[0]) if g.rows[r][t] == IDLE)}
    return sorted(cells)


def _sorted(g, swapped=False):
    """Each idle cell's cause; ``swapped``: the pipeline filling and the order's own taken for each other."""
    swap = {"fill": "order", "order": "fill"} if swapped else {}
    return {(s, t): swap.get(SORTS[c], SORTS[c]) for s, row in enumerate(g.causes()) for t, c in enumerate(row) if c}


def test_the_notebook_carries_the_judges_points():
    assert dict(autograded_cells(ROOT / "solutions" / "counting" / "counting.ipynb")) == POINTS
    by_hand = dict(graded_cells(ROOT / "solutions" / "counting" / "counting.ipynb"))
    assert by_hand["q3_answer"] == by_hand["q6_answer"] == 3  # the reasoning, by hand: 6 of 15 points


def test_the_exercises_save_every_change_and_start_from_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    count, mark = _answer("alice")
    saved = read(tmp_path / counting.ANSWERS)
    assert saved["count"] == count.answer and saved["mark"].marked == frozenset(mark.marked)
    data = my_data("counting", "alice", RELEASED.parent)
    again = SlotCountingExercise(data.mark, mode="mark", answers=counting.ANSWERS, question="mark")
    assert again.marked == mark.marked  # re-running the notebook restores the marks and saves nothing
    assert read(tmp_path / counting.ANSWERS) == saved
    sort = SlotCountingExercise(data.read, mode="causes", answers=counting.ANSWERS, question="causes")
    whole = grids("alice")
    assert sort.sorted == _sorted(whole["causes"]) and saved["path"].marked == frozenset(_traced(whole["path"]))
    assert judge("alice", saved).points == POINTS
    # A file saved before the causes were: it still reads, with none.
    (tmp_path / "old.json").write_text('{"mark": {"total": "", "idle": "", "ratio": "", "marked": [[0, 1]]}}')
    assert read(tmp_path / "old.json")["mark"].causes == frozenset()
    with pytest.raises(ValueError, match="without a folder"):
        SlotCountingExercise("gpipe", answers="../bob/counting.json")


def test_the_judge_grades_the_grid_of_the_student_it_is_told(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _answer("alice")
    alices = read(tmp_path / counting.ANSWERS)
    others = [s for s in ("bob", "carol", "dave", "erin") if counting.values(s) != counting.values("alice")]
    assert {k: str(grids("alice")[k].timeline.schedule.stages) for k in POINTS} != {
        k: str(grids(others[0])[k].timeline.schedule.stages) for k in POINTS}
    assert others and all(sum(judge(s, alices).points.values()) < sum(POINTS.values()) for s in others)


def _off_by_a_cell(student):
    """One cell of the path moved to an idle one: that step missing, and a cell marked wrong, each a share."""
    steps = grids(student)["path"].shape[1]
    return round(POINTS["path"] * (steps - 2) / steps, 2)


def _swapped(student):
    """Fill and the order's own taken for each other: only the draining cells right."""
    g = grids(student)["causes"]
    causes = [SORTS[c] for row in g.causes() for c in row if c]
    return round(POINTS["causes"] * causes.count("drain") / len(causes), 2)


STUDENTS = {  # student -> how they answer (None: they save nothing), expected points per question
    "solved": ((True, True), POINTS),
    "busy_as_idle": ((False, True), {**POINTS, "count": 1.0}),  # total right; idle and the ratio on it wrong
    "marks_busy_cells": ((True, False), {**POINTS, "mark": 0.0}),
    "path_off_by_a_cell": ((True, True, "shifted"), {**POINTS, "path": _off_by_a_cell("path_off_by_a_cell")}),
    "causes_swapped": ((True, True, "right", "swapped"), {**POINTS, "causes": _swapped("causes_swapped")}),
    "saved_nothing": (None, dict.fromkeys(POINTS, 0.0)),
    # its notebook rewrites its answers as it runs
    "rewriter": ((False, False, None, None), {"count": 1.0, "mark": 0.0, "path": 0.0, "causes": 0.0}),
}
assert 0 < STUDENTS["path_off_by_a_cell"][1]["path"] < POINTS["path"]
assert 0 < STUDENTS["causes_swapped"][1]["causes"] < POINTS["causes"]


def _submission(course, student):
    folder = course / "submitted" / student / "counting"
    shutil.copytree(RELEASED.parent, folder, ignore=shutil.ignore_patterns(counting.ANSWERS))  # as fetched
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
        _answer("rewriter", *STUDENTS["rewriter"][0])
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


def _outputs(course, student):
    """What each graded cell of ``student``'s autograded notebook shows."""
    nb = nbformat.read(course / "autograded" / student / "counting" / "counting.ipynb", as_version=4)
    return {c.metadata.nbgrader["grade_id"]: "".join(o.get("text", "") for o in c.outputs)
            for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}


def test_the_feedback_says_what_is_wrong(graded, course):
    outputs = _outputs(course, "busy_as_idle")
    assert "you counted the busy slots, not the idle ones" in outputs["count"]
    assert "1 of 3 points" in outputs["count"] and "2 of 2 points" in outputs["mark"]
    path = _outputs(course, "path_off_by_a_cell")["path"]
    assert "is idle: a critical path runs through operations only" in path and "your path breaks after" in path
    assert f"{_off_by_a_cell('path_off_by_a_cell'):g} of 2 points" in path
    causes = _outputs(course, "causes_swapped")["causes"]
    assert "not order: the pipeline is still filling there" in causes and "more cells sorted wrong" in causes
    linker = nbformat.read(course / "autograded" / "linker" / "counting" / "counting.ipynb", as_version=4)
    assert "counting.json was a symbolic link" in "".join(o.get("text", "") for c in linker.cells
                                                         for o in c.get("outputs", []))


def test_ppedu_check_says_what_is_not_saved_yet(tmp_path, monkeypatch):
    shutil.copytree(RELEASED.parent, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(counting.ANSWERS))
    monkeypatch.chdir(tmp_path)
    command = [os.path.join(os.path.dirname(sys.executable), "ppedu"), "check", "counting.ipynb"]
    before = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert before.returncode == 1 and "nothing saved for this question in counting.json" in before.stdout
    count, _ = _answer(student_id())
    count.fields["idle slots"].value = ""
    after = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert after.returncode == 1 and "no answer for idle slots" in after.stdout and "✓ mark" in after.stdout


def test_the_exam_shows_pictures_only_and_imports_nothing_that_reads_a_grid():
    """Exam mode: the notebook's cells import ppedu.grading and the widget alone, its exercises hold a Picture (no
    timeline, no schedule), and the student's module for the exam neither simulates nor draws."""
    source = "\n".join(c.source for c in nbformat.read(RELEASED, as_version=4).cells if c.cell_type == "code")
    imports = {line.strip() for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"from ppedu.grading import my_data", "from ppedu.widgets import SlotCountingExercise"}
    data = my_data("counting", "alice", RELEASED.parent)
    exercise = SlotCountingExercise(data.read, mode="path")
    assert exercise.timeline is None and isinstance(exercise.grid, Picture)
    with pytest.raises(ValueError, match="the autograder checks it"):
        exercise.check_marking()
    assert {name for name in vars(counting) if callable(getattr(counting, name)) and not name[0].isupper()} <= {
        "values", "variant", "annotations"}
    # what is covered is not in the data: the count's covered cells hold "?" and nothing else
    covered = sum(row.count("?") for row in data.count.rows)
    assert covered and covered == sum(sum(row) for row in data.count.covered())
