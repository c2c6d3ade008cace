"""ps1's keys, and the grid its first two questions show (:func:`shown`, released as ``questions.json``): GPipe with
one GPU twice as slow, made and simulated here, shipped as a picture whose middle third of steps is covered (what the
cover holds is worked out from the costs, not counted); the student's functions (1F1B's and GPipe's makespans with a
slow GPU, the fewest micro-batches, a DeepSeek-style bubble as a share of the step) judged on fixed cases, their own
arguments and hidden ones. The written answers are graded by hand.

Questions 3a and 4b are also called at sizes no simulation reaches in a call's time limit
(:data:`~ppedu.grading.assignments.ps1.CALL_LIMIT`): ``m`` near 10⁹, and targets whose fewest ``m`` is 10⁸ to 10⁹.
There the key's truth is the closed form it states (:func:`slow_makespan`, :func:`_gpipe_fewest`, exact in
fractions); below :data:`SIMULATED` micro-batches it is the simulator's, and tests/grading/test_ps1.py checks the two
agree there.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps1", "alice")
>>> key = _slots_key(v)
>>> key["total_slots"] == shown(v["variant"])["p"] * key["T"]
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

from grader.questiondata import variant
from grader.questions import Keyed
from ppedu import Costs, formulas, schedules, simulate
from ppedu.grading.answers import Wrong, results as read_results
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps1 import QUESTIONS, FormulaQuestion, timed_out
from ppedu.grading.students import Picker, draw, pick
from ppedu.grid import grid
from ppedu.picture import Picture
from ppedu.slots import check_slot_answers
from ppedu.simulate import Timeline

#: Micro-batches up to which the key's truth is the simulator's (it costs O(p·m)); above, the closed forms'.
SIMULATED = 10_000


def slow_costs(p: int, slow: int, k: float = 2) -> Costs:
    """A forward takes one step and a backward two, except on GPU ``slow``, ``k`` times slower at both."""
    return Costs(f=tuple(k if j == slow else 1 for j in range(p)), b=tuple(2 * k if j == slow else 2 for j in range(p)))


def params(k: int) -> dict[str, Any]:
    """Variant ``k``'s grid: p GPUs, m micro-batches, the slow GPU; drawn from a hash of its number until sound."""
    return draw("ps1-variant", str(k), _draw, _sound)


def _draw(pick_: Picker) -> dict[str, Any]:
    p = pick_("p", range(3, 7))
    return {"p": p, "m": pick_("m", range(3, 9)), "slow": pick_("slow", range(6)) % p}


def _sound(v: Mapping[str, Any]) -> bool:
    """Counting the busy slots must not score (p = m = 3 has as many busy as idle), nor counting the idle cells one
    can see, nor those and every covered cell: the cover must hide idle and busy cells alike. A slow GPU that is the
    last has no round trip above it for 1F1B to work through: question 2b would ask about a gap of nothing."""
    t, picture = timeline("gpipe", v), _picture(v)
    seen = sum(c == "" for row in picture.rows for c in row)
    covered = sum(c == "?" for row in picture.rows for c in row)
    return t.idle_slots not in (t.busy_slots, seen, seen + covered) and v["slow"] != v["p"] - 1


