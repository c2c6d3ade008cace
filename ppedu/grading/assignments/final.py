"""final — the timed exam (60 minutes): an unfamiliar order's grid read (its time, its idle slots, which of them the
order causes and what each more micro-batch costs, all off the critical path), a schedule and micro-batch count chosen
under a memory budget (a closed form checked on its own without ppedu, on inputs the student does not see), and four
written answers graded by hand with the published rubric — a claim about bubbles, a schedule for a cluster, a proof
of ZB-H2's memory, and a deadlock.

>>> sorted(values("alice"))
['gpu', 'grid_b', 'grid_m', 'grid_p', 'link', 'm', 'model', 'p', 'short']
>>> picture(values("alice")).count("GPU ") == values("alice")["grid_p"]
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppedu.grading.answers import Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw


def values(student: str) -> dict[str, Any]:
    return draw("final", student, _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("grid_p", (3, 4))
    return {"grid_p": p, "grid_m": pick("grid_m", (5, 6)), "short": pick("short", tuple(range(p - 1))),
            "grid_b": pick("grid_b", (1, 2)),
            "p": pick("p", (4, 8)), "m": pick("m", (16, 32)), "model": pick("model", ("7b", "13b")),
            "gpu": pick("gpu", ("a100-80gb", "h100-80gb")), "link": pick("link", ("nvlink", "pcie-gen4"))}


def warmups(p: int, short: int) -> tuple[int, ...]:
    """Question 1's order: each GPU's forwards before its first backward — 1F1B's ``p − 1 − j``, but one fewer on
    GPU ``short`` (no generator of ppedu's runs this)."""
    return tuple(p - 1 - j - (j == short) for j in range(p))


def order(p: int, m: int, short: int) -> Any:
    """The hand-built order: on each GPU its warm-up forwards, then one forward and one backward in turn, then the
    backwards left."""
    from ppedu.schedules.one_f_one_b import with_warmups

    return with_warmups(warmups(p, short), m)


def timeline(v: Mapping[str, Any], more: int = 0) -> Any:
    """Question 1's grid (with ``more`` micro-batches added to the same pattern): a forward one step, a backward
    ``grid_b``."""
    from ppedu import Costs, simulate

    return simulate(order(v["grid_p"], v["grid_m"] + more, v["short"]), Costs(f=1, b=v["grid_b"]))


def _sound(v: Mapping[str, Any]) -> bool:
    """The pictured grid must not have as many busy as idle slots (counting the busy ones would score), and its
    pattern must already repeat: each more micro-batch adds the same steps."""
    t, one, two = (timeline(v, k).makespan for k in range(3))
    return timeline(v).idle_slots != timeline(v).busy_slots and one - t == two - one


def picture(v: Mapping[str, Any]) -> str:
    """The grid question 1 shows."""
    from ppedu.text import render_grid

    return render_grid(timeline(v))


QUESTIONS: dict[str, Any] = {
    "grid_T": Question((Number("T", whole=True), Number("idle_slots", whole=True))),
    "grid_path": Question((Number("order_idle", whole=True), Number("per_microbatch", whole=True))),
    "plan": FormulaQuestion({"best_step": ((4, 64, 1, 1, 0.5, 0.5, 1, 40), (2, 24, 2, 1, 1, 4, 1, 12))},
                            lambda name, v: ((v["p"], 8 * v["p"], 1, 1.5, 0.5, 1, 1, 4 * v["p"]),)),
}
