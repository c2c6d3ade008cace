"""The final exam's keys: the pictured grid counted by the simulator, and ZB-H1's makespan (the student's closed form
on their own values, the examples and hidden inputs inside the region where it holds) against the simulator. The
written answers are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("final", "alice")
>>> key = _grid_key(v)
>>> key["idle_slots"] == key["T"] * v["grid_p"] - 2 * 2 * v["grid_m"] * v["grid_p"]
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
from ppedu.schedules import zero_bubble_h1


def _grid_key(v: Mapping[str, Any]) -> dict[str, Any]:
    t = timeline(v)
    return {"T": t.makespan, "idle_slots": t.idle_slots, "bubble": t.bubble_ratio}


def _grid_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "idle_slots" and got == v["grid_p"] * key["T"] - key["idle_slots"]:
        return "you counted the busy slots; count the `.` ones."
    if name == "T":
        return "count the picture's columns, t1 to the last."
    return None


def truth(name: str, args: tuple[Any, ...]) -> float:
    p, m, f, b, w = args
    return simulate(zero_bubble_h1(p, m), Costs(f=f, b=b, w=w)).makespan


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, m, f, b, w = args
    if abs(got - (m + p - 1) * (f + b + w)) < 1e-9:
        return "that is 1F1B's makespan: ZB-H1's postponed W's fill part of the drain."
    return "each GPU works m(f + b + w) and idles as long as chapter 6b derived."


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    def choose(what: str, choices: Any) -> Any:
        return pick("final-hidden", v.student, what, tuple(choices))

    p = choose("p", range(2, 9))
    f, b = choose("f", (1.0, 2.0)), choose("b", (1.0, 1.5, 3.0))
    return (p, p * choose("k", (1, 2, 3)), f, b, choose("share", (0.5, 1.0)) * min(f, b)),


KEYS: dict[str, Any] = {
    "grid_T": Keyed(QUESTIONS["grid_T"], _grid_key, _grid_hint),
    "grid_idle": Keyed(QUESTIONS["grid_idle"], _grid_key, _grid_hint),
    "makespan": FormulaJudge(QUESTIONS["makespan"], truth, why, hidden),
}