def covered(v: Mapping[str, Any]) -> list[list[bool]]:
    """The picture's cover: the middle third of its steps, on every GPU."""
    steps = timeline("gpipe", v).makespan
    return [[steps // 3 <= t < 2 * steps // 3 for t in range(int(steps))] for _ in range(v["p"])]


def _picture(v: Mapping[str, Any]) -> Picture:
    title = f"GPipe on {v['p']} GPUs, {v['m']} micro-batches; GPU {v['slow']} twice as slow"
    return Picture.of(grid(timeline("gpipe", v)), covered(v), title=title)


def timeline(name: str, v: Mapping[str, Any]) -> Timeline:
    """``name`` on the variant's GPUs, its slow GPU included (questions 1 and 2)."""
    return simulate(schedules.build(name, v["p"], v["m"]), slow_costs(v["p"], v["slow"]))


def shown(k: int) -> dict[str, Any]:
    """What variant ``k`` shows: GPipe's grid with the slow GPU, as a picture covered in the middle, and its sizes
    (the picture shows them)."""
    v = params(k)
    return {"grid": _picture(v).to_json(), **v}


def _variant(values: Mapping[str, Any]) -> dict[str, Any]:
    return params(variant(values) if isinstance(values, Values) else values["variant"])


def _slots_key(values: Mapping[str, Any]) -> dict[str, Any]:
    t = timeline("gpipe", _variant(values))
    return {"T": t.makespan, "total_slots": t.total_slots, "idle_slots": t.idle_slots, "bubble": t.bubble_ratio}


def _slots_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any],
                values: Mapping[str, Any]) -> str | None:
    v = _variant(values)
    if name == "T":
        if got == simulate(schedules.gpipe(v["p"], v["m"]), Costs(f=1, b=2)).makespan:
            return (f"That is GPipe with every GPU equally fast; GPU {v['slow']} takes twice as long, and the GPUs "
                    "after it wait for it: count the picture's columns.")
        if abs(got - key["T"]) == 1:
            return "It is one step off: count every column of the grid, from t1 to the step where the last backward ends."
        return "Count the columns of the grid: one per time step." if got != v["m"] else (
            "That is the number of micro-batches; T counts time steps.")
    if name == "idle_slots":
        rows = _picture(v).rows
        seen, hidden = (sum(c == cell for row in rows for c in row) for cell in ("", "?"))
        if got == seen:
            return ("that counts the idle cells you can see; the cover hides some: a GPU is busy for its m forwards "
                    "and m backwards whatever the cover holds, and idle the rest of the T steps.")
        if got == seen + hidden:
            return ("not every covered cell is idle: some GPUs are still working under the cover. Count the busy "
                    "slots from the costs instead (the slow GPU's take twice as long).")
    # The slot counts get the slot checker's diagnosis of the usual mistakes.
    given = {"total_slots": "total", "idle_slots": "idle", "bubble": "ratio"}
    feedback = check_slot_answers(timeline("gpipe", v), **{given[n]: a for n, a in answers.items() if n in given})
    label = {"total_slots": "total slots: ", "idle_slots": "idle slots: ", "bubble": "bubble ratio: "}[name]
    return next((msg[len(label):] for msg in feedback.messages if msg.startswith(label)), None)


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

    def secret(self, v: Values) -> dict[str, tuple[tuple[Any, ...], ...]]:
        """Of :meth:`calls`, those the student was not shown (no feedback names them)."""
        return {name: tuple(c for c in self.hidden(name, v) if c not in self.form.arguments(name, v))
                for name in self.form.cases}

    def judge(self, data: Mapping[str, object], v: Values) -> str:
        for name, cases in self.calls(v).items():
            shown = self.form.arguments(name, v)
            if (late := timed_out(data, name)) is not None:
                limit = getattr(getattr(self.form, "code", None), "call_timeout", None)
                where = (f"on {name}({', '.join(map(str, late))})" if late in shown else
                         "on an input the autograder chose (not shown)")
                raise Wrong(f"`{name}` ran over its time limit{f' ({limit:g} s a call)' if limit else ''} {where}: a "
                            "closed form answers at once; a simulation, or a search one step at a time, does not "
                            "finish at these sizes.")
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
    the fewest micro-batches, one whose target is met exactly, one of any, and one whose fewest is 10⁸ to 10⁹."""
    def pick_(what: str, choices: Any) -> Any:
        return pick("ps1-hidden", v.student, f"{name}:{what}",
                    choices if isinstance(choices, range) else tuple(choices))

    p = pick_("p", range(2, 17))
    if name == "bubble_ratio":
        return (p, pick_("m", range(1, 65))), (pick_("p2", range(9, 33)), pick_("m2", range(1, 9)))
    if name == "bubble_interleaved":
        return (p, p * pick_("k", range(1, 9)), pick_("v", range(2, 6))),
    if name == "one_f_one_b_slow":  # the second has fewer micro-batches than GPUs above its slow one
        q = pick_("q", range(5, 17))
        return ((p, pick_("m", range(1, 33)), pick_("s", range(p))),
                (q, pick_("m2", range(1, 4)), pick_("s2", range(q - 4))))
    if name == "gpipe_slow":  # and once at m near 10⁹, where no simulation answers within a call's time limit
        q = pick_("p9", range(2, 17))
        return ((p, pick_("m", range(1, 33)), pick_("s", range(p)), pick_("k", (1.5, 2, 2.5, 4))),
                (q, pick_("m9", range(5 * 10**8, 10**9 + 1)), pick_("s9", range(q)), pick_("k9", (1, 1.5, 2.5, 3, 4))))
    if name == "idle_share":
        m, w = pick_("m", range(4, 65)), pick_("w", (0.5, 1.0))
        return (p - 1 - w * (p - 1), m, 1.0, 2.0 + w, w), (pick_("x", (0.0, 3.5, 12.0)), m, 1.5, 3.0, 1.0)
    if name == "fewest_microbatches":
        grid = [(q, t, c) for q in range(2, 17) for t in (0.02, 0.05, 0.12, 0.25, 0.3)
                for c in (0.1, 0.25, 0.75, 2.0, 3.5)]
        exact = [case for case in grid if _gpipe_fewest(*case).denominator == 1]
        return pick_("exact", exact), pick_("any", grid), pick_("huge", HUGE)
    return ((pick_("r", (0.125, 0.5, 1.5, 2.5, 7.0)),),)


def _simulated_bubble(name: str, args: tuple[Any, ...]) -> float:
    return simulate(schedules.build("interleaved" if len(args) == 3 else "1f1b", *args)).bubble_ratio


def _bubble_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    return (f"the simulator measures a different idle ÷ total bubble for p={args[0]}, m={args[1]}"
            + (f", v={args[2]}" if len(args) == 3 else "") + " (every stage as fast, hand-overs free).")


def slow_makespan(p: int, m: int, k: float) -> Fraction:
    """GPipe's makespan with one GPU ``k`` times slower, wherever it sits: its ``m`` forwards and ``m`` backwards back
    to back (``3mk``), plus one forward and one backward of each other GPU (``3(p − 1)``), the first micro-batch's way
    up and the last gradient's way down.

    >>> slow_makespan(4, 10**9, 2.5)
    Fraction(7500000009, 1)
    """
    return 3 * (p - 1) + 3 * m * Fraction(str(k))
def _one_f_one_b_slow(name: str, args: tuple[Any, ...]) -> float:
    p, m, slow = args
    return simulate(schedules.one_f_one_b(p, m), slow_costs(p, slow)).makespan


def _one_f_one_b_slow_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, m, slow = args
    if abs(got - simulate(schedules.gpipe(p, m), slow_costs(p, slow)).makespan) < 1e-9 and got != want:
        return ("that is GPipe's step with GPU {} slow: 1F1B's order differs where the slow GPU waits for the first "
                "micro-batch's round trip above it.".format(slow))
    if abs(got - simulate(schedules.one_f_one_b(p, m), Costs(f=1, b=2)).makespan) < 1e-9:
        return "that is 1F1B with every GPU as fast; GPU {} takes 2 for a forward and 4 for a backward.".format(slow)
    return (f"the simulator's 1F1B takes {want:g} for p={p}, m={m}, slow GPU {slow}: follow the slow GPU's row — how "
            "many forwards can it run before its first backward comes back, and how long is that round trip?")


def _gpipe_slow(name: str, args: tuple[Any, ...]) -> float:
    p, m, slow, k = args
    if m > SIMULATED:
        return float(slow_makespan(p, m, k))
    return simulate(schedules.gpipe(p, m), slow_costs(p, slow, k)).makespan


def _gpipe_slow_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, m, slow, k = args
    if abs(got - 3 * (m + p - 1)) <= max(1e-9, 1e-9 * want):
        return "that is GPipe with every GPU as fast: the slow GPU runs each of its m forwards and backwards k times slower."
    if abs(got - (m + p - 1) * 3 * k) <= max(1e-9, 1e-9 * want):
        return "every GPU is not slow: only one is; the others' forwards and backwards still take 1 and 2."
    return (f"GPipe takes {want:.10g} for p={p}, m={m}, slow GPU {slow}, k={k}: follow the slow GPU's row, and what "
            "must happen before its first op and after its last.")


def _idle_share(name: str, args: tuple[Any, ...]) -> float:
    bubble, m, f, b, w = args
    return bubble / (bubble + m * (f + b))  # B is the whole backward: W is part of it, not added


def _idle_share_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    bubble, m, f, b, w = args
    if abs(got - bubble / (bubble + m * (f + b + w))) < 1e-9:
        return "in DeepSeek-V3's table B is the whole backward, W included: a GPU is busy m(F + B) per step, not m(F + B + W)."
    if abs(got - bubble / (m * (f + b))) < 1e-9:
        return "that is bubble ÷ busy time (Megatron-LM's definition); the share of the step is bubble ÷ (bubble + busy)."
    return "a step on one GPU is its idle time plus its busy time, m passes of F and B."


def _gpipe_bubble(p: int, m: int, c: float) -> float:
    """GPipe's idle ÷ total slots on ``p`` equally fast GPUs, a forward 1 and a backward 2, each hand-over ``c``."""
    return simulate(schedules.gpipe(p, m), Costs(f=1, b=2, comm=c)).bubble_ratio


