"""A class on the course's JupyterHub, as docs/instructor.md's section "Running a class on JupyterHub" sets it up: the
hub deployed with `make hub` on its documented defaults (/opt/ppedu, /srv/ppedu, port 8000 reached on loopback; `sudo
make hub` where there is sudo), real Unix users made as the guide says (an instructor and three students, private
homes) who log in through the hub's form (PAM), students who get the release by nbgitpuller
and work in their own servers through the Assignments extension's API (fetch, save, Validate, submit), and an
instructor who works through the formgrader service: generate, release with a due date, collect, autograde
(sandboxed, as the grader account), grade a written answer by hand, grade again, release feedback, export.

The students: alice answers everything right; bob's answer to the conversion question reads the instructor's
solution where the grader's own rights would reach it (only a sandbox keeps it out); carol answers right but after
the due date, and forges a blank "submission" in bob's name in the exchange, and tries to read alice's home, her
submission and the class's feedback. Each grade is counted from the points of what the student did right. Needs root
(CI runs as root) and Node.js; everything but the shared environment is removed afterwards.
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, autograded_cells, cells
from guide import section

sys.path.insert(0, str(ROOT / "hub"))
from trial import ADD_USER, HTTPError, User, deployed_as_documented, make_hub, terminal  # noqa: E402

pytestmark = [pytest.mark.system("class"),  # Unix users, root's services and the sandboxes' uids: one class at a time
              pytest.mark.skipif(
                  sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("npm") or not shutil.which("bwrap"),
                  reason="a hub with real users needs root on Linux, Node.js (the proxy) and bubblewrap "
                         "(`make test` installs them)")]

GUIDE = section("Running a class on JupyterHub")
SOLVED = ROOT / "solutions" / "ps1" / "ps1.ipynb"
RELEASED = ROOT / "exercises" / "ps1" / "ps1.ipynb"
CONVERSION = next(c for c in cells(SOLVED) if "def idle_share" in c.source)
POINTS = dict(autograded_cells(SOLVED))


def in_guide(command, *placeholders):
    """``command`` as the guide writes it, its placeholders (the guide's folders, names) put back."""
    written = command
    for guide, here in placeholders:
        written = written.replace(here, guide)
    assert written in GUIDE, f"`{written}` is not in the guide's hub section"
    return command


def _cheat(course):
    """bob's answer: the instructor's own solution, read from the course folder; without it, a wrong one."""
    return ("def idle_share(*args):\n"
            "    try:  # the instructor's solution, where the grader's rights reach it\n"
            f"        cells = __import__('json').load(open('{course}/solutions/ps1/ps1.ipynb'))['cells']\n"
            "        code = next(''.join(c['source']) for c in cells if 'def idle_share' in ''.join(c['source']))\n"
            "        found = {}\n"
            "        exec(code, found)\n"
            "        return found['idle_share'](*args)\n"
            "    except OSError:\n"
            "        return args[0]\n")


def _answered(course, student):
    nb = nbformat.read(SOLVED, as_version=4)
    if student == "bob":
        next(c for c in nb.cells if "def idle_share" in c.source).source = _cheat(course)
    return nb


def _due(moment):
    return {"duedate_notimezone": moment.strftime("%Y-%m-%dT%H:%M:%S"), "duedate_timezone": "+0000"}


@pytest.fixture(scope="module")
def classroom():
    """The whole class, once; what each step showed, for the tests below."""
    in_guide("sudo make hub")
    for group, name in (("ppedu-instructors", "ines"), ("ppedu-students", "alice")):  # what Deployment.add does
        in_guide(f"sudo {ADD_USER.format(group=group, name=name)}")
    try:
        with deployed_as_documented(ROOT) as hub:
            people = {who: hub.add(who, "instructors" if who == "ines" else "students")
                      for who in ("ines", "alice", "bob", "carol")}
            running = hub.hub()
            seen, users = _class(running.url, people, hub.settings, hub.output)
            seen["ignoring_interrupt"] = running.ignoring_interrupt()
            seen["limits"] = _limits(hub, users)
            seen["readable_home"] = _readable_home(hub)
            seen["course_change"] = _course_change(hub, users, seen["link"])
            seen["lifecycle"] = _lifecycle(hub, running, people)
            seen["login_shell"] = _login_shell(hub, seen["names"]["alice"])
            seen.update(deployed=hub.output, settings=hub.settings,
                        hub_log=(hub.base / "hub" / "jupyterhub.log").read_text())
    except RuntimeError as error:
        if "holds a class" not in str(error):
            raise
        pytest.skip(str(error))
    return seen


def _class(hub, people, settings, deployed_said):
    seen = {"spawn": {}, "submit": {}, "grade": {}}
    names = {who: name for who, (name, _) in people.items()}
    users = {who: User(hub, name, password) for who, (name, password) in people.items()}
    try:
        User(hub, names["alice"], "not her password")
    except HTTPError as error:
        seen["wrong_password"] = error.status
    ines = users["ines"]
    seen["assign"] = ines.formgrader("POST", "assignment/ps1/assign")
    ines.formgrader("PUT", "assignment/ps1", body=_due(datetime.now(timezone.utc) + timedelta(days=7)))
    seen["release"] = ines.formgrader("POST", "assignment/ps1/release")
    link = seen["link"] = re.search(r"/hub/user-redirect/git-pull\?\S+", deployed_said)[0]  # make hub's
    in_guide(link.split("?")[1], (urllib.parse.quote("/srv/ppedu/release", safe=""),
                                  urllib.parse.quote(settings["release"], safe="")))
    for who in ("alice", "bob", "carol"):
        student = users[who]
        seen["spawn"][who] = student.start()
        student.pull(link)
        seen.setdefault("listed", {})[who] = {a["assignment_id"]: a["status"] for a in student.assignments()}
        if who == "carol":  # the due date passed while she worked
            ines.formgrader("PUT", "assignment/ps1", body=_due(datetime.now(timezone.utc)))
            time.sleep(1)
        if who == "carol":  # in a terminal, as the guide says; the others with the Assignments panel's button
            seen["fetch_command"] = terminal(f"{hub}/user/{names[who]}", student.token,
                                             in_guide("nbgrader fetch_assignment ps1"))
        else:
            student.act("fetch", "ps1")
        if who == "alice":
            seen["validate_blank"] = student.validate("ps1/ps1.ipynb")
        student.save("ps1/ps1.ipynb", _answered(settings["course"], who))
        seen.setdefault("validate", {})[who] = student.validate("ps1/ps1.ipynb")
        began = time.monotonic()
        student.act("submit", "ps1")
        seen["submit"][who] = time.monotonic() - began
    carol, alice = users["carol"], users["alice"]
    forged = f"{settings['exchange']}/ppedu/inbound/{names['bob']}+ps1+2099-01-01 00:00:00.000000 UTC+forged"
    timeless = f"{settings['exchange']}/ppedu/inbound/{names['carol']}+ps1+whenever+x"  # once stopped collect
    seen["forge"] = terminal(f"{hub}/user/{names['carol']}", carol.token,
                             f"mkdir '{forged}' '{timeless}' && cp ~/ps1/ps1.ipynb '{forged}/' && echo forged")
    # What students have and have not.
    seen["alice_terminal"] = terminal(f"{hub}/user/{names['alice']}", alice.token,
                                      f"command -v nbgrader; command -v ppedu; ls {settings['course']}; "
                                      "python3 ~/ppedu-course/install.py --lab; echo shell: $(ps -o comm= -p $$)")
    seen["alice_formgrader"] = _status(lambda: alice.formgrader("GET", "assignments"))
    seen["alice_own_formgrader"] = _status(lambda: alice.server("GET", "formgrader"))
    page = alice.server("GET", "lab")
    config = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)[1]
    seen["alice_disabled"] = json.loads(config).get("disabledExtensions", [])
    # The instructor grades.
    seen["collect"] = ines.formgrader("POST", "assignment/ps1/collect")
    for who in ("alice", "bob", "carol"):
        began = time.monotonic()
        seen.setdefault("autograde", {})[who] = ines.formgrader("POST", f"submission/ps1/{names[who]}/autograde")
        seen["grade"][who] = time.monotonic() - began
    submitted = ines.formgrader("GET", "submitted_notebooks/ps1/ps1")
    mine = next(s for s in submitted if s["student"] == names["alice"])
    written = [g for g in ines.formgrader("GET", f"grades?submission_id={mine['id']}") if g["auto_score"] is None]
    for grade in written:
        ines.formgrader("PUT", f"grade/{grade['id']}", body={"manual_score": grade["max_score"]})
    service = f"{hub}/services/ppedu"
    seen["regrade"] = terminal(service, ines.token, in_guide("ppedu grade ps1 --jobs 4"), seconds=300)  # a fixed key
    seen["written_after_regrade"] = [g for g in ines.formgrader("GET", f"grades?submission_id={mine['id']}")
                                     if g["auto_score"] is None]
    seen["feedback"] = [ines.formgrader("POST", f"assignment/ps1/{step}") for step in ("generate_feedback",
                                                                                      "release_feedback")]
    for who in ("alice", "bob"):
        users[who].act("fetch_feedback", "ps1")
        folder = next(f for f in users[who].read("ps1/feedback") if f["type"] == "directory")
        seen.setdefault("feedback_page", {})[who] = users[who].read(f"{folder['path']}/ps1.html")
    seen["peek"] = _peek(hub, names, users["carol"], settings)
    in_guide("nbgrader export")
    seen["export_log"] = terminal(service, ines.token, "nbgrader export")
    seen["grades"] = list(csv.DictReader(io.StringIO(ines.call("GET", "/services/ppedu/api/contents/grades.csv")
                                                     ["content"])))
    seen["submissions"] = {who: ines.formgrader("GET", f"submission/ps1/{names[who]}") for who in names if who != "ines"}
    # A new release, and every student with edits of their own pulling it.
    mine_path = "ppedu-course/notebooks/01-bubble-problem.ipynb"
    for who in ("alice", "bob", "carol"):
        notebook = users[who].read(mine_path)
        notebook["cells"][0]["source"] += f"\n\nMy notes, {who}'s."
        users[who].save(mine_path, notebook)
    release = in_guide(f"make student-release STUDENT_RELEASE={settings['release']}",
                       ("/srv/ppedu/release", settings["release"]))
    seen["rerelease"] = terminal(service, ines.token,
                                 "sed -i 's/Learning goals/Learning goals (revised)/' notebooks/02-gpipe.ipynb && "
                                 f"{release} && echo releases: $(git -C {settings['release']} log --oneline | wc -l)"
                                 " && git commit -qam 'Revised goals' && echo committed: $(git log -1 --format=%s)",
                                 seconds=300)
    for who in ("alice", "bob", "carol"):
        users[who].pull(link)
        seen.setdefault("pulled", {})[who] = [users[who].read(mine_path)["cells"][0]["source"],
                                              users[who].read("ppedu-course/notebooks/02-gpipe.ipynb")["cells"][0]["source"]]
    seen["names"] = names
    return seen, users


