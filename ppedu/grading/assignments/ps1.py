"""ps1 — slot counting and bubble ratios, on each student's own (p, m, v) and target bubble: a GPipe
grid with one slow GPU, counted from its picture; 1F1B against GPipe, with the reason written (graded
by hand); the closed forms, the fewest micro-batches for a target and the conversion between the two
bubble definitions, each a function checked where ppedu (its simulator, its formulas) has no code.

>>> sorted(values("alice"))
['m', 'p', 'slow', 'target', 'v']
>>> picture(values("alice")).count("GPU ") == values("alice")["p"]
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Choice, Number, results
from ppedu.grading.evaluate import Code
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw

TARGETS = (0.05, 0.08, 0.1, 0.15, 0.2)


def values(student: str) -> dict[str, Any]:
    return draw("ps1", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("p", range(3, 7))
    return {"p": p, "m": pick("m", range(3, 9)), "v": pick("v", range(2, 5)), "target": pick("target", TARGETS),
            "slow": pick("slow", range(6)) % p}  # question 1's slow GPU


def _sound(v: Mapping[str, Any]) -> bool:
    """Question 1's grid has as many busy as idle slots at p = m = 3: counting the busy ones would score."""
    from ppedu import schedules, simulate

    t = simulate(schedules.gpipe(v["p"], v["m"]), costs(v))
    return t.idle_slots != t.busy_slots


def costs(v: Mapping[str, Any]) -> Any:
    """Question 1's costs: a forward takes one step and a backward two, except on GPU ``v["slow"]``,
    which takes twice as long for both."""
    from ppedu import Costs

    return Costs(f=tuple(2 if j == v["slow"] else 1 for j in range(v["p"])),
                 b=tuple(4 if j == v["slow"] else 2 for j in range(v["p"])))


def picture(v: Mapping[str, Any]) -> str:
    """Question 1's grid: GPipe on the student's p GPUs and m micro-batches, with :func:`costs`."""
    from ppedu import schedules, simulate
    from ppedu.text import render_grid

    return render_grid(simulate(schedules.gpipe(v["p"], v["m"]), costs(v)))


def _slots_sanity(a: Mapping[str, Any], v: Mapping[str, Any]) -> list[str]:
    problems = []
    if "T" in a and a["T"] < v["m"] + v["p"] - 1:
        problems.append(f"`T` = {a['T']} is too short: the last micro-batch alone needs p - 1 steps after the first to "
                        "reach the last GPU.")
    if "total_slots" in a and "T" in a and a["total_slots"] != v["p"] * a["T"]:
        problems.append("`total_slots` does not match your `T`: there are p slots in every time step.")
    if "idle_slots" in a and "total_slots" in a and a["idle_slots"] >= a["total_slots"]:
        problems.append("`idle_slots` must be fewer than `total_slots`: some slots are busy.")
    if "bubble" in a and "idle_slots" in a and "total_slots" in a and a["total_slots"]:
        if abs(a["bubble"] - a["idle_slots"] / a["total_slots"]) > 1e-3:
            problems.append("`bubble` does not follow from your `idle_slots` and `total_slots`.")
    return problems


@dataclass(frozen=True)
class FormulaQuestion:
    """Functions the student writes, called on ``cases`` and on the student's own arguments (``own(name,
    values)``) where ppedu has no code (nor a simulator): a closed form is arithmetic."""

    cases: Mapping[str, tuple[tuple[float, ...], ...]]
    own: Callable[[str, Mapping[str, Any]], tuple[tuple[float, ...], ...]]
    code: Code = Code()

    def arguments(self, name: str, v: Mapping[str, Any]) -> tuple[tuple[float, ...], ...]:
        return (*self.cases[name], *self.own(name, v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[float, ...], ...]]:
        return {name: self.arguments(name, v) for name in self.cases}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> str:
        for name in self.cases:
            results(data, name)
        return "; ".join(f"{name} returns numbers" for name in self.cases) + " (the autograder checks their values)"


QUESTIONS: dict[str, Any] = {
    "gpipe_slots": Question((Number("T", whole=True), Number("total_slots", whole=True)), _slots_sanity),
    "gpipe_idle": Question((Number("idle_slots", whole=True), Number("bubble", fraction=True)), _slots_sanity),
    "one_f_one_b": Question((Number("bubble_1f1b", fraction=True),
                             Choice("compared_with_gpipe", ("smaller", "equal", "larger")))),
    "closed_form": FormulaQuestion({"bubble_ratio": ((4, 4), (2, 1), (8, 32)),
                                    "bubble_interleaved": ((4, 4, 2), (4, 8, 3))},
                                   lambda name, v: ((v["p"], 2 * v["p"], v["v"]),) if name == "bubble_interleaved"
                                   else ((v["p"], v["m"]),)),
    # (4, 0.2, 1) meets its target exactly at m = 12; (3, 0.2, 4) needs m = p, where interleaving's form starts.
    "microbatches": FormulaQuestion({"fewest_microbatches": ((4, 0.1, 1), (4, 0.2, 1), (8, 0.05, 2), (3, 0.2, 4))},
                                    lambda name, v: ((v["p"], v["target"], 1), (v["p"], v["target"], v["v"]))),
    "conversion": FormulaQuestion({"idle_share": ((0.25,), (1.0,), (3.0,))},
                                  lambda name, v: (((v["p"] - 1) / v["m"],),)),
}
