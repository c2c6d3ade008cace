"""PostgreSQL as the gradebook (docs/instructor.md, "A class that outgrows one machine"): a server of the test's own
(tests/grading/postgres.py: initdb and pg_ctl in a temporary folder, stopped after), the course pointed at it with
``PPEDU_DB_URL``, and test_class.py's class of 34 (honest, wrong and hostile submissions) graded with
``ppedu grade --jobs 2``.

The server is stopped as a crash would stop it while the class is being graded: every grade reported before is still
there when it comes back, `ppedu grade` names in one line the submissions to grade again, and grading them gives the
export the same class gives on the course's SQLite gradebook, row for row; grading one student again duplicates
nothing. Needs root (PostgreSQL runs as its own user) and bubblewrap."""

import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from nbgrader.api import Gradebook

import postgres
from conftest import make_course
from test_autograde import _submit
from test_class import CASES

pytestmark = [pytest.mark.system("class"),  # Unix users, root's services and the sandboxes' uids: one class at a time
              pytest.mark.skipif(bool(postgres.unavailable()) or not shutil.which("bwrap"),
                                 reason=postgres.unavailable() or "grading needs bubblewrap")]
STUDENTS = {f"pg{i:02d}": case for i, case in enumerate(CASES)}
STOP_AFTER = 10  # progress lines before the server is killed


@pytest.fixture(scope="module")
def server():
    with postgres.Postgres() as db:
        yield db


def _course(root, url=None):
    """A course (on ``url``'s gradebook, else its SQLite file) with the class's submissions."""
    before = os.environ.get("PPEDU_DB_URL")
    os.environ.pop("PPEDU_DB_URL", None)
    if url:
        os.environ["PPEDU_DB_URL"] = url
    try:
        course = make_course(root, ["ps1"])
    finally:
        os.environ.pop("PPEDU_DB_URL", None)
        if before is not None:
            os.environ["PPEDU_DB_URL"] = before
    for student, case in STUDENTS.items():
        _submit(course, student, CASES[case])
    return course


def _env(url=None):
    env = {k: v for k, v in os.environ.items() if k != "PPEDU_DB_URL"}
    return {**env, "PYTHONUNBUFFERED": "1", **({"PPEDU_DB_URL": url} if url else {})}


def _run(course, url, *command):
    return subprocess.run([sys.executable, "-m", *command], cwd=course, env=_env(url), capture_output=True, text=True,
                          timeout=900)


def _export(course, url=None):
    done = _run(course, url, "nbgrader", "export")
    assert done.returncode == 0, done.stderr[-3000:]
    return (course / "grades.csv").read_text()


def _points(url):
    """Every student's autograded points per cell, and how many grade rows each submission has."""
    with Gradebook(url, "ppedu") as gb:
        subs = gb.assignment_submissions("ps1")
        return ({s.student_id: {(nb.name, g.name): g.auto_score for nb in s.notebooks for g in nb.grades} for s in subs},
                {s.student_id: sum(len(nb.grades) for nb in s.notebooks) for s in subs})


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory):
    """The same class on the course's default gradebook (a SQLite file): the export to agree with."""
    course = _course(tmp_path_factory.mktemp("on-sqlite"))
    done = _run(course, None, "ppedu", "grade", "ps1", "--jobs", "2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {"csv": _export(course), "points": _points(f"sqlite:///{course / 'gradebook.db'}")[0]}


@pytest.fixture(scope="module")
def on_postgres(server, tmp_path_factory):
    """The class graded on the server, which is killed after STOP_AFTER submissions and started again; what was said
    and what the gradebook held at each step."""
    course = _course(tmp_path_factory.mktemp("on-postgres"), server.url)
    seen = {"course": course}
    began = time.monotonic()
    errors = course / "stderr.txt"  # a file, not a pipe: a full pipe nobody reads would stop the grader
    with errors.open("w") as stderr:
        grading = subprocess.Popen([sys.executable, "-m", "ppedu", "grade", "ps1", "--jobs", "2"], cwd=course,
                                   env=_env(server.url), stdout=subprocess.PIPE, stderr=stderr, text=True)
        lines = []
        for line in grading.stdout:
            lines.append(line)
            if sum(ln.startswith("[") for ln in lines) == STOP_AFTER and server.running():
                server.stop("immediate")
        seen["status"] = grading.wait(timeout=600)
    seen["stderr"] = errors.read_text()
    seen["stdout"], seen["seconds"] = "".join(lines), time.monotonic() - began
    server.start()
    seen["after_restart"] = _points(server.url)[0]
    said = seen["stderr"].strip().splitlines()
    seen["again"] = said[-1].split(": ")[-1] if said else ""
    if seen["again"].startswith("ppedu grade "):
        seen["regrade"] = _run(course, server.url, *seen["again"].split())
    seen["csv"] = _export(course, server.url)
    seen["points"], seen["rows"] = _points(server.url)
    return seen


def _graded_before_the_stop(stdout):
    return {m[1] for m in re.finditer(r"^\[\s*\d+/\d+\] (\w+): (?!not autograded \(the gradebook)", stdout, re.M)}


def test_the_server_gone_mid_grading_is_one_line_naming_the_submissions_to_grade_again(on_postgres):
    seen = on_postgres
    assert seen["status"] == 2 and "Traceback" not in seen["stderr"] + seen["stdout"], seen["stderr"][-3000:]
    error = seen["stderr"].strip()
    assert error.count("\n") == 0 and error.startswith("ppedu: error: the gradebook postgresql"), error
    assert "cannot be reached" in error and "***@127.0.0.1" in error and seen["again"] in error
    graded = _graded_before_the_stop(seen["stdout"])
    named = set(re.findall(r"--student (\w+)", seen["again"]))
    assert STOP_AFTER <= len(graded) < len(STUDENTS) and graded.isdisjoint(named), (graded, named)
    assert graded | named == set(STUDENTS), seen["stdout"][-3000:]


def test_no_grade_reported_before_the_server_went_away_is_lost(on_postgres, on_sqlite):
    graded = _graded_before_the_stop(on_postgres["stdout"])
    assert {s: on_postgres["after_restart"].get(s) for s in graded} == {s: on_sqlite["points"][s] for s in graded}


def test_graded_again_the_class_exports_what_it_exports_on_sqlite(on_postgres, on_sqlite):
    regrade = on_postgres["regrade"]
    assert regrade.returncode == 0, regrade.stdout[-3000:] + regrade.stderr[-3000:]
    assert on_postgres["points"] == on_sqlite["points"]
    assert on_postgres["csv"] == on_sqlite["csv"]
    assert len(on_postgres["csv"].splitlines()) == 1 + len(STUDENTS)


def test_grading_one_student_again_duplicates_nothing(server, on_postgres, on_sqlite):
    course, student = on_postgres["course"], next(s for s, case in STUDENTS.items() if case == "off_by_one")
    done = _run(course, server.url, "ppedu", "grade", "ps1", "--student", student)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    points, rows = _points(server.url)
    assert (points, rows) == (on_postgres["points"], on_postgres["rows"])
    assert _export(course, server.url) == on_sqlite["csv"]


def test_a_gradebook_down_before_grading_is_one_line(server, on_postgres):
    server.stop("fast")
    try:
        done = _run(on_postgres["course"], server.url, "ppedu", "grade", "ps1", "--jobs", "2")
    finally:
        server.start()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert re.fullmatch(r"ppedu: error: the gradebook postgresql\+psycopg://ppedu:\*\*\*@127\.0\.0\.1:\d+/ppedu cannot "
                        r"be reached \(.*Connection refused.*\)\n", done.stderr), done.stderr
