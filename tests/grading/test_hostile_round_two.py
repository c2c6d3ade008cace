"""Issue 35's hostile class (hostile_round_two.py), graded as an instructor grades: `ppedu grade` in a course of its
own, with one worker and with two (and, where one submission could leave something for the next, in both orders),
`ppedu check` as the student runs it, the formgrader's page, `nbgrader zip_collect` and `nbgrader export`. Every
autograded cell's exact points and the reason words; for class 1, that nothing the student's code chose comes back
for an input the student was not shown.

Runs in about fifteen minutes on a loaded two-core machine (ps5's executors most of it); ``-k class_3`` picks one."""

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import datetime, timedelta

import nbformat
import pytest

from conftest import make_course
from corpus import Case
from hostile_classes import Expect
from hostile_round_two import (CLASS_1, CLASS_1_ASSIGNMENTS, CLASS_2, CLASS_3, CLASS_4, CLASS_5, CLASS_5_PS3, CLASS_6,
                               CLASS_6_SECONDS, LEAK, LOSS_MARK, class_1_elsewhere, class_8, mark, ps5_class_1)
from test_hostile_classes import (cell_points, check_grade, expected_points, feedback, grade, graded_notebook,
                                  said_about, submit_all)

from grader import keys
from ppedu.grading.assignments import load, my_values


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("hostile-round-two"),
                       ["ps1", "ps3", "ps4", "ps5", "ps6", "ps7", "final"])


def graded_exactly(course, run, cases):
    """Every case's exact points, as the gradebook holds them after ``run``."""
    for student, expect in cases.items():
        said = said_about(run.stdout, student)
        assert graded_notebook(course, expect.case.assignment, student).is_file(), (student, said, run.stderr[-2000:])
        points = cell_points(course, expect.case.assignment, student)
        assert points == expected_points(expect.case.assignment, expect), (student, said)


def hidden_marks(assignment, student):
    """The marks class 1's wrappers make of the inputs the autograder chose and never names (its keys' inputs less
    those the visible check makes and those the student was shown: ps3's edge and own sizes, ps4's picture's)."""
    judges, forms, v = keys.load(assignment).KEYS, load(assignment).QUESTIONS, my_values(assignment, student)
    marks = []
    for question, form in forms.items():
        if not hasattr(form, "code") or question not in judges:
            continue
        named = {*(a for cases in form.calls(v).values() for a in cases),
                 *(getattr(form, "graded_sizes", lambda v: ())(v)), *(getattr(form, "graded_specs", lambda v: ())(v)),
                 *([judges[question].pictured(v)] if hasattr(judges[question], "pictured") else [])}
        marks += [mark(args) for cases in judges[question].calls(v).values() for args in cases
                  if tuple(args) not in {tuple(n) for n in named}]
    return marks


def shown_to(course, assignment, student, run):
    cells, whole = feedback(course, assignment, student)
    return "\n".join(cells.values()) + "\n" + whole + "\n" + said_about(run.stdout, student)


# ---- the ps1 class: classes 1, 4 and 5, graded by one worker and by two ------------------------------------------

PS1_CLASS = {**CLASS_1, **CLASS_4, **CLASS_5}


@pytest.fixture(scope="module")
def ps1_class(classroom):
    submit_all(classroom, PS1_CLASS)
    runs = {}
    for jobs in (1, 2):
        run, _ = grade(classroom, "ps1", list(PS1_CLASS), jobs)
        runs[jobs] = run, {s: cell_points(classroom, "ps1", s) if graded_notebook(classroom, "ps1", s).is_file()
                           else None for s in PS1_CLASS}
    return runs


@pytest.mark.parametrize("student", list(PS1_CLASS))
def test_classes_1_4_5_each_submission_gets_its_exact_points_and_reason(classroom, ps1_class, student):
    for jobs in (1, 2):
        run, points = ps1_class[jobs]
        assert points[student] == expected_points("ps1", PS1_CLASS[student]), (jobs, said_about(run.stdout, student))
    check_grade(classroom, ps1_class[2][0].stdout, "ps1", student, PS1_CLASS[student])


def test_class_1_nothing_the_students_code_chose_comes_back_for_an_input_they_were_not_shown(classroom, ps1_class):
    run = ps1_class[2][0]
    for student in CLASS_1:
        shown = shown_to(classroom, "ps1", student, run)
        assert LEAK not in shown, (student, shown[:3000])
        assert not re.search(r"status \d", shown), (student, shown[:3000])


def test_class_4_the_check_passes_where_the_grade_is_full(classroom, ps1_class):
    for student in CLASS_4:
        path = classroom / "submitted" / student / "ps1" / "ps1.ipynb"
        check = subprocess.run([sys.executable, "-m", "ppedu", "check", str(path)], capture_output=True, text=True,
                               timeout=900, env={**os.environ, "PPEDU_STUDENT_ID": student})
        assert check.returncode == 0, (student, check.stdout[-3000:])


