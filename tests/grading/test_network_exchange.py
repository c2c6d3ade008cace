"""nbgrader's own exchange on a network file system, as on a cluster of machines that share none of their local disks
(docs/instructor.md § 13): the exchange is a folder on a "server" (``1777``, root's), exported over SFTP by a real sshd
of the test's own (tests/grading/sshd.py), and the instructor and each of the class of 35 (test_class.py's honest,
wrong and hostile submissions) are separate Unix users with their own homes and no exchange on their own disk: each
mounts the server's folder with sshfs, as themselves, logging in with a key of their own, at the folder their own
nbgrader configuration (``~/.jupyter/nbgrader_config.py``) names as ``Exchange.root``.

The instructor releases ps1; each student fetches and submits it through their mount (nbgrader's submit closed to the
other students, as on the course's hub); the instructor collects, grades with ``ppedu grade --jobs 2``, exports and
releases the feedback, and each student fetches theirs. The exported CSV must equal the one computed from each
submission's declared points. On the server each file is owned by whoever logged in, whatever its name claims: a
folder one student makes in a classmate's name is refused by collect, and no student can list ``inbound/`` or read a
classmate's submission through it. With the server gone (sshd stopped) or a mount gone, the commands say so in one
line, without a traceback.

NFS itself is out of reach here (the kernel of the machine this was written on has no NFS); SFTP is a network file
system every Linux with FUSE can mount. Needs root (the users, sshd), /dev/fuse, sshfs and bubblewrap; every user,
mount and process made here is removed afterwards."""

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sshd
from conftest import ROOT, copy_course
from test_class import (CASES, _remove_stale_class, _students_python, _work, as_student, as_user, expected, exported,
                        in_guide, instructor)

sys.path.insert(0, str(ROOT / "hub"))
from trial import Accounts  # noqa: E402

pytestmark = [pytest.mark.system("class"),  # Unix users, root's services and the sandboxes' uids: one class at a time
              pytest.mark.skipif(bool(sshd.unavailable()) or not shutil.which("bwrap"),
                                 reason=sshd.unavailable() or "grading needs bubblewrap")]
PREFIX = "ppnet"  # the students' login names (their course ids): ppnet00, ppnet01, …
TEACHER = f"{PREFIX}-teacher"
FORGER, VICTIM, READER = "key_thief", "solved", "reader_of_others"


def _mount(school, name):
    home = school["base"] / "home" / name
    config = home / ".jupyter" / "nbgrader_config.py"
    lines = ["c = get_config()  # noqa: F821", f'c.Exchange.root = "{home / "exchange"}"']
    if name != TEACHER:  # as the course's hub sets it for every student (ppedu.grading.submit)
        lines.append('c.ExchangeFactory.submit = "ppedu.grading.submit.PrivateSubmit"')
    as_user(school, name, ["mkdir", "-p", str(config.parent)])
    as_user(school, name, ["sh", "-c", f"cat > {config}"], input="\n".join(lines) + "\n")
    sshd.mount(lambda user, command: as_user(school, user, command, check=False), school["server"], name, home,
               school["exchange"], home / "exchange")


