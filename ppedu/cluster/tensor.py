"""Tensor and sequence parallelism derived: Megatron-LM's column and row splits, the collectives they need, and a
check with real matrices that the split computes what the whole layer does.

**The MLP** ``Z = GeLU(X·A)·B`` on ``t`` GPUs (Shoeybi et al., "Megatron-LM", 2019, section 3). Split ``A`` by
columns, ``A = [A₁ … A_t]``: GPU ``i`` computes ``Yᵢ = GeLU(X·Aᵢ)`` from the whole ``X``, with no communication,
because GeLU acts element by element. Split ``B`` by rows: ``Z = Σᵢ Yᵢ·Bᵢ``, one all-reduce of the ``s·b·h``
output. (Split ``A`` by rows instead and ``GeLU(Σᵢ X·Aᵢ) ≠ Σᵢ GeLU(X·Aᵢ)``: a second all-reduce before GeLU.)
**Attention** splits the same way by heads: ``Q, K, V`` by columns (each GPU its ``a/t`` heads and their keys and
values; with fewer key-value heads than GPUs each is replicated on ``t/kv`` of them, Megatron-LM accepting a number of
key-value groups that is a multiple or a divisor of ``t``, ``megatron/core/transformer/transformer_config.py``), the
output projection by rows, one all-reduce. So a block's forward has two all-reduces, in the operator
Megatron calls ``g`` (all-reduce forward, identity backward) after each row-parallel matrix; its backward has two
more, in ``f`` (identity forward, all-reduce of the input's gradient backward) before each column-parallel one.

**Sequence parallelism** (Korthikanti et al., 2022): between the tensor-parallel regions the norms and dropouts run
on ``s/t`` of the tokens each. ``g`` becomes a reduce-scatter (each GPU keeps the sum for its tokens), ``f`` an
all-gather (each GPU needs every token before the column split); their backwards swap them. An all-reduce is a
reduce-scatter then an all-gather: those four move an all-reduce's bytes. To keep only ``s/t`` of each
column-parallel layer's input too (what Korthikanti et al.'s memory count assumes), the backward gathers that
input again for the weight gradient — two more all-gathers per block, overlapped with the input gradient's
computation (``megatron/core/tensor_parallel/layers.py``, ``LinearWithGradAccumulationAndAsyncCommunication``):
a quarter more bytes than plain tensor parallelism, for activations between the regions divided by ``t``.

>>> from ppedu.cluster import MODELS
>>> [(c.phase, c.where, c.kind) for c in block_collectives(MODELS["7b"], 4)][:2]
[('forward', 'after attention', 'all-reduce'), ('forward', 'after the MLP', 'all-reduce')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ppedu.cluster.hardware import Model
from ppedu.lesson import Table
from ppedu.validate import whole


@dataclass(frozen=True)
class Collective:
    """One collective a tensor-parallel group runs in a block, per micro-batch: in which pass, where, which
    kind, and the bytes of the whole tensor it acts on (NCCL-tests' ``S``)."""

    phase: str
    where: str
    kind: str
    nbytes: float


def block_collectives(model: Model, t: int, sequence: bool = False) -> tuple[Collective, ...]:
    """The collectives of one block on one micro-batch under ``t``-way tensor parallelism, with or without
    ``sequence`` parallelism (none for ``t = 1``). Each acts on the block's ``s·b·h`` activations.

    >>> from ppedu.cluster import MODELS
    >>> [c.kind for c in block_collectives(MODELS["7b"], 4, sequence=True)]  # doctest: +NORMALIZE_WHITESPACE
    ['all-gather', 'reduce-scatter', 'all-gather', 'reduce-scatter',
     'all-gather', 'all-gather', 'reduce-scatter', 'all-gather', 'all-gather', 'reduce-scatter']
    """
    if whole("t", t) == 1:
        return ()
    m = float(model.hand_over_bytes)
    if not sequence:
        return tuple(Collective(phase, f"{side} {part}", "all-reduce", m)
                     for phase, side in (("forward", "after"), ("backward", "before"))
                     for part in ("attention", "the MLP"))
    # f: before each column-parallel matrix; g: after each row-parallel one. Forward: f gathers, g scatters. The
    # backward also gathers the column-parallel layer's input again (only its s/t was kept) for the weight gradient.
    backward = (("after", "all-gather"), ("again before", "all-gather"), ("before", "reduce-scatter"))
    return tuple(Collective(phase, f"{op} {part}", kind, m)
                 for phase, steps in (("forward", (("before", "all-gather"), ("after", "reduce-scatter"))),
                                      ("backward", backward))
                 for part in ("attention", "the MLP") for op, kind in steps)


@dataclass(frozen=True)
class Shard:
    """One of a block's matrices under tensor parallelism: how it is split, its whole shape and one GPU's."""

    matrix: str
    split: str
    whole: str
    per_gpu: str


def shards(model: Model, t: int) -> Table[Shard]:
    """Each matrix of one (dense) block and one GPU's piece of it under ``t``-way tensor parallelism: the query,
    key and value projections and the MLP's first matrices split by columns (whole heads each: ``heads`` must divide
    by ``t``; ``kv_heads`` too, or divide ``t``, each key-value head then replicated on ``t/kv_heads`` GPUs, as
    Megatron-LM accepts), the output projections by rows.

    >>> from ppedu.cluster import MODELS
    >>> [(s.matrix, s.per_gpu) for s in shards(MODELS["70b"], 8)][:3]
    [('queries', '8192 × 1024'), ('keys, values', '8192 × 128 (each)'), ('attention output', '1024 × 8192')]
    >>> shards(MODELS["70b"], 16)[1].per_gpu  # 8 key-value heads on 16 GPUs: each head on two of them
    '8192 × 128 (each; every head on 2 GPUs)'
    """
    whole("t", t)
    head = model.hidden // model.heads
    h, kv_heads = model.hidden, model.kv_heads or model.heads
    kv = kv_heads * head
    if model.heads % t:
        raise ValueError(f"heads ({model.heads}) must divide by t ({t}): each GPU computes whole heads")
    if kv_heads % t and t % kv_heads:
        raise ValueError(f"kv_heads ({kv_heads}) must divide by t ({t}) or divide it: each GPU holds whole key-value "
                         "heads, replicated when there are fewer than t")
    f = model.ffn_width
    up = "gate and up" if model.gated else "up"
    each = " (each)"
    kv_piece = f"{h} × {kv // t}{each}" if kv_heads % t == 0 else \
        f"{h} × {head} (each; every head on {t // kv_heads} GPUs)"
    rows = [
        Shard("queries", "column", f"{h} × {h}", f"{h} × {h // t}"),
        Shard("keys, values", "column", f"{h} × {kv}{each}", kv_piece),
        Shard("attention output", "row", f"{h} × {h}", f"{h // t} × {h}"),
        Shard(f"MLP {up}", "column", f"{h} × {f}" + (each if model.gated else ""),
              f"{h} × {f // t}" + (each if model.gated else "")),
        Shard("MLP down", "row", f"{f} × {h}", f"{f // t} × {h}"),
    ]
    return Table(tuple(rows))


def megatron_mlp(x: list[list[float]], a: list[list[float]], b: list[list[float]], t: int
                 ) -> tuple[list[list[float]], list[list[list[float]]]]:
    """The MLP ``GeLU(x·a)·b`` computed whole, and as ``t`` GPUs compute it: ``a`` split by columns, ``b`` by
    rows; each GPU's partial output (to be summed by the all-reduce). Plain lists, so that nothing hides the
    arithmetic; the widths of ``a`` must divide by ``t``.

    >>> x, a, b = [[1.0, -2.0]], [[0.5, 1.0, -1.0, 2.0], [1.0, 0.0, 0.5, -0.5]], [[1.0, 0.0]] * 4
    >>> whole_, parts = megatron_mlp(x, a, b, 2)
    >>> whole_ == [[sum(p[0][0] for p in parts), sum(p[0][1] for p in parts)]]
    True
    """
    width = len(a[0])
    whole("t", t)
    if width % t:
        raise ValueError(f"the MLP's width ({width}) must divide by t ({t})")
    piece = width // t
    hidden = [[gelu(v) for v in row] for row in matmul(x, a)]
    parts = []
    for i in range(t):
        cols = range(i * piece, (i + 1) * piece)
        a_i = [[row[c] for c in cols] for row in a]  # column split: whole heads of the MLP
        b_i = [b[c] for c in cols]  # row split
        parts.append(matmul([[gelu(v) for v in row] for row in matmul(x, a_i)], b_i))
    return matmul(hidden, b), parts


def split_error(x: list[list[float]], a: list[list[float]], b: list[list[float]], t: int,
                split: str = "column") -> float:
    """The largest difference between the whole MLP's output and the sum of ``t`` GPUs' partial outputs, when
    ``a`` is split by columns (Megatron's choice: rounding alone) or by rows (GeLU of a partial sum: wrong).

    >>> x, a, b = [[1.0, -2.0]], [[0.5, 1.0], [1.0, 0.0]], [[1.0], [1.0]]
    >>> split_error(x, a, b, 2) < 1e-12, split_error(x, a, b, 2, "row") > 0.1
    (True, True)
    """
    whole_, parts = megatron_mlp(x, a, b, t) if split == "column" else _row_split(x, a, b, t)
    summed = [[sum(p[r][c] for p in parts) for c in range(len(whole_[0]))] for r in range(len(whole_))]
    return max(abs(u - v) for row_u, row_v in zip(whole_, summed) for u, v in zip(row_u, row_v))


def _row_split(x: list[list[float]], a: list[list[float]], b: list[list[float]], t: int
               ) -> tuple[list[list[float]], list[list[list[float]]]]:
    """``a`` split by rows (and ``x`` by columns to match): each GPU applies GeLU to its partial product."""
    rows = len(a)
    if rows % t:
        raise ValueError(f"the MLP's input width ({rows}) must divide by t ({t})")
    piece = rows // t
    whole_ = matmul([[gelu(v) for v in row] for row in matmul(x, a)], b)
    parts = [matmul([[gelu(v) for v in row] for row in
                     matmul([r[i * piece:(i + 1) * piece] for r in x], a[i * piece:(i + 1) * piece])], b)
             for i in range(t)]
    return whole_, parts


def gelu(v: float) -> float:
    """GeLU, ``v·Φ(v)``, exactly (the error function, not the tanh approximation)."""
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def matmul(x: list[list[float]], y: list[list[float]]) -> list[list[float]]:
    return [[sum(u * v for u, v in zip(row, col)) for col in zip(*y)] for row in x]
