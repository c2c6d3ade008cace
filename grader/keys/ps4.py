"""ps4's keys — DualPipe and the trade-offs: DeepSeek's bubble table, the pictured grid of 1F1B run
in waves (counted), the closed form of its step time (the student's function, on their own values,
the notebook's example and :data:`HIDDEN_CASES`, against the simulator), and the schedule for a real
model on a given cluster (:mod:`ppedu.cluster`'s plan). The written reasons are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps4", "alice")
>>> _grid_key(v)["T"] == (v["grid_m"] + 2 * (v["grid_p"] - 1)) * 3 and _choice_key(v)["schedule"] in CHOICES
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grader.questions import Keyed
from ppedu import Costs, cluster, formulas, simulate
from ppedu.grading.answers import Wrong, results as read_results
from ppedu.grading.assignments.ps4 import CHOICES, QUESTIONS, WAVES, Formula, _in_waves

#: (p, m, k, f, b) the autograder also calls the student's formula on, never shown to them. k divides m in every one.
HIDDEN_CASES = ((5, 10, 5, 1.0, 2.0), (3, 9, 3, 1.5, 2.5), (6, 12, 4, 2.0, 3.0), (4, 8, 1, 1.0, 2.0),
                (7, 21, 3, 0.5, 1.25))


def your_cluster(v: Mapping[str, Any]) -> tuple[cluster.Model, cluster.Cluster]:
    """The student's model and their ``p`` GPUs, neighbours joined by their link."""
    return cluster.MODELS[v["model"]], cluster.Cluster(cluster.GPUS[v["gpu"]], v["p"], cluster.LINKS[v["link"]])


def _table_key(v: Mapping[str, Any]) -> dict[str, Any]:
    p, F, B, W, FB = v["p"], v["F"], v["B"], v["W"], v["FB"]
    return {"bubble_1f1b": (p - 1) * (F + B), "bubble_zb1p": (p - 1) * (F + B - 2 * W),
            "bubble_dualpipe": (p / 2 - 1) * (FB + B - 3 * W)}


def _table_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "bubble_dualpipe" and abs(got - (v["p"] - 1) * (v["FB"] + v["B"] - 3 * v["W"])) < 1e-6:
        return "DualPipe's bubble scales with p/2 - 1, not p - 1: both ends of the pipeline start at once."
    return "Take the formula from the table; B there is a full backward (input and weight gradients)."


def makespan(p: int, m: int, k: int, f: float, b: float) -> float:
    """The simulated step time of 1F1B in ``k`` waves (the key of the derivation)."""
    return float(simulate(_in_waves(p, m, k), Costs(f=f, b=b)).makespan)


def _grid_key(v: Mapping[str, Any]) -> dict[str, Any]:
    t = simulate(_in_waves(v["grid_p"], v["grid_m"], WAVES), Costs(f=1, b=2))
    return {"T": t.makespan, "idle_slots": t.idle_slots, "peak_activations": tuple(t.peak_activations)}


def _grid_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    p, m = v["grid_p"], v["grid_m"]
    if name == "T":
        if got == (m + p - 1) * 3:
            return "That is one 1F1B pass over all the micro-batches: the picture fills and drains the pipeline once per wave."
        return "Count the columns of the picture, from t1 to the step where the last backward ends."
    if name == "idle_slots":
        if got == p * key["T"] - key["idle_slots"]:
            return "You counted the busy slots (an operation or its `·`); count the `.` slots."
        return "Count the `.` slots of every GPU's row; a `·` is a backward still running, not idle."
    if len(got) != p:
        return f"Give one number per GPU of the picture ({p}), GPU 0 first."
    if tuple(got) == tuple(reversed(key["peak_activations"])):
        return "GPU 0 is the bottom row of the picture: list GPU 0 first."
    return ("A forward stores its micro-batch's activations until that micro-batch's backward on the same GPU; "
            "per GPU, count how many are stored at once at most (within a wave).")


@dataclass(frozen=True)
class FormulaJudge:
    """The student's ``waves_makespan`` on their own values, the example and :data:`HIDDEN_CASES`,
    against the simulator; what it gets wrong on a hidden case is said without the case."""

    form: Formula

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Any, ...], ...]]:
        return {self.form.name: (self.form.own(v), self.form.example, *HIDDEN_CASES)}

    def judge(self, data: Mapping[str, object], v: Mapping[str, Any]) -> str:
        results = read_results(data, self.form.name, hidden=HIDDEN_CASES)
        for args in self.calls(v)[self.form.name]:
            p, m, k, f, b = args
            call = f"{self.form.name}({p}, {m}, {k}, {f:g}, {b:g})"
            if args not in results:
                raise Wrong(f"`{self.form.name}` was not run on every input the autograder chose.")
            expected, got = makespan(*args), results[args]
            if abs(got - expected) <= 1e-6 * max(1.0, expected):
                continue
            if args in HIDDEN_CASES:
                raise Wrong(f"`{self.form.name}` is right on the inputs you can see but not on one the autograder "
                            "chose (those are not shown): does it hold for any p, m, k, f and b, k dividing m?")
            raise Wrong(f"{call} returned {got:g}, but 1F1B in {k} wave(s) of p={p}, m={m} takes {expected:g} "
                        f"when f={f:g}, b={b:g}." + _formula_hint(got, args))
        return "correct"


def _formula_hint(got: float, args: tuple[Any, ...]) -> str:
    p, m, k, f, b = args
    if abs(got - (m + p - 1) * (f + b)) < 1e-6:
        return " That is one pass over all m micro-batches: each wave fills and drains the pipeline again."
    if abs(got - formulas.bubble_ratio(p, m)) < 1e-6 or got < f + b:
        return " Give a time (in the units of f and b), not a ratio."
    return " Check it on your picture first: with p, m of the grid, k = 2, f = 1, b = 2 it must give your T."


def _rows(v: Mapping[str, Any]) -> list[cluster.PlanRow]:
    model, gpus = your_cluster(v)
    return cluster.plan(model, gpus, [v["m"]])


def _choice_key(v: Mapping[str, Any]) -> dict[str, Any]:
    winner = cluster.best(_rows(v))
    return {"schedule": "none" if winner is None else winner.schedule}


def _choice_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if got == "none":
        return "At least one schedule fits: look at each row's memory against your GPUs'."
    row = next((r for r in _rows(v) if r.schedule == got), None)
    if row is None:
        return "That schedule is not one of the plan's rows."
    if not row.fits:
        return f"`{got}` needs {max(row.memory.total) / cluster.GB:.1f} GB on its fullest GPU, more than yours hold."
    return f"`{got}` fits, but another schedule that fits moves more tokens per second."


KEYS: dict[str, Any] = {
    "table": Keyed(QUESTIONS["table"], _table_key, _table_hint),
    "grid": Keyed(QUESTIONS["grid"], _grid_key, _grid_hint),
    "waves": FormulaJudge(QUESTIONS["waves"]),
    "choose": Keyed(QUESTIONS["choose"], _choice_key, _choice_hint),
}
