"""Issue 27's hostile class (hostile_classes.py), graded as an instructor grades: `ppedu grade` over a class in a
course of its own, `nbgrader zip_collect` over archives, `ppedu check` as the student runs it, `nbgrader export` after
manual grading. Every autograded cell's exact points, the reason words, and what must hold across submissions:
honest work graded after the hostile submissions, in one worker (`--jobs 1`) and in two, keeps its exact grade.

Runs in about five minutes (the ps1 class twice, ps5's executors, a million-member archive, the whole-submission time
budget); ``-k`` picks a class (``-k class_5``)."""

import csv
import gzip
import html.parser
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from datetime import datetime, timedelta

import nbformat
import pytest

from conftest import ROOT, autograded_cells, make_course
from hostile_classes import (CELL_SECONDS, CLASS_2, CLASS_3, CLASS_4_TIME, CLASS_5, CLASS_6, COUNTING_POINTS, CROSS,
                             DUE, ECHO_MARK, GRADED_NOTEBOOK_BYTES, LISTENER, LOCK_NAMES, PRIVATE_MARK, PS1_CLASS,
                             PS5_CLASS, SOCKET_SWAPPER, WHOLE_SUBMISSION_SECONDS, XSS_MARK, Expect, counting_answers,
                             solution_cells)
from test_autograde import _submit


# ---- the course, grading and reading a grade ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """A course of its own (nothing here touches the other grading tests' gradebook or folders)."""
    return make_course(tmp_path_factory.mktemp("hostile-class"), ["ps1", "ps5", "counting"])


def grade(course, assignment, students, jobs, timeout=30, env=None, limit=1200):
    """`ppedu grade` over ``students`` in that order; the run and its seconds."""
    args = [f"--student={s}" for s in students]
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "ppedu", "grade", assignment, "--jobs", str(jobs), "--timeout",
                          str(timeout), *args], cwd=course, capture_output=True, text=True, timeout=limit,
                         env={**os.environ, **(env or {})})
    return run, time.monotonic() - start


def said_about(run_stdout, student):
    """What `ppedu grade` printed about ``student``: its progress line and the lines under it, the student's id left
    out (a reason word must not be found in the name)."""
    lines, out = run_stdout.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("[") and f"] {student}:" in line:
            out.append(line)
            out += list(itertools.takewhile(lambda later: later.startswith(" "), lines[i + 1:]))
            break
    return "\n".join(out).replace(student, "<student>")


def cell_points(course, assignment, student):
    """Every autograded cell's points as the gradebook holds them."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        sub = gb.find_submission(assignment, student)
        return {g.name: g.auto_score for nb in sub.notebooks for g in nb.grades if g.cell.cell_type == "code"}


def graded_notebook(course, assignment, student):
    return course / "autograded" / student / assignment / f"{assignment}.ipynb"


def _text(outputs):
    return "\n".join(str(o.get("text", "")) + str(o.get("evalue", "")) + "\n".join(o.get("traceback", []))
                     + "".join(str(v) for v in o.get("data", {}).values()) for o in outputs)


def feedback(course, assignment, student):
    """Each test cell's feedback text, and the text of the whole graded notebook (outputs and text cells)."""
    nb = nbformat.read(graded_notebook(course, assignment, student), as_version=4)
    cells = {c.metadata.nbgrader["grade_id"]: _text(c.outputs) for c in nb.cells
             if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    whole = "\n".join(c.source if c.cell_type == "markdown" else _text(c.get("outputs", [])) for c in nb.cells)
    return cells, whole


def expected_points(assignment, expect: Expect):
    points = dict(autograded_cells(ROOT / "solutions" / assignment / f"{assignment}.ipynb"))
    return {gid: pytest.approx(p - expect.case.lost.get(gid, 0)) for gid, p in points.items()}


def check_grade(course, run_stdout, assignment, student, expect: Expect):
    """The exact points of every autograded cell, and the reason words."""
    said = said_about(run_stdout, student)
    assert graded_notebook(course, assignment, student).is_file(), f"{student} was not graded: {said}"
    assert cell_points(course, assignment, student) == expected_points(assignment, expect), said
    cells, whole = feedback(course, assignment, student)
    for where, words in expect.reasons.items():
        text = (whole + "\n" + said) if where == "*" else cells[where]
        missing = [w for w in words if w.lower() not in text.lower()]
        assert not missing, (student, where, missing, text[:1500])


def submit_all(course, cases):
    for student, expect in cases.items():
        shutil.rmtree(course / "submitted" / student / expect.case.assignment, ignore_errors=True)
        _submit(course, student, expect.case)


# ---- classes 0, 2 and 4 and beyond: the ps1 class, graded twice -----------------------------------------------------

HONEST = list(CROSS)
HOSTILE_FIRST = [s for s in PS1_CLASS if s not in CROSS] + HONEST


@pytest.fixture(scope="module")
def ps1_class(classroom):
    """The ps1 class graded by one worker (hostile first, honest last), then all again by two; each run's grades."""
    submit_all(classroom, PS1_CLASS)
    runs = {}
    for jobs in (1, 2):
        run, seconds = grade(classroom, "ps1", HOSTILE_FIRST, jobs)
        runs[jobs] = {"run": run, "points": {s: cell_points(classroom, "ps1", s) if graded_notebook(
            classroom, "ps1", s).is_file() else None for s in PS1_CLASS},
            "sizes": {s: graded_notebook(classroom, "ps1", s).stat().st_size for s in PS1_CLASS
                      if graded_notebook(classroom, "ps1", s).is_file()}}
    return runs


@pytest.mark.parametrize("student", list(PS1_CLASS))
def test_class_0_2_4_each_ps1_submission_gets_its_exact_points_and_reason(classroom, ps1_class, student):
    for jobs in (1, 2):
        got = ps1_class[jobs]["points"][student]
        assert got is not None, (jobs, said_about(ps1_class[jobs]["run"].stdout, student))
        assert got == expected_points("ps1", PS1_CLASS[student]), (jobs, said_about(ps1_class[jobs]["run"].stdout,
                                                                                     student))
    check_grade(classroom, ps1_class[2]["run"].stdout, "ps1", student, PS1_CLASS[student])


@pytest.mark.parametrize("jobs", [1, 2])
def test_class_0_honest_work_graded_after_the_hostile_keeps_its_grade_and_the_run_ends_well(ps1_class, jobs):
    run = ps1_class[jobs]["run"]
    for student in HONEST:  # graded last, by a worker that graded every hostile submission before
        assert ps1_class[jobs]["points"][student] == expected_points("ps1", CROSS[student]), (student, run.stdout)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]  # every submission graded


