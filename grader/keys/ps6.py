"""ps6's keys — derivations, judged against the simulator: ZB-H2's step on any costs, DualPipeV's longest fill, the
staleness of orders run asynchronously (each update where its gradient is complete), and the smallest F&B at which
the DualPipeV row of DeepSeek's table agrees with the simulation (compared here, the student
builds the comparison). The written proofs are graded by hand.

Every student's costs have ``b > 2·min(f, w)`` (``ps6._sound``, whose docstring does not say so): there the one-chunk
bound ``(p − 1)f + m(f + b + w)`` is wrong, so quoting it scores nothing.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps6", "alice")
>>> f, b, w = scan_costs(v)
>>> _scan_key(v)["smallest_fb"] == f + w and v["b"] > 2 * min(v["f"], v["w"])
True
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from grader.questions import Keyed
from ppedu import Costs, simulate
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps6 import QUESTIONS, SCAN_STEP, SCAN_STEPS, scan_costs
from ppedu.grading.students import pick
from ppedu.schedules import dualpipe_v, one_f_one_b, zero_bubble_h1, zero_bubble_h2


@cache
def _zb_h2(p: int, m: int, f: float, b: float, w: float) -> float:
    return float(simulate(zero_bubble_h2(p, m), Costs(f=f, b=b, w=w)).makespan)


@cache
def _fill(p: int, f: float) -> float:
    """The longest any device of DualPipeV waits for its first operation (the other costs do not move it)."""
    t = simulate(dualpipe_v(p, 2 * p + 2), Costs(f=f, b=f, w=f / 2, fb=2 * f))
    return max(min(e.start for e in t.on_stage(j)) for j in range(p))


@cache
def _staleness(p: int, j: int, h: int) -> float:
    """PipeDream's count (chapter 9) on GPU ``j`` of 1F1B (``h = 0``), ZB-H1 (1) or ZB-H2 (2), each weight update
    where its gradient is complete — at B for 1F1B, at W for the split schedules: the most updates between a
    micro-batch's forward and its own update, with its weights stashed at the forward."""
    stages = (one_f_one_b, zero_bubble_h1, zero_bubble_h2)[h](p, 3 * p).stages[j]
    update = "B" if h == 0 else "W"
    worst = 0
    for i, op in enumerate(stages):
        if op.kind == "F":
            end = stages.index(op._replace(kind=update))
            worst = max(worst, sum(1 for x in stages[i + 1:end] if x.kind == update))
    return float(worst)


def truth(name: str, args: tuple[Any, ...]) -> float:
    return {"zb_h2_makespan": _zb_h2, "dualpipev_fill": _fill, "async_staleness": _staleness}[name](*args)


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    close = lambda x: abs(got - x) < 1e-9  # noqa: E731
    if name == "zb_h2_makespan":
        p, m, f, b, w = args
        bound = (p - 1) * f + m * (f + b + w)
        if close(bound):
            return (f"that is the one-chunk bound, which the simulator's ZB-H2 takes {want:g} to reach here: besides "
                    "the last GPU's work, two paths through GPU 0 can be longer (its warm-up, and the last gradient's "
                    "way down).")
        if close(bound + (p - 1) * max(0, b - 2 * w)) or close(bound + (p - 1) * max(0, b - 2 * f)):
            return ("one of the two paths through GPU 0 is there, the other is missing: the warm-up's round trip of "
                    "micro-batch 0 against GPU 0's forwards, and the drain's last gradient against the W's owed above.")
        return f"the simulator's ZB-H2 takes {want:g}: the last GPU's work, and two paths through GPU 0."
    if name == "async_staleness":
        p, j, h = args
        if h and close(p - j - 1):
            return ("that is 1F1B's count; with W split off the update comes at W: what runs between a forward and "
                    "its W?")
        return f"on GPU {j} of {p} that order's worst micro-batch sees {want:g} other updates before its own."
    p, f = args
    if close((p / 2 - 1) * f):
        return ("that is DualPipe's middle rank; in DualPipeV every micro-batch enters at device 0: which device waits "
                "longest?")
    return "which device waits longest for its first input, and through how many chunks has that input gone?"


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on, never shown: the student's own (a hash of their id). ZB-H2 on a case
    where the warm-up path is the longest and one where the drain's is."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps6-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name == "zb_h2_makespan":
        p, q = choose("p", range(2, 10)), choose("q", range(2, 10))
        return ((p, 2 * p - 1 + choose("m", (0, 1, 4)), choose("f", (0.5, 0.75)), choose("b", (2.0, 3.0)), 1.5),
                (q, 2 * q + choose("m2", (0, 2, 7)), 2.0, choose("b2", (1.5, 3.0, 5.0)), choose("w", (0.25, 0.5))))
    if name == "async_staleness":
        p = choose("p", range(3, 11))
        return tuple((p, choose(f"j{h}", range(p)), h) for h in (0, 1, 2))
    return (choose("p", range(2, 10)), choose("f", (0.5, 1.25, 3.0))),


def _scan_key(v: Mapping[str, Any]) -> dict[str, Any]:
    """The smallest F&B on the scan's steps at which DeepSeek's DualPipeV row, (PP/2 − 1)(F&B + B − 3W) with PP = 2p
    stages and B the full backward, equals the simulated idle time of DualPipeV's idlest device."""
    f, b, w = scan_costs(v)
    p = v["p"]
    for k in range(1, SCAN_STEPS + 1):
        fb = k * SCAN_STEP * f
        t = simulate(dualpipe_v(p, 2 * p + 2), Costs(f=f, b=b, w=w, fb=fb))
        if abs((p - 1) * (fb + b + w - 3 * w) - max(t.makespan - busy for busy in t.busy_per_stage)) < 1e-9:
            return {"smallest_fb": fb}
    raise AssertionError(f"DualPipeV's row agrees nowhere on the scan for {v}")  # the values allow none: a bug


def _scan_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any],
               v: Mapping[str, Any]) -> str | None:
    f, b, w = scan_costs(v)
    if abs(got - (f + 3 * w - (b + w))) < 1e-9:
        return ("that is the floor: below it the row cannot hold, but it need not hold just above it either — compare "
                "the row with the simulated idle time at each step.")
    return ("simulate `dualpipe_v(p, 2p + 2)` at each F&B of the scan and compare the worst device's idle time with "
            "the row, PP = 2p stages, B the full backward.")


KEYS: dict[str, Any] = {
    **{q: FormulaJudge(QUESTIONS[q], truth, why, hidden) for q in ("zb_h2", "dpv_fill", "staleness")},
    "scan": Keyed(QUESTIONS["scan"], _scan_key, _scan_hint),
}
