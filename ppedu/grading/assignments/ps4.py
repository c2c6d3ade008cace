"""ps4 — DualPipe and the trade-offs: DeepSeek's bubble table, DualPipe simulated against 1F1B,
the hand-over latency at which interleaving stops paying, and a schedule for a given cluster.

>>> key = _latency_key(values("alice"))
>>> 0 < key["break_even"] <= MAX_LATENCY
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu import Costs, simulate
from ppedu.grading.answers import Choice, Number
from ppedu.grading.questions import Question
from ppedu.grading.students import pick
from ppedu.schedules import build
from ppedu.simulate import Timeline

#: Per-stage costs of a whole stage in questions 3 and 4 (a v-way cut pays 1/v per chunk).
STAGE = Costs(f=2, b=4)
STEP, MAX_LATENCY = 0.1, 10.0
CHOICES = ("gpipe", "1f1b", "interleaved", "dualpipe")


def values(student: str) -> dict[str, Any]:
    p = pick("ps4", student, "p", (4, 6, 8))
    f = pick("ps4", student, "f", (1, 2))
    return {
        "p": p, "m": p * pick("ps4", student, "k", (2, 3, 4)),
        "F": f, "B": 2 * f, "W": f, "FB": f * pick("ps4", student, "overlap", (2.4, 2.7)),
        "comm": pick("ps4", student, "comm", (0.25, 0.5, 1.0)),
        "activation_budget": p * pick("ps4", student, "budget", (1, 1.5, 2)),
        "two_copies_fit": pick("ps4", student, "copies", (True, False)),
    }


def _table_key(v: Mapping[str, Any]) -> dict[str, Any]:
    p, F, B, W, FB = v["p"], v["F"], v["B"], v["W"], v["FB"]
    return {"bubble_1f1b": (p - 1) * (F + B), "bubble_zb1p": (p - 1) * (F + B - 2 * W),
            "bubble_dualpipe": (p / 2 - 1) * (FB + B - 3 * W)}


def _sim_key(v: Mapping[str, Any]) -> dict[str, Any]:
    # B in DeepSeek's table is a full backward: b + w with W split off (DualPipe), b alone without (1F1B).
    dual = simulate(build("dualpipe", v["p"], v["m"]), Costs(f=v["F"], b=v["B"] - v["W"], w=v["W"], fb=v["FB"]))
    ofob = simulate(build("1f1b", v["p"], v["m"]), Costs(f=v["F"], b=v["B"]))
    return {"makespan_dualpipe": dual.makespan, "makespan_1f1b": ofob.makespan}


def run(name: str, p: int, m: int, comm: float) -> Timeline:
    """``name`` on p GPUs, m micro-batches, under :data:`STAGE` costs and hand-over latency ``comm``
    (interleaved with v = 2, each chunk paying half a stage's time)."""
    schedule = build(name, p, m, 2 if name == "interleaved" else 1)
    costs = Costs(f=STAGE.f, b=STAGE.b, comm=comm)
    return simulate(schedule, costs.per_chunk(schedule.virtual))


def _latency_key(v: Mapping[str, Any]) -> dict[str, Any]:
    p = v["p"]
    for i in range(round(MAX_LATENCY / STEP) + 1):
        c = round(i * STEP, 10)
        if run("interleaved", p, 2 * p, c).makespan >= run("1f1b", p, 2 * p, c).makespan:
            return {"break_even": c}
    return {"break_even": MAX_LATENCY}


def _choice_key(v: Mapping[str, Any]) -> dict[str, Any]:
    allowed = [n for n in CHOICES if n != "dualpipe" or v["two_copies_fit"]]
    timelines = {n: run(n, v["p"], v["m"], v["comm"]) for n in allowed}
    fitting = [n for n in allowed if max(timelines[n].peak_stage_activations) <= v["activation_budget"]]
    best = min(fitting, key=lambda n: (timelines[n].makespan, max(timelines[n].peak_stage_activations)))
    return {"schedule": best}


def _table_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "bubble_dualpipe" and abs(got - (v["p"] - 1) * (v["FB"] + v["B"] - 3 * v["W"])) < 1e-6:
        return "DualPipe's bubble scales with p/2 - 1, not p - 1: both ends of the pipeline start at once."
    return "Take the formula from the table; B there is a full backward (input and weight gradients)."


def _choice_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if got == "dualpipe" and not v["two_copies_fit"]:
        return "DualPipe keeps two copies of the parameters, and yours do not fit twice."
    t = run(got, v["p"], v["m"], v["comm"])
    if max(t.peak_stage_activations) > v["activation_budget"]:
        return f"{got} needs more activation memory than the budget allows."
    return f"{got} fits, but another schedule that fits finishes sooner."


QUESTIONS: dict[str, Any] = {
    "table": Question((Number("bubble_1f1b"), Number("bubble_zb1p"), Number("bubble_dualpipe")), _table_key, _table_hint),
    "simulated": Question((Number("makespan_dualpipe"), Number("makespan_1f1b")), _sim_key,
                          lambda *a: "Use the costs as the question gives them; W is split off only in DualPipe."),
    "break_even": Question((Number("break_even", rel=1e-6),), _latency_key,
                           lambda *a: "Scan the latency from 0 in steps of 0.1 and stop at the first one where "
                                      "interleaving is not faster."),
    "choose": Question((Choice("schedule", CHOICES),), _choice_key, _choice_hint),
}
