"""ps1's keys — slot counting (GPipe with one slow GPU, from its picture) and bubble ratios,
recomputed with ppedu's simulator from the student's own (p, m, v), slow GPU and target bubble; the
student's functions (closed forms, fewest micro-batches, the conversion) judged on fixed cases and
their own arguments. The written reason of question 2 is graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps1", "alice")
>>> key = _slots_key(v)
>>> key["total_slots"] == v["p"] * key["T"]
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grader.questions import Keyed
from ppedu import Costs, formulas, schedules, simulate
from ppedu.grading.answers import Wrong, results as read_results
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps1 import QUESTIONS, FormulaQuestion, costs
from ppedu.grading.students import pick
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
    """The student's functions, on the fixed cases and their own arguments, against ``truth(name,
    args)``; ``why(name, args, got, truth)`` says what is off in a wrong result. A result is right within ``1e-9``,
    or within ``rel`` of the truth (for bytes and seconds, whose float noise grows with them)."""

    form: FormulaQuestion
    truth: Callable[[str, tuple[Any, ...]], float]
    why: Callable[[str, tuple[Any, ...], float, float], str]
    hidden: Callable[[str, Values], tuple[tuple[Any, ...], ...]]
    rel: float = 0.0

    def calls(self, v: Values) -> dict[str, tuple[tuple[Any, ...], ...]]:
        """The inputs each function is run on: the visible cases, the student's own, and the autograder's."""
        return {name: (*self.form.arguments(name, v), *self.hidden(name, v)) for name in self.form.cases}

    def judge(self, data: Mapping[str, object], v: Values) -> str:
        for name, cases in self.calls(v).items():
            shown = self.form.arguments(name, v)
            results = read_results(data, name, hidden=[c for c in cases if c not in shown])
            for args in cases:
                call = f"{name}({', '.join(map(str, args))})"
                if args not in results:
                    raise Wrong(f"`{name}` was not run on every input the autograder chose.")
                want = self.truth(name, args)
                if abs(results[args] - want) <= max(1e-9, self.rel * abs(want)):
                    continue
                if args in shown:
                    raise Wrong(f"{call} returned {results[args]:.6g}: {self.why(name, args, results[args], want)}")
                raise Wrong(f"`{name}` is right on the inputs you can see but not on one the autograder chose (those "
                            "are not shown): is it a closed form for every p, m and v, not only for yours?")
        return "correct"


def _hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on that the student never sees, their own (a hash of their id); for
    the fewest micro-batches, one where the answer lies below m = p and one where it does not."""
    def pick_(what: str, choices: Any) -> Any:
        return pick("ps1-hidden", v.student, f"{name}:{what}", tuple(choices))

    p = pick_("p", range(2, 17))
    if name == "bubble_ratio":
        return (p, pick_("m", range(1, 65))), (pick_("p2", range(9, 33)), pick_("m2", range(1, 9)))
    if name == "bubble_interleaved":
        return (p, p * pick_("k", range(1, 9)), pick_("v", range(2, 6))),
    if name == "fewest_microbatches":
        grid = [(q, t, c) for q in range(2, 17) for t in (0.02, 0.05, 0.12, 0.25, 0.3) for c in (1, 2, 3, 4)]
        below = [case for case in grid if case[2] > 1 and _fewest(name, case) < case[0]]
        return pick_("below", below), pick_("above", [case for case in grid if case not in below])
    return ((pick_("r", (0.125, 0.5, 1.5, 2.5, 7.0)),),)


def _simulated_bubble(name: str, args: tuple[Any, ...]) -> float:
    return simulate(schedules.build("interleaved" if len(args) == 3 else "1f1b", *args)).bubble_ratio


def _bubble_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    return (f"the simulator measures a different idle ÷ total bubble for p={args[0]}, m={args[1]}"
            + (f", v={args[2]}" if len(args) == 3 else "") + " under equal costs.")


def _fewest(name: str, args: tuple[Any, ...]) -> float:
    p, target, v = args
    return formulas.microbatches_for(target, p, v)  # the simulator's fewest m (tests/test_formulas.py checks)


def _fewest_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, target, v = args
    if got < 1 or got != int(got):
        return "the answer is a number of micro-batches: a whole number, at least 1."
    if formulas.bubble_ratio(p, int(got), v) > target + 1e-12:
        below = " (below m = p interleaving idles more than its closed form says)" if v > 1 and got < p else ""
        return f"with m = {int(got)} the bubble is still above {target:g}{below}."
    return (f"with m = {int(got)} the target is met, but a smaller m meets it too: find the fewest (a target met "
            "exactly counts as met; mind a float that should be whole, such as 12.000000000000002).")


KEYS: dict[str, Any] = {
    "gpipe_slots": Keyed(QUESTIONS["gpipe_slots"], _slots_key, _slots_hint),
    "gpipe_idle": Keyed(QUESTIONS["gpipe_idle"], _slots_key, _slots_hint),
    "one_f_one_b": Keyed(QUESTIONS["one_f_one_b"], _compare_key, _compare_hint),
    "closed_form": FormulaJudge(QUESTIONS["closed_form"], _simulated_bubble, _bubble_why, _hidden),
    "microbatches": FormulaJudge(QUESTIONS["microbatches"], _fewest, _fewest_why, _hidden),
    "conversion": FormulaJudge(QUESTIONS["conversion"], lambda name, args: formulas.to_idle_total(args[0]),
                               lambda *_: "if r is bubble ÷ ideal time (idle ÷ busy), the idle share of all slots is "
                                          "idle ÷ (idle + busy): divide top and bottom by busy.", _hidden),
}
