"""ps3 — write the schedules: GPipe, 1F1B and interleaved 1F1B as per-GPU op lists, graded per
property (every op once, dependencies, makespan, peak activations) on fixed sizes and the
student's own.

While autograding, ppedu's own schedule generators are not available in the notebook: the
answer is the student's function, not a call of the library's.

>>> v = values("alice")
>>> v["m_interleaved"] % v["p"]
0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppedu import schedules

from ppedu.grading.answers import calls
from ppedu.grading.schedule_checks import Report, grade_schedule
from ppedu.grading.students import pick

#: What a ps3 notebook cannot call while it is autograded (module: functions; empty: all of them; None: the module
#: itself): every generator of an order — each schedule family (looped BFS with v = 1 is GPipe's twin), the search,
#: torch's orders and PyTorch's pipelining package, which lists them too.
HIDDEN: dict[str, tuple[str, ...] | None] = {
    **{f"ppedu.schedules.{path.stem}": () for path in sorted(Path(schedules.__file__).parent.glob("*.py"))
       if path.stem != "__init__"},
    "ppedu.search": (), "ppedu.reference": (), "torch.distributed.pipelining": None}


def values(student: str) -> dict[str, Any]:
    p = pick("ps3", student, "p", range(3, 7))
    return {
        "p": p,
        "m": pick("ps3", student, "m", range(p + 1, 3 * p + 1)),
        "v": pick("ps3", student, "v", (2, 3)),
        "m_interleaved": p * pick("ps3", student, "k", (1, 2)),
    }


@dataclass(frozen=True)
class ScheduleQuestion:
    """The student's function ``name`` against ppedu's ``reference``, ``points`` split over the properties."""

    name: str
    reference: str
    points: float
    sizes: tuple[tuple[int, ...], ...]  # tried in the visible test and again by the autograder
    edge: tuple[int, ...]  # m < p too, where warm-up is cut short: a classic off-by-one

    def own(self, v: Mapping[str, Any]) -> tuple[int, ...]:
        return (v["p"], v["m_interleaved"], v["v"]) if self.reference == "interleaved" else (v["p"], v["m"])

    def graded_sizes(self, v: Mapping[str, Any]) -> tuple[tuple[int, ...], ...]:
        return (*self.sizes, self.edge, self.own(v))

    def data(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> dict[str, object]:
        return {self.name: calls(namespace, self.name, self.graded_sizes(v))}

    def check(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        return grade_schedule(calls(namespace, self.name, self.sizes), self.reference, self.sizes, self.points)


QUESTIONS: dict[str, Any] = {
    "gpipe": ScheduleQuestion("gpipe", "gpipe", 2, ((2, 2), (3, 5)), (4, 2)),
    "one_f_one_b": ScheduleQuestion("one_f_one_b", "1f1b", 4, ((2, 3), (4, 4), (4, 8)), (4, 2)),
    "interleaved_1f1b": ScheduleQuestion("interleaved_1f1b", "interleaved", 4, ((2, 2, 2), (2, 4, 2), (4, 8, 2)),
                                         (2, 2, 3)),
}