def test_class_4_graded_notebooks_stay_small_whatever_the_output(ps1_class):
    for student, size in ps1_class[2]["sizes"].items():
        assert size < GRADED_NOTEBOOK_BYTES, (student, size)


def test_class_2_the_students_check_agrees_with_the_grade(classroom, ps1_class):
    """A fix in a later cell before its test: `ppedu check` passes and the grade is full. A break there: the check
    passes (form) and the grade loses the value, saying which function. After the test, as nbgrader runs it, the fix
    is too late and the break harmless."""
    for student in CLASS_2:
        check = subprocess.run([sys.executable, "-m", "ppedu", "check",
                                str(classroom / "submitted" / student / "ps1" / "ps1.ipynb")], capture_output=True,
                               text=True, timeout=600, env={**os.environ, "PPEDU_STUDENT_ID": student})
        assert check.returncode == 0, check.stdout
        assert ps1_class[2]["points"][student] == expected_points("ps1", CLASS_2[student])


class _Scripts(html.parser.HTMLParser):
    """The text of every script element and every event-handler attribute of a page."""

    def __init__(self):
        super().__init__()
        self.code, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        self.code += [value or "" for name, value in attrs if name.lower().startswith("on")]

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.code.append(data)


def test_beyond_no_script_of_a_student_runs_in_the_instructors_formgrader(classroom, ps1_class):
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.handlers import template_path
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(classroom)).load_config()
    config.HTMLExporter.template_name = "formgrade"  # as nbgrader's formgrader renders a submission
    config.HTMLExporter.extra_template_basedirs = [*config.HTMLExporter.extra_template_basedirs, template_path]
    resources = {"assignment_id": "ps1", "notebook_id": "ps1", "submission_id": "x", "index": 0, "total": 1,
                 "base_url": "", "student": "x_script_for_the_formgrader", "last_name": None, "first_name": None,
                 "notebook_path": "/x"}
    page, _ = HTMLExporter(config=config).from_filename(
        str(graded_notebook(classroom, "ps1", "x_script_for_the_formgrader")), resources=resources)
    scripts = _Scripts()
    scripts.feed(page)
    assert not [code for code in scripts.code if XSS_MARK in code]


def test_beyond_hidden_inputs_never_come_back_in_feedback(classroom, ps1_class):
    cells, _ = feedback(classroom, "ps1", "x_echoes_hidden_inputs")
    shown = "\n".join(cells.values()) + said_about(ps1_class[2]["run"].stdout, "x_echoes_hidden_inputs")
    assert ECHO_MARK not in shown


