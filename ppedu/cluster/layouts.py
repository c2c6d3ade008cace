"""The closing project's question: for a model, a number of GPUs and a global batch, which ``t``, ``p``,
``d``, schedule (and ``v``), ``m``, recomputation and ZeRO stage train fastest within memory?

Every layout with ``t·p·d`` = the GPUs is tried: ``t`` divides the node (tensor parallelism stays on
NVLink), ``m = global batch ÷ (d · micro-batch)`` must be whole, consecutive stages share a node while
it has room (their hand-overs on NVLink, the rest over the link between nodes), and the data-parallel
replicas reduce over the nodes' link unless they all share one node. Each is simulated by
:func:`ppedu.cluster.plan`, so every figure — step time, tokens per second, MFU, memory — is the
simulator's.

>>> from ppedu.cluster import GPUS, MODELS
>>> rows = layouts(MODELS["7b"], GPUS["h100-80gb"], 8, global_batch=32, schedules=("1f1b",), recomputes=("selective",))
>>> best = rows[0]
>>> best.fits, best.t * best.p * best.d
(True, 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.cluster.hardware import GB, GPU, LINKS, RECOMPUTE, Cluster, Link, Model
from ppedu.cluster.parallel import Parallel
from ppedu.cluster.planning import PlanRow, plan
from ppedu.lesson import Table
from ppedu.validate import whole


@dataclass(frozen=True)
class Layout:
    """One way to train the model on the GPUs, simulated."""

    t: int
    p: int
    d: int
    schedule: str
    v: int
    m: int
    recompute: str
    zero: int
    step_s: float
    tokens_per_s: float
    mfu: str
    max_gb: float
    fits: bool


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def layouts(model: Model, gpu: GPU, gpus: int, global_batch: int, node_size: int = 8,
            within: Link = LINKS["nvlink"], between: Link = LINKS["ib-400"],
            schedules: Sequence[str] = ("1f1b", "interleaved", "zb-h1", "zb-v", "dualpipe-v"),
            recomputes: Sequence[str] | None = None, zeros: Sequence[int] = (0, 1), v: int = 2,
            max_p: int = 16) -> Table[Layout]:
    """Every layout of ``gpus`` GPUs (see the module's docstring) for ``global_batch`` sequences per step,
    fitting ones first, each group fastest first. ``max_p`` bounds the pipeline's depth. By default every
    recomputation mode is tried; with FlashAttention, whose backward already recomputes the attention
    scores, ``selective`` is ``none`` and is left out."""
    for name, value in (("gpus", gpus), ("global batch", global_batch), ("node size", node_size)):
        whole(name, value)
    rows: list[tuple[PlanRow, str]] = []
    for t in _divisors(min(node_size, gpus)):
        if gpus % t:
            continue
        for p in _divisors(gpus // t):
            d = gpus // (t * p)
            if p > max_p or global_batch % (d * model.microbatch):
                continue
            m = global_batch // (d * model.microbatch)
            per_node = max(1, node_size // t)  # stages that share a node
            cluster = Cluster(gpu, p, within, per_node, between) if per_node < p else Cluster(gpu, p, within)
            dp_link = within if t * p * d <= node_size else between
            for zero in zeros if d > 1 else (0,):
                parallel = Parallel(t=t, d=d, sequence=t > 1, zero=zero, tp_link=within, dp_link=dp_link)
                for recompute in recomputes or [r for r in RECOMPUTE if r != "selective" or not model.flash_attention]:
                    for name in schedules:
                        try:
                            found = plan(model, cluster, [m], [name], v, recompute, parallel=parallel)
                        except ValueError:
                            continue
                        rows += [(r, recompute) for r in found]
    ranked = sorted(rows, key=lambda x: (not x[0].fits, -x[0].tokens_per_second))
    return Table(tuple(Layout(r.parallel.t, r.timeline.p, r.parallel.d, r.schedule, r.v, r.m, recompute, r.parallel.zero,
                              round(r.step_time, 3), round(r.tokens_per_second), f"{r.mfu:.1%}",
                              round(max(r.memory.total) / GB, 1), r.fits) for r, recompute in ranked))