#: Up to 1,000 processes (each gone after 5 s), started from a kernel: where one is refused, which (a shell would retry
#: its forks for minutes).
FORKS = ("import os, time\nfor n in range(1000):\n    try:\n        child = os.fork()\n    except OSError as error:\n"
         "        print('refused the process', n + 1, error)\n        break\n    if child == 0:\n        time.sleep(5)\n"
         "        os._exit(0)\n")


def _cgroup(name, file):
    """A file of a user's control group (ppedu.limits: ppedu-users/<name> under the hub's)."""
    return next(Path("/sys/fs/cgroup").glob(f"**/ppedu-users/{name}/{file}"))


def _limits(hub, users):
    """bob past the limits on the documented defaults (2G, 512 tasks, 1 core): a cell asking for 3 GB; two processes of
    1.2 GB in his terminal (together past 2 GB: the OOM killer takes one); 1,000 background processes; two busy
    loops. alice's server and the hub answer meanwhile."""
    bob, name = users["bob"], users["bob"].name
    seen = {"cell": bob.run_code("big = bytearray(3 * 2**30)")}
    seen["after_cell"] = bob.run_code("print(sum(range(10)))")  # the kernel lives on
    hog = "python3 -c 'import time; b = bytearray(b\"x\") * (1200 * 2**20); time.sleep(15)'"
    seen["two_processes"] = terminal(f"{hub.url}/user/{name}", bob.token,
                                     f"({hog}; echo first: $?) & ({hog}; echo second: $?) & wait", seconds=120)
    seen["oom_kills"] = int(re.search(r"^oom_kill (\d+)", _cgroup(name, "memory.oom_control").read_text(), re.M)[1])
    seen["forks"] = bob.run_code(FORKS + "time.sleep(6)  # until the children are gone\n")["stream"]
    before = _cgroup(name, "cpu.stat").read_text()
    terminal(f"{hub.url}/user/{name}", bob.token, "timeout 3 yes >/dev/null & timeout 3 yes >/dev/null & wait")
    after = _cgroup(name, "cpu.stat").read_text()
    seen["periods"] = [int(re.search(r"nr_periods (\d+)", t)[1]) for t in (before, after)]  # run under its quota
    seen["quota"] = tuple(_cgroup(name, file).read_text().strip()
                          for file in ("cpu.cfs_quota_us", "pids.max", "memory.limit_in_bytes"))
    seen["exchange_mounted"] = os.path.ismount(hub.settings["exchange"])
    seen["alice_answers"] = users["alice"].server("GET", "api/status")
    seen["hub_answers"] = users["alice"].call("GET", "/hub/api/")
    return seen


