"""Activation recomputation: memory bought with time, simulated on a real model and cluster.

A backward needs what its forward computed. Recomputation keeps less and runs part of the forward again
inside the backward:

- **none**: keep what every block saved. With FlashAttention (the default, as every current framework
  trains) that excludes attention's ``s × s`` scores, which its backward rebuilds anyway; without it
  ("eager" attention, the textbook's era) the scores are kept and dominate at long sequences;
- **selective** (Korthikanti et al., 2022): recompute only the attention core's scores, softmax and dropout.
  FlashAttention never keeps those, so here ``selective`` keeps and runs what ``none`` does. Megatron-LM's own
  ``selective`` is broader: ``recompute_modules`` (``megatron/core/transformer/transformer_config.py``) defaults to
  ``["core_attn"]`` — with FlashAttention that re-runs the attention kernel to drop only its softmax statistics — and
  may name other modules (``layernorm``, ``mla_up_proj``, ``moe_act``, ``mlp``, …) that keep less with FlashAttention
  too;
- **full**: keep each block's input alone and run the block's forward again in its backward, one block at a
  time (Megatron-LM's uniform method): while a block recomputes, its activations are there again for a while;
- **the whole stage** (GPipe's re-materialisation, Huang et al., 2019): keep the stage's input alone; its
  backward rebuilds every block of the stage at once.

:mod:`ppedu.cluster` prices the first three (bytes per block, FLOPs run again, the transient); here they
meet in one table, simulated schedule by schedule, and :func:`checkpointing` sets all four side by side.

>>> from ppedu.cluster import GPUS, LINKS, MODELS, Cluster
>>> rows = trade(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"]), m=16)
>>> [(r.schedule, r.recompute) for r in rows if r.fits]
[('1f1b', 'none'), ('1f1b', 'selective'), ('gpipe', 'full'), ('1f1b', 'full')]
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
    transient_gb: float
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
                              round(max(r.memory.activations) / GB, 1), round(max(r.memory.transient) / GB, 2),
                              round(max(r.memory.total) / GB, 1), r.fits))
    return Table(tuple(rows))


def cheapest_fit(rows: Table[Trade], schedule: str) -> str | None:
    """The least recomputation under which ``schedule`` fits, or ``None`` if none does.

    >>> from ppedu.cluster import GPUS, LINKS, MODELS, Cluster
    >>> rows = trade(MODELS["7b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"]), m=16)
    >>> cheapest_fit(rows, "gpipe"), cheapest_fit(rows, "1f1b")
    ('full', 'none')
    """
    return next((r.recompute for r in rows if r.schedule == schedule and r.fits), None)


def selective_share(model: Model) -> float:
    """The share of a block's forward FLOPs that selective recomputation re-runs: the attention core
    (``QKᵀ`` and scores × ``V``, ``4·b·s²·h``) of the block's forward — for a standard block
    (``24·b·s·h²`` in its matrices) that is ``s / (6h + s)``. Full recomputation re-runs all of it (1).

    >>> from ppedu.cluster import MODELS
    >>> round(selective_share(MODELS["7b"]), 3)
    0.142
    """
    return model.attention_flops / model.layer_flops()[1]


@dataclass(frozen=True)
class Checkpoint:
    """One way to recompute, for a stage of ``blocks`` blocks and one micro-batch: what stays for the backward,
    the most that is rebuilt at once during it, and the forward FLOPs run again (a share of the stage's)."""

    recompute: str
    kept_gb: float
    transient_gb: float
    forward_again: str


def checkpointing(model: Model, blocks: int) -> Table[Checkpoint]:
    """The four granularities of recomputation (see the module's docstring) for one micro-batch on a stage of
    ``blocks`` of ``model``'s blocks.

    >>> from ppedu.cluster import MODELS
    >>> [row.recompute for row in checkpointing(MODELS["7b"], 8)]
    ['none', 'selective', 'full (every block)', 'the whole stage (GPipe)']
    """
    none = sum(model.block_activations("none").values())
    block_forward = model.layer_flops()[1]

    def again(flops: float) -> str:
        return f"{flops / block_forward:.1%}"

    selective_again = 0.0 if model.flash_attention else model.attention_flops
    rows = [
        Checkpoint("none", blocks * none / GB, 0.0, again(0.0)),
        Checkpoint("selective", blocks * sum(model.block_activations("selective").values()) / GB,
                   model.recompute_transient_bytes("selective") / GB, again(selective_again)),
        Checkpoint("full (every block)", blocks * sum(model.block_activations("full").values()) / GB,
                   model.recompute_transient_bytes("full") / GB, again(block_forward)),
        Checkpoint("the whole stage (GPipe)", sum(model.block_activations("full").values()) / GB,
                   blocks * none / GB, again(block_forward)),
    ]
    return Table(tuple(Checkpoint(r.recompute, round(r.kept_gb, 4), round(r.transient_gb, 4), r.forward_again)
                       for r in rows))
