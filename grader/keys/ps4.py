"""ps4's keys — DeepSeek's ZB1P row on any costs (the student's closed form against ZB-H1's simulated idle time), the
pictured grid of 1F1B run in waves (question data made here: ``shown(k)``; counted), the closed form of its step time
(the student's function on the picture's sizes, the notebook's example and :data:`HIDDEN_CASES`, against the
simulator), and the schedule for a real model on a given cluster (:mod:`ppedu.cluster`'s plan). The written reasons
are graded by hand.

Every student's costs have ``W > min(F, B − W)`` (``ps4._sound``, whose docstring does not say so): there DeepSeek's
ZB1P formula ``(p − 1)(F + B − 2W)`` is wrong, so quoting it scores nothing.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps4", "alice")
>>> g = params(v["variant"])
>>> _grid_key(v)["T"] == (g["m"] + 2 * (g["p"] - 1)) * (1 + g["b"]) and _choice_key(v)["schedule"] in CHOICES
True
>>> v["W"] > min(v["F"], v["B"] - v["W"])
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge as ClosedForm
from grader.questiondata import variant
from grader.questions import Keyed
from ppedu import Costs, cluster, formulas, lesson, simulate
from ppedu.grading.answers import Wrong, results as read_results
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps4 import CHOICES, QUESTIONS, WAVES, Formula
from ppedu.grading.students import Picker, draw, pick
from ppedu.grid import grid as cut
from ppedu.ops import Op, Schedule
from ppedu.picture import Picture
from ppedu.schedules import interleaved_1f1b, one_f_one_b, zero_bubble_h1

#: (p, m, k, f, b) the autograder also calls the student's formula on, never shown to them. k divides m in every one.
HIDDEN_CASES = ((5, 10, 5, 1.0, 2.0), (3, 9, 3, 1.5, 2.5), (6, 12, 4, 2.0, 3.0), (4, 8, 1, 1.0, 2.0),
                (7, 21, 3, 0.5, 1.25))


# ---- question 1: DeepSeek's ZB1P row on any costs ---------------------------------------------------------------

@cache
def _zb1p(p: int, F: float, B: float, W: float) -> float:
    """ZB-H1's simulated idle time per GPU (all alike: equal stages), B the full backward."""
    t = simulate(zero_bubble_h1(p, 2 * p), Costs(f=F, b=B - W, w=W))
    return max(t.makespan - busy for busy in t.busy_per_stage)


def _zb1p_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, F, B, W = args
    if abs(got - (p - 1) * (F + B - 2 * W)) < 1e-9:
        return (f"that is DeepSeek's row, which books too little here: the simulated GPUs idle {want:g}. A W longer "
                "than the gap it is meant to fill leaves other paths longer than the drain.")
    return (f"ZB-H1's GPUs each idle {want:g} (simulated): the last GPU's fill, GPU 0's wait for the first gradient, "
            "the drain.")


def _zb1p_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Three inputs the student never sees: one where each of the three paths is the longest."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps4-hidden", v.student, f"{name}:{what}", tuple(choices))

    p, q, r = choose("p", range(2, 13)), choose("q", range(2, 13)), choose("r", range(2, 13))
    w = choose("w", (0.5, 0.75))
    return ((p, choose("F", (2.0, 3.0)), 1.0 + w, w),  # W short: the drain is the longest path, DeepSeek's row holds
            (q, 3.0, 1.0 + choose("W", (2.0, 2.5)), choose("W", (2.0, 2.5))),  # the forward longest: the fill
            (r, 0.5, 2.0 + choose("W2", (1.0, 2.0)), choose("W2", (1.0, 2.0))))  # the input-gradient pass: GPU 0's wait


# ---- questions 2 and 3: 1F1B in waves, pictured ----------------------------------------------------------------

def in_waves(p: int, m: int, k: int) -> Schedule:
    """1F1B over each ``m/k`` micro-batches in turn, the next wave starting on a GPU as soon as it is free."""
    size = m // k
    wave = one_f_one_b(p, size).stages
    stages = tuple(tuple(Op(o.kind, o.microbatch + w * size, o.chunk) for w in range(k) for o in wave[j])
                   for j in range(p))
    return Schedule(stages, f"1F1B in {k} waves", (tuple(range(p)),), m)


def params(k: int) -> dict[str, Any]:
    """Variant ``k``'s picture: 1F1B in two waves on ``p`` GPUs, ``m`` micro-batches, a backward ``b`` steps."""
    return draw("ps4-variant", str(k), _draw, _sound)


def _draw(pick_: Picker) -> dict[str, Any]:
    return {"p": pick_("p", (3, 4, 5)), "m": pick_("m", (4, 6, 8)), "b": pick_("b", (2, 3))}


def _sound(g: Mapping[str, Any]) -> bool:
    """Not as many busy as idle slots (counting the busy ones would score), and not wider than a screen."""
    t = _pictured(g["p"], g["m"], g["b"])
    return t.idle_slots != t.busy_slots and t.makespan <= 60


