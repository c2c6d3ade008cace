"""ps4 — DualPipe and the trade-offs: DeepSeek's bubble table, a grid of a schedule run in waves
(counted from its picture), the closed form of its step time (a function checked on inputs the
student does not see, where ppedu has no code), and a schedule for a real model on a given cluster, chosen with a reason.

The written answers (why the closed form holds, why the chosen schedule) are graded by hand in
nbgrader's formgrader; this module holds only the forms of the autograded ones.

>>> values("alice")["B"] == 2 * values("alice")["F"]
True
>>> print(picture(3, 4).splitlines()[0])
GPU 2 | .   .   F0  B0  ·   F1  B1  ·   .   .   .   .   .   .   F2  B2  ·   F3  B3  ·   .   .   .   .
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Choice, Counts, Number, results
from ppedu.grading.evaluate import Code
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw
from ppedu.schedules import SCHEDULES

#: ``"none"``: nothing fits in the cluster's memory.
CHOICES = (*SCHEDULES, "none")
#: The pictured schedule runs its micro-batches in this many waves.
WAVES = 2


def values(student: str) -> dict[str, Any]:
    return draw("ps4", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    p, f = pick("p", (4, 6, 8)), pick("f", (1, 2))
    return {
        "p": p, "m": p * pick("k", (2, 3, 4)),
        "F": f, "B": 2 * f, "W": f, "FB": f * pick("overlap", (2.4, 2.7)),
        "model": pick("model", ("7b", "13b")),
        "gpu": pick("gpu", ("a100-40gb", "a100-80gb", "h100-80gb", "h200")),
        "link": pick("link", ("nvlink", "pcie-gen4", "ib-200")),
        # the pictured grid: small enough to count
        "grid_p": pick("grid_p", (3, 4)), "grid_m": pick("grid_m", (4, 6, 8)),
    }


def _sound(v: Mapping[str, Any]) -> bool:
    """The pictured grid has as many busy as idle slots where m = 2(p - 1): counting the busy ones would score."""
    from ppedu import Costs, simulate

    t = simulate(_in_waves(v["grid_p"], v["grid_m"], WAVES), Costs(f=1, b=2))
    return t.idle_slots != t.busy_slots


def _in_waves(p: int, m: int, k: int) -> Any:
    from ppedu.ops import Op, Schedule
    from ppedu.schedules import one_f_one_b

    size = m // k
    wave = one_f_one_b(p, size).stages
    stages = tuple(tuple(Op(o.kind, o.microbatch + w * size, o.chunk) for w in range(k) for o in wave[j])
                   for j in range(p))
    return Schedule(stages, f"1F1B in {k} waves", (tuple(range(p)),), m)


def picture(p: int, m: int) -> str:
    """The grid question 2 shows (a forward takes one step, a backward two)."""
    from ppedu import Costs, simulate
    from ppedu.text import render_grid

    return render_grid(simulate(_in_waves(p, m, WAVES), Costs(f=1, b=2)))


def _grid_sanity(a: Mapping[str, Any], v: Mapping[str, Any]) -> list[str]:
    problems = []
    if "T" in a and "idle_slots" in a and a["idle_slots"] >= v["grid_p"] * a["T"]:
        problems.append("`idle_slots` must be fewer than the grid's p × T slots: some slots are busy.")
    if "peak_activations" in a and any(x > v["grid_m"] for x in a["peak_activations"]):
        problems.append("A GPU cannot hold more micro-batches' activations than there are micro-batches.")
    return problems


@dataclass(frozen=True)
class Formula:
    """A function the student writes, called on their own values, an example and (by the autograder) on inputs
    they do not see, where ppedu has no code: a closed form, not a simulation."""

    name: str
    example: tuple[Any, ...]
    code: Code = Code()

    @staticmethod
    def own(v: Mapping[str, Any]) -> tuple[Any, ...]:
        return (v["p"], v["m"], WAVES, v["F"], v["B"])

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Any, ...], ...]]:
        return {self.name: (self.own(v), self.example)}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> str:
        results(data, self.name)
        return f"{self.name} returns numbers (the autograder checks them, on inputs you do not see too)"


QUESTIONS: dict[str, Any] = {
    "table": Question((Number("bubble_1f1b"), Number("bubble_zb1p"), Number("bubble_dualpipe"))),
    "grid": Question((Number("T", whole=True), Number("idle_slots", whole=True), Counts("peak_activations")),
                     _grid_sanity),
    "waves": Formula("waves_makespan", (4, 8, 2, 1, 2)),
    "choose": Question((Choice("schedule", CHOICES),)),
}