def test_class_4_a_written_answers_pasted_picture_reaches_the_instructor(classroom, ps1_class):
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.handlers import template_path
    from traitlets.config.loader import PyFileConfigLoader

    student = "x4_written_answer_with_a_picture"
    graded = nbformat.read(graded_notebook(classroom, "ps1", student), as_version=4)
    answer = next(c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q2b_answer")
    assert set(answer.get("attachments", {})) == {"grid.png"}
    config = PyFileConfigLoader("nbgrader_config.py", path=str(classroom)).load_config()
    config.HTMLExporter.template_name = "formgrade"  # as nbgrader's formgrader shows a submission
    config.HTMLExporter.extra_template_basedirs = [*config.HTMLExporter.extra_template_basedirs, template_path]
    resources = {"assignment_id": "ps1", "notebook_id": "ps1", "submission_id": "x", "index": 0, "total": 1,
                 "base_url": "", "student": student, "last_name": None, "first_name": None, "notebook_path": "/x"}
    page, _ = HTMLExporter(config=config).from_filename(str(graded_notebook(classroom, "ps1", student)),
                                                        resources=resources)
    assert len(re.findall(r'<img alt="(?:grid|other)" src="data:image/png;base64,iVBOR', page)) == 2


# ---- class 1 elsewhere: every assignment with questions answered by functions -------------------------------------

ELSEWHERE = {student: expect for a in CLASS_1_ASSIGNMENTS for student, expect in class_1_elsewhere(a).items()}
ELSEWHERE.update(CLASS_5_PS3)


@pytest.fixture(scope="module")
def elsewhere(classroom):
    submit_all(classroom, ELSEWHERE)
    runs = {}
    for assignment in dict.fromkeys(e.case.assignment for e in ELSEWHERE.values()):
        runs[assignment], _ = grade(classroom, assignment, [s for s, e in ELSEWHERE.items()
                                                            if e.case.assignment == assignment], 2, timeout=300)
    return runs


@pytest.mark.parametrize("student", list(ELSEWHERE))
def test_class_1_elsewhere_no_hidden_input_comes_back_and_the_points_are_exact(classroom, elsewhere, student):
    expect = ELSEWHERE[student]
    run = elsewhere[expect.case.assignment]
    check_grade(classroom, run.stdout, expect.case.assignment, student, expect)
    shown = shown_to(classroom, expect.case.assignment, student, run)
    leaked = [m for m in hidden_marks(expect.case.assignment, student) if m in shown]
    assert not leaked, (student, leaked, shown[:3000])


# ---- class 2 (and class 1 on ps5): the executor's order -----------------------------------------------------------

PS5_CLASS = {**CLASS_2, **ps5_class_1()}


@pytest.fixture(scope="module")
def ps5_class(classroom):
    submit_all(classroom, PS5_CLASS)
    run, _ = grade(classroom, "ps5", list(PS5_CLASS), 2, timeout=300)
    return run


@pytest.mark.parametrize("student", list(PS5_CLASS))
def test_class_2_ps5_is_judged_on_the_order_it_ran(classroom, ps5_class, student):
    check_grade(classroom, ps5_class.stdout, "ps5", student, PS5_CLASS[student])
    shown = shown_to(classroom, "ps5", student, ps5_class)
    hidden = [spec for judge in keys.load("ps5").KEYS.values() for spec in judge.hidden(my_values("ps5", student))]
    leaked = [spec for _, p, m, v, _ in hidden for spec in (f"{LEAK}{p}_{m}_{v}", str(LOSS_MARK + 100 * p + m))
              if spec in shown]
    assert not leaked, (leaked, shown[:3000])


# ---- class 3: nothing survives a submission, down to the kernel --------------------------------------------------

LEAVER, FINDER = CLASS_3


@pytest.mark.parametrize("jobs, order", [(1, (LEAVER, FINDER)), (1, (FINDER, LEAVER)), (2, (LEAVER, FINDER))])
def test_class_3_what_one_submission_leaves_in_the_kernel_no_other_finds(classroom, jobs, order):
    submit_all(classroom, CLASS_3)
    run, _ = grade(classroom, "ps1", list(order), jobs)
    graded_exactly(classroom, run, CLASS_3)


# ---- class 6: every trusted step is bounded by the submission's size ---------------------------------------------

def test_class_6_trusted_steps_are_bounded_by_size_not_shape(classroom):
    submit_all(classroom, CLASS_6)
    run, seconds = grade(classroom, "ps1", list(CLASS_6), 1)
    for student, expect in CLASS_6.items():
        check_grade(classroom, run.stdout, "ps1", student, expect)
        assert graded_notebook(classroom, "ps1", student).stat().st_size < 5_000_000
    assert seconds < CLASS_6_SECONDS, (seconds, run.stdout)


def test_class_6_the_graders_own_steps_count_in_the_submissions_budget(tmp_path):
    """The clock of a submission starts when grading it starts (the grader sets it when it takes the submission
    in): time spent before its first cell is part of its budget."""
    from nbformat.v4 import new_code_cell, new_notebook

    from ppedu.grading.evaluate import Ungradeable
    from ppedu.grading.execute import SandboxedExecute

    SandboxedExecute.clock["ps1", "slow_to_take_in"] = time.monotonic() - 3600
    try:
        with pytest.raises(Ungradeable, match="taking it in"):
            SandboxedExecute(timeout=60).preprocess(new_notebook(cells=[new_code_cell("x = 1")]), {
                "metadata": {"path": str(tmp_path)}, "nbgrader": {"assignment": "ps1", "student": "slow_to_take_in"}})
    finally:
        del SandboxedExecute.clock["ps1", "slow_to_take_in"]


# ---- class 7: hand-ins behave as their tools do ------------------------------------------------------------------

def _tar(path, members, mode="w"):
    with tarfile.open(path, mode) as tarred:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), time.time()
            tarred.addfile(info, io.BytesIO(data))


