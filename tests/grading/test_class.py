"""A class graded end to end, twice, as docs/instructor.md runs one: 34 generated submissions of ps1 (honest, wrong and
hostile, from corpus.py and hostile.py, each with the points it must lose), each handed in by its own Unix user.

Through the exchange: the exchange made by `make exchange` (1777, with the system-wide nbgrader config pointing at
it), the class list imported, ps1 released; each student runs `nbgrader submit` as themselves, some after the due
date; one forges a folder in a classmate's name, one spoils the time of their own. The instructor collects, grades
with `ppedu grade --jobs 2`, grades one written answer by hand and exports.

Through laptops: each student runs `ppedu handin` as themselves (a notebook it cannot read is zipped by hand), the
instructor copies the zips into downloaded/ps1/archive/, one of them mis-named, one cut short, one holding the
notebook in a folder named after a classmate, and runs `nbgrader zip_collect`, `ppedu grade --jobs 2` and `nbgrader
export`.

Each time the exported CSV must equal the one computed here from each submission's declared points, the written
answer's points and the late policy (10 % of the final total a day): every student of the class list, with their
status. Needs root on Linux (CI runs as root) and bubblewrap; every user and folder made here is removed afterwards.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from conftest import BIN, ROOT, autograded_cells, copy_course, graded_cells
from corpus import PS1, write
from guide import section
from hostile import HOSTILE

sys.path.insert(0, str(ROOT / "hub"))
from trial import Accounts  # noqa: E402

pytestmark = [pytest.mark.system("class"),  # Unix users, root's services and the sandboxes' uids: one class at a time
              pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("bwrap"),
                                 reason="a class of Unix users needs root on Linux, and grading needs bubblewrap")]

GUIDE = "".join(section(s) for s in ("The exchange, the class list, release and collect", "Autograde, in a sandbox",
                                     "Feedback and grades", "Students on their own laptops"))
SOLVED = ROOT / "solutions" / "ps1" / "ps1.ipynb"
AUTO = sum(p for _, p in autograded_cells(SOLVED))
WRITTEN = sum(p for _, p in graded_cells(SOLVED)) - AUTO
SHARE = 0.10  # c.LatePolicy.percent_per_day in nbgrader_config.py
PREFIX = "ppclass"  # the students' login names, which are their course ids: ppclass00, ppclass01, …
CASES = {name: PS1[name] for name in (
    "solved", "numpy_scalars", "numpy_everywhere", "noisy_stderr", "own_cells", "renamed_test_cell",
    "copied_test_cell", "system_exit", "blank", "off_by_one", "busy_as_idle", "equal_as_in_chapter_3",
    "closed_form_by_library", "nan", "all_wrong", "name_from_another_cell", "os_exit", "abs_patcher", "liar",
    "hand_in_forger", "key_thief", "fake_outputs", "more_points", "edited_test_cell", "gradebook_writer",
    "reader_of_others", "output_bomb")}
CASES |= {name: HOSTILE["ps1"][name] for name in (
    "h_notebook_not_json", "h_notebook_truncated", "h_undecodable_bytes", "h_odd_names", "h_extra_files_beside",
    "h_many_files")}
CASES |= {"solved_again": PS1["solved"], "solved_late": PS1["solved"]}
#: Who does what beyond their case (by case): hand in after the due date; be graded by hand; spoil the time of their
#: own submission; forge a folder in a classmate's name (the first one's); be left out of the laptops' collection.
LATE = {"solved_late", "off_by_one", "liar", "output_bomb", "h_notebook_truncated", "numpy_everywhere",
        "solved_again", "gradebook_writer"}
HAND_GRADED, UNTIMED, FORGER = "solved_late", "solved_again", "key_thief"
MISNAMED, CUT_SHORT, NAMES_A_CLASSMATE = "equal_as_in_chapter_3", "nan", "abs_patcher"


def in_guide(command, like=None):
    assert (like or command) in GUIDE, f"`{like or command}` is not in docs/instructor.md"
    return command


@pytest.fixture(scope="module")
def school():
    """The class's Unix users (one per case, and one on the class list who hands nothing in), their homes under a
    folder every user can reach, the exchange `make exchange` makes there, and how a student runs the course's tools."""
    base = Path(tempfile.mkdtemp(prefix="ppedu-class-", dir="/tmp"))
    base.chmod(0o755)
    names = {case: f"{PREFIX}{i:02d}" for i, case in enumerate([*CASES, "absent"])}  # a student's values are their id's
    _remove_stale_class(names.values())
    group = f"{PREFIX}-class"
    subprocess.run(["groupadd", group], check=True, capture_output=True)
    (base / "home").mkdir(mode=0o755)
    accounts = Accounts(base / "home")
    try:
        for name in names.values():
            accounts.add(name, group)
        exchange, system = base / "exchange", base / "etc-jupyter"
        in_guide("sudo make exchange")
        subprocess.run(["make", "-s", "exchange", f"EXCHANGE={exchange}", f"JUPYTER_SYSTEM_CONFIG={system}"], cwd=ROOT,
                       check=True, capture_output=True)
        assert exchange.stat().st_mode & 0o7777 == 0o1777
        yield {"base": base, "names": names, "exchange": exchange, "config": system, "python": _students_python(names)}
    finally:
        accounts.remove()
        subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _remove_stale_class(names, groups=(f"{PREFIX}-class",), homes="/tmp/ppedu-class-"):
    """The users (and groups) of an earlier run of this test that was killed before it could remove them (their homes
    were in a folder it made, named ``homes``…); anyone else of those names stops the test."""
    import pwd

    for name in names:
        try:
            home = pwd.getpwnam(name).pw_dir
        except KeyError:
            continue
        if not home.startswith(homes):
            pytest.fail(f"a user {name} exists who is not this test's: remove it, or run the test elsewhere")
        subprocess.run(["userdel", "--remove", name], capture_output=True)
    for group in groups:
        subprocess.run(["groupdel", group], capture_output=True)


