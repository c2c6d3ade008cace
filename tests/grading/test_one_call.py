"""The one-call test, made mechanical for the assignments whose questions show data (the counting exam, ps1 and the
final): in the student release (`student/build.py`, what `make student-release` builds) no module computes a graded
question's answer from what a student has — their values, their question data, the pictures in it — in one call, and
the instructors' generators of that data are not there to import. Every public function and class of every module of
the release's ppedu (but those that start servers, kernels or processes) is called with each of a student's things, and
nothing it returns may hold a question's answers: the key's numbers for the value questions, the key's cells for the
exam's clicked ones. What a determined student can still do with two calls or more is docs/instructor.md's red-team
table."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from grader import questiondata
from grader.exam import grids
from grader.keys import final as final_key, ps1 as ps1_key
from ppedu.critical import critical_path
from ppedu.grading import my_values
from ppedu.grading.assignments import TIMED

STUDENTS = ("alice", "bob", "carol")
#: Modules not called: they start servers, kernels, sandboxes or processes, or install things (none takes a student's
#: data either); they are still imported.
NOT_CALLED = ("ppedu.cli", "ppedu.__main__", "ppedu.update", "ppedu.grading.cli", "ppedu.grading.handin",
              "ppedu.grading.submit", "ppedu.grading.sandbox", "ppedu.grading.service", "ppedu.grading.harness",
              "ppedu.grading.execute", "ppedu.grading.evaluate", "ppedu.grading.stages", "ppedu.grading.homes",
              "ppedu.mnist", "ppedu.cluster.cli", "ppedu.slides", "ppedu.vendor", "ppedu.export", "ppedu.lesson",
              "ppedu.widgets", "ppedu.animate", "ppedu.plot", "ppedu.rounding", "ppedu.reference", "ppedu.ranks",
              "ppedu.limits")

PROBE = r"""
import importlib, inspect, json, pkgutil, signal, sys, warnings
release, students, skip = sys.argv[1], json.loads(sys.argv[2]), tuple(json.loads(sys.argv[3]))
sys.argv = ["probe"]
sys.path.insert(0, release)
import ppedu
assert ppedu.__file__.startswith(release), ppedu.__file__
from ppedu.grading import my_data, my_values
warnings.simplefilter("ignore")

def flatten(x, depth=0):
    if depth > 3:
        return
    if isinstance(x, bool) or x is None:
        return
    if isinstance(x, (int, float)):
        yield round(float(x), 9)
    elif isinstance(x, str):
        yield x
    elif isinstance(x, (list, tuple, set, frozenset)):
        items = list(x)[:5000]
        yield ("cells", frozenset(tuple(c) for c in items if isinstance(c, tuple) and len(c) == 2
                                   and all(isinstance(i, int) for i in c)))
        for item in items[:200]:
            yield from flatten(item, depth + 1)
    elif isinstance(x, dict):
        for item in list(x.values())[:200]:
            yield from flatten(item, depth + 1)
    elif hasattr(x, "__dataclass_fields__") or hasattr(x, "_fields"):
        for name in list(getattr(x, "__dataclass_fields__", None) or x._fields)[:50]:
            yield from flatten(getattr(x, name, None), depth + 1)
    if type(x).__name__ in ("Timeline", "Grid"):  # a simulated grid: what it would count, and its idle cells
        for name in ("makespan", "idle_slots", "total_slots", "bubble_ratio"):
            yield round(float(getattr(x, name)), 9)
        rows = getattr(x, "rows", None)
        if rows is not None:
            yield ("cells", frozenset((s, t) for s, row in enumerate(rows) for t, c in enumerate(row) if c == -1))

modules = []
for info in pkgutil.walk_packages(ppedu.__path__, "ppedu."):
    if info.name.endswith("__main__"):
        continue
    try:
        modules.append(importlib.import_module(info.name))
    except Exception as error:  # a module needing torch in a light install, say
        print("not imported:", info.name, type(error).__name__, file=sys.stderr)
