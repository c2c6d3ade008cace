"""docs/instructor.md, done as written: the exchange set up with `make exchange` (into a temporary system config
folder), the class list imported from the guide's own CSV, the widget exam released, fetched, answered, submitted
and collected with the guide's commands — students' commands in a folder of their own — graded with `ppedu grade`,
re-graded, fed back and exported; and ps1 autograded with warnings only for a cell a student changed.

Every command this test runs is checked to be in the guide word for word, so the two cannot drift apart."""

import csv
import getpass
import os
import re
import shutil
import subprocess

import nbformat
import pytest

from conftest import BIN, ROOT, graded_cells
from test_exam import POINTS, _answer

GUIDE = (ROOT / "docs" / "instructor.md").read_text()
IGNORED = shutil.ignore_patterns(".venv", ".git", "build", "submitted", "autograded", "feedback", "gradebook.db",
                                 "__pycache__", "*.json", ".pytest_cache", ".hypothesis", "tests", "benchmarks")


class Shell:
    """Runs the guide's commands, each checked to be in the guide, with the machine's exchange config in `etc`."""

    def __init__(self, tmp_path):
        self.env = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"],
                    "JUPYTER_CONFIG_PATH": str(tmp_path / "etc"), "JUPYTER_CONFIG_DIR": str(tmp_path / "user-config")}
        self.env.pop("PPEDU_EXCHANGE", None)

    def __call__(self, command, cwd, like=None, check=True):
        """Run ``command``, which is in the guide as it is, or as ``like`` (the guide's example assignment)."""
        assert (like or command) in GUIDE, f"`{like or command}` is not in docs/instructor.md"
        done = subprocess.run(command.split(), cwd=cwd, env=self.env, capture_output=True, text=True,
                              timeout=600)
        assert not check or done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout + done.stderr


def _guide_csv():
    return re.search(r"```csv\n(.*?)```", GUIDE, re.S)[1]


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guide")
    course, student = tmp / "course", tmp / "student-home"
    shutil.copytree(ROOT, course, ignore=IGNORED)
    student.mkdir()
    run = Shell(tmp)
    logs = {}
    # The machine, once: the exchange and the system-wide config, in temporary places.
    subprocess.run(["make", "--no-print-directory", "exchange", f"EXCHANGE={tmp / 'exchange'}",
                    f"JUPYTER_SYSTEM_CONFIG={tmp / 'etc'}"], cwd=ROOT, check=True, capture_output=True)
    assert "sudo make exchange" in GUIDE
    (course / "students.csv").write_text(_guide_csv())
    run("nbgrader db student import students.csv", course)
    for name in ("counting", "ps1"):
        run(f"nbgrader generate_assignment {name} --force", course, like="nbgrader generate_assignment ps1 --force")
    run("nbgrader release_assignment counting", course)
    # A student, in their own folder: fetch, answer in the widgets, submit.
    run("nbgrader fetch_assignment counting --course ppedu", student)
    cwd = os.getcwd()
    os.chdir(student / "counting")
    try:
        _answer(getpass.getuser())
    finally:
        os.chdir(cwd)
    run("nbgrader submit counting --course ppedu", student)
    run("nbgrader collect counting", course)
    logs["grade"] = run("ppedu grade counting --jobs 4", course)
    logs["again"] = run("nbgrader autograde counting", course)
    logs["force"] = run("nbgrader autograde counting --force", course)
    run("nbgrader generate_feedback counting", course)
    run("nbgrader release_feedback counting", course)
    run("nbgrader fetch_feedback counting --course ppedu", student)
    run("nbgrader export", course)
    return course, student, tmp, logs