def _students_python(names):
    """How every user runs this environment's tools: its own interpreter where they may run it, else the system's
    Python 3 of the same version with this environment's packages on its path (an interpreter under /root is not
    theirs to run)."""
    anyone = next(iter(names.values()))
    mine = subprocess.run(["runuser", "-u", anyone, "--", sys.executable, "-c", "pass"], capture_output=True)
    if mine.returncode == 0:
        return [sys.executable], {}
    system = "/usr/bin/python3"
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip("no Python every user may run with this environment's packages")
    packages = [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)]
    return [system], {"PYTHONPATH": os.pathsep.join([*packages, str(ROOT)])}


def as_student(school, case, command, cwd=None, check=True):
    """``command`` (a list; its first word a tool of the course's environment: nbgrader, ppedu, python) run as the
    student of ``case``, in their home."""
    return as_user(school, school["names"][case], command, cwd, check, case)


def as_user(school, name, command, cwd=None, check=True, label=None, input=None):
    """``command`` (as for :func:`as_student`) run as the Unix user ``name``, whose home is in the school's."""
    home = school["base"] / "home" / name
    python, env = school["python"]
    tool = {"nbgrader": [*python, "-m", "nbgrader"], "ppedu": [*python, "-m", "ppedu"], "python": python}
    env = {"HOME": str(home), "USER": name, "LOGNAME": name, "PATH": "/usr/bin:/bin",
           "JUPYTER_CONFIG_PATH": str(school["config"]), **env}
    done = subprocess.run(["runuser", "-u", name, "--", "env", *(f"{k}={v}" for k, v in env.items()),
                           *tool.get(command[0], command[:1]), *command[1:]], cwd=cwd or home, capture_output=True,
                          text=True, timeout=300, input=input)
    said = f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert not check or done.returncode == 0, f"{label or name}: {command}\n{said}"
    return done


