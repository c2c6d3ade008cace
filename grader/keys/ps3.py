"""ps3's keys — the builders of the three orders the questions define by rules (none of them one of ppedu's schedules,
none shipped to students), and the judge: the student's schedules, as the op lists their functions returned when their
answer cell ran on its own (where ppedu's generators are not installed), checked per property against these builders
on the visible sizes, an edge case, the student's own sizes (from the student's id, never the notebook's) and sizes of
the autograder's own, never named in the feedback. Question 4's prediction and its cause are graded by hand.

>>> gpipe_waves(2, 3, 2).stages[1]
(F0c1, F1c1, B0c1, B1c1, F2c1, B2c1)
>>> grouped_1f1b(2, 4, 2).stages[0]
(F0c0, F1c0, F2c0, F3c0, B0c0, B1c0, B2c0, B3c0)
>>> [op.microbatch for op in leftover_first(2, 5, 2).stages[0] if op.kind == "F"]
[0, 1, 2, 0, 1, 2, 3, 4, 3, 4]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps3 import QUESTIONS, ScheduleQuestion
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick
from ppedu.ops import Op, Schedule


def gpipe_waves(p: int, m: int, k: int) -> Schedule:
    """GPipe under a cap of ``k`` micro-batches' activations: waves of ``k`` (the last what is left), each GPU running a
    wave's forwards, then its backwards, in micro-batch order, then the next wave."""
    waves = [range(first, min(first + k, m)) for first in range(0, m, k)]
    stages = tuple(tuple(Op(kind, i, j) for wave in waves for kind in "FB" for i in wave) for j in range(p))
    return Schedule(stages, "GPipe in waves", (tuple(range(p)),), m)


def grouped_1f1b(p: int, m: int, k: int) -> Schedule:
    """PyTorch's ``Schedule1F1B`` loop with each phase ``k`` micro-batches wide: GPU ``j`` warms up with
    ``min(m, k·(p − j))`` forwards, then runs ``k`` backwards and ``k`` forwards in turn (fewer where fewer are left)."""
    stages = []
    for j in range(p):
        forwards, backwards = min(m, k * (p - j)), 0
        ops = [Op("F", i, j) for i in range(forwards)]
        while backwards < m:
            ops += [Op("B", i, j) for i in range(backwards, min(backwards + k, m))]
            ops += [Op("F", i, j) for i in range(forwards, min(forwards + k, m))]
            backwards, forwards = min(backwards + k, m), min(forwards + k, m)
        stages.append(tuple(ops))
    return Schedule(tuple(stages), "grouped 1F1B", (tuple(range(p)),), m)


def leftover_first(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B (chunk ``c`` on GPU ``c mod p``) in groups of ``p`` micro-batches with the ``m mod p`` left over
    in the first group (Megatron-LM puts them in the last): GPU ``j`` warms up with ``(v − 1)·g₀ + 2(p − j − 1)``
    forwards (at most ``v·m``), ``g₀`` the first group's size, then alternates, then drains."""
    sizes = [p] * max(1, m // p)
    sizes[0] += m - sum(sizes)
    table = [(mb, r) for n, first in zip(sizes, (sum(sizes[:i]) for i in range(len(sizes))))
             for r in range(v) for mb in range(first, first + n)]
    stages = []
    for j in range(p):
        forward = [Op("F", mb, r * p + j) for mb, r in table]
        backward = [Op("B", mb, (v - 1 - r) * p + j) for mb, r in table]
        warmup = min((v - 1) * sizes[0] + 2 * (p - j - 1), v * m)
        ops = forward[:warmup]
        for n in range(v * m - warmup):
            ops += [forward[warmup + n], backward[n]]
        stages.append((*ops, *backward[v * m - warmup:]))
    return Schedule(tuple(stages), "leftover first", (tuple(c % p for c in range(p * v)),), m, v)


BUILDERS = {"waves": gpipe_waves, "grouped": grouped_1f1b, "leftover": leftover_first}


@dataclass(frozen=True)
class ScheduleJudge:
    form: ScheduleQuestion
    question: str

    def hidden(self, v: Values) -> tuple[tuple[int, ...], ...]:
        """Two sizes per student the notebook never shows, a cap or a leftover the visible sizes do not try."""
        def choose(what: str, choices: Any) -> Any:
            return pick("ps3-hidden", v.student, f"{self.question}:{what}", tuple(choices))

        p, q = choose("p", (3, 5, 6, 7)), choose("q", (2, 4, 5))
        if self.question == "leftover":
            return ((p, p * choose("rounds", (3, 5)) + choose("left", range(1, p)), choose("v", (2, 3, 4))),
                    (q, q * 4 + q - 1, 2))
        k = choose("k", (2, 3, 4))
        return ((p, k * choose("n", (p - 2, p + 1)) + choose("rest", range(1, k)), k), (q, 2 * q + 1, q + 2))

    def calls(self, v: Values) -> dict[str, tuple[tuple[int, ...], ...]]:
        return {self.form.name: (*self.form.graded_sizes(v), *self.hidden(v))}

    def secret(self, v: Values) -> dict[str, tuple[tuple[int, ...], ...]]:
        return {self.form.name: self.hidden(v)}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        return grade_schedule(data.get(self.form.name), BUILDERS[self.question], self.calls(v)[self.form.name],
                              self.form.points, hidden=self.hidden(v), names=self.form.names,
                              label="the question's order's", exact=True)


KEYS: dict[str, Any] = {name: ScheduleJudge(q, name) for name, q in QUESTIONS.items()}
