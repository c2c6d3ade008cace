"""The round trip an instructor makes: submissions autograded with `ppedu grade` (nbgrader inside),
scores in the gradebook, feedback generated. Each wrong submission is a student's realistic mistake,
and the expected score is the assignment's total minus the points of the cells that mistake breaks."""

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT, assignments, graded_cells

TIMEOUT = 15  # seconds per cell: the infinite loop below costs this much, once

# student -> (cells of ps1's solution to replace, graded cells expected to fail)
PS1 = {
    "solved": ({}, set()),
    "off_by_one": ({"q1a_answer": "T = 3 * (values.m + values.p - 1) + 1\ntotal_slots = values.p * T"},
                   {"gpipe_slots", "gpipe_idle"}),  # the idle count built on the wrong T is wrong too
    "busy_as_idle": ({"q1b_answer": "idle_slots = 3 * values.p * values.m\nbubble = idle_slots / total_slots"},
                     {"gpipe_idle"}),
    "smaller_1f1b": ({"q2_answer": "bubble_1f1b = 0.8 * bubble\ncompared_with_gpipe = 'smaller'"}, {"one_f_one_b"}),
    "nan": ({"q5_answer": "idle_total = float('nan')"}, {"conversion"}),
    "patcher": ({
        "q1b_answer": "idle_slots = 3 * values.p * values.m\nbubble = idle_slots / total_slots",
        "q3_answer": """
import os, ppedu.formulas, ppedu.grading.assignments, ppedu.grading.questions, ppedu.grading.referee
from ppedu.simulate import Timeline
# make every check pass, whatever the answers
ppedu.grading.questions.Question.check = ppedu.grading.questions.Question.grade = lambda *a, **k: "correct"
ppedu.grading.assignments.grade = ppedu.grading.referee.grade = lambda *a, **k: None
ppedu.formulas.to_idle_total = lambda r: 0.5
Timeline.bubble_ratio = property(lambda t: 0.5)
os.environ["PPEDU_STUDENT_ID"] = "solved"  # and borrow someone else's values
def bubble_ratio(p, m):
    return (p - 1) / (m + p)
def bubble_interleaved(p, m, v):
    return (p - 1) / (v * m + p - 1)
""",
        "q5_answer": "idle_total = 0.5"}, {"gpipe_idle", "closed_form", "conversion"}),
    "loops_forever": ({"q3_answer": """
def bubble_ratio(p, m):
    return (p - 1) / (m + p - 1)
def bubble_interleaved(p, m, v):
    while True:
        pass
"""}, {"closed_form"}),
}


# ps3: student -> (cells to replace, {graded cell: points lost}); a schedule loses points per property
PS3 = {
    "solved": ({}, {}),
    "breaks_a_dependency": ({"q2_answer": """
def one_f_one_b(p, m):  # backward before forward in the steady phase: the last GPU waits for itself
    stages = []
    for j in range(p):
        warmup = min(p - j - 1, m)
        ops = [Op("F", i, j) for i in range(warmup)]
        for i in range(m - warmup):
            ops += [Op("B", i, j), Op("F", warmup + i, j)]
        ops += [Op("B", i, j) for i in range(m - warmup, m)]
        stages.append(ops)
    return stages
"""}, {"one_f_one_b": 3}),  # only "every operation once" holds
    "gpipe_for_1f1b": ({"q2_answer": "def one_f_one_b(p, m):\n    return gpipe(p, m)"}, {"one_f_one_b": 1}),  # memory
    "wrong_type": ({"q3_answer": "def interleaved_1f1b(p, m, v):\n    return 'F0 F1 B0 B1'"}, {"interleaved_1f1b": 4}),
}


