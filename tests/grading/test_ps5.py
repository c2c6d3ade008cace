"""ps5's judge on executors run in this process against the grader's own chunks (the service answered directly, as
the sandbox's socket would carry it): exact points for the solution, ppedu's executor trimmed into an answer, an
order made globally rather than by a loop of the GPUs, and recomputing executors that keep what they should not.
The same cases through the real autograder, where the simulator has no code, are tests/grading/corpus.py's."""

import json

import pytest

from conftest import ROOT
from corpus import TRIMMED_LIBRARY_EXECUTOR
from grader.keys.ps5 import KEYS
from ppedu.grading import my_values
from ppedu.grading.assignments import ps5
from ppedu.grading.stages import Stages

STUDENT = "alice"


class Direct:
    """The service of one run, in this process: requests go through JSON, as they would through the socket."""

    def __init__(self, stages):
        self.stages = stages

    def ask(self, message):
        try:
            return json.loads(json.dumps(self.stages.handle(json.loads(json.dumps(message)))))
        except Exception as refused:  # the client raises on a refusal
            raise RuntimeError(str(refused)) from None


def grade(monkeypatch, namespace, question):
    """``question``'s score and report for ``namespace``'s functions, on every spec the key asks for."""
    judge, values = KEYS[question], my_values("ps5", STUDENT)
    calls = judge.calls(values)[judge.form.function]
    stages = Stages(json.loads(json.dumps(calls)), ps5._setting)

    def begin(remote, spec, lifetimes):  # Remote's own, with this process's service in place of the socket's
        remote.client, remote.lifetimes, remote.last, remote.graph = Direct(stages), lifetimes, -1, True
        remote.client.ask({"begin": list(spec)})

    monkeypatch.setattr(ps5.Remote, "__init__", begin)
    runs = []
    for k, args in enumerate(calls):
        try:
            out = ps5.run(namespace[judge.form.function], args[0])
        except Exception as error:  # as the harness records it
            out = {"__raised__": type(error).__name__, "message": str(error)[:300]}
        runs.append([[list(args[0])], out, stages.observed(k)])
    report = judge.judge({judge.form.function: json.loads(json.dumps(runs))}, values)
    return report.score, str(report)


def answers(*replace):
    """The solution's setup and answer cells run here, ``replace``'s (grade_id, source) instead of theirs."""
    nb = json.loads((ROOT / "solutions" / "ps5" / "ps5.ipynb").read_text())
    cells = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in nb["cells"] if c["cell_type"] == "code"}
    cells.update(dict(replace))
    namespace = {"my_values": lambda *_: my_values("ps5", STUDENT)}
    for gid in ("executor_answer", "recompute_answer"):
        exec("import torch\n" + cells[gid], namespace)
    return namespace


#: ppedu's executor trimmed as the corpus pastes it, with the simulator it orders by (which the autograder withholds).
TRIMMED = "from ppedu import simulate\n" + TRIMMED_LIBRARY_EXECUTOR + "run_recomputed = run_pipeline\n"
#: Recomputes, and hoards every recomputed output past the end.
RECOMPUTE_HOARDER = '''
_HOARD = []


def run_recomputed(schedule, chunks, xs, ys, loss_fn):
    def chunk(c):
        def run(x):
            out = chunks[c](x)
            _HOARD.append(out)
            return out
        return run
    return drive(schedule, [chunk(c) for c in range(len(chunks))], xs, ys, loss_fn, recompute=True)
'''
#: Runs each recomputation twice and keeps the first until the end (two forwards with a graph before the backward).
RECOMPUTES_TWICE = '''
def run_recomputed(schedule, chunks, xs, ys, loss_fn):
    kept = []

    def chunk(c):
        def run(x):
            if torch.is_grad_enabled():
                kept.append(chunks[c](x))  # an extra forward with a graph, held until the end of the step
            return chunks[c](x)
        return run
    loss = drive(schedule, [chunk(c) for c in range(len(chunks))], xs, ys, loss_fn, recompute=True)
    kept.clear()
    return loss
'''
#: Right, but never notices a deadlock: on the deadlocked lists it loops until a cap and returns.
NEVER_STOPS = '''
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    try:
        return drive(schedule, chunks, xs, ys, loss_fn, recompute=False)
    except RuntimeError:
        return 0.0
'''
#: Names only GPU 0's blocked operation.
NAMES_ONE = '''
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    try:
        return drive(schedule, chunks, xs, ys, loss_fn, recompute=False)
    except RuntimeError as error:
        raise RuntimeError(str(error).split(",")[0]) from None
'''
#: Names every operation of the lists (the red team's route to the naming point): not where each GPU stopped.
NAMES_EVERY_OP = '''
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    try:
        return drive(schedule, chunks, xs, ys, loss_fn, recompute=False)
    except RuntimeError:
        raise RuntimeError(" ".join(repr(op) for stage in schedule.stages for op in stage)) from None
'''

ALL = {"one_f_one_b": 3, "gpipe": 1, "interleaved": 1, "deadlock": 2, "recomputed": 2}


@pytest.mark.parametrize("case, expected", [
    ("solution", ALL),
    # ppedu's run_schedule pasted (if the simulator were there: the autograder withholds it, so there it scores 0):
    # the orders are right; on the deadlocked lists the simulator refuses before a chunk runs; as recomputation it
    # keeps every graph
    ("trimmed", {**ALL, "deadlock": 0, "recomputed": 1.4}),
    ("recompute_hoarder", {"recomputed": 1.4}),
    ("recomputes_twice", {"recomputed": 1.0}),  # an extra forward is no operation of the schedule's: order too
    ("never_stops", {"deadlock": 0}),
    ("names_one", {"deadlock": 1}),
    ("names_every_op", {"deadlock": 1}),
])
def test_each_executor_scores_what_it_does(monkeypatch, case, expected):
    namespace = answers(*{"solution": (), "trimmed": [("executor_answer", TRIMMED), ("recompute_answer", "")],
                          "recompute_hoarder": [("recompute_answer", RECOMPUTE_HOARDER)],
                          "recomputes_twice": [("recompute_answer", RECOMPUTES_TWICE)],
                          "never_stops": [("executor_answer", _cell("executor_answer") + NEVER_STOPS)],
                          "names_one": [("executor_answer", _cell("executor_answer") + NAMES_ONE)],
                          "names_every_op": [("executor_answer", _cell("executor_answer") + NAMES_EVERY_OP)]}[case])
    for question, points in expected.items():
        score, report = grade(monkeypatch, namespace, question)
        assert score == points, report
        assert "Traceback" not in report


def _cell(gid):
    nb = json.loads((ROOT / "solutions" / "ps5" / "ps5.ipynb").read_text())
    return next(c["source"] for c in nb["cells"] if c["metadata"]["nbgrader"]["grade_id"] == gid)


def test_a_deadlock_is_reported_per_gpu_and_a_wrong_report_says_what_is_missing(monkeypatch):
    score, report = grade(monkeypatch, answers(("executor_answer", _cell("executor_answer") + NAMES_ONE)), "deadlock")
    assert "does not name GPU 1's F1c1" in report  # the visible lists (p = 2, m = 3)
    assert [op.label() for op in ps5.deadlocked(2, 3).stages[0]] == ["F0c0", "B0c0", "F1c0", "B1c0", "F2c0", "B2c0"]