def _meets(p: int, m: int, target: float, c: float) -> bool:
    if m > SIMULATED:
        return m >= _gpipe_fewest(p, target, c)
    return _gpipe_bubble(p, m, c) <= target + 1e-12  # a target met exactly counts as met


def _gpipe_fewest(p: int, target: float, c: float) -> Fraction:
    """The least real m meeting the target, solved from GPipe's step with hand-overs, ``3m + (p − 1)(3 + 2c)``: each
    of the ``p − 1`` links is crossed once by the first forward and once by the last backward on the longest chain."""
    fill, t = (p - 1) * (3 + 2 * Fraction(str(c))), Fraction(str(target))
    return fill * (1 - t) / (3 * t)


def _huge() -> tuple[tuple[int, float, float], ...]:
    """Question 4b's hidden cases whose fewest m is 10⁸ to 10⁹ and not within 0.01 of a whole number (a float's
    rounding, of the order of 10⁻⁷ there, then never decides it)."""
    cases = []
    for p in range(2, 17):
        for target in (1e-8, 2e-8, 5e-8, 1e-7, 2e-7, 3e-7):
            for c in (0.1, 0.25, 0.75, 2.0, 3.5):
                m = _gpipe_fewest(p, target, c)
                if 10**8 <= m <= 10**9 and 0.01 < m - math.floor(m) < 0.99:
                    cases.append((p, target, c))
    return tuple(cases)


