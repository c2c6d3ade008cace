"""ps1 — slot counting and bubble ratios with one slow GPU, on each student's own grid and numbers: GPipe's grid with
one GPU twice as slow, counted from its picture (made on the instructors' side and released as data,
``questions.json``); 1F1B's makespan with a slow GPU as a closed form, and where and why it differs from GPipe's
(written, graded by hand); GPipe's makespan with a slow GPU as a closed form, and why the slow GPU's place does not
matter; the closed forms of the chapters, and the
fewest micro-batches for a target bubble when every hand-over costs a latency (which no chapter solves), with why 1F1B
then has a bubble floor (written); and a bubble
stated as DeepSeek-V3's table states it, turned into a share of the step. Each function is checked where ppedu (its
simulator, its formulas) has no code, each call within :data:`CALL_LIMIT` seconds: 3a and 4b are also called at sizes
(``m`` near 10⁹) that only a closed form answers in time. Nothing here draws or simulates the grid.

>>> sorted(values("alice"))
['c', 'm', 'p', 'slow', 'target', 'v', 'variant']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Number, Wrong, results
from ppedu.grading.evaluate import Code
from ppedu.grading.harness import CellTimeout
from ppedu.grading.questions import FormOnly, Question
from ppedu.grading.students import Picker, draw, variant

TARGETS = (0.05, 0.08, 0.1, 0.15, 0.2)
#: Question 4b's hand-over latencies, in forward-pass times.
LATENCIES = (0.25, 0.5, 1.0, 1.5)
#: The question data's pool: each student counts one of these variants' grids.
VARIANTS = 48
#: Seconds one call of a ps1 function may take: a closed form answers in microseconds, a simulation at m = 10⁹ in
#: hours. A slow function costs the grader this much per call at such a size, not a cell's limit.
CALL_LIMIT = 3
#: What the harness's alarm raises in a call that ran over :data:`CALL_LIMIT`.
TIMEOUT = CellTimeout.__name__


def values(student: str) -> dict[str, Any]:
    """The variant of the grid of questions 1 and 2, and the numbers of questions 2a to 5 (their own arguments)."""
    return {"variant": variant("ps1", student, VARIANTS), **draw("ps1", student, _draw, lambda v: True)}


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("p", range(3, 9))
    return {"p": p, "m": pick("m", range(4, 17)), "slow": pick("slow", range(8)) % p, "v": pick("v", range(2, 5)),
            "target": pick("target", TARGETS), "c": pick("c", LATENCIES)}


def _slots_sanity(a: Mapping[str, Any], v: Mapping[str, Any]) -> list[str]:
    problems = []
    if "T" in a and a["T"] < 3:
        problems.append(f"`T` = {a['T']} is too short: count the picture's columns, one per time step.")
    if "total_slots" in a and "T" in a and a["T"] and a["total_slots"] % a["T"]:
        problems.append("`total_slots` does not match your `T`: every time step has one slot per GPU.")
    if "idle_slots" in a and "total_slots" in a and a["idle_slots"] >= a["total_slots"]:
        problems.append("`idle_slots` must be fewer than `total_slots`: some slots are busy.")
    if "bubble" in a and "idle_slots" in a and "total_slots" in a and a["total_slots"]:
        if abs(a["bubble"] - a["idle_slots"] / a["total_slots"]) > 1e-3:
            problems.append("`bubble` does not follow from your `idle_slots` and `total_slots`.")
    return problems


def timed_out(data: Mapping[str, Any], name: str) -> tuple[Any, ...] | None:
    """The first input on which the function ``name`` ran over its time limit, if any.

    >>> timed_out({"f": [[[1], 2], [[10**9], {"__raised__": "CellTimeout", "message": "…"}]]}, "f")
    (1000000000,)
    """
    got = data.get(name)
    if not isinstance(got, list):
        return None
    return next((tuple(args) for args, result in got
                 if isinstance(result, dict) and result.get("__raised__") == TIMEOUT), None)


@dataclass(frozen=True)
class FormulaQuestion:
    """Functions the student writes, called on ``cases`` and on the student's own arguments (``own(name,
    values)``) where ppedu has no code (nor a simulator): a closed form is arithmetic."""

    cases: Mapping[str, tuple[tuple[float, ...], ...]]
    own: Callable[[str, Mapping[str, Any]], tuple[tuple[float, ...], ...]]
    code: Code = Code(call_timeout=CALL_LIMIT)

    def arguments(self, name: str, v: Mapping[str, Any]) -> tuple[tuple[float, ...], ...]:
        return (*self.cases[name], *self.own(name, v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[float, ...], ...]]:
        return {name: self.arguments(name, v) for name in self.cases}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> str:
        for name in self.cases:
            if (late := timed_out(data, name)) is not None:
                raise Wrong(f"{name}({', '.join(map(str, late))}) ran over its time limit ({CALL_LIMIT} s a call): a "
                            "closed form answers at once; a simulation, or a search one step at a time, does not "
                            "finish at this size.")
            results(data, name)
        return FormOnly("; ".join(f"{name} returns numbers" for name in self.cases) +
                        " (the autograder checks their values)")


QUESTIONS: dict[str, Any] = {
    "gpipe_slots": Question((Number("T", whole=True), Number("total_slots", whole=True)), _slots_sanity),
    "gpipe_idle": Question((Number("idle_slots", whole=True), Number("bubble", fraction=True)), _slots_sanity),
    # 1F1B with GPU s twice as slow: (4, 4, 1) hides 4 steps of the slow GPU's wait, (6, 2, 0) only 2 (one
    # micro-batch to run in it), (3, 8, 2) none (the slow GPU is the last)
    "one_f_one_b": FormulaQuestion({"one_f_one_b_slow": ((4, 4, 1), (6, 2, 0), (3, 8, 2))},
                                   lambda name, v: ((v["p"], v["m"], v["slow"]),)),
    "slow_form": FormulaQuestion({"gpipe_slow": ((4, 4, 1, 2), (3, 8, 0, 3), (6, 2, 5, 1.5), (5, 10**9, 2, 2.5))},
                                 lambda name, v: ((v["p"], v["m"], v["slow"], 3),)),
    "closed_form": FormulaQuestion({"bubble_ratio": ((4, 4), (2, 1), (8, 32)),
                                    "bubble_interleaved": ((4, 4, 2), (4, 8, 3))},
                                   lambda name, v: ((v["p"], 2 * v["p"], v["v"]),) if name == "bubble_interleaved"
                                   else ((v["p"], v["m"]),)),
    # GPipe with a hand-over latency c: (4, 0.2, 0.5) meets its target exactly (a float must not miss it); c = 0 is the
    # chapters' case; (12, 2e-07, 2.0) needs more micro-batches than a search one at a time reaches in a call's limit
    "microbatches": FormulaQuestion({"fewest_microbatches": ((4, 0.2, 0.5), (4, 0.1, 0), (8, 0.05, 1.5),
                                                             (4, 0.3, 1.5), (12, 2e-07, 2.0))},
                                    lambda name, v: ((v["p"], v["target"], v["c"]),)),
    # DeepSeek-V3's Table 2 states a schedule's bubble as idle time per GPU, B being the whole backward (W in it)
    "conversion": FormulaQuestion({"idle_share": ((7, 8, 1, 2, 1), (3, 20, 1, 2, 0.5), (0, 4, 1, 1, 1))},
                                  lambda name, v: ((v["p"] - 1, v["m"], 1, 2, 1),)),
}