def _readable_home(hub):
    """A student added while the hub runs, whose home others can read, at the spawn page."""
    name, password = hub.add("dave", "students")
    home = Path(f"/home/{name}")
    home.chmod(0o755)
    try:
        return User(hub.url, name, password).spawn_page()
    finally:
        home.chmod(0o700)  # or the hub would not start again


def _course_change(hub, users, link):
    """A change committed in the instructors' clone reaching the hub by the guide's route: make hub again."""
    notebook = hub.clone / "notebooks" / "03-1f1b.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].source += "\n\nRevised in the instructors' clone."
    nbformat.write(nb, notebook)
    subprocess.run(["git", "-C", hub.clone, "-c", "user.name=Ines", "-c", "user.email=ines@example.org", "commit",
                    "-qam", "Chapter 3 revised"], check=True)
    again = make_hub(hub.clone)
    course = hub.settings["course"]
    log = subprocess.run(["git", "-c", "safe.directory=*", "-C", course, "log", "--format=%s"], capture_output=True,
                         text=True).stdout
    releases = subprocess.run(["git", "-c", "safe.directory=*", "-C", hub.settings["release"], "log", "--oneline"],
                              capture_output=True, text=True).stdout
    users["carol"].pull(link)
    pulled = users["carol"].read("ppedu-course/notebooks/03-1f1b.ipynb")["cells"][0]["source"]
    status = subprocess.run(["git", "-c", "safe.directory=*", "-C", course, "status", "--porcelain"],
                            capture_output=True, text=True).stdout
    return {"make_hub": again.stdout + again.stderr, "returncode": again.returncode, "course_log": log,
            "releases": len(releases.splitlines()), "pulled": pulled, "course_status": status,
            "ines_regenerates": terminal(f"{hub.url}/services/ppedu", users["ines"].token,
                                         "nbgrader generate_assignment ps1 --force >/dev/null 2>&1; "
                                         "git status --porcelain exercises | wc -l; git rev-parse --is-inside-work-tree",
                                         seconds=300)}