def _submit(course, assignment, student, replace, edit=None):
    """The solution of ``assignment`` as ``student``'s, with cells replaced or edited (old → new text)."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    for cell in nb.cells:
        if (gid := cell.metadata.get("nbgrader", {}).get("grade_id")) in replace:
            cell.source = replace[gid].strip()
        if edit and gid in edit:
            assert edit[gid][0] in cell.source
            cell.source = cell.source.replace(*edit[gid])
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


@pytest.fixture(scope="module")
def graded(course):
    for student, (replace, _) in PS1.items():
        _submit(course, "ps1", student, replace)
    blank = course / "submitted" / "blank" / "ps1"
    blank.mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / "ps1" / "ps1.ipynb", blank)
    students = [arg for s in [*PS1, "blank"] for arg in ("--student", s)]  # not whatever else submitted/ holds
    command = [sys.executable, "-m", "ppedu", "grade", "ps1", "--jobs", "2", "--timeout", str(TIMEOUT), *students]
    run = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=600)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        scores = {s: gb.find_submission("ps1", s).score for s in [*PS1, "blank"]}
    return run, scores


def test_ppedu_grade_reports_every_student_as_it_goes(graded):
    run, _ = graded
    assert run.returncode == 0, run.stdout + run.stderr
    progress = [line for line in run.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == len(PS1) + 1 and progress[-1].startswith(f"[{len(PS1) + 1}/{len(PS1) + 1}]")


@pytest.mark.parametrize("student", PS1)
def test_each_submission_gets_the_score_its_mistakes_leave(graded, student):
    _, scores = graded
    points = dict(graded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb"))
    broken = PS1[student][1]
    assert scores[student] == sum(points.values()) - sum(points[c] for c in broken)


def test_the_practice_widget_autogrades_headless(course, graded):
    nb = nbformat.read(course / "autograded" / "solved" / "ps1" / "ps1.ipynb", as_version=4)
    widget = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q1_widget")
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget.outputs)


def test_the_unmodified_release_scores_zero(graded):
    assert graded[1]["blank"] == 0


@pytest.fixture(scope="module")
def graded_ps3(course):
    from ppedu.grading import runner

    for student, (replace, _) in PS3.items():
        _submit(course, "ps3", student, replace)
    results = list(runner.autograde(course, "ps3", list(PS3), jobs=2, timeout=TIMEOUT))
    return {r.student: r for r in results}


@pytest.mark.parametrize("student", PS3)
def test_a_schedule_earns_partial_credit_per_property(graded_ps3, student):
    result = graded_ps3[student]
    assert result.ok, result.log
    lost = PS3[student][1]
    assert result.score == result.max_score - sum(lost.values())


OTHERS = [a for a in assignments() if a not in ("ps1", "ps3", "counting")]  # counting: test_exam.py
# ps5: an executor that reads activations from `saved` but never frees them: right gradients, but every
# GPU holds all its micro-batches (not on GPipe, which does anyway), and they are all left at the end.
KEEPS_ACTIVATIONS = {"executor_answer": ("x, out = saved.pop((i, c))", "x, out = saved[i, c]")}
KEEPS_LOST = {"one_f_one_b": 1 + 1, "gpipe": 0.4, "interleaved": 0.6 + 0.6}


@pytest.fixture(scope="module")
def graded_others(course):
    """Every other assignment: its solution and its unmodified release, autograded."""
    from ppedu.grading import runner

    scores = {}
    if "ps5" in OTHERS:
        _submit(course, "ps5", "keeps_activations", {}, edit=KEEPS_ACTIVATIONS)
    for name in [*OTHERS, "ps3"]:
        if name != "ps3":
            _submit(course, name, "solved", {})
        blank = course / "submitted" / "blank" / name
        blank.mkdir(parents=True)
        shutil.copy(ROOT / "exercises" / name / f"{name}.ipynb", blank)
        students = runner.submitted_students(course, name)
        chosen = [s for s in students if name != "ps3" or s == "blank"]
        for r in runner.autograde(course, name, chosen, jobs=2, timeout=300):  # no loops here: a loaded CI is no failure
            assert r.ok, r.log
            scores[name, r.student] = (r.score, r.max_score)
    return scores


@pytest.mark.parametrize("name", OTHERS)
def test_the_solution_scores_full_marks(graded_others, name):
    score, max_score = graded_others[name, "solved"]
    assert score == max_score > 0


@pytest.mark.parametrize("name", [*OTHERS, "ps3"])
def test_the_release_scores_zero_without_crashing(graded_others, name):
    assert graded_others[name, "blank"][0] == 0


@pytest.mark.skipif("ps5" not in OTHERS, reason="ps5 not built")
def test_an_executor_that_keeps_activations_loses_the_lifetime_points(graded_others):
    score, max_score = graded_others["ps5", "keeps_activations"]
    assert score == pytest.approx(max_score - sum(KEEPS_LOST.values()))


def test_feedback_says_what_is_wrong_without_the_answer(course, graded):
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    cwd = os.getcwd()
    os.chdir(course)
    try:
        api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
        assert api.generate_feedback("ps1", "busy_as_idle")["success"]
        assert api.generate_feedback("ps1", "nan")["success"]
    finally:
        os.chdir(cwd)
    html = (course / "feedback" / "busy_as_idle" / "ps1" / "ps1.html").read_text()
    assert "counted the busy slots" in html  # the hint, as the student reads it
    assert "NaN (not a number)" in (course / "feedback" / "nan" / "ps1" / "ps1.html").read_text()
