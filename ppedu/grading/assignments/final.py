"""final — the timed exam (70 minutes), closed-library: an unfamiliar order's grid read from its picture (its time, its
idle slots, which of them the order causes and what each more micro-batch costs, the loop behind them in words); a
schedule and micro-batch count chosen under a memory budget; the fastest any order can be with one slow GPU, and the
proof; a two-level all-reduce costed; a schedule for a cluster chosen from its table; a deadlock, unseen; and the
goodput of two levels of checkpoints, unseen too. The
grid and the table reach students as data (``questions.json``, made on the instructors' side); the functions are run
on their own where ppedu has no code, on inputs the student does not see; the written answers are graded by hand
with the published rubric. Nothing here draws, simulates or counts.

>>> " ".join(sorted(values("alice")))
'ckpt_c1 ckpt_c2 ckpt_gpus ckpt_mtbf_h ckpt_q ckpt_r1 ckpt_r2 nodes per_node slow_k slow_m slow_p slow_s variant'
"""

from __future__ import annotations

from typing import Any

from ppedu.grading.answers import Number
from ppedu.grading.assignments.ps1 import FormulaQuestion
from ppedu.grading.questions import Question
from ppedu.grading.students import Picker, draw, variant

#: The question data's pool: each student reads one of these variants' grid and table.
VARIANTS = 48


def values(student: str) -> dict[str, Any]:
    return {"variant": variant("final", student, VARIANTS), **draw("final", student, _draw, lambda v: True)}


def _draw(pick: Picker) -> dict[str, Any]:
    p = pick("slow_p", (4, 6, 8))
    return {"slow_p": p, "slow_m": pick("slow_m", (2 * p, 3 * p)), "slow_s": pick("slow_s", range(p - 1)),
            "slow_k": pick("slow_k", (2, 3)), "nodes": pick("nodes", (4, 16, 64)), "per_node": pick("per_node", (4, 8)),
            "ckpt_gpus": pick("ckpt_gpus", (4096, 8192, 16384)), "ckpt_mtbf_h": pick("ckpt_mtbf_h", (50_000, 100_000)),
            "ckpt_q": pick("ckpt_q", (0.6, 0.75, 0.9)), "ckpt_c1": pick("ckpt_c1", (2, 5)),
            "ckpt_r1": pick("ckpt_r1", (120, 300)), "ckpt_c2": pick("ckpt_c2", (30, 60, 120)),
            "ckpt_r2": pick("ckpt_r2", (600, 1200))}


QUESTIONS: dict[str, Any] = {
    "grid_T": Question((Number("T", whole=True), Number("idle_slots", whole=True))),
    "grid_path": Question((Number("order_idle", whole=True), Number("per_microbatch", whole=True))),
    "plan": FormulaQuestion({"best_step": ((4, 64, 1, 1, 0.5, 0.5, 1, 40), (2, 24, 2, 1, 1, 4, 1, 12))},
                            lambda name, v: ((v["slow_p"], 8 * v["slow_p"], 1, 1.5, 0.5, 1, 1, 4 * v["slow_p"]),)),
    "slow": FormulaQuestion({"fastest": ((4, 8, 0, 2, 1, 2), (4, 8, 3, 2, 1, 2), (4, 4, 0, 2, 1, 4))},
                            lambda name, v: ((v["slow_p"], v["slow_m"], v["slow_s"], v["slow_k"], 1, 2),)),
    "two_level": FormulaQuestion({"two_level": ((1e9, 4, 8, 2e-6, 200e9, 10e-6, 50e9),
                                                (2.5e8, 2, 4, 2e-6, 200e9, 10e-6, 25e9))},
                                 lambda name, v: ((1e9, v["nodes"], v["per_node"], 2e-6, 200e9, 10e-6, 50e9),)),
    "checkpoints": FormulaQuestion({"two_level_goodput": ((16384, 50_000, 0.8, 5, 300, 60, 1200),
                                                          (2048, 25_000, 0.5, 2, 120, 120, 900))},
                                   lambda name, v: ((v["ckpt_gpus"], v["ckpt_mtbf_h"], v["ckpt_q"], v["ckpt_c1"],
                                                     v["ckpt_r1"], v["ckpt_c2"], v["ckpt_r2"]),)),
}
