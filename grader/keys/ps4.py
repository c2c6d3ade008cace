"""ps4's keys — DualPipe and the trade-offs: DeepSeek's bubble table, DualPipe simulated against 1F1B,
where interleaving stops paying (a hand-over latency, then a real model's link bandwidth), and a
schedule for a real model on a given cluster. The cluster questions' keys come from
:mod:`ppedu.cluster`, the functions chapter 4 teaches.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps4", "alice")
>>> 0 < _latency_key(v)["break_even"] < 100 and _choice_key(v)["schedule"] in CHOICES
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from grader.questions import Keyed
from ppedu import Costs, cluster, simulate
from ppedu.grading.assignments.ps4 import CHOICES, QUESTIONS
from ppedu.schedules import build


def your_cluster(v: Mapping[str, Any]) -> tuple[cluster.Model, cluster.Cluster]:
    """The student's model and their ``p`` GPUs, neighbours joined by their link."""
    return cluster.MODELS[v["model"]], cluster.Cluster(cluster.GPUS[v["gpu"]], v["p"], cluster.LINKS[v["link"]])


def _table_key(v: Mapping[str, Any]) -> dict[str, Any]:
    p, F, B, W, FB = v["p"], v["F"], v["B"], v["W"], v["FB"]
    return {"bubble_1f1b": (p - 1) * (F + B), "bubble_zb1p": (p - 1) * (F + B - 2 * W),
            "bubble_dualpipe": (p / 2 - 1) * (FB + B - 3 * W)}


def _sim_key(v: Mapping[str, Any]) -> dict[str, Any]:
    # B in DeepSeek's table is a full backward: b + w with W split off (DualPipe), b alone without (1F1B).
    dual = simulate(build("dualpipe", v["p"], v["m"]), Costs(f=v["F"], b=v["B"] - v["W"], w=v["W"], fb=v["FB"]))
    ofob = simulate(build("1f1b", v["p"], v["m"]), Costs(f=v["F"], b=v["B"]))
    return {"makespan_dualpipe": dual.makespan, "makespan_1f1b": ofob.makespan}


def _table_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "bubble_dualpipe" and abs(got - (v["p"] - 1) * (v["FB"] + v["B"] - 3 * v["W"])) < 1e-6:
        return "DualPipe's bubble scales with p/2 - 1, not p - 1: both ends of the pipeline start at once."
    return "Take the formula from the table; B there is a full backward (input and weight gradients)."


def _stage(v: Mapping[str, Any]) -> Costs:
    """A whole stage's costs in question 3: a forward and a full backward."""
    return Costs(f=v["F"], b=v["B"])


def _latency_key(v: Mapping[str, Any]) -> dict[str, Any]:
    return {"break_even": cluster.interleaving_break_even(v["p"], v["m"], _stage(v), v=2)}


def _latency_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if math.isclose(got, cluster.interleaving_break_even(v["p"], v["m"], _stage(v).per_chunk(2), v=2), rel_tol=1e-3):
        return "Give the costs of a whole stage: the function cuts them into v = 2 chunks itself."
    return "Use your own p, m and stage costs (f = values.F, b = values.B), with v = 2."


def _bandwidth_key(v: Mapping[str, Any]) -> dict[str, Any]:
    model, gpus = your_cluster(v)
    return {"min_bandwidth": cluster.break_even_bandwidth(model, gpus, v["m"], v=2) / cluster.GB}


def _bandwidth_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if math.isclose(got, key[name] * cluster.GB, rel_tol=1e-3):
        return "Give it in GB/s (10⁹ bytes per second), not bytes per second."
    return (f"Build your cluster from the presets (cluster.MODELS[{v['model']!r}], cluster.GPUS[{v['gpu']!r}], "
            f"cluster.LINKS[{v['link']!r}], {v['p']} GPUs) and use m = values.m.")


def _rows(v: Mapping[str, Any]) -> list[cluster.PlanRow]:
    model, gpus = your_cluster(v)
    return cluster.plan(model, gpus, [v["m"]])


def _choice_key(v: Mapping[str, Any]) -> dict[str, Any]:
    winner = cluster.best(_rows(v))
    return {"schedule": "none" if winner is None else winner.schedule}


def _choice_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if got == "none":
        return "At least one schedule fits: look at each row's `fits`."
    row = next(r for r in _rows(v) if r.schedule == got)
    if not row.fits:
        return f"`{got}` needs {max(row.memory.total) / cluster.GB:.1f} GB on its fullest GPU, more than yours hold."
    return f"`{got}` fits, but another schedule that fits moves more tokens per second."


KEYS: dict[str, Any] = {
    "table": Keyed(QUESTIONS["table"], _table_key, _table_hint),
    "simulated": Keyed(QUESTIONS["simulated"], _sim_key,
                       lambda *a: "Use the costs as the question gives them; W is split off only in DualPipe."),
    "break_even": Keyed(QUESTIONS["break_even"], _latency_key, _latency_hint),
    "min_bandwidth": Keyed(QUESTIONS["min_bandwidth"], _bandwidth_key, _bandwidth_hint),
    "choose": Keyed(QUESTIONS["choose"], _choice_key, _choice_hint),
}