# ---- class 1: ps5's executors ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ps5_class(classroom):
    submit_all(classroom, PS5_CLASS)
    run, _ = grade(classroom, "ps5", list(PS5_CLASS), 2, timeout=300)
    return run


@pytest.mark.parametrize("student", list(PS5_CLASS))
def test_class_1_what_the_students_process_measured_is_not_evidence(classroom, ps5_class, student):
    check_grade(classroom, ps5_class.stdout, "ps5", student, PS5_CLASS[student])


# ---- class 3: late penalties on the final total ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def late_class(tmp_path_factory):
    """A course where ps1 and the final are due at DUE; each submission handed in as CLASS_3 says, graded, then every
    written answer given full marks by hand (as in the formgrader), then exported."""
    from nbgrader.api import Gradebook

    course = make_course(tmp_path_factory.mktemp("late-class"), ["ps1", "final"])
    due = datetime.fromisoformat(DUE)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        for name in ("ps1", "final"):
            gb.update_or_create_assignment(name, duedate=due)
    for student, late in CLASS_3.items():
        _submit(course, student, late.case)
        stamp = course / "submitted" / student / late.case.assignment / "timestamp.txt"
        if late.late is not None:
            stamp.write_text((due + timedelta(seconds=late.late)).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
        elif late.timestamp is not None:
            stamp.write_text(late.timestamp)
    runs = {a: grade(course, a, [s for s, late in CLASS_3.items() if late.case.assignment == a], 2)[0]
            for a in ("ps1", "final")}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        for student, late in CLASS_3.items():
            for nb in gb.find_submission(late.case.assignment, student).notebooks:
                for g in nb.grades:
                    if g.cell.cell_type == "markdown":
                        g.manual_score, g.needs_manual_grade = g.max_score, False
        gb.db.commit()
    out = course / "grades.csv"
    export = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(out)], cwd=course,
                            capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, export.stdout + export.stderr
    with out.open() as f:
        scores = {(row["assignment"], row["student_id"]): float(row["score"]) for row in csv.DictReader(f)}
    return runs, scores


@pytest.mark.parametrize("student", list(CLASS_3))
def test_class_3_late_policy_applies_to_the_final_total_and_no_time_is_silently_on_time(late_class, student):
    runs, scores = late_class
    late = CLASS_3[student]
    said = said_about(runs[late.case.assignment].stdout, student)
    if late.score is not None:
        assert scores[late.case.assignment, student] == pytest.approx(late.score), said
    missing = [w for w in late.flagged if w.lower() not in said.lower()]
    assert not missing, said


# ---- class 4: the whole submission's time ---------------------------------------------------------------------------

def test_class_4_a_submission_over_the_whole_notebooks_time_or_output_is_ungradeable_and_the_class_goes_on(classroom):
    submit_all(classroom, CLASS_4_TIME)
    try:
        run, seconds = grade(classroom, "ps1", list(CLASS_4_TIME), 2, timeout=CELL_SECONDS,
                             limit=WHOLE_SUBMISSION_SECONDS + 30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the class of two was still being graded after {WHOLE_SUBMISSION_SECONDS + 30} s")
    assert seconds < WHOLE_SUBMISSION_SECONDS, seconds
    check_grade(classroom, run.stdout, "ps1", "zz_time_honest_right", CLASS_4_TIME["zz_time_honest_right"])
    for student in ("x_time_many_slow_cells", "x_many_capped_cells"):
        said = said_about(run.stdout, student)
        assert "ungradeable" in said and all(w in said for w in CLASS_4_TIME[student].reasons["*"]), run.stdout


# ---- class 5: archives ------------------------------------------------------------------------------------------

def _million_members(path):
    member = tarfile.TarInfo("x")
    member.size = 0
    chunk = gzip.compress(member.tobuf(format=tarfile.GNU_FORMAT) * 10_000)
    with path.open("wb") as f:
        for _ in range(100):
            f.write(chunk)
        f.write(gzip.compress(b"\0" * 1024))


def _member(course, assignment, student, what):
    if what in ("solution", "release"):
        return (course / ("solutions" if what == "solution" else "exercises") / assignment
                / f"{assignment}.ipynb").read_bytes()
    if what == "counting answers":
        return counting_answers(course, student)
    if what.startswith("noise "):
        return os.urandom(int(what.split()[1]) * 2**20)
    raise ValueError(what)


def collect(course, scenario):
    """The scenario's archives put where zip_collect reads them, collected; the run and its seconds."""
    downloaded = course / "downloaded"
    shutil.rmtree(downloaded, ignore_errors=True)
    folder = downloaded / scenario.assignment / "archive"
    folder.mkdir(parents=True)
    for archive in scenario.archives:
        owner = archive.name.split("+", 1)[1].split(".")[0]
        if archive.kind == "million members":
            _million_members(folder / archive.name)
            continue
        with zipfile.ZipFile(folder / archive.name, "w") as zipped:
            for name, what in archive.members.items():
                zipped.writestr(name, _member(course, scenario.assignment, owner, what))
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", scenario.assignment, "--force"], cwd=course,
                         capture_output=True, text=True, timeout=scenario.seconds + 120)
    return run, time.monotonic() - start