@cache
def _pictured(p: int, m: int, b: int) -> Any:
    return simulate(in_waves(p, m, WAVES), Costs(f=1, b=b))


def shown(k: int) -> dict[str, Any]:
    """What variant ``k`` shows: the picture of question 2."""
    g = params(k)
    title = f"Question 2: a forward takes one step, a backward {g['b']}"
    return {"grid": Picture.of(cut(_pictured(g["p"], g["m"], g["b"])), title=title).to_json()}


def _timeline(v: Values) -> Any:
    g = params(variant(v))
    return _pictured(g["p"], g["m"], g["b"])


def _grid_key(v: Values) -> dict[str, Any]:
    t = _timeline(v)
    return {"T": t.makespan, "idle_slots": t.idle_slots, "peak_activations": tuple(t.peak_activations)}


def _grid_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Values) -> str | None:
    g = params(variant(v))
    p, m, b = g["p"], g["m"], g["b"]
    if name == "T":
        if got == (m + p - 1) * (1 + b):
            return ("That is one 1F1B pass over all the micro-batches: the picture fills and drains the pipeline once "
                    "per wave.")
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


def makespan(p: int, m: int, k: int, f: float, b: float) -> float:
    """The simulated step time of 1F1B in ``k`` waves (the key of the derivation)."""
    return float(simulate(in_waves(p, m, k), Costs(f=f, b=b)).makespan)


@dataclass(frozen=True)
class FormulaJudge:
    """The student's ``waves_makespan`` on their picture's sizes, the example and :data:`HIDDEN_CASES`, against the
    simulator; what it gets wrong on a hidden case is said without the case."""

    form: Formula

    def pictured(self, v: Values) -> tuple[Any, ...]:
        g = params(variant(v))
        return (g["p"], g["m"], WAVES, 1, g["b"])

    def calls(self, v: Values) -> dict[str, tuple[tuple[Any, ...], ...]]:
        return {self.form.name: (self.pictured(v), self.form.example, *HIDDEN_CASES)}

    def secret(self, v: Values) -> dict[str, tuple[tuple[Any, ...], ...]]:
        return {self.form.name: HIDDEN_CASES}

    def judge(self, data: Mapping[str, object], v: Values) -> str:
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
            where = "your picture" if args == self.pictured(v) else "the example"
            raise Wrong(f"{call} ({where}) returned {got:g}, but 1F1B in {k} wave(s) of p={p}, m={m} takes "
                        f"{expected:g} when f={f:g}, b={b:g}." + _formula_hint(got, args))
        return "correct"


def _formula_hint(got: float, args: tuple[Any, ...]) -> str:
    p, m, k, f, b = args
    if abs(got - (m + p - 1) * (f + b)) < 1e-6:
        return " That is one pass over all m micro-batches: each wave fills and drains the pipeline again."
    if abs(got - formulas.bubble_ratio(p, m)) < 1e-6 or got < f + b:
        return " Give a time (in the units of f and b), not a ratio."
    return " Check it on your picture first: with its p, m and backward, k = 2 and f = 1 it must give your T."


# ---- question 4: a schedule for the student's cluster ------------------------------------------------------------

def your_cluster(v: Mapping[str, Any]) -> tuple[cluster.Model, cluster.Cluster]:
    """The student's model and their ``p`` GPUs, neighbours joined by their link."""
    return cluster.MODELS[v["model"]], cluster.Cluster(cluster.GPUS[v["gpu"]], v["p"], cluster.LINKS[v["link"]])


def _rows(v: Mapping[str, Any]) -> list[cluster.PlanRow]:
    model, gpus = your_cluster(v)
    return cluster.plan(model, gpus, [v["m"]])


def _choice_key(v: Mapping[str, Any]) -> dict[str, Any]:
    winner = cluster.best(_rows(v))
    return {"schedule": "none" if winner is None else winner.schedule}


def link_break(v: Mapping[str, Any]) -> tuple[float, str] | None:
    """The bandwidth (GB/s, at the link's own latency) below which the chosen schedule changes, and the schedule
    that then wins: the link halved until the choice changes, then bisected (``None``: nothing fits, or no bandwidth
    down to a millionth of the link's changes it)."""
    model, gpus = your_cluster(v)
    winner = cluster.best(_rows(v))
    if winner is None:
        return None

    def best_at(bandwidth: float) -> str:
        link = replace(gpus.link, bandwidth=bandwidth)
        row = cluster.best(cluster.plan(model, cluster.Cluster(gpus.gpu, gpus.gpus, link), [v["m"]]))
        return "none" if row is None else row.schedule

    high = gpus.link.bandwidth
    low = high / 2
    while best_at(low) == winner.schedule:
        if low < gpus.link.bandwidth * 1e-6:
            return None
        high, low = low, low / 2
    for _ in range(20):
        middle = (high + low) / 2
        high, low = (middle, low) if best_at(middle) == winner.schedule else (high, middle)
    return high / 1e9, best_at(low)