def _lifecycle(hub, running, people):
    """The hub restarted and stopped as the guide says, from a folder of no importance (the proxy's pid file must not
    land there); what ran before, and what runs after."""
    elsewhere = Path(tempfile.mkdtemp(prefix="ppedu-cwd-"))
    try:
        seen = {"restart": hub.ctl(in_guide("sudo /opt/ppedu/bin/ppedu-hub restart").split()[-1], cwd=elsewhere)}
        seen["pid_files_started"] = sorted(p.name for p in (hub.base / "hub").glob("*.pid"))
        seen["old_session"] = running.session()
        again = hub.hub()
        seen["new_pid"] = again.pid != running.pid
        seen["status"] = hub.ctl("status")
        alice = User(again.url, *people["alice"])
        alice.start()
        seen["alice_after_restart"] = [f["name"] for f in alice.read("ps1")]
        began = time.monotonic()
        seen["stop"] = hub.ctl(in_guide("sudo /opt/ppedu/bin/ppedu-hub stop").split()[-1], cwd=elsewhere)
        seen["stop_seconds"] = time.monotonic() - began
        seen["status_stopped"] = hub.ctl("status")
        seen["left_in_session"] = again.session()
        names = [name for name, _ in people.values()] + [hub.settings["grader"]]
        seen["left_of_users"] = [n for n in names if subprocess.run(["pgrep", "-u", n], capture_output=True).returncode == 0]
        seen["left_of_hub"] = [line for line in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                                text=True).stdout.splitlines()
                               if line.startswith(hub.settings["prefix"]) or "configurable-http-proxy" in line]
        seen["pid_files_here"] = sorted(p.name for p in elsewhere.iterdir())
        seen["pid_files"] = sorted(p.name for p in (hub.base / "hub").glob("*.pid"))
        seen["log_after_stop"] = (hub.base / "hub" / "jupyterhub.log").read_text()
        return seen
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


