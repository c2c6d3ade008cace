"""ps3 — write schedules no library builds, from rules the question states: GPipe in waves under a memory cap,
PyTorch's 1F1B loop with its phases grouped, and interleaved 1F1B with the leftover micro-batches in the first group;
and predict, with the cause, what the grouping changes.

Each function is run where ppedu has only its records (``ppedu.ops``: ``Op``, ``Schedule``) and no generator, and is
judged against the grader's own builder of the order (``grader/keys/ps3.py``), which does not ship: the student's
check here tests only that the order holds every operation once and runs to the end.

>>> v = values("alice")
>>> v["m"] % v["k"] != 0 and v["m_grouped"] % v["k"] == 0 and v["m_interleaved"] % v["p"] != 0
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppedu.grading.evaluate import Code, Library
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick

#: What a schedule's function has: ppedu's records, nothing that generates an order.
CODE = Code(Library(("ppedu.ops",)))


def values(student: str) -> dict[str, Any]:
    p, k = pick("ps3", student, "p", range(3, 7)), pick("ps3", student, "k", (2, 3))
    return {
        "p": p,
        "k": k,
        # question 1: a last wave smaller than the others
        "m": k * pick("ps3", student, "waves", (2, 3, 4)) + pick("ps3", student, "rest", range(1, k)),
        # questions 2 and 4: whole groups, at least one per GPU
        "m_grouped": k * pick("ps3", student, "groups", range(p, 2 * p + 1)),
        "v": pick("ps3", student, "v", (2, 3)),
        # question 3: three groups or more, and a leftover
        "m_interleaved": p * pick("ps3", student, "rounds", (3, 4)) + pick("ps3", student, "left", range(1, p)),
    }


@dataclass(frozen=True)
class ScheduleQuestion:
    """The student's function ``name`` of the arguments ``names``: ``points`` split over the properties of the order,
    judged by the grader against its own builder; tried on ``sizes`` (visible), ``edge`` and the student's own."""

    name: str
    names: str
    points: float
    sizes: tuple[tuple[int, ...], ...]  # tried in the visible test and again by the autograder
    edge: tuple[int, ...]  # where a rule's cap binds: a classic off-by-one
    own_keys: tuple[str, ...]  # the student's values, in the function's argument order
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> tuple[int, ...]:
        return tuple(v[key] for key in self.own_keys)

    def graded_sizes(self, v: Mapping[str, Any]) -> tuple[tuple[int, ...], ...]:
        return (*self.sizes, self.edge, self.own(v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[int, ...], ...]]:
        return {self.name: self.sizes}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        """Every operation once and no deadlock: whether it is the question's order is the autograder's to say."""
        return grade_schedule(data.get(self.name), None, self.sizes, self.points, names=self.names, label=self.name)


QUESTIONS: dict[str, Any] = {
    "waves": ScheduleQuestion("gpipe_waves", "pmk", 2, ((2, 4, 2), (3, 7, 3)), (4, 2, 3), ("p", "m", "k")),
    "grouped": ScheduleQuestion("grouped_1f1b", "pmk", 3, ((2, 4, 2), (4, 8, 2), (3, 9, 3)), (4, 5, 2),
                                ("p", "m_grouped", "k")),
    "leftover": ScheduleQuestion("leftover_first", "pmv", 4, ((2, 7, 2), (3, 10, 2)), (4, 5, 2),
                                 ("p", "m_interleaved", "v")),
}