def test_class_7_a_tar_updated_with_tar_u_and_a_tar_xz_are_collected_as_their_tools_unpack_them(classroom):
    release = (classroom / "exercises" / "ps1" / "ps1.ipynb").read_bytes()
    solved = (classroom / "solutions" / "ps1" / "ps1.ipynb").read_bytes()
    downloaded = classroom / "downloaded"
    shutil.rmtree(downloaded, ignore_errors=True)
    archive = downloaded / "ps1" / "archive"
    archive.mkdir(parents=True)
    # found: the first of two members of one name kept (the release), where GNU tar and Python keep the later
    _tar(archive / "ps1+x7_updated.tar", [("ps1.ipynb", release), ("ps1.ipynb", solved)])
    # found: a .tar.xz, named as docs/instructor.md shows, not collected
    _tar(archive / "ps1+x7_xz.tar.xz", [("ps1/ps1.ipynb", solved)], "w:xz")
    with tarfile.open(archive / "ps1+x7_updated.tar") as tarred:  # what Python's own extraction makes of it
        assert tarred.extractfile(tarred.getmember("ps1.ipynb")).read() == solved
    run = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", "ps1", "--force"], cwd=classroom,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    for student in ("x7_updated", "x7_xz"):
        assert (classroom / "submitted" / student / "ps1" / "ps1.ipynb").read_bytes() == solved, student
    run, _ = grade(classroom, "ps1", ["x7_updated", "x7_xz"], 1)
    for student in ("x7_updated", "x7_xz"):  # the later member, the solution: full marks
        check_grade(classroom, run.stdout, "ps1", student, Expect(Case("ps1")))


def test_class_7_a_second_hand_in_without_a_usable_time_is_flagged_untimed(tmp_path_factory):
    """Handed in on time, graded; handed in again without a time that can be read, graded again: flagged "no usable
    submission time" where the export and `ppedu grade` show it, never on time by the first hand-in's time."""
    import csv

    from nbgrader.api import Gradebook

    from test_autograde import _submit

    course = make_course(tmp_path_factory.mktemp("untimed-again"), ["ps1"])
    due = datetime(2031, 3, 3, 12)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        gb.update_or_create_assignment("ps1", duedate=due)
    _submit(course, "x7_twice", Case("ps1"))
    stamp = course / "submitted" / "x7_twice" / "ps1" / "timestamp.txt"
    stamp.write_text((due - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    first, _ = grade(course, "ps1", ["x7_twice"], 1)
    assert "no usable" not in said_about(first.stdout, "x7_twice"), first.stdout
    stamp.write_text("when I was done")  # the second hand-in's time cannot be read
    second, _ = grade(course, "ps1", ["x7_twice"], 1)
    assert "no usable submission time" in said_about(second.stdout, "x7_twice"), second.stdout
    check_grade(course, second.stdout, "ps1", "x7_twice", Expect(Case("ps1")))  # graded all the same, in full
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        assert gb.find_submission("ps1", "x7_twice").timestamp is None
    out = course / "grades.csv"
    export = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=course,
                            capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, export.stdout + export.stderr
    with out.open() as f:
        row = next(r for r in csv.DictReader(f) if r["student_id"] == "x7_twice")
    assert "no usable submission time" in row["status"], row


# ---- class 8: the owner's values ---------------------------------------------------------------------------------

CLASS_8 = class_8()


@pytest.fixture(scope="module")
def ps6_class(classroom):
    submit_all(classroom, CLASS_8)
    run, _ = grade(classroom, "ps6", list(CLASS_8), 2, timeout=300)
    return run


@pytest.mark.parametrize("student", list(CLASS_8))
def test_class_8_a_question_on_the_students_values_is_judged_on_the_owners(classroom, ps6_class, student):
    check_grade(classroom, ps6_class.stdout, "ps6", student, CLASS_8[student])
