"""Activation recomputation: memory bought with time, simulated on a real model and cluster.

GPipe (Huang et al., 2019) keeps only each stage's input activations and re-runs the stage's
forward inside its backward; Megatron-LM (Korthikanti et al., 2022) recomputes selectively, only
the attention core, whose activations grow with the sequence length squared but whose FLOPs are a
small share of a block. :mod:`ppedu.cluster` prices the three modes (``none``, ``selective``,
``full``: activation bytes per block, and one more forward inside every backward for ``full``);
here they meet in one table, simulated schedule by schedule.

>>> from ppedu.cluster import GPUS, LINKS, MODELS, Cluster
>>> rows = trade(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"]), m=16)
>>> [(r.schedule, r.recompute, r.fits) for r in rows if r.fits]
[('1f1b', 'selective', True), ('gpipe', 'full', True), ('1f1b', 'full', True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.cluster import GB, RECOMPUTE, Cluster, Model, plan
from ppedu.lesson import Table


@dataclass(frozen=True)
class Trade:
    """One schedule under one recomputation mode: its step, its memory, whether it fits."""

    schedule: str
    recompute: str
    step_time_s: float
    slowdown: float
    activations_gb: float
    memory_gb: float
    fits: bool


def trade(model: Model, cluster: Cluster, m: int, schedules: Sequence[str] = ("gpipe", "1f1b")) -> Table[Trade]:
    """Each of ``schedules`` at ``m`` micro-batches under each recomputation mode: step time
    (and its ratio to the same schedule without recomputation), the most activation bytes and
    the most memory on any GPU, and whether every GPU fits. Rows by mode, then schedule."""
    rows: list[Trade] = []
    base: dict[str, float] = {}
    for mode in RECOMPUTE:
        for r in plan(model, cluster, [m], list(schedules), recompute=mode):
            base.setdefault(r.schedule, r.step_time)
            rows.append(Trade(r.schedule, mode, round(r.step_time, 3), round(r.step_time / base[r.schedule], 3),
                              round(max(r.memory.activations) / GB, 1), round(max(r.memory.total) / GB, 1), r.fits))
    return Table(tuple(rows))


def cheapest_fit(rows: Table[Trade], schedule: str) -> str | None:
    """The least recomputation under which ``schedule`` fits, or ``None`` if none does.

    >>> from ppedu.cluster import GPUS, LINKS, MODELS, Cluster
    >>> rows = trade(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"]), m=16)
    >>> cheapest_fit(rows, "gpipe"), cheapest_fit(rows, "1f1b")
    ('full', 'selective')
    """
    return next((r.recompute for r in rows if r.schedule == schedule and r.fits), None)


def selective_share(model: Model) -> float:
    """The share of a block's forward FLOPs that selective recomputation re-runs: the attention
    core (``QKᵀ`` and scores × ``V``, ``4·b·s²·h``) of a standard block's ``24·b·s·h² + 4·b·s²·h``
    (Korthikanti et al., 2022), that is ``s / (6h + s)``. Full recomputation re-runs all of it (1).

    >>> from ppedu.cluster import MODELS
    >>> round(selective_share(MODELS["7b"]), 3)
    0.143
    """
    s, h = model.seq, model.hidden
    return s / (6 * h + s)
