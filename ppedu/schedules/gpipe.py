"""GPipe (Huang et al., 2019): every forward, then every backward."""

from __future__ import annotations

from ppedu.ops import Op, Schedule
from ppedu.validate import require_counts


def gpipe(p: int, m: int) -> Schedule:
    """All ``m`` forwards on each stage, then all ``m`` backwards (PyTorch's ``ScheduleGPipe`` order).

    >>> gpipe(2, 3).stages[1]
    (F0c1, F1c1, F2c1, B0c1, B1c1, B2c1)
    """
    require_counts(p=p, m=m)
    stages = tuple(
        tuple(Op("F", i, j) for i in range(m)) + tuple(Op("B", i, j) for i in range(m)) for j in range(p)
    )
    return Schedule(stages, "gpipe", (tuple(range(p)),), m)