def instructor(course, command, school, like=None, status=0):
    """A command of the guide run by the instructor (root) in the course folder."""
    in_guide(command, like)
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], "JUPYTER_CONFIG_PATH": str(school["config"])}
    env.pop("PPEDU_EXCHANGE", None)
    began = time.monotonic()
    done = subprocess.run(command, shell=True, cwd=course, env=env, capture_output=True, text=True, timeout=1200)
    said = done.stdout + done.stderr
    assert done.returncode == status, f"{command} (exit {done.returncode}):\n{said[-4000:]}"
    return said, time.monotonic() - began


def _course(school, shared, name):
    """A copy of the course for one way in, closed to the class, with the class list and ps1's due date."""
    course = copy_course(shared, school["base"] / name, "grades.csv")
    shutil.copy(ROOT / "Makefile", course)
    shutil.copytree(ROOT / "student", course / "student")
    instructor(course, "make -s private", school, like="make private")
    roster = ["id,first_name,last_name,email"] + [f"{n},{case},Student,{n}@example.org"
                                                  for case, n in school["names"].items()]
    (course / "students.csv").write_text("\n".join(roster) + "\n")
    instructor(course, "nbgrader db student import students.csv", school)
    return course


def _set_due_date(course, school, moment):
    instructor(course, f'nbgrader db assignment add ps1 --duedate="{moment:%Y-%m-%d %H:%M:%S} UTC"', school,
               like='nbgrader db assignment add ps1 --duedate="2026-12-01 17:00:00 UTC"')


def _work(school, course, case):
    """The student's own ps1 folder in their home, made from their case (as the release would be after their work)."""
    name = school["names"][case]
    folder = school["base"] / "home" / name / "ps1"
    if not folder.exists():
        write(CASES[case], course, name, folder)
        subprocess.run(["chown", "-R", "--no-dereference", f"{name}:{name}", folder], check=True)
    return folder


def expected(school, late=frozenset(), untimed=frozenset(), hand_graded=frozenset(), absent=frozenset()):
    """The export, computed from each case's declared points: (student → raw, penalty, score, max, status)."""
    rows = {}
    for case, name in school["names"].items():
        if case == "absent" or case in absent:
            rows[name] = ("0", "0", "0", f"{AUTO + WRITTEN:g}", "no submission")
            continue
        spec = CASES[case]
        answered = not spec.release  # a written answer left as released scores 0 by itself
        raw = AUTO - sum(spec.lost.values()) + (WRITTEN if case in hand_graded else 0)
        is_late = case in late and case not in untimed
        penalty = round(raw * SHARE, 2) if is_late else 0  # part of a day late: one day's share
        awaiting = f"awaiting manual grading ({WRITTEN:g} point{'s' if WRITTEN != 1 else ''})"
        status = [awaiting if answered and case not in hand_graded else "graded"]
        status += ["late 1 day"] if is_late else []
        status += ["no usable submission time (timestamp.txt): lateness not judged"] if case in untimed else []
        rows[name] = (f"{raw:g}", f"{penalty:g}", f"{round(raw - penalty, 2):g}", f"{AUTO + WRITTEN:g}",
                      "; ".join(status))
    return rows