@cache
def _fewest(name: str, args: tuple[Any, ...]) -> float:
    """The fewest m whose simulated bubble meets the target: the closed form's, checked against the simulator at it
    and one below, and walked from there on the simulator should the two disagree; above :data:`SIMULATED`, the
    closed form's alone (exact: the target read as the decimal it is written as)."""
    p, target, c = args
    m = max(1, math.ceil(_gpipe_fewest(p, target, c)))
    if m > SIMULATED:
        return m
    while m > 1 and _meets(p, m - 1, target, c):
        m -= 1
    while not _meets(p, m, target, c):
        m += 1
    return m


def _fewest_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    p, target, c = args
    if got < 1 or got != int(got):
        return "the answer is a number of micro-batches: a whole number, at least 1."
    if c and got == formulas.microbatches_for(target, p):
        return (f"that is the count with free hand-overs; here each takes {c:g}: find GPipe's step with them first "
                "(how many hand-overs lie on its longest chain?), then its idle ÷ total.")
    if not _meets(p, int(got), target, c):
        return f"with m = {int(got)} GPipe's bubble is still above {target:g} when every hand-over takes {c:g}."
    return (f"with m = {int(got)} the target is met, but a smaller m meets it too: find the fewest (a target met "
            "exactly counts as met; mind a float that should be whole, such as 14.000000000000002).")


HUGE = _huge()

KEYS: dict[str, Any] = {
    "gpipe_slots": Keyed(QUESTIONS["gpipe_slots"], _slots_key, _slots_hint),
    "gpipe_idle": Keyed(QUESTIONS["gpipe_idle"], _slots_key, _slots_hint),
    "one_f_one_b": FormulaJudge(QUESTIONS["one_f_one_b"], _one_f_one_b_slow, _one_f_one_b_slow_why, _hidden),
    "slow_form": FormulaJudge(QUESTIONS["slow_form"], _gpipe_slow, _gpipe_slow_why, _hidden, rel=1e-12),
    "closed_form": FormulaJudge(QUESTIONS["closed_form"], _simulated_bubble, _bubble_why, _hidden),
    "microbatches": FormulaJudge(QUESTIONS["microbatches"], _fewest, _fewest_why, _hidden),
    "conversion": FormulaJudge(QUESTIONS["conversion"], _idle_share, _idle_share_why, _hidden, rel=1e-9),
}
