"""ps4 — DualPipe and the trade-offs: DeepSeek's bubble table, DualPipe simulated against 1F1B,
where interleaving stops paying (a hand-over latency, then a real model's link bandwidth), and a
schedule for a real model on a given cluster.

>>> values("alice")["B"] == 2 * values("alice")["F"]
True
"""

from __future__ import annotations

from typing import Any

from ppedu.grading.answers import Choice, Number
from ppedu.grading.questions import Question
from ppedu.grading.students import pick
from ppedu.schedules import SCHEDULES

#: ``"none"``: nothing fits in the cluster's memory.
CHOICES = (*SCHEDULES, "none")


def values(student: str) -> dict[str, Any]:
    p = pick("ps4", student, "p", (4, 6, 8))
    f = pick("ps4", student, "f", (1, 2))
    return {
        "p": p, "m": p * pick("ps4", student, "k", (2, 3, 4)),
        "F": f, "B": 2 * f, "W": f, "FB": f * pick("ps4", student, "overlap", (2.4, 2.7)),
        "model": pick("ps4", student, "model", ("7b", "13b")),
        "gpu": pick("ps4", student, "gpu", ("a100-40gb", "a100-80gb", "h100-80gb", "h200")),
        "link": pick("ps4", student, "link", ("nvlink", "pcie-gen4", "ib-200")),
    }


QUESTIONS: dict[str, Any] = {
    "table": Question((Number("bubble_1f1b"), Number("bubble_zb1p"), Number("bubble_dualpipe"))),
    "simulated": Question((Number("makespan_dualpipe"), Number("makespan_1f1b"))),
    "break_even": Question((Number("break_even"),)),
    "min_bandwidth": Question((Number("min_bandwidth"),)),
    "choose": Question((Choice("schedule", CHOICES),)),
}
