"""ps1 — slot counting and bubble ratios, on each student's own (p, m, v) and target bubble.

>>> v = values("alice")
>>> sorted(v)
['m', 'p', 'target', 'v']
>>> key = QUESTIONS["gpipe_slots"].key(v)
>>> key["total_slots"] == v["p"] * key["T"]
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ppedu import Costs, formulas, schedules, simulate
from ppedu.grading.answers import Choice, Number, Wrong, function
from ppedu.grading.questions import Question
from ppedu.slots import check_slot_answers
from ppedu.grading.students import pick
from ppedu.simulate import Timeline

#: The grid students count on: a backward takes twice as long as a forward.
COSTS = Costs(f=1, b=2)
TARGETS = (0.05, 0.08, 0.1, 0.15, 0.2)


def values(student: str) -> dict[str, Any]:
    return {
        "p": pick("ps1", student, "p", range(3, 7)),
        "m": pick("ps1", student, "m", range(3, 9)),
        "v": pick("ps1", student, "v", range(2, 5)),
        "target": pick("ps1", student, "target", TARGETS),
    }


def timeline(name: str, v: Mapping[str, Any]) -> Timeline:
    """The schedule the notebook draws for this student, under :data:`COSTS`."""
    return simulate(schedules.build(name, v["p"], v["m"]), COSTS)


def _slots_key(v: Mapping[str, Any]) -> dict[str, Any]:
    t = timeline("gpipe", v)
    return {"T": t.makespan, "total_slots": t.total_slots, "idle_slots": t.idle_slots, "bubble": t.bubble_ratio}


def _slots_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    if name == "T":
        if abs(got - key["T"]) == 1:
            return "It is one step off: count every column of the grid, from t1 to the step where the last backward ends."
        return "Count the columns of the grid: one per time step." if got != v["m"] else (
            "That is the number of micro-batches; T counts time steps.")
    # The slot counts get the slot checker's diagnosis of the usual mistakes.
    given = {"total_slots": "total", "idle_slots": "idle", "bubble": "ratio"}
    feedback = check_slot_answers(timeline("gpipe", v), **{given[n]: a for n, a in answers.items() if n in given})
    label = {"total_slots": "total slots: ", "idle_slots": "idle slots: ", "bubble": "bubble ratio: "}[name]
    return next((msg[len(label):] for msg in feedback.messages if msg.startswith(label)), None)


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


def _formula(name: str, cases: tuple[tuple[int, ...], ...]) -> Callable[[Mapping[str, object], Mapping[str, Any], bool], str]:
    """A question about the student's function ``name``, tested on ``cases`` and their own values."""

    def grade(namespace: Mapping[str, object], v: Mapping[str, Any], hidden: bool) -> str:
        f = function(namespace, name)
        own = (v["p"], 2 * v["p"], v["v"]) if name == "bubble_interleaved" else (v["p"], v["m"])
        for args in (*cases, *((own,) if hidden else ())):
            call = f"{name}({', '.join(map(str, args))})"
            try:
                result = f(*args)
            except NotImplementedError:
                raise Wrong(f"`{name}` is still the stub: write its body in place of `raise NotImplementedError()`.") from None
            except Exception as error:  # the student's code raised: say so, in one line
                raise Wrong(f"{call} raised {type(error).__name__}: {error}") from None
            got = Number(call).read({call: result})
            if hidden and abs(got - simulate(schedules.build("interleaved" if len(args) == 3 else "1f1b", *args)).bubble_ratio) > 1e-9:
                raise Wrong(f"{call} returned {got:.6g}, but the simulator measures a different idle ÷ total "
                            f"bubble for p={args[0]}, m={args[1]}" + (f", v={args[2]}" if len(args) == 3 else "") +
                            " under equal costs.")
        return "correct" if hidden else f"{name} returns numbers (the autograder compares them with the simulator)"

    return grade


class FormulaQuestion:
    """A question whose answer is a function of (p, m[, v]), compared with the simulator."""

    def __init__(self, *names_and_cases: tuple[str, tuple[tuple[int, ...], ...]]) -> None:
        self._parts = [_formula(n, c) for n, c in names_and_cases]

    def check(self, namespace: Mapping[str, object], values: Mapping[str, Any]) -> str:
        return "; ".join(part(namespace, values, False) for part in self._parts)

    def grade(self, namespace: Mapping[str, object], values: Mapping[str, Any]) -> str:
        for part in self._parts:
            part(namespace, values, True)
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


QUESTIONS: dict[str, Any] = {
    "gpipe_slots": Question((Number("T", whole=True), Number("total_slots", whole=True)),
                            _slots_key, _slots_hint, _slots_sanity),
    "gpipe_idle": Question((Number("idle_slots", whole=True), Number("bubble", fraction=True)),
                           _slots_key, _slots_hint, _slots_sanity),
    "one_f_one_b": Question((Number("bubble_1f1b", fraction=True), Choice("compared_with_gpipe", ("smaller", "equal", "larger"))),
                            _compare_key, _compare_hint),
    "closed_form": FormulaQuestion(("bubble_ratio", ((4, 4), (2, 1), (8, 32))),
                                   ("bubble_interleaved", ((4, 4, 2), (4, 8, 3)))),
    "microbatches": Question((Number("m_needed", whole=True), Number("m_needed_interleaved", whole=True)),
                             _microbatches_key, _microbatches_hint),
    "conversion": Question((Number("idle_total", fraction=True),),
                           lambda v: {"idle_total": formulas.to_idle_total(formulas.bubble_over_ideal(v["p"], v["m"]))},
                           lambda *a: "If r is bubble ÷ ideal time, the idle share of all slots is r / (1 + r)."),
}
