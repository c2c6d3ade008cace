"""Grades attack_round_three's cases end to end (ppedu grade, zip_collect, ppedu check) and writes what each got as
JSON: ``python tests/grading/run_attack_round_three.py OUT.json [ps1|class1|class7|check] [student …]``."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

from attack_round_three import CLASS_7, LEAK, PS1_CASES, SIZE_CASES, SPELL, VICTIM, class_1  # noqa: E402
from conftest import make_course  # noqa: E402
from corpus import Case  # noqa: E402
from hostile_classes import Expect  # noqa: E402
from test_hostile_classes import (cell_points, expected_points, feedback, grade, graded_notebook, said_about,  # noqa
                                  submit_all)

COURSE = Path(os.environ.get("ATTACK_COURSE", "/tmp/attack3-course"))


def course():
    if not (COURSE / "gradebook.db").is_file():
        COURSE.mkdir(parents=True, exist_ok=True)
        make_course(COURSE, ["ps1"])
    return COURSE


def outcome(c, run, student, expect, seconds):
    said = said_about(run.stdout, student)
    out = {"said": said[-1500:], "seconds": round(seconds)}
    if not graded_notebook(c, "ps1", student).is_file():
        out["graded"] = False
        return out
    points = cell_points(c, "ps1", student)
    want = {k: v.expected for k, v in expected_points("ps1", expect).items()}
    cells, whole = feedback(c, "ps1", student)
    out.update(graded=True, points=points, expected=want, exact=points == want,
               leak=[m for m in (LEAK, SPELL, "BIT3_") if m in "\n".join(cells.values()) + whole + said],
               feedback={k: v[:400] for k, v in cells.items() if points.get(k) != want.get(k) or LEAK in v},
               size=graded_notebook(c, "ps1", student).stat().st_size)
    return out


def grade_cases(cases, jobs=1, timeout=60):
    c = course()
    submit_all(c, cases)
    results = {}
    for student, expect in cases.items():  # one at a time: a case's own time and outcome
        start = time.monotonic()
        try:
            run, seconds = grade(c, "ps1", [student], jobs, timeout=timeout, limit=900)
        except subprocess.TimeoutExpired as e:
            results[student] = {"graded": False, "said": "grade ran past 900 s", "seconds": 900}
            continue
        results[student] = outcome(c, run, student, expect, time.monotonic() - start)
        results[student]["rc"] = run.returncode
        if "Traceback" in run.stdout + run.stderr:
            results[student]["traceback"] = (run.stdout + run.stderr)[-2500:]
        if student.startswith("y3_"):
            ps = subprocess.run(["ps", "-eo", "pid,uid,etimes,pcpu,args"], capture_output=True, text=True).stdout
            results[student]["left_running"] = [l for l in ps.splitlines() if str(987653) in l]
            hogs = [l for l in ps.splitlines() if l.split()[1:2] and l.split()[1].isdigit()
                    and int(l.split()[1]) >= 0x7000_0000]
            results[student]["sandbox_uid_processes"] = hogs[:10]
        print(student, json.dumps(results[student])[:600], flush=True)
    return results


def checks(students):
    c = course()
    out = {}
    for student in students:
        path = c / "submitted" / student / "ps1" / "ps1.ipynb"
        run = subprocess.run([sys.executable, "-m", "ppedu", "check", str(path)], capture_output=True, text=True,
                             timeout=600, env={**os.environ, "PPEDU_STUDENT_ID": student}, cwd=path.parent)
        out[student] = {"rc": run.returncode, "tail": (run.stdout + run.stderr)[-800:]}
        print(student, out[student]["rc"], flush=True)
    return out


def hand_ins():
    c = course()
    release = (c / "exercises" / "ps1" / "ps1.ipynb").read_bytes()
    solved = (c / "solutions" / "ps1" / "ps1.ipynb").read_bytes()
    victim_nb = solved.replace(b'"ps1"', b'"ps1"')  # the victim's own (solved) hand-in, to see it is untouched
    downloaded = c / "downloaded"
    shutil.rmtree(downloaded, ignore_errors=True)
    archive = downloaded / "ps1" / "archive"
    archive.mkdir(parents=True)
    (archive / f"ps1+{VICTIM}.ipynb").write_bytes(victim_nb)
    for student, (write, _) in CLASS_7.items():
        shutil.rmtree(c / "submitted" / student, ignore_errors=True)
        write(archive, release, solved, VICTIM)
    shutil.rmtree(c / "submitted" / VICTIM, ignore_errors=True)
    run = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", "ps1", "--force"], cwd=c,
                         capture_output=True, text=True, timeout=600)
    out = {"rc": run.returncode, "log": (run.stdout + run.stderr)[-4000:]}
    for student, (_, want) in {**CLASS_7, VICTIM: (None, "victim")}.items():
        folder = c / "submitted" / student / "ps1"
        nb = folder / "ps1.ipynb"
        got = None
        if nb.is_symlink():
            got = "a link"
        elif nb.is_file():
            data = nb.read_bytes()
            got = "solved" if data == solved else "release" if data == release else "victim" if data == victim_nb \
                else f"other ({len(data)} bytes)"
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.is_dir() else []
        stamp = (folder / "timestamp.txt").read_text()[:60] if (folder / "timestamp.txt").is_file() else None
        out[student] = {"want": want, "got": got, "files": files, "timestamp": stamp}
        print(student, out[student], flush=True)
    escaped = [str(p) for p in (c / "submitted").rglob("*") if p.is_symlink()]
    out["links_under_submitted"] = escaped
    return out


if __name__ == "__main__":
    target, what, *only = sys.argv[1:]
    results = json.loads(Path(target).read_text()) if Path(target).is_file() else {}
    if what == "ps1":
        cases = {s: e for s, e in PS1_CASES.items() if not only or s in only}
        results.update(grade_cases(cases))
    elif what == "class1":
        cases = {s: e for s, e in class_1().items() if not only or s in only}
        results.update(grade_cases(cases))
    elif what == "size":
        results.update(grade_cases({s: e for s, e in SIZE_CASES.items() if not only or s in only}))
    elif what == "check":
        results["check"] = {**results.get("check", {}), **checks(only)}
    elif what == "class7":
        results["class7"] = hand_ins()
    Path(target).write_text(json.dumps(results, indent=1, default=str))
