"""Mixture of experts and expert parallelism: where tokens go, what a capacity drops, what the all-to-all sends,
and whether a pipeline's overlapped pairs can hide it.

A router sends each token to ``k`` of ``E`` experts (:class:`~ppedu.cluster.Model`'s ``experts`` and ``top_k``).
**Expert parallelism** over ``e`` GPUs puts ``E/e`` experts on each: a token's hidden vector travels to the GPUs of
its experts and back (dispatch and combine, two all-to-alls per layer forward, two more backward).

**Capacity** (GShard, Lepikhin et al., 2021; the Switch Transformer, Fedus et al., 2022): to give every expert a
buffer of fixed size, an expert takes at most ``C = ⌈f·T·k/E⌉`` of a batch's ``T`` tokens, ``f`` the capacity factor;
the tokens past it are dropped (they skip the layer through the residual connection), and a buffer not filled is
computed on padding. :func:`capacity_trade` counts both for a router's choices. DeepSeek-V3 drops none (its report,
section 2.1.2) and balances the experts' load instead.

**Node-limited routing** (DeepSeek-V3, section 3.2.2): the experts of one layer spread over ``N`` nodes; a token's
copies to the GPUs of one node cross InfiniBand once and fan out over NVLink, so what crosses InfiniBand is the
number of *other nodes* among its experts; DeepSeek-V3 caps the nodes per token at ``M = 4``
(:func:`nodes_crossed`; with the cap, every token taken to use all ``M`` nodes: an upper bound).

>>> capacity(tokens=4096, experts=256, top_k=8, factor=1.25)
160
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ppedu.cluster.collectives import cost
from ppedu.cluster.hardware import GPU, Link, Model
from ppedu.lesson import Table
from ppedu.validate import whole


def capacity(tokens: int, experts: int, top_k: int, factor: float) -> int:
    """Tokens one expert takes from a batch of ``tokens``: ``⌈factor · tokens · top_k / experts⌉``."""
    for name, value in (("tokens", tokens), ("experts", experts), ("top_k", top_k)):
        whole(name, value)
    if not factor > 0:
        raise ValueError(f"the capacity factor is a positive number (got {factor!r})")
    return math.ceil(factor * tokens * top_k / experts)


def route(tokens: int, experts: int, top_k: int, skew: float = 0.0, seed: int = 0) -> tuple[int, ...]:
    """How many of ``tokens`` tokens each expert receives when each picks ``top_k`` distinct experts at random,
    expert ``j`` with weight ``1/(j + 1)^skew`` (0: all alike; a router that favours some experts: above 0).
    Seeded, so a chapter's numbers stay put.

    >>> sum(route(1000, 16, 2)), len(route(1000, 16, 2))
    (2000, 16)
    """
    whole("tokens", tokens)
    if not 1 <= whole("top_k", top_k) <= whole("experts", experts):
        raise ValueError(f"a token picks 1 ≤ top_k ≤ experts experts (got top_k={top_k}, experts={experts})")
    rng = random.Random(seed)
    weights = [1.0 / (j + 1) ** skew for j in range(experts)]
    loads = [0] * experts
    for _ in range(tokens):
        chosen: set[int] = set()
        while len(chosen) < top_k:
            chosen.add(rng.choices(range(experts), weights)[0])
        for j in chosen:
            loads[j] += 1
    return tuple(loads)


@dataclass(frozen=True)
class CapacityRow:
    """One capacity factor against a batch's routing: the tokens dropped and the buffer slots computed on
    padding, as shares."""

    factor: float
    capacity: int
    dropped: float
    padding: float


def capacity_trade(loads: tuple[int, ...], top_k: int, factors: tuple[float, ...] = (1.0, 1.25, 1.5, 2.0)
                   ) -> Table[CapacityRow]:
    """For each capacity factor, what ``loads`` (tokens per expert, as :func:`route` gives them) lose: the
    share of token copies over capacity, and the share of the experts' buffers left to padding.

    >>> trade = capacity_trade((6, 2, 2, 2), top_k=1, factors=(1.0, 2.0))
    >>> [(r.capacity, r.dropped, r.padding) for r in trade]
    [(3, 0.25, 0.25), (6, 0.0, 0.5)]
    """
    copies = sum(loads)
    tokens = copies // top_k
    rows = []
    for f in factors:
        c = capacity(tokens, len(loads), top_k, f)
        kept = sum(min(load, c) for load in loads)
        rows.append(CapacityRow(f, c, round((copies - kept) / copies, 4), round(1 - kept / (c * len(loads)), 4)))
    return Table(tuple(rows))


def nodes_crossed(experts: int, top_k: int, nodes: int, limit: int | None = None) -> float:
    """The expected number of *other* nodes a token's copies cross InfiniBand to, its ``top_k`` distinct
    experts drawn uniformly from ``experts`` spread evenly over ``nodes`` nodes: ``(N − 1)·P(a node is hit)``, with
    ``P = 1 − C(E − E/N, k)/C(E, k)``. With node-limited routing to ``limit`` nodes (DeepSeek-V3's ``M``), a bound,
    not an average: taking the token to use all ``min(limit, k, N)`` nodes it may (its ``k`` experts could fall in
    fewer), its own one of them with chance ``min(limit, k, N)/N``: ``min(limit, k, N)·(N − 1)/N``.

    >>> round(nodes_crossed(256, 8, 8), 2), nodes_crossed(256, 8, 8, limit=4)
    (4.63, 3.5)
    """
    whole("nodes", nodes)
    if experts % nodes:
        raise ValueError(f"the experts ({experts}) must spread evenly over the nodes ({nodes})")
    if limit is not None:
        used = min(whole("limit", limit), top_k, nodes)
        return used * (nodes - 1) / nodes
    missed = math.comb(experts - experts // nodes, top_k) / math.comb(experts, top_k)
    return (nodes - 1) * (1 - missed)


@dataclass(frozen=True)
class Overlap:
    """One MoE layer's forward on one GPU's tokens of a micro-batch: the computation's time and the all-to-all's
    (dispatch and combine over InfiniBand), and their ratio — what a DualPipe pair must hide."""

    compute_seconds: float
    all_to_all_seconds: float

    @property
    def ratio(self) -> float:
        """All-to-all time per unit of computation time (DeepSeek-V3 reports about 1:1, section 3.2.1)."""
        return self.all_to_all_seconds / self.compute_seconds


def moe_layer_overlap(model: Model, gpu: GPU, link: Link, nodes: int, limit: int | None = None,
                      dispatch_bytes: float = 1.0, combine_bytes: float = 2.0, fp8: bool = False) -> Overlap:
    """The forward of one MoE block on one micro-batch of ``model``: its FLOPs (attention and the experts a token
    uses) at ``gpu``'s achieved rate — with ``fp8`` its matrices at its FP8 peak, the attention core still in 16 bits
    (as DeepSeek-V3 keeps it, section 3.3.1) — against the bytes its tokens send across nodes
    — each token's hidden vector to :func:`nodes_crossed` other nodes, ``dispatch_bytes`` per element going
    (DeepSeek-V3 dispatches in FP8, section 3.3.3) and ``combine_bytes`` coming back (BF16) — over ``link``. The
    NVLink fan-out inside a node is taken as hidden.

    >>> from ppedu.cluster.published import DEEPSEEK_V3, H800_IB
    >>> from ppedu.cluster import GPUS
    >>> o = moe_layer_overlap(DEEPSEEK_V3, GPUS["h800"], H800_IB, nodes=8, limit=4, fp8=True)
    >>> 0.5 < o.ratio < 2  # the same order as the report's 1:1
    True
    """
    moe = next((i for i in range(model.layers) if model.is_moe(i)), None)
    if moe is None:
        raise ValueError(f"{model.name} has no experts")
    if fp8 and not gpu.fp8_tflops:
        raise ValueError(f"{gpu.name} has no FP8 peak given")
    matrices = model.layer_flops()[moe + 1] - model.attention_flops
    speedup = gpu.fp8_tflops / gpu.tflops if fp8 else 1.0
    crossed = nodes_crossed(model.experts, model.top_k, nodes, limit)
    nbytes = model.tokens * model.hidden * crossed * (dispatch_bytes + combine_bytes)
    return Overlap(gpu.seconds(matrices / speedup + model.attention_flops), link.seconds(nbytes))


def all_to_all_seconds(model: Model, e: int, link: Link) -> float:
    """One all-to-all of a micro-batch's ``top_k`` copies of every token's hidden vector over ``e`` GPUs of
    expert parallelism, all on ``link`` (a pairwise exchange, :mod:`ppedu.cluster.collectives`)."""
    return cost("all-to-all", model.tokens * model.top_k * model.hidden * model.dtype_bytes, e, link).seconds