def exported(course):
    with (course / "grades.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert {r["assignment"] for r in rows} == {"ps1"}
    return {r["student_id"]: (r["raw_score"], r["late_submission_penalty"], r["score"], r["max_score"], r["status"])
            for r in rows}, rows


@pytest.fixture(scope="module")
def through_the_exchange(school, course):
    course = _course(school, course, "course")
    instructor(course, "nbgrader release_assignment ps1", school, like="nbgrader release_assignment counting")
    on_time = [c for c in CASES if c not in LATE]
    for case in CASES:
        _work(school, course, case)
    submit = in_guide("nbgrader submit ps1 --course ppedu", like="nbgrader submit counting --course ppedu").split()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda case: as_student(school, case, submit), on_time))
    _set_due_date(course, school, datetime.now(timezone.utc) + timedelta(seconds=1))  # the due date: whole seconds
    time.sleep(2)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda case: as_student(school, case, submit), [c for c in CASES if c in LATE]))
    inbound = school["exchange"] / "ppedu" / "inbound"
    names = school["names"]
    mine = next(inbound.glob(f"{names[UNTIMED]}+ps1+*"))
    as_student(school, UNTIMED, ["sh", "-c", f"printf 'the day before' > '{mine}/timestamp.txt'"])
    forged = inbound / f"{names['solved']}+ps1+2099-01-01 00:00:00.000000 UTC+forged"
    as_student(school, FORGER, ["sh", "-c", f"mkdir '{forged}' && cp ps1/ps1.ipynb '{forged}/'"])
    seen = {}
    seen["collect"], seen["collect_seconds"] = instructor(course, "nbgrader collect ps1", school,
                                                          like="nbgrader collect counting")
    seen["grade"], seen["grade_seconds"] = instructor(course, "ppedu grade ps1 --jobs 2", school,
                                                      like="ppedu grade counting --jobs 4")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:  # what the formgrader's score box does
        grades = [g for nb in gb.find_submission("ps1", names[HAND_GRADED]).notebooks for g in nb.grades
                  if g.auto_score is None]
        assert sum(g.max_score for g in grades) == WRITTEN  # every written answer, each scored in full
        for grade in grades:
            grade.manual_score, grade.needs_manual_grade = grade.max_score, False
        gb.db.commit()
    seen["export"], _ = instructor(course, "nbgrader export", school)
    seen["rows"], seen["csv"] = exported(course)
    seen["course"] = course
    return seen


def test_the_class_graded_through_the_exchange_exports_what_each_student_earned(school, through_the_exchange):
    seen = through_the_exchange
    assert seen["rows"] == expected(school, LATE, {UNTIMED}, {HAND_GRADED})
    assert all(bool(r["timestamp"]) == (r["status"] != "no submission" and "no usable" not in r["status"])
               for r in seen["csv"])
    assert all(r["email"] == f"{r['student_id']}@example.org" for r in seen["csv"])


def test_ppedu_grade_reports_what_awaits_a_human_and_the_times_it_could_not_judge(school, through_the_exchange):
    said, names = through_the_exchange["grade"], school["names"]
    assert f"done: {len(CASES)} graded" in said, said[-3000:]
    answered = [c for c, spec in CASES.items() if not spec.release]
    assert f"{WRITTEN * len(answered):g} point(s) in {len(answered)} submission(s) await manual grading" in said
    assert f"without a usable time, lateness not judged: {names[UNTIMED]}" in said
    late_line = next(line for line in said.splitlines() if f"] {names['solved_late']}: " in line)
    assert f"{AUTO * (1 - SHARE):g}/{AUTO + WRITTEN:g} ({AUTO:g} less {AUTO * SHARE:g} for being late)" in late_line


def test_collect_refuses_a_forgery_and_says_so_at_the_end(school, through_the_exchange):
    said, names = through_the_exchange["collect"], school["names"]
    last = said.strip().splitlines()[-2:]
    assert f"it is {names[FORGER]}'s, not {names['solved']}'s" in last[0] and "not collected" in last[0], said[-2000:]
    assert "1 folder(s) in the exchange left out" in last[1]
    # a student's 3000 files are one line, not 2500: no student's folder can hold collect up, or flood its log
    assert through_the_exchange["collect_seconds"] < 60 and said.count("\n") < 150, said[-3000:]
    assert re.search(r"runs/ \(\d+ more entries, not read: more than 500 files in the submission\)", said), said


def test_the_graders_working_files_are_closed_to_the_class(school, through_the_exchange):
    course = through_the_exchange["course"]
    assert course.stat().st_mode & 0o077 == 0  # make private
    for private in ("submitted", "autograded", "intake", "grades.csv"):  # closed even where the course folder is not
        assert (course / private).stat().st_mode & 0o077 == 0, private
    peek = as_student(school, "blank", ["ls", str(course / "submitted")], check=False)
    assert peek.returncode != 0 and "Permission denied" in peek.stderr, peek.stdout + peek.stderr