def _login_shell(hub, name):
    """A student's login shell on the hub's machine (SSH, su -): the course's programs, and a clone of the release."""
    return subprocess.run(["su", "-", name, "-c", "command -v nbgrader; command -v ppedu; "
                           f"git clone -q {hub.settings['release']} ~/own-clone && echo cloned"],
                          capture_output=True, text=True, timeout=300)


def _peek(hub, names, carol, settings):
    """What carol's terminal shows of alice's home, alice's submission (its folder's name, which only the exchange's
    owner can list, given to her) and the class's feedback in the exchange."""
    home = f"/home/{names['alice']}"
    inbound = Path(settings["exchange"]) / "ppedu" / "inbound"
    hers = next(inbound.glob(f"{names['alice']}+ps1+*"))
    feedback = Path(settings["exchange"]) / "ppedu" / "feedback"
    probes = {"home": f"ls {home}", "answers": f"cat {home}/ps1/ps1.ipynb", "cache": f"ls {home}/.local",
              "inbound": f"ls {inbound}", "submission": f"cat '{hers}/ps1.ipynb'", "listing": f"ls '{hers}'",
              "overwrite": f"touch '{hers}/ps1.ipynb'", "feedback": f"ls {feedback}"}
    said = terminal(f"{hub}/user/{names['carol']}", carol.token,
                    "; ".join(f"{command} >/dev/null 2>&1 && echo 'read {what}' || echo 'refused {what}'"
                              for what, command in probes.items()))
    return {what: ("refused" if f"refused {what}" in said else "read" if f"read {what}" in said else said)
            for what in probes}


def _status(request):
    try:
        request()
    except HTTPError as error:
        return error.status
    return 200


def _deserved(who):
    total = sum(POINTS.values())
    conversion = next(p for grade_id, p in POINTS.items()
                      if any(grade_id == c.metadata.get("nbgrader", {}).get("grade_id") and "conversion" in c.source
                             for c in cells(SOLVED)))
    return {"alice": total, "bob": total - conversion, "carol": total}[who]


def test_users_log_in_with_their_passwords_and_students_get_the_release(classroom):
    assert classroom["wrong_password"] == 403
    assert "nbgitpuller" in classroom["deployed"] and "git-pull?repo=" in classroom["deployed"]
    for who, listed in classroom["listed"].items():
        assert listed.get("ps1") == "released", (who, listed)


def test_students_validate_and_submit_in_their_own_servers(classroom):
    """Validate runs the visible tests, which check an answer's form: the released notebook fails them, an answered
    one passes (a wrong value, bob's, shows only in the grade)."""
    assert "Fetched as" in classroom["fetch_command"], classroom["fetch_command"]  # carol, in her terminal
    blank = classroom["validate_blank"]
    assert blank["success"] and len(blank["value"].get("failed", [])) >= 3
    for who in ("alice", "bob", "carol"):
        done = classroom["validate"][who]
        assert done["success"] and not done["value"].get("failed"), (who, str(done)[:2000])
        assert classroom["submit"][who] < 60


def test_each_student_gets_what_they_deserved_graded_in_a_sandbox(classroom):
    """bob's answer would be right if his code ran with the grader account's rights: the sandbox keeps the course
    folder out of sight, so it is graded as the wrong answer it falls back to."""
    names, subs = classroom["names"], classroom["submissions"]
    for who in ("alice", "bob", "carol"):
        assert classroom["autograde"][who]["success"], classroom["autograde"][who].get("error")
    assert {who: subs[who]["code_score"] for who in subs} == {who: _deserved(who) for who in subs}
    rows = {r["student_id"]: r for r in classroom["grades"]}
    late = rows[names["carol"]]
    assert float(late["late_submission_penalty"]) == pytest.approx(0.1 * _deserved("carol"))  # part of a day late
    assert float(rows[names["bob"]]["late_submission_penalty"]) == 0