def margin(v: Mapping[str, Any]) -> tuple[str, float] | None:
    """The fitting row next after the winner, and how much faster the winner is (a fraction of its tokens per
    second); ``None`` where fewer than two rows fit."""
    fitting = sorted((r for r in _rows(v) if r.fits), key=lambda r: -r.tokens_per_second)
    if len(fitting) < 2:
        return None
    return fitting[1].schedule, fitting[0].tokens_per_second / fitting[1].tokens_per_second - 1


def for_the_grader(v: Mapping[str, Any]) -> str:
    """Question 4b's figures for whoever grades it by hand, computed here: where a slower link changes the choice,
    and how far the winner leads the next fitting row (a lead under 1 % is a near-tie)."""
    found, lead = link_break(v), margin(v)
    parts = ["nothing fits" if found is None and lead is None and cluster.best(_rows(v)) is None else
             "no bandwidth down to a millionth of the link's changes the choice" if found is None else
             f"the choice changes below {found[0]:.3g} GB/s (to {found[1]})"]
    if lead is not None:
        parts.append(f"the winner leads {lead[0]} by {lead[1]:.2%}" + (" (a near-tie)" if lead[1] < 0.01 else ""))
    model, gpus = your_cluster(v)
    bandwidth = cluster.break_even_bandwidth(model, gpus, v["m"])
    parts.append(f"interleaving stops paying against 1F1B below {bandwidth / 1e9:.3g} GB/s")
    if 0 < bandwidth < math.inf:  # the tie's hand-over time, the figure 4b asks for
        tie = gpus.link.latency + model.hand_over_bytes / bandwidth
        chunk = cluster.costs_for(model, gpus, interleaved_1f1b(v["p"], v["m"], 2))[0].forward(1, 1)
        parts[-1] += f" (a hand-over of t* = {tie * 1e3:.3g} ms, {tie / chunk:.3g} chunk forwards)"
    return "For question 4b's grader: " + "; ".join(parts) + "."


@dataclass(frozen=True)
class Choose:
    """Question 4a judged against the plan; its message carries question 4b's figures for the grader (the test cell's
    output, which the formgrader shows above 4b's answer)."""

    keyed: Keyed

    def judge(self, data: Mapping[str, object], v: Values) -> str:
        note = for_the_grader(v)
        try:
            verdict = self.keyed.judge(data, v)
        except Wrong as wrong:
            raise Wrong(f"{wrong}\n({note})") from None
        return f"{verdict}\n({note})"


def _choice_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any],
                 v: Mapping[str, Any]) -> str | None:
    if got == "none":
        return "At least one schedule fits: look at each row's memory against your GPUs'."
    row = next((r for r in _rows(v) if r.schedule == got), None)
    if row is None:
        return "That schedule is not one of the plan's rows."
    if not row.fits:
        return f"`{got}` needs {max(row.memory.total) / cluster.GB:.1f} GB on its fullest GPU, more than yours hold."
    return f"`{got}` fits, but another schedule that fits moves more tokens per second."


# ---- question 6: a snake's hand-overs ----------------------------------------------------------------------------

def snake(p: int, m: int, v: int) -> Schedule:
    """The model's ``p·v`` chunks in a snake (round ``r`` on GPUs ``0 … p−1`` if ``r`` is even, back if it is odd; the
    V of ZB-V and DualPipeV at ``v = 2``), run breadth first: every micro-batch through a chunk before the next."""
    place = [c % p if (c // p) % 2 == 0 else p - 1 - c % p for c in range(p * v)]
    order = [Op("F", i, c) for c in range(p * v) for i in range(m)] + \
            [Op("B", i, c) for c in reversed(range(p * v)) for i in range(m)]
    return Schedule(tuple(tuple(op for op in order if place[op.chunk] == j) for j in range(p)), "snake",
                    (tuple(place),), m, v)


def _handovers(name: str, args: tuple[Any, ...]) -> float:
    """The snake's hand-overs in a step: operations whose input comes from another GPU."""
    return float(lesson.hand_overs(snake(*args)))


def _handovers_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, m, v = args
    if abs(got - lesson.hand_overs(interleaved_1f1b(p, m, v))) < 1e-9:
        return "that is interleaving's round-robin count; in a snake the turn between two rounds stays on one GPU."
    return "count the chunk boundaries a micro-batch crosses between GPUs, forward and backward, in the snake."


def _handovers_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    p = pick("ps4-hidden", v.student, "handovers:p", range(2, 13))
    return (p, p * pick("ps4-hidden", v.student, "handovers:k", (2, 3)), pick("ps4-hidden", v.student, "handovers:v",
                                                                           (2, 3, 6))),


KEYS: dict[str, Any] = {
    "zb1p": ClosedForm(QUESTIONS["zb1p"], lambda name, args: _zb1p(*args), _zb1p_why, _zb1p_hidden),
    "grid": Keyed(QUESTIONS["grid"], _grid_key, _grid_hint),
    "waves": FormulaJudge(QUESTIONS["waves"]),
    "choose": Choose(Keyed(QUESTIONS["choose"], _choice_key, _choice_hint)),
    "handovers": ClosedForm(QUESTIONS["handovers"], _handovers, _handovers_why, _handovers_hidden),
}