def test_make_exchange_writes_the_machines_nbgrader_config(walkthrough):
    _, _, tmp, _ = walkthrough
    config = (tmp / "etc" / "nbgrader_config.py").read_text()
    assert f'c.Exchange.root = "{tmp / "exchange"}"' in config
    assert (tmp / "exchange").stat().st_mode & 0o7777 == 0o1777  # world-writable and sticky, as nbgrader requires
    # Again is fine; someone else's system-wide config is left alone, with a one-line reason and status 2.
    subprocess.run(["make", "-s", "exchange", f"EXCHANGE={tmp / 'exchange'}", f"JUPYTER_SYSTEM_CONFIG={tmp / 'etc'}"],
                   cwd=ROOT, check=True, capture_output=True)
    (tmp / "other").mkdir()
    (tmp / "other" / "nbgrader_config.py").write_text("c.Exchange.root = '/elsewhere'\n")
    refused = subprocess.run(["make", "-s", "exchange", f"EXCHANGE={tmp / 'x'}", f"JUPYTER_SYSTEM_CONFIG={tmp / 'other'}"],
                             cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "exists" in refused.stderr and not (tmp / "x").exists()


def test_the_guides_csv_is_what_nbgrader_imports(walkthrough):
    course, _, _, _ = walkthrough
    rows = list(csv.DictReader(_guide_csv().splitlines()))
    listed = subprocess.run(["nbgrader", "db", "student", "list"], cwd=course, env=Shell(course.parent).env,
                            capture_output=True, text=True, check=True).stdout
    for row in rows:
        assert f"{row['id']} ({row['last_name'] or 'None'}, {row['first_name']})" in listed


def test_the_students_commands_work_in_their_own_folder(walkthrough):
    course, student, _, _ = walkthrough
    me = getpass.getuser()
    assert (course / "submitted" / me / "counting" / "counting.json").is_file()  # the widget's answers travelled
    feedback = list((student / "counting" / "feedback").glob("*/counting.html"))
    assert len(feedback) == 1 and f"{sum(POINTS.values()):g}" in feedback[0].read_text()


def test_grading_regrading_and_export(walkthrough):
    course, _, _, logs = walkthrough
    me = getpass.getuser()
    # the widgets' points autograded, of all: the written reasoning waits for the formgrader
    total = sum(points for _, points in graded_cells(ROOT / "solutions" / "counting" / "counting.ipynb"))
    assert total > sum(POINTS.values()) and f"{me}: {sum(POINTS.values()):g}/{total:g}" in logs["grade"], logs["grade"]
    assert "Skipping existing assignment" in logs["again"]
    assert "Skipping existing assignment" not in logs["force"] and "put back as released" not in logs["force"]
    grades = list(csv.DictReader((course / "grades.csv").open()))
    mine = [r for r in grades if r["student_id"] == me and r["assignment"] == "counting"]
    assert len(mine) == 1 and float(mine[0]["score"]) == sum(POINTS.values())


def test_autograde_warns_only_about_a_cell_a_student_changed(walkthrough):
    course, _, tmp, _ = walkthrough
    run = Shell(tmp)
    released = nbformat.read(course / "exercises" / "ps1" / "ps1.ipynb", as_version=4)
    for who in ("untouched", "tamperer"):
        (course / "submitted" / who / "ps1").mkdir(parents=True)
        if who == "tamperer":
            test = next(c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade"))
            test.source = "pass  # no test here"
        nbformat.write(released, course / "submitted" / who / "ps1" / "ps1.ipynb")
    log = run("nbgrader autograde ps1 --force", course, like="nbgrader autograde counting --force")
    warned = [line for line in log.splitlines() if "WARNING" in line]
    assert not any("untouched" in line for line in warned), log
    assert "checksum" not in log and any("tamperer" in line and "put back as released" in line for line in warned)


def test_a_headless_lab_takes_host_and_port(walkthrough):
    course, _, _, _ = walkthrough
    assert "make lab HOST=0.0.0.0 PORT=9000 OPEN=no" in GUIDE
    dry = subprocess.run(["make", "-n", "-o", ".venv/.installed", "lab", "HOST=0.0.0.0", "PORT=9000", "OPEN=no"],
                         cwd=course, capture_output=True, text=True, check=True).stdout
    assert "--lab --host 0.0.0.0 --port 9000 --no-browser" in dry