def alarm(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
seen = {}
for assignment, student, folder in students:
    values = my_values(assignment, student)
    data = my_data(assignment, student, folder)
    pool = [values, dict(values), data, dict(data.entries), student]
    pool += [data[k] for k in data]
    found = []
    for module in modules:
        if module.__name__.startswith(skip):
            continue
        for name, thing in vars(module).items():
            if name.startswith("_") or not callable(thing) or getattr(thing, "__module__", None) != module.__name__:
                continue
            for arg in pool:
                signal.setitimer(signal.ITIMER_REAL, 2)
                try:
                    result = thing(arg)
                except BaseException:
                    continue
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                try:
                    facts = list(flatten(result))
                except BaseException:  # a stand-in that refuses to be read, say
                    continue
                if facts:
                    found.append([f"{module.__name__}.{name}({type(arg).__name__})",
                                                  [f if not isinstance(f, tuple) else [f[0], sorted(map(list, f[1]))]
                                   for f in facts]])
    seen[f"{assignment}:{student}"] = found
print(json.dumps(seen))
"""


def _answers(assignment, student):
    """Each auto-graded question's answers, as the key computes them: numbers (rounded) or sets of cells."""
    v = my_values(assignment, student)
    if assignment == "final":
        key = final_key._grid_key(v)
        return {"grid_T": {round(float(key["T"]), 9), round(float(key["idle_slots"]), 9)},
                "grid_path": {round(float(key["order_idle"]), 9), round(float(key["per_microbatch"]), 9)}}
    if assignment == "ps1":
        slots = ps1_key._slots_key(v)
        return {"gpipe_slots": {round(float(slots["T"]), 9), round(float(slots["total_slots"]), 9)},
                "gpipe_idle": {round(float(slots["idle_slots"]), 9), round(float(slots["bubble"]), 9)}}
    whole = grids(student)
    idle = lambda g: frozenset((s, t) for s, row in enumerate(g.rows) for t, c in enumerate(row) if c == -1)  # noqa
    path = frozenset((e.stage, t) for e in critical_path(whole["path"].timeline)
                     for t in range(int(e.start), int(e.end)))
    return {"count": {round(float(whole["count"].total_slots), 9), round(float(whole["count"].idle_slots), 9)},
            "mark": {("cells", idle(whole["mark"]))}, "path": {("cells", path)},
            "causes": {("cells", idle(whole["causes"]))}}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "ppedu-student"
    subprocess.run([sys.executable, str(ROOT / "student" / "build.py"), str(out)], check=True, capture_output=True,
                   timeout=300)
    return out


def test_the_instructors_generators_are_not_in_the_release(release):
    assert not (release / "grader").exists()
    done = subprocess.run([sys.executable, "-c", "import grader.questiondata"], cwd=release, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(release)})
    assert done.returncode != 0 and "No module named 'grader'" in done.stderr
    for assignment in ("counting", "ps1", "final"):
        shipped = (release / "ppedu" / "grading" / "assignments" / f"{assignment}.py").read_text()
        for generator in ("def timeline", "def picture", "def costs", "def order", "def warmups", "simulate("):
            assert generator not in shipped, f"{assignment}'s student module still has {generator!r}"


def test_no_callable_of_the_release_answers_a_graded_question_from_a_students_things(release):
    # the timed final is not in the release: its students get it, data and all, from the exchange when it starts
    students = [[a, s, str((ROOT if a in TIMED else release) / "exercises" / a)]
                for a in questiondata.with_data() if a in ("counting", "ps1", "final") for s in STUDENTS]
    done = subprocess.run([sys.executable, "-c", PROBE, str(release), json.dumps(students), json.dumps(NOT_CALLED)],
                          cwd=release.parent, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(len(found) for found in seen.values()) > 50  # the probe called something and read what came back
    # A call leaks a question when what it returns holds that question's answers for every student tried: a function
    # that computes them does so for all; small numbers met by chance in one student's do not.
    hits: dict[tuple[str, str, str], set[str]] = {}
    for who, found in seen.items():
        assignment, student = who.split(":")
        for question, answers in _answers(assignment, student).items():
            for call, facts in found:
                facts = {("cells", frozenset(map(tuple, f[1]))) if isinstance(f, list) else f for f in facts}
                if answers <= facts:
                    hits.setdefault((assignment, question, call), set()).add(student)
    leaks = [f"{a}: {call} gives {q}'s answers" for (a, q, call), who in hits.items() if who == set(STUDENTS)]
    assert not leaks, "\n".join(sorted(leaks))