@pytest.fixture(scope="module")
def through_laptops(school, course, through_the_exchange):
    course = _course(school, course, "laptops")
    _set_due_date(course, school, datetime.now(timezone.utc))
    archive = course / "downloaded" / "ps1" / "archive"
    archive.mkdir(parents=True)
    handin = in_guide("ppedu handin ps1", like="ppedu handin ps1").split()
    refused = {}
    for case in CASES:
        home = _work(school, course, case).parent
        done = as_student(school, case, handin, cwd=home, check=False)
        name = school["names"][case]
        if done.returncode:  # ppedu handin refuses a notebook it cannot read: the student zips it by hand
            refused[case] = done
            with zipfile.ZipFile(home / f"ps1+{name}.zip", "w") as zipped:
                zipped.write(home / "ps1" / "ps1.ipynb", "ps1.ipynb")
        shutil.copy(home / f"ps1+{name}.zip", archive)
    names = school["names"]
    (archive / f"ps1+{names[MISNAMED]}.zip").rename(archive / f"ps1 - {names[MISNAMED]}.zip")
    cut = archive / f"ps1+{names[CUT_SHORT]}.zip"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    claimer = archive / f"ps1+{names[NAMES_A_CLASSMATE]}.zip"
    notebook = zipfile.ZipFile(claimer).read("ps1.ipynb")
    with zipfile.ZipFile(claimer, "w") as zipped:  # the notebook in a folder named after a classmate's hand-in
        zipped.writestr(f"ps1+{names['solved']}/ps1.ipynb", notebook)
    seen = {"refused": refused}
    seen["zip_collect"], _ = instructor(course, "nbgrader zip_collect ps1", school, like="nbgrader zip_collect ps1",
                                        status=1)
    seen["grade"], seen["grade_seconds"] = instructor(course, "ppedu grade ps1 --jobs 2", school,
                                                      like="ppedu grade counting --jobs 4")
    instructor(course, "nbgrader export", school)
    seen["rows"], seen["csv"] = exported(course)
    return seen


def test_the_class_graded_through_laptops_exports_what_each_student_earned(school, through_laptops):
    """No hand-in from a laptop carries a time a student cannot set: each is flagged, none is taken as on time."""
    handed_in = [c for c in CASES if c not in (MISNAMED, CUT_SHORT)]
    assert through_laptops["rows"] == expected(school, untimed=set(handed_in), absent={MISNAMED, CUT_SHORT})
    assert not any(r["timestamp"] for r in through_laptops["csv"])


def test_zip_collect_names_each_hand_in_it_left_out_and_collects_the_rest(school, through_laptops):
    said, names = through_laptops["zip_collect"], school["names"]
    tail = said.strip().splitlines()[-3:]
    assert f"ps1 - {names[MISNAMED]}.zip: not collected: its name does not say whose it is" in tail[0], said[-3000:]
    assert f"ps1+{names[CUT_SHORT]}.zip: not collected: not a zip archive that can be read" in tail[1]
    assert "2 hand-in(s) of ps1 left out" in tail[2]


def test_ppedu_handin_refuses_only_the_notebooks_it_cannot_read(through_laptops):
    refused = through_laptops["refused"]
    assert set(refused) == {c for c, spec in CASES.items() if spec.raw}
    assert all(done.returncode == 2 and "is not a notebook that can be read" in done.stderr and
               done.stderr.count("\n") == 1 for done in refused.values())


def test_the_notebooks_graded_are_the_ones_handed_in(school, through_laptops):
    """The classmate named inside a hand-in got nothing from it: the submitted notebook is the claimer's own."""
    course = school["base"] / "laptops"
    names = school["names"]
    claimed = nbformat.read(course / "submitted" / names[NAMES_A_CLASSMATE] / "ps1" / "ps1.ipynb", as_version=4)
    own = nbformat.read(school["base"] / "home" / names[NAMES_A_CLASSMATE] / "ps1" / "ps1.ipynb", as_version=4)
    assert [c.source for c in claimed.cells] == [c.source for c in own.cells]