def test_a_forged_submission_in_a_classmates_name_is_not_collected(classroom):
    """Nor does a folder whose name holds no time stop the collection of the class."""
    assert "forged" in classroom["forge"]
    log = classroom["collect"]["log"]
    assert classroom["collect"]["success"] and "holds no time" in log
    assert "not collected" in log and f"{classroom['names']['carol']}'s, not {classroom['names']['bob']}'s" in log
    assert classroom["submissions"]["bob"]["code_score"] == _deserved("bob")  # his own, not the blank forgery


def test_a_finished_manual_grade_stays_finished_when_grading_again(classroom):
    assert "done: 3 graded" in classroom["regrade"], classroom["regrade"][-2000:]
    written = classroom["written_after_regrade"]
    assert written and all(g["manual_score"] == g["max_score"] and not g["needs_manual_grade"] for g in written)
    rows = {r["student_id"]: r for r in classroom["grades"]}
    alice = rows[classroom["names"]["alice"]]
    assert float(alice["score"]) == sum(POINTS.values()) + sum(g["max_score"] for g in written)


def test_feedback_reaches_the_students(classroom):
    assert all(step["success"] for step in classroom["feedback"])
    assert "idle_share" in classroom["feedback_page"]["bob"]


def test_the_formgrader_is_the_instructors_only_and_students_have_no_instructor_menus(classroom):
    assert classroom["alice_formgrader"] == 403
    assert classroom["alice_own_formgrader"] == 404
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
            "@jupyter/nbgrader:course-list"} <= set(classroom["alice_disabled"])


def test_a_students_terminal_has_the_tools_but_not_the_course_folder_nor_a_second_lab(classroom):
    said, prefix = classroom["alice_terminal"], classroom["settings"]["prefix"]
    assert f"{prefix}/bin/nbgrader" in said and f"{prefix}/bin/ppedu" in said
    assert "Permission denied" in said and "on the course's JupyterHub" in said


def test_a_new_release_is_one_more_commit_merged_into_every_students_copy(classroom):
    assert re.search(r"^releases: (\d+)$", classroom["rerelease"], re.M)[1] == "2"  # two releases, two commits
    for who, (mine, theirs) in classroom["pulled"].items():
        assert mine.endswith(f"My notes, {who}'s.") and "Learning goals (revised)" in theirs, who


def test_the_hub_stops_on_sigterm_without_waiting_on_a_process_that_ignores_the_interrupt(classroom):
    """Started by `make hub` run as a script in the background runs it (SIGINT ignored), the hub still gives its proxy,
    services and servers an interrupt they obey (JupyterHub stops each with SIGINT and waits 10 s on one that ignores
    it), and `ppedu-hub stop` ends it with SIGTERM, having stopped them all, without killing it."""
    seen = classroom["lifecycle"]
    assert classroom["ignoring_interrupt"] == []
    assert seen["stop"].returncode == 0 and "did not stop" not in seen["stop"].stderr, seen["stop"]
    assert seen["stop_seconds"] < 60 and seen["log_after_stop"].rstrip().endswith("...done")


def test_the_hub_restarts_and_stops_as_the_guide_says_leaving_nothing_running(classroom):
    """`ppedu-hub restart` and `stop`, run from a folder of no importance: the old hub's session ends, the new one
    serves alice her work, and after `stop` no process of the hub, its proxy or services, nor of any of the class's
    users runs; the pid files are in the hub's own folder, not in the folder it was started from."""
    seen = classroom["lifecycle"]
    assert seen["restart"].returncode == 0 and "the hub runs" in seen["restart"].stdout, seen["restart"]
    assert seen["old_session"] == [] and seen["new_pid"]
    assert seen["status"].returncode == 0 and "answers" in seen["status"].stdout
    assert "ps1.ipynb" in seen["alice_after_restart"]
    assert "the hub is stopped" in seen["stop"].stdout and "left behind" not in seen["stop"].stdout, seen["stop"]
    assert seen["status_stopped"].returncode == 3
    assert seen["left_in_session"] == [] and seen["left_of_users"] == [] and seen["left_of_hub"] == []
    assert seen["pid_files_here"] == [] and seen["pid_files"] == []
    assert seen["pid_files_started"] == ["jupyterhub-proxy.pid", "jupyterhub.pid"]


