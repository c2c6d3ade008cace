"""Zero-bubble pipeline parallelism (Qi et al., ICLR 2024): the handcrafted ZB-H1 schedule."""

from __future__ import annotations

from ppedu.ops import Schedule
from ppedu.validate import require_counts
from ppedu.schedules.one_f_one_b import _stage_order


def zero_bubble_h1(p: int, m: int) -> Schedule:
    """ZB-H1: 1F1B's order with each backward split into B (input gradient) and W (weight
    gradient), and stage j postponing its first j W's, so later stages drain their backwards
    quickly and the W's fill what was 1F1B's cooldown bubble.

    Same warm-up, hence the same in-flight micro-batches (memory), as 1F1B.

    >>> zero_bubble_h1(2, 2).stages[0]
    (F0c0, F1c0, B0c0, W0c0, B1c0, W1c0)
    >>> zero_bubble_h1(2, 2).stages[1]
    (F0c1, B0c1, F1c1, B1c1, W0c1, W1c1)
    """
    require_counts(p=p, m=m)
    stages = tuple(_stage_order(p, m, j, split_w=True, w_delay=j) for j in range(p))
    return Schedule(stages, "zb-h1", (tuple(range(p)),), m)