@pytest.mark.parametrize("name", list(CLASS_5))
def test_class_5_one_archive_never_stops_the_class_nor_names_its_owner(classroom, name):
    scenario = CLASS_5[name]
    run, seconds = collect(classroom, scenario)
    log = (run.stdout + run.stderr)[-3000:]
    assert seconds < scenario.seconds, (seconds, log)
    for student, whose in scenario.collected.items():
        notebook = classroom / "submitted" / student / scenario.assignment / f"{scenario.assignment}.ipynb"
        if whose is None:
            assert not notebook.exists(), (student, log)
            continue
        assert notebook.is_file(), (student, log)
        source = classroom / ("solutions" if whose == "solution" else "exercises") / scenario.assignment
        want = solution_cells(nbformat.read(source / f"{scenario.assignment}.ipynb", as_version=4))
        assert solution_cells(nbformat.read(notebook, as_version=4)) == want, (student, whose)
    if name == "counting_answers_in_an_archive":
        graded, _ = grade(classroom, "counting", list(COUNTING_POINTS), 1)
        for student, points in COUNTING_POINTS.items():
            assert cell_points(classroom, "counting", student) == points, said_about(graded.stdout, student)


# ---- class 6: private working files ---------------------------------------------------------------------------------

def _others_can_read(path, top):
    """Whether a user other than its owner (and not in its group) can open ``path``, a file under ``top``."""
    if not os.lstat(path).st_mode & 0o004:
        return False
    folder = os.path.dirname(path)
    while True:
        if not os.stat(folder).st_mode & 0o001:
            return False
        if os.path.samefile(folder, top):
            return True
        folder = os.path.dirname(folder)


@pytest.fixture(scope="module")
def private_class(classroom, tmp_path_factory):
    """The ps1 class of CLASS_6 graded with its own shared temporary folder (mode 1777, as /tmp), in which a user put
    a link where the grader keeps its locks, while another user reads whatever the grader leaves readable there."""
    shared = tmp_path_factory.mktemp("shared-tmp")
    shared.chmod(0o1777)
    elsewhere = tmp_path_factory.mktemp("users-own-folder")
    for name in LOCK_NAMES:
        (shared / name).symlink_to(elsewhere, target_is_directory=True)
    submit_all(classroom, {**CLASS_6, **SOCKET_SWAPPER})
    seen, done, greeted = [], threading.Event(), []
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(classroom / LISTENER))
    listener.listen(8)
    listener.settimeout(0.05)

    def watch():
        while not done.is_set():
            for folder, _, files in os.walk(shared):
                for name in files:
                    path = os.path.join(folder, name)
                    try:
                        if not _others_can_read(path, shared):
                            continue
                        with open(path, "rb") as f:
                            data = f.read(2**20)
                    except OSError:
                        continue
                    if PRIVATE_MARK.encode() in data or (b'"key"' in data and b'"signature_scheme"' in data):
                        seen.append(os.path.relpath(path, shared))
            try:
                greeted.append(listener.accept()[0].recv(64))
            except OSError:
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run, _ = grade(classroom, "ps1", [*CLASS_6, *SOCKET_SWAPPER], 2, timeout=10, env={"TMPDIR": str(shared)})
    finally:
        done.set()
        watcher.join()
        listener.close()
    return run, sorted(set(seen)), elsewhere, greeted


def test_class_6_no_copy_of_a_submission_nor_kernel_key_is_readable_by_other_users(classroom, private_class):
    run, seen, _, _ = private_class
    for student, expect in CLASS_6.items():
        check_grade(classroom, run.stdout, "ps1", student, expect)
    assert not seen


def test_class_6_a_link_in_the_shared_temporary_folder_is_never_followed(private_class):
    run, _, elsewhere, _ = private_class
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not list(elsewhere.iterdir())


def test_class_6_the_grader_never_connects_where_a_students_link_points(classroom, private_class):
    run, _, _, greeted = private_class
    assert graded_notebook(classroom, "ps1", "x_socket_swapper").is_file(), said_about(run.stdout, "x_socket_swapper")
    assert not greeted