@pytest.fixture(scope="module")
def school():
    """The class's Unix users and the instructor, their homes, the server's exchange and each one's mount of it."""
    base = Path(tempfile.mkdtemp(prefix="ppedu-net-", dir="/tmp"))
    base.chmod(0o755)
    names = {case: f"{PREFIX}{i:02d}" for i, case in enumerate([*CASES, "absent"])}
    groups = (f"{PREFIX}-class", f"{PREFIX}-staff")
    _remove_stale_class([*names.values(), TEACHER], groups, homes="/tmp/ppedu-net-")
    for group in groups:
        subprocess.run(["groupadd", group], check=True, capture_output=True)
    (base / "home").mkdir(mode=0o755)
    (base / "etc-jupyter").mkdir()  # nobody's system-wide nbgrader config: each user's own names their mount
    exchange = base / "server" / "exchange"  # the server's disk: only sshd's sessions write here
    exchange.mkdir(parents=True)
    exchange.chmod(0o1777)
    accounts = Accounts(base / "home")
    everyone = [TEACHER, *names.values()]
    try:
        accounts.add(TEACHER, groups[1])
        for name in names.values():
            accounts.add(name, groups[0])
        school = {"base": base, "names": names, "exchange": exchange, "config": base / "etc-jupyter",
                  "python": _students_python(names)}
        with sshd.fuse_open_to_users(), sshd.Sshd() as server:
            school["server"] = server
            try:
                with ThreadPoolExecutor(4) as pool:
                    list(pool.map(lambda name: _mount(school, name), everyone))
                yield school
            finally:
                for name in everyone:
                    sshd.unmount(base / "home" / name / "exchange")
    finally:
        accounts.remove()
        for group in groups:
            subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def teacher(school, course, command, like=None, check=True):
    """A command of the guide run by the instructor, as themselves, in the course folder."""
    in_guide(command, like)
    return as_user(school, TEACHER, command.split(), cwd=course, check=check)


def mine(school, case):
    """The student's mount of the exchange."""
    return school["base"] / "home" / school["names"][case] / "exchange"


@pytest.fixture(scope="module")
def graded(school, course):
    """ps1 released, fetched, submitted, collected, graded, exported and its feedback fetched, all through the
    mounts."""
    course = copy_course(course, school["base"] / "course", "grades.csv")
    subprocess.run(["chown", "-R", f"{TEACHER}:{PREFIX}-staff", course], check=True)
    course.chmod(0o700)  # make private
    roster = ["id,first_name,last_name,email"] + [f"{n},{case},Student,{n}@example.org"
                                                  for case, n in school["names"].items()]
    (course / "students.csv").write_text("\n".join(roster) + "\n")
    teacher(school, course, "nbgrader db student import students.csv")
    teacher(school, course, "nbgrader release_assignment ps1", like="nbgrader release_assignment counting")
    fetch = in_guide("nbgrader fetch_assignment ps1 --course ppedu",
                     like="nbgrader fetch_assignment counting --course ppedu")
    submit = in_guide("nbgrader submit ps1 --course ppedu", like="nbgrader submit counting --course ppedu")
    seen = {"course": course, "fetched": {}}

    def hand_in(case):
        as_student(school, case, fetch.split())
        home = school["base"] / "home" / school["names"][case]
        seen["fetched"][case] = (home / "ps1" / "ps1.ipynb").is_file()
        shutil.rmtree(home / "ps1")  # the released notebook, replaced by the student's work
        _work(school, course, case)
        as_student(school, case, submit.split())

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(hand_in, CASES))
    inbound = school["exchange"] / "ppedu" / "inbound"
    names = school["names"]
    victims = next(inbound.glob(f"{names[VICTIM]}+ps1+*"))  # its name, as a classmate who guessed it would write it
    seen["list"] = as_student(school, READER, ["ls", str(mine(school, READER) / "ppedu" / "inbound")], check=False)
    seen["read"] = as_student(school, READER, ["cat", str(mine(school, READER) / "ppedu" / "inbound" / victims.name /
                                                          "ps1.ipynb")], check=False)
    forged = mine(school, FORGER) / "ppedu" / "inbound" / f"{names[VICTIM]}+ps1+2099-01-01 00:00:00.000000 UTC+forged"
    as_student(school, FORGER, ["sh", "-c", f"mkdir '{forged}' && cp ps1/ps1.ipynb '{forged}/'"])
    seen["forged_owner"] = (inbound / forged.name).owner()
    seen["collect"] = teacher(school, course, "nbgrader collect ps1", like="nbgrader collect counting")
    # Grading reads the course folder only, never the exchange: the course is root's while root grades it, as in
    # test_class.py (a user's sandbox needs an interpreter every user may run, which the one running the tests need
    # not be), then the instructor's again.
    subprocess.run(["chown", "-R", "root:root", course], check=True)
    said, _ = instructor(course, "ppedu grade ps1 --jobs 2", school, like="ppedu grade counting --jobs 4")
    seen["grade"] = said
    instructor(course, "nbgrader generate_feedback ps1", school)  # the course only, as grading (nbconvert's templates)
    subprocess.run(["chown", "-R", f"{TEACHER}:{PREFIX}-staff", course], check=True)
    seen["export"] = teacher(school, course, "nbgrader export")
    seen["rows"], seen["csv"] = exported(course)
    seen["release_feedback"] = teacher(school, course, "nbgrader release_feedback ps1",
                                       like="nbgrader release_feedback counting", check=False)
    feedback = in_guide("nbgrader fetch_feedback ps1 --course ppedu",
                        like="nbgrader fetch_feedback counting --course ppedu")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda case: as_student(school, case, feedback.split(), check=False), CASES))
    seen["feedback"] = {case: sorted((school["base"] / "home" / name / "ps1" / "feedback").glob("*/ps1.html"))
                        for case, name in names.items() if case != "absent"}
    return seen


