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
    """ZB-H2 (Qi et al., ICLR 2024, section 2.2): stage ``j`` warms up with ``2(p-1-j)+1`` forwards,
    then runs B, W, F in turn; for its last ``2p-2`` backwards (where the next stage, no longer
    running W's, sends them back two steps apart) it puts one op between two B's, a forward while
    any is left, else a W; it ends with the ``2j+1`` W's still owed.

    The extra warm-up forwards fill the bubble before the first B, the owed W's the one after the
    last B. With equal F, B and W times and ``m ≥ 2p-1`` (enough micro-batches for stage 0's
    warm-up), every stage then runs without a gap from its first operation to its last, stage ``j``
    from ``j`` to ``3m+j``: the parallelogram the paper overlaps with the next step; with fewer, the
    early stages wait for their first B. Each W runs in the steady state, so no stage ever holds
    more than ``2p-1`` micro-batches' activations, the paper's peak, even where W frees them
    (:data:`~ppedu.memory.FREE_AT_W`): stage 0 reaches it after its warm-up, stage ``j`` when its
    last forward is done and ``2j+1`` W's are still owed. Where B frees them
    (:data:`~ppedu.memory.FREE_AT_B`) stage ``j`` holds ``2(p-1-j)+1``.

    >>> "".join(op.kind for op in zero_bubble_h2(2, 4).stages[0])
    'FFFBWFBWBWBW'
    >>> "".join(op.kind for op in zero_bubble_h2(2, 4).stages[1])
    'FBWFBFBFBWWW'
    """
    require_counts(p=p, m=m)
    steady = max(0, m - 2 * p + 1)  # the backwards that take a W and a forward after them
    stages = []
    for j in range(p):
        warmup = min(2 * (p - 1 - j) + 1, m)
        ops = [Op("F", i, j) for i in range(warmup)]
        forwards, weights = warmup, 0
        for i in range(m):
            ops.append(Op("B", i, j))
            if i < steady:
                ops += [Op("W", weights, j), Op("F", forwards, j)]
                weights, forwards = weights + 1, forwards + 1
            elif i < m - 1 and forwards < m:
                ops.append(Op("F", forwards, j))
                forwards += 1
            elif i < m - 1:
                ops.append(Op("W", weights, j))
                weights += 1
        ops += [Op("W", i, j) for i in range(weights, m)]
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
