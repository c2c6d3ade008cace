"""ps1's keys — slot counting (GPipe with one slow GPU, from its picture) and bubble ratios,
recomputed with ppedu's simulator from the student's own (p, m, v), slow GPU and target bubble. The
written reason of question 2 is graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps1", "alice")
>>> key = _slots_key(v)
>>> key["total_slots"] == v["p"] * key["T"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grader.questions import Keyed
from ppedu import Costs, formulas, schedules, simulate
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments.ps1 import QUESTIONS, FormulaQuestion, costs
from ppedu.slots import check_slot_answers
from ppedu.simulate import Timeline

#: The grid students count on: a backward takes twice as long as a forward.
COSTS = Costs(f=1, b=2)


def timeline(name: str, v: Mapping[str, Any]) -> Timeline:
    """``name`` on the student's p GPUs and m micro-batches, under :data:`COSTS` (question 2)."""
    return simulate(schedules.build(name, v["p"], v["m"]), COSTS)


def pictured(v: Mapping[str, Any]) -> Timeline:
    """The grid question 1 draws: GPipe with the student's slow GPU."""
    return simulate(schedules.gpipe(v["p"], v["m"]), costs(v))


def _slots_key(v: Mapping[str, Any]) -> dict[str, Any]:
    t = pictured(v)
    return {"T": t.makespan, "total_slots": t.total_slots, "idle_slots": t.idle_slots, "bubble": t.bubble_ratio}


def _slots_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "T":
        if got == timeline("gpipe", v).makespan:
            return (f"That is GPipe with every GPU equally fast; GPU {v['slow']} takes twice as long, and the GPUs "
                    "after it wait for it: count the picture's columns.")
        if abs(got - key["T"]) == 1:
            return "It is one step off: count every column of the grid, from t1 to the step where the last backward ends."
        return "Count the columns of the grid: one per time step." if got != v["m"] else (
            "That is the number of micro-batches; T counts time steps.")
    # The slot counts get the slot checker's diagnosis of the usual mistakes.
    given = {"total_slots": "total", "idle_slots": "idle", "bubble": "ratio"}
    feedback = check_slot_answers(pictured(v), **{given[n]: a for n, a in answers.items() if n in given})
    label = {"total_slots": "total slots: ", "idle_slots": "idle slots: ", "bubble": "bubble ratio: "}[name]
    return next((msg[len(label):] for msg in feedback.messages if msg.startswith(label)), None)


def _compare_key(v: Mapping[str, Any]) -> dict[str, Any]:
    gpipe, ofob = timeline("gpipe", v), timeline("1f1b", v)
    relation = "equal" if abs(ofob.bubble_ratio - gpipe.bubble_ratio) < 1e-9 else (
        "smaller" if ofob.bubble_ratio < gpipe.bubble_ratio else "larger")
    return {"bubble_1f1b": ofob.bubble_ratio, "compared_with_gpipe": relation}


def _compare_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if (name == "compared_with_gpipe" and got == "smaller") or (name == "bubble_1f1b" and got < key["bubble_1f1b"]):
        return ("1F1B reorders the backwards, but the pipeline still fills and drains once: draw both grids "
                "(`render_grid`) and count the idle slots of each.")
    return None


@dataclass(frozen=True)
class FormulaJudge:
    """The student's functions of (p, m[, v]), on the fixed cases and their own values, against the
    simulator's idle ÷ total bubble under equal costs."""

    form: FormulaQuestion

    def judge(self, data: Mapping[str, object], v: Mapping[str, Any]) -> str:
        for name, cases in self.form.cases.items():
            results = self.form.results(data, name)
            for args in (*cases, self.form.own(name, v)):
                call = f"{name}({', '.join(map(str, args))})"
                if args not in results:
                    raise Wrong(f"{call} was not run: the autograder runs your function on your own values.")
                schedule = schedules.build("interleaved" if len(args) == 3 else "1f1b", *args)
                if abs(results[args] - simulate(schedule).bubble_ratio) > 1e-9:
                    raise Wrong(f"{call} returned {results[args]:.6g}, but the simulator measures a different idle ÷ "
                                f"total bubble for p={args[0]}, m={args[1]}" + (f", v={args[2]}" if len(args) == 3 else "")
                                + " under equal costs.")
        return "correct"


def _microbatches_key(v: Mapping[str, Any]) -> dict[str, Any]:
    return {"m_needed": formulas.microbatches_for(v["target"], v["p"]),
            "m_needed_interleaved": formulas.microbatches_for(v["target"], v["p"], v["v"])}


def _microbatches_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    vv = v["v"] if name == "m_needed_interleaved" else 1
    if got >= 1 and formulas.bubble_ratio(v["p"], got, vv) > v["target"] + 1e-12:
        return f"With m = {got} the bubble is still above {v['target']:g}."
    if name == "m_needed_interleaved" and got % v["p"]:
        return "Interleaved 1F1B needs m to be a multiple of p."
    return f"With m = {got} the target is met, but a smaller m meets it too: find the fewest."


KEYS: dict[str, Any] = {
    "gpipe_slots": Keyed(QUESTIONS["gpipe_slots"], _slots_key, _slots_hint),
    "gpipe_idle": Keyed(QUESTIONS["gpipe_idle"], _slots_key, _slots_hint),
    "one_f_one_b": Keyed(QUESTIONS["one_f_one_b"], _compare_key, _compare_hint),
    "closed_form": FormulaJudge(QUESTIONS["closed_form"]),
    "microbatches": Keyed(QUESTIONS["microbatches"], _microbatches_key, _microbatches_hint),
    "conversion": Keyed(QUESTIONS["conversion"],
                        lambda v: {"idle_total": formulas.to_idle_total(formulas.bubble_over_ideal(v["p"], v["m"]))},
                        lambda *a: "If r is bubble ÷ ideal time, the idle share of all slots is r / (1 + r)."),
}