def test_the_class_graded_through_the_network_exchange_exports_what_each_student_earned(school, graded):
    assert all(graded["fetched"].values()), graded["fetched"]
    assert graded["rows"] == expected(school)
    assert all(bool(r["timestamp"]) == (r["status"] != "no submission") for r in graded["csv"])


def test_each_student_fetched_their_own_feedback_through_their_mount(school, graded):
    done = graded["release_feedback"]
    assert done.returncode == 0, done.stderr[-1500:]
    for case, pages in graded["feedback"].items():
        assert len(pages) == 1, case
        assert school["names"][case] in pages[0].read_text() or case in pages[0].read_text(), case


def test_the_server_keeps_each_file_as_the_user_who_wrote_it_and_collect_refuses_a_forgery(school, graded):
    names = school["names"]
    assert graded["forged_owner"] == names[FORGER]
    inbound = school["exchange"] / "ppedu" / "inbound"
    assert inbound.owner() == TEACHER and inbound.stat().st_mode & 0o7777 == 0o2733
    assert school["exchange"].stat().st_mode & 0o7777 == 0o1777 and school["exchange"].owner() == "root"
    own = [p for p in inbound.glob(f"{PREFIX}*+ps1+2*") if not p.name.endswith("+forged")]
    assert sorted(p.name.split("+")[0] for p in own) == sorted(n for c, n in names.items() if c != "absent")
    assert all(p.owner() == p.name.split("+")[0] for p in own)
    said = graded["collect"].stdout + graded["collect"].stderr
    assert f"it is {names[FORGER]}'s, not {names[VICTIM]}'s" in said and "not collected" in said, said[-2000:]
    assert "1 folder(s) in the exchange left out" in said


def test_no_student_lists_inbound_or_reads_a_classmates_submission_through_the_mount(graded):
    for done in (graded["list"], graded["read"]):
        assert done.returncode != 0 and "Permission denied" in done.stderr, done.stdout[-500:] + done.stderr


@pytest.fixture(scope="module")
def unreachable(school, graded):
    """A student whose mount is gone, then the server stopped: what the commands say (run last: it ends the server)."""
    course, seen = graded["course"], {}
    as_user(school, school["names"]["blank"], ["fusermount3", "-u", str(mine(school, "blank"))])
    seen["unmounted"] = as_student(school, "blank", "nbgrader fetch_feedback ps1 --course ppedu".split(), check=False)
    school["server"].stop()
    seen["submit"] = as_student(school, "solved", "nbgrader submit ps1 --course ppedu".split(), check=False)
    seen["collect"] = teacher(school, course, "nbgrader collect ps1", like="nbgrader collect counting", check=False)
    return seen


@pytest.mark.parametrize("step", ["unmounted", "submit", "collect"])
def test_an_unreachable_exchange_is_one_clear_line_without_a_traceback(unreachable, step):
    done = unreachable[step]
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in said, said[-3000:]
    assert len([line for line in said.splitlines() if "ERROR" in line or "error" in line]) == 1, said[-3000:]
