"""Zero-bubble pipeline parallelism (Qi et al., ICLR 2024): each backward split into B (input
gradient) and W (weight gradient), the W's moved to fill what would be bubbles."""

from __future__ import annotations

from ppedu.ops import Kind, Op, Schedule
from ppedu.schedules.interleaved import _group, _interleaved_order
from ppedu.schedules.one_f_one_b import _stage_order
from ppedu.validate import require_counts


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


def zero_bubble_h2(p: int, m: int) -> Schedule:
    """ZB-H2: stage ``j`` warms up with ``2(p-1-j)+1`` forwards, then runs B and F in turn with
    every W held back, then B and W in turn, then the W's still owed.

    The extra warm-up forwards fill the bubble before the first B, and the held-back W's the one
    after the last F; under equal F, B and W times and with ``m ≥ 2p-1`` (enough micro-batches for
    stage 0's warm-up) each stage then runs without a gap from its first operation to its last
    (the parallelogram the paper overlaps with the next step); with fewer, the early stages still
    wait for their first B. It holds
    about twice 1F1B's activations (2p-1 micro-batches on stage 0 against p) when B frees them,
    as the paper counts (``memory=FREE_AT_B``); if W holds them all until it ends
    (``FREE_AT_W``), the held-back W's keep all ``m`` alive. The zero-bubble authors' generator
    (``zb.py``) draws this shape.

    >>> "".join(op.kind for op in zero_bubble_h2(2, 4).stages[0])
    'FFFBFBWBWBWW'
    """
    require_counts(p=p, m=m)
    stages = []
    for j in range(p):
        warmup = min(2 * (p - 1 - j) + 1, m)
        ops = [Op("F", i, j) for i in range(warmup)]
        for i in range(m - warmup):
            ops += [Op("B", i, j), Op("F", warmup + i, j)]
        for i in range(m - warmup, m):
            ops += [Op("B", i, j), Op("W", i - (m - warmup), j)]
        ops += [Op("W", i, j) for i in range(warmup, m)]
        stages.append(tuple(ops))
    return Schedule(tuple(stages), "zb-h2", (tuple(range(p)),), m)


def interleaved_zero_bubble(p: int, m: int, v: int = 2, group: int | None = None) -> Schedule:
    """Interleaved 1F1B with split backwards (PyTorch's ``ScheduleInterleavedZeroBubble``, the
    paper's ZB-1P on ``v`` chunks per stage): stage ``j`` warms up with ``(v-1)·group + p-1-j``
    forwards (one per hop, not two, since B alone comes back sooner) and runs each W ``j``
    backwards after its B.

    >>> s = interleaved_zero_bubble(2, 2)
    >>> s.stages[1]
    (F0c1, F1c1, F0c3, B0c3, F1c3, B1c3, W0c3, B0c1, W1c3, B1c1, W0c1, W1c1)
    """
    require_counts(p=p, m=m, v=v)
    group = _group(p, m, group)
    stages = tuple(
        _interleaved_order(p, m, v, group, j, min((v - 1) * group + p - 1 - j, m * v), w_delay=j) for j in range(p)
    )
    return Schedule(stages, "interleaved-zb", (tuple(c % p for c in range(p * v)),), m, v)


def zero_bubble_v(p: int, m: int) -> Schedule:
    """ZB-V (the paper's section 6; PyTorch's ``ScheduleZBVZeroBubble``): the model in ``2p``
    chunks on a V, GPU ``j`` holding chunks ``j`` and ``2p-1-j``, every backward split.

    Stage ``j`` warms up with ``2(p-j)-1`` forwards of its first chunk, then ``j`` pairs of
    second- and first-chunk forwards, then ``p-j`` rounds of F, B, W on its second chunk; the
    steady state runs F, B, W on each chunk in turn; the drain runs B's, holding W's back to the
    end. Micro-batches beyond ``m`` in the pattern (it assumes ``m ≥ 2p-1``) are left out.

    >>> "".join(op.kind for op in zero_bubble_v(2, 4).stages[1])
    'FFFFBWFBWFBWFBWFBWBBBWWW'
    """
    require_counts(p=p, m=m)
    n = max(2 * p - 1, m)
    stages = []
    for j in range(p):
        chunk = (j, 2 * p - 1 - j)
        count = {"F": [0, 0], "B": [0, 0], "W": [0, 0]}
        ops: list[Op] = []

        def run(kind: Kind, piece: int, same_as_b: bool = False) -> None:
            # A W right after its own B takes that B's micro-batch; a deferred one its own count.
            mb = count["B"][piece] - 1 if same_as_b else count[kind][piece]
            count[kind][piece] = mb + 1
            ops.append(Op(kind, mb, chunk[piece]))

        for _ in range(2 * (p - j) - 1):
            run("F", 0)
        for _ in range(j):
            run("F", 1)
            run("F", 0)
        for _ in range(p - j):
            run("F", 1)
            run("B", 1)
            run("W", 1, same_as_b=True)
        while count["F"][1] < count["F"][0] or count["F"][0] < n:
            if count["F"][0] < n:
                run("F", 0)
            run("B", 0)
            run("W", 0, same_as_b=True)
            run("F", 1)
            run("B", 1)
            run("W", 1, same_as_b=True)
        for _ in range(j):
            run("B", 0)
            run("B", 1)
        for _ in range(p - j):
            run("B", 0)
            run("W", 0)
        for piece in (1, 0):
            while count["W"][piece] < count["B"][piece]:
                run("W", piece)
        stages.append(tuple(op for op in ops if op.microbatch < m))
    placement = (tuple(min(c, 2 * p - 1 - c) for c in range(2 * p)),)
    return Schedule(tuple(stages), "zb-v", placement, m, 2)
