"""ps6's keys — derivations, judged against the simulator: ZB-H1's idle time and the largest W for which its closed
form holds, interleaving's warm-up count against ppedu's (Megatron-LM's) order, DualPipe's middle rank's fill and
the F&B below which DeepSeek's formula falls under it, and the smallest F&B at which the formula agrees with the
simulation (a scan of ``deepseek_table``). The written derivations are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps6", "alice")
>>> _scan_key(v)["smallest_fb"] == 1.5 * v["F"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from grader.questions import Keyed
from ppedu import Costs, simulate
from ppedu.errata import deepseek_table
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps6 import QUESTIONS, scan_costs
from ppedu.grading.students import pick
from ppedu.schedules import dualpipe, interleaved_1f1b, zero_bubble_h1


@cache
def _zb_idle(p: int, f: float, b: float, w: float) -> float:
    """The simulated idle time of ZB-H1's idlest GPU (they all idle alike where the closed form holds)."""
    t = simulate(zero_bubble_h1(p, 2 * p), Costs(f=f, b=b, w=w))
    return max(t.makespan - busy for busy in t.busy_per_stage)


@cache
def _largest_w(f: float, b: float) -> float:
    """The largest W, in eighths of a unit, at which ZB1P's row of DeepSeek's table agrees with the simulation."""
    agree = [k / 8 for k in range(0, 33)
             if abs((row := deepseek_table(4, 8, Costs(f=f, b=b, w=k / 8))[1]).formula_bubble - row.simulated_bubble) < 1e-9]
    return max(agree)


@cache
def _warmup(p: int, v: int, j: int) -> float:
    """The forwards GPU ``j`` runs before its steady state under ppedu's (Megatron-LM's) interleaved order."""
    ops = interleaved_1f1b(p, 4 * p, v).stages[j]
    return float(next(i for i, op in enumerate(ops) if op.kind == "B") - 1)


@cache
def _middle_fill(p: int, f: float) -> float:
    """When DualPipe's middle rank, ``p/2 − 1``, starts its first operation."""
    t = simulate(dualpipe(p, 2 * p + 2), Costs(f=f, b=f, w=f / 2))
    return min(e.start for e in t.on_stage(p // 2 - 1))


def _floor(F: float, B: float, W: float) -> float:
    """The F&B at which DeepSeek's formula ``(p/2−1)(F&B + B − 3W)`` meets the middle rank's simulated fill."""
    return _middle_fill(8, F) / (8 / 2 - 1) - B + 3 * W


def truth(name: str, args: tuple[Any, ...]) -> float:
    if name == "zb_h1_idle":
        return _zb_idle(*args)
    if name == "zb_h1_largest_w":
        return _largest_w(*args)
    if name == "warmup":
        return _warmup(*args)
    if name == "middle_fill":
        return _middle_fill(*args)
    return _floor(*args)


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    if name == "zb_h1_idle":
        p, f, b, w = args
        if abs(got - (p - 1) * (f + b - 2 * w)) < 1e-9:
            return ("that is DeepSeek's (p−1)(F+B−2W) with B the input-gradient pass; there B is the full backward, "
                    "b + w.")
        return f"the simulator's GPUs each idle {want:g}: fill, drain and the postponed W's."
    if name == "zb_h1_largest_w":
        return "a postponed W must fit in the gaps it fills: which passes are the gaps as long as?"
    if name == "warmup":
        p, v, j = args
        if abs(got - ((p - j - 1) + (v - 1) * p)) < 1e-9:
            return "micro-batch 0 must climb the GPUs above and its gradient come back down: count both trips."
        return f"ppedu's (Megatron-LM's) order runs {want:g} forwards on GPU {j} before its steady state."
    if name == "middle_fill":
        return "which direction's first micro-batch reaches the middle rank first, and through how many ranks?"
    return "set DeepSeek's formula equal to the middle rank's fill and solve for F&B (B is the full backward)."


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on, never shown: the student's own (a hash of their id)."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps6-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name == "zb_h1_idle":
        f, b = choose("f", (0.5, 1.0, 1.5, 2.0)), choose("b", (1.0, 2.0, 3.0))
        return (choose("p", range(2, 9)), f, b, choose("share", (0.25, 0.5, 1.0)) * min(f, b)),
    if name == "zb_h1_largest_w":
        return (choose("f", (0.5, 1.0, 2.5)), choose("b", (0.75, 1.5, 3.0))), (choose("f2", (2.0, 3.0)), 1.0)
    if name == "warmup":
        p = choose("p", range(3, 13))
        return (p, choose("v", range(2, 6)), choose("j", range(p - 1))), (choose("p2", range(2, 9)), 3, 0)
    if name == "middle_fill":
        return (choose("p", (6, 10, 12, 16)), choose("f", (0.5, 1.5, 3.0))),
    return (choose("F", (0.5, 1.0, 3.0)), choose("B", (2.0, 4.0)), choose("W", (0.5, 1.0))),


def _scan_key(v: Mapping[str, Any]) -> dict[str, Any]:
    f, b, w = scan_costs(v)
    steps = [k * v["F"] / 4 for k in range(1, 17)]
    agree = [fb for fb in steps if abs((row := deepseek_table(v["p"], 2 * v["p"] + 2, Costs(f=f, b=b, w=w, fb=fb))[2])
                                       .formula_bubble - row.simulated_bubble) < 1e-9]
    return {"smallest_fb": min(agree)}


def _scan_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], v: Mapping[str, Any]) -> str | None:
    f, b, w = scan_costs(v)
    if abs(got - (f + 3 * w - (b + w))) < 1e-9:
        return ("that is the floor: below it the formula cannot hold, but it need not hold just above it either — "
                "scan deepseek_table and compare its two columns.")
    return "scan F&B in steps of F/4 with deepseek_table on your costs; the DualPipe row's two bubbles must be equal."


KEYS: dict[str, Any] = {
    **{q: FormulaJudge(QUESTIONS[q], truth, why, hidden) for q in ("zb_idle", "zb_region", "warmup", "middle_fill", "floor")},
    "scan": Keyed(QUESTIONS["scan"], _scan_key, _scan_hint),
}
