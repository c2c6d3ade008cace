"""The final exam's keys: the hand-built order's grid read by the simulator (its makespan, idle slots, the idle time
its idle causes put on the order rather than on filling and draining, and the steps one more micro-batch adds along
its critical path), and the fastest schedule and micro-batch count under a memory budget (the student's closed form
on their own values, the examples and hidden inputs) against the simulator, within the 1 % the question states.
The written answers are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("final", "alice")
>>> key = _grid_key(v)
>>> key["idle_slots"] == key["T"] * v["grid_p"] - (1 + v["grid_b"]) * v["grid_m"] * v["grid_p"]
True
>>> key["per_microbatch"] > 1 + v["grid_b"]  # the short warm-up: slower than 1F1B's f + b a micro-batch
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grader.keys.ps1 import FormulaJudge
from grader.questions import Keyed
from ppedu import Costs, simulate
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.final import QUESTIONS, timeline
from ppedu.grading.students import pick
from ppedu.schedules import one_f_one_b, zero_bubble_h2

#: The idle causes that are the pipeline's own ends, not the order's (with no hand-over cost, none is in transit).
_ENDS = ("fill", "drain", "hand-over")


def _grid_key(v: Mapping[str, Any]) -> dict[str, Any]:
    t = timeline(v)
    causes = t.idle_causes().totals()
    return {"T": t.makespan, "idle_slots": t.idle_slots,
            "order_idle": sum(x for cause, x in causes.items() if cause not in _ENDS),
            "per_microbatch": timeline(v, 1).makespan - t.makespan}


def _grid_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "idle_slots" and got == v["grid_p"] * key["T"] - key["idle_slots"]:
        return "you counted the busy slots; count the `.` ones."
    if name == "T":
        return "count the picture's columns, t1 to the last (a `·` continues the operation to its left)."
    if name == "order_idle" and got == key["idle_slots"]:
        return "that is every idle slot: leave out those before a GPU's first backward (filling) and after its last forward (draining)."
    if name == "per_microbatch" and got == 1 + v["grid_b"]:
        return ("that is 1F1B's f + b, what each GPU's own work grows by; follow the critical path through the steady "
                "state: which GPUs does its loop pass, and how long is one turn?")
    if name == "per_microbatch":
        return "find the loop the critical path repeats once per micro-batch in the middle of the grid, and add up one turn."
    return None


#: Question 2's two schedules: how each is built, and its backward as passes (1F1B's is one, ZB-H2's B and W).
_SCHEDULES = {"1F1B": one_f_one_b, "ZB-H2": zero_bubble_h2}


def plans(args: tuple[Any, ...]) -> dict[str, dict[int, tuple[float, float]]]:
    """Per schedule, per micro-batch count that question 2 allows: (makespan, peak activation GB on any GPU)."""
    p, batch, f, b, w, o, act, room = args
    out: dict[str, dict[int, tuple[float, float]]] = {}
    for name, build in _SCHEDULES.items():
        out[name] = {}
        for m in (m for m in range(2 * p - 1, batch + 1) if batch % m == 0):
            s = batch / m
            costs = (Costs(f=o + s * f, b=o + s * (b + w)) if name == "1F1B"
                     else Costs(f=o + s * f, b=o + s * b, w=o + s * w))
            t = simulate(build(p, m), costs)
            out[name][m] = (t.makespan, max(t.peak_activations) * s * act)
    return out


def _best(args: tuple[Any, ...], schedules: tuple[str, ...] = tuple(_SCHEDULES), memory: bool = True) -> float:
    room = args[-1]
    return min(time for name in schedules for time, gb in plans(args)[name].values() if gb <= room or not memory)


def truth(name: str, args: tuple[Any, ...]) -> float:
    return _best(args)


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    def near(x: float) -> bool:
        return abs(got - x) <= 0.01 * x

    if near(_best(args, memory=False)):
        return "that is the fastest if memory were no limit: the fastest m's activations do not fit in `room`."
    for name in _SCHEDULES:
        if near(_best(args, (name,))):
            return f"that is {name}'s best; the other schedule fits at some m and is faster there."
    return ("for each schedule and each m that divides the batch, check that the GPU holding the most activations "
            "fits, then take the fastest; each pass costs `o` on top of its per-sample time.")


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    def choose(what: str, choices: Any) -> Any:
        return pick("final-hidden", v.student, what, tuple(choices))

    p = choose("p", range(2, 9))
    f, b = choose("f", (1.0, 2.0)), choose("b", (1.0, 1.5, 2.0))
    act = choose("act", (0.5, 1.0))
    return (p, choose("batch", (48, 64, 96, 128)), f, b, choose("share", (0.25, 0.5, 1.0)) * min(f, b),
            choose("o", (0.25, 0.5, 1.0, 2.0)), act, act * (2 * p - 1) * choose("room", (1, 2, 3, 5))),


KEYS: dict[str, Any] = {
    "grid_T": Keyed(QUESTIONS["grid_T"], _grid_key, _grid_hint),
    "grid_path": Keyed(QUESTIONS["grid_path"], _grid_key, _grid_hint),
    "plan": FormulaJudge(QUESTIONS["plan"], truth, why, hidden, rel=0.01),
}
