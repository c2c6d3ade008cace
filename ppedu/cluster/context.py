"""Context parallelism: a sequence cut into ``c`` pieces, one per GPU, each GPU holding its piece's activations,
and attention — the one part of a block where a token needs the others — computed by passing keys and values.

**Ring attention** (Liu, Zaharia and Abbeel, "Ring Attention with Blockwise Transformers", 2023): GPU ``i`` keeps
its queries and, in ``c − 1`` steps, passes the key and value block it holds to the next GPU while it computes
attention of its queries against the block it has. Softmax needs every key of a row, so each step updates a
running maximum, sum and output (the online softmax FlashAttention also uses, :func:`blockwise_attention`). A step
sends ``2·(s/c)·b·w_kv`` elements (keys and values, ``w_kv`` their width) and computes ``4·b·(s/c)²·w`` FLOPs
(``QKᵀ`` and scores × ``V`` of one block pair): the transfer hides under the compute when ``s/c`` is at least
``F·w_kv·bytes / (2·w·B)`` tokens — for full multi-head attention in 16-bit numbers the paper's ``F/B``, the
GPU's FLOP/s over the link's bytes/s (:func:`min_block_tokens`). The keys' and values' gradients travel the ring
back in the backward.

**All-gather** (Llama 3, "The Llama 3 Herd of Models", 2024, section 3.3.2): gather every key and value first,
then compute. The same bytes as the ring, exposed on the critical path, small with grouped-query attention.

**The causal mask** makes the pieces unequal: a query attends only to earlier keys, so the GPU with the last
piece computes ``c`` block pairs and the first one. Cutting the sequence into ``2c`` pieces and giving GPU ``i``
pieces ``i`` and ``2c − 1 − i`` (Llama 3's load balancing) evens it out (:func:`causal_work`).

>>> from ppedu.cluster import GPUS, LINKS, MODELS
>>> step = ring_step(MODELS["405b"], 16, GPUS["h100-80gb"], LINKS["nvlink"])
>>> step.kv_bytes / 1e6, step.hidden  # a 512-token block's keys and values (8 of 128 heads), and it hides
(2.097152, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ppedu.cluster.hardware import GPU, Link, Model
from ppedu.validate import one_of, whole


@dataclass(frozen=True)
class RingStep:
    """One step of ring attention on one GPU, forward: the keys and values it sends on, the FLOPs it computes
    meanwhile, their times, and whether the transfer hides under the compute."""

    kv_bytes: float
    flops: float
    compute_seconds: float
    transfer_seconds: float

    @property
    def hidden(self) -> bool:
        return self.transfer_seconds <= self.compute_seconds


def _widths(model: Model) -> tuple[int, int]:
    """The keys' and values' width, and the attention core's."""
    kv = (model.kv_heads or model.heads) * (model.hidden // model.heads)
    return kv, model.attention_width or model.hidden


def ring_step(model: Model, c: int, gpu: GPU, link: Link) -> RingStep:
    """One forward step of ring attention for ``model``'s sequence cut ``c`` ways (whole micro-batch)."""
    if model.seq % whole("c", c):
        raise ValueError(f"the sequence ({model.seq} tokens) must divide by c ({c})")
    kv, width = _widths(model)
    block = model.seq // c
    nbytes = 2.0 * block * model.microbatch * kv * model.dtype_bytes
    flops = 4.0 * model.microbatch * block ** 2 * width
    return RingStep(nbytes, flops, gpu.seconds(flops), link.seconds(nbytes))


def min_block_tokens(model: Model, gpu: GPU, link: Link) -> float:
    """The fewest tokens per GPU for which a ring step's transfer hides under its compute (latency aside):
    ``F·w_kv·bytes / (2·w·B)`` with ``F`` the GPU's achieved FLOP/s and ``B`` the link's bandwidth.

    >>> from ppedu.cluster import GPUS, LINKS, Model
    >>> mha = Model("MHA", layers=1, hidden=4096, vocab=10, heads=32)
    >>> gpu, link = GPUS["h100-80gb"], LINKS["nvlink"]
    >>> min_block_tokens(mha, gpu, link) == gpu.flops_per_second / link.bandwidth  # the paper's F/B
    True
    """
    kv, width = _widths(model)
    return gpu.flops_per_second * kv * model.dtype_bytes / (2.0 * width * link.bandwidth)


def causal_work(c: int, balance: str = "contiguous") -> tuple[int, ...]:
    """Per GPU, the block pairs (of ``2c`` equal pieces) its queries attend to under a causal mask: pieces
    ``2i, 2i + 1`` (``contiguous``) or ``i`` and ``2c − 1 − i`` (``zigzag``, Llama 3's). A diagonal pair counts
    whole.

    >>> causal_work(4), causal_work(4, "zigzag")
    ((3, 7, 11, 15), (9, 9, 9, 9))
    """
    one_of("balance", balance, ("contiguous", "zigzag"))
    pieces = [(2 * i, 2 * i + 1) if balance == "contiguous" else (i, 2 * whole("c", c) - 1 - i) for i in range(c)]
    return tuple(sum(q + 1 for q in mine) for mine in pieces)


def gathered_kv_bytes(model: Model) -> float:
    """The keys and values of a whole micro-batch's sequence, per block: what all-gather context parallelism
    collects on every GPU before attention (and what a ring passes around in ``c − 1`` steps)."""
    kv, _ = _widths(model)
    return 2.0 * model.tokens * kv * model.dtype_bytes


def blockwise_attention(q: list[list[float]], k: list[list[float]], v: list[list[float]], block: int
                        ) -> list[list[float]]:
    """Attention ``softmax(q·kᵀ/√d)·v`` computed over key blocks of ``block`` rows, one block at a time, as ring
    attention receives them: a running maximum ``m``, sum ``l`` and output ``o`` per query, rescaled by
    ``exp(m_old − m_new)`` whenever a block raises the maximum. No step sees all the keys.

    >>> q, k, v = [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], [[1.0], [2.0], [3.0]]
    >>> abs(blockwise_attention(q, k, v, 1)[0][0] - attention(q, k, v)[0][0]) < 1e-12
    True
    """
    scale = 1.0 / math.sqrt(len(q[0]))
    out = []
    for row in q:
        m, total, acc = -math.inf, 0.0, [0.0] * len(v[0])
        for start in range(0, len(k), whole("block", block)):
            scores = [scale * sum(a * b for a, b in zip(row, key)) for key in k[start:start + block]]
            new = max(m, *scores)
            shrink = math.exp(m - new) if m > -math.inf else 0.0
            weights = [math.exp(x - new) for x in scores]
            total = total * shrink + sum(weights)
            acc = [a * shrink + sum(w * val[j] for w, val in zip(weights, v[start:start + block]))
                   for j, a in enumerate(acc)]
            m = new
        out.append([a / total for a in acc])
    return out


def attention(q: list[list[float]], k: list[list[float]], v: list[list[float]]) -> list[list[float]]:
    """Attention over all keys at once, the textbook way (the check :func:`blockwise_attention` must pass)."""
    scale = 1.0 / math.sqrt(len(q[0]))
    out = []
    for row in q:
        scores = [scale * sum(a * b for a, b in zip(row, key)) for key in k]
        top = max(scores)
        weights = [math.exp(x - top) for x in scores]
        out.append([sum(w * val[j] for w, val in zip(weights, v)) / sum(weights) for j in range(len(v[0]))])
    return out