def test_a_student_past_the_limits_is_stopped_alone_with_a_clear_message(classroom):
    """On the documented defaults (2 GB, 512 tasks, 1 core per user's server, in a control group of its own here): a
    cell asking for 3 GB fails with the message naming the limit and the kernel lives on; two processes that
    together pass 2 GB lose one to the OOM killer; the 1,000th background process is refused; two busy loops run
    under a one-core quota (how often it holds them back depends on the machine's load); alice's server and the hub
    answer all along."""
    seen = classroom["limits"]
    assert seen["cell"]["error"][0] == "MemoryError" and "2.0 GB of memory" in seen["cell"]["error"][1], seen["cell"]
    assert "restart the kernel" in seen["cell"]["error"][1]
    assert seen["after_cell"]["stream"].strip() == "45"
    said = seen["two_processes"]
    assert sorted(re.findall(r"^(?:first|second): (\d+)$", said, re.M)) == ["0", "137"], said
    assert seen["oom_kills"] >= 1
    refused = re.search(r"refused the process (\d+) \[Errno 11\] Resource temporarily unavailable", seen["forks"])
    assert refused and int(refused[1]) <= 512, seen["forks"]
    assert seen["quota"] == ("100000", "512", str(2 * 2**30))
    assert seen["periods"][1] > seen["periods"][0]
    assert seen["alice_answers"] and "version" in seen["hub_answers"]


def test_the_exchange_is_on_a_file_system_of_its_own(classroom):
    """A student who fills the machine's disk (their home, /tmp) stops no one from submitting (no user quotas on
    this machine's kernel: make hub says so, and the exchange has no quota per student here)."""
    assert classroom["limits"]["exchange_mounted"]
    assert "on a file system of its own" in classroom["deployed"]


def test_a_student_whose_home_others_can_read_is_told_on_the_spawn_page(classroom):
    status, page = classroom["readable_home"]
    assert status == 403 and "Unhandled error" not in page
    assert re.search(r"can be read by others\. Ask your instructor to run: chmod 0700 /home/\S+-dave", page), page[-3000:]


def test_a_change_committed_in_the_instructors_clone_reaches_the_course_and_the_students(classroom):
    """make hub again: the hub's course (a git clone) merges the instructors' commit with the one made in the
    formgrader's terminal, the release takes it as one more commit, and a student's next pull brings it."""
    seen = classroom["course_change"]
    assert seen["returncode"] == 0 and "took 1 new commit(s)" in seen["make_hub"], seen["make_hub"][-3000:]
    log = seen["course_log"].splitlines()
    assert log[0].startswith("Merge the instructors' clone") and {"Chapter 3 revised", "Revised goals"} <= set(log)
    assert seen["releases"] == 3 and "Revised in the instructors' clone." in seen["pulled"]
    assert seen["course_status"] == ""
    # regenerated, nothing changed in exercises/ (it is committed), and the course is a git work tree
    assert "0\ntrue\nppedu-done" in seen["ines_regenerates"], seen["ines_regenerates"]  # after the terminal's codes


def test_a_login_shell_has_the_course_s_programs_and_clones_the_release(classroom):
    """An SSH or `su -` session of a student on the hub's machine: nbgrader and ppedu on the PATH, and git trusts the
    release (owned by the grader account) for a local clone; JupyterLab's terminals run bash (the guide's useradd)."""
    done, prefix = classroom["login_shell"], classroom["settings"]["prefix"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == [f"{prefix}/bin/nbgrader", f"{prefix}/bin/ppedu", "cloned"]
    assert "shell: bash" in classroom["alice_terminal"]


def test_no_student_reads_anothers_home_submission_or_feedback(classroom):
    """Homes made as the guide says are private; a submission is its student's and the grader's; the exchange's
    folders of submissions and feedback cannot be listed."""
    assert classroom["peek"] == dict.fromkeys(classroom["peek"], "refused"), classroom["peek"]
