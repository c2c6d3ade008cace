"""The closed forms the course teaches, to set beside what the simulator measures.

Two definitions of the bubble are in use: the textbook's idle slots ÷ total slots (``idle/total``)
and Megatron-LM's bubble time ÷ ideal compute time (``bubble/ideal``). With ``r`` the second,
the first is ``r / (1 + r)``.

>>> bubble_ratio(4, 4)
0.42857142857142855
>>> to_idle_total(bubble_over_ideal(4, 4))
0.42857142857142855
"""

from __future__ import annotations

import math

from ppedu.validate import require_counts


def _idle_and_busy(p: int, m: int, v: int) -> tuple[int, int]:
    """``(idle, busy)`` per GPU, in pairs of a chunk's forward and backward under equal costs: a step
    takes ``v·max(m, p) + min(m, p) − 1`` of them, ``v·m`` busy."""
    require_counts(p=p, m=m, v=v)
    return v * max(m, p) + min(m, p) - 1 - v * m, v * m


def bubble_ratio(p: int, m: int, v: int = 1) -> float:
    """Idle ÷ total slots of GPipe and 1F1B (``v = 1``) or interleaved 1F1B, equal per-chunk costs:
    ``(p-1) / (v·m + p-1)`` for ``m ≥ p`` (any ``m`` when ``v = 1``). With fewer micro-batches than
    GPUs, interleaving waits for each round's micro-batches to come back: ``(v(p-m) + m-1) / (v·p + m-1)``.

    >>> bubble_ratio(4, 8, 2), bubble_ratio(4, 2, 2)
    (0.15789473684210525, 0.5555555555555556)
    """
    idle, busy = _idle_and_busy(p, m, v)
    return idle / (idle + busy)


def bubble_over_ideal(p: int, m: int, v: int = 1) -> float:
    """Bubble time ÷ ideal time, as Megatron-LM states it: ``(p-1) / (v·m)`` for ``m ≥ p``."""
    idle, busy = _idle_and_busy(p, m, v)
    return idle / busy


def to_idle_total(r: float) -> float:
    """Convert a bubble/ideal figure into idle/total: ``r / (1 + r)``."""
    return r / (1 + r)


def to_bubble_over_ideal(x: float) -> float:
    """Convert an idle/total figure into bubble/ideal: ``x / (1 - x)``."""
    if not 0 <= x < 1:
        raise ValueError(f"an idle/total ratio lies in [0, 1) (got {x})")
    return x / (1 - x)


def microbatches_for(target: float, p: int, v: int = 1) -> int:
    """The fewest micro-batches whose idle/total bubble is at most ``target`` (interleaved 1F1B
    for ``v > 1``, which runs any ``m`` as current Megatron-LM and PyTorch do).

    >>> microbatches_for(0.10, p=4)
    27
    >>> microbatches_for(0.10, p=4, v=2)
    14
    """
    require_counts(p=p, v=v)
    if not 0 < target < 1:
        raise ValueError(f"a target bubble ratio lies strictly between 0 and 1 (got {target})")
    # (p-1)/(v·m+p-1) ≤ target  ⟺  v·m ≥ (p-1)(1-target)/target, and below m = p the bubble is only
    # larger: start at that bound, then walk up to where the target is met.
    m = max(1, int((p - 1) * (1 - target) / target / v))
    while bubble_ratio(p, m, v) > target + 1e-12:  # a target met exactly counts as met
        m += 1
    return m


# ---- the scale part (chapters 12–14): each closed form as the chapters write it, on raw numbers (seconds, bytes,
# bytes per second), so that the formula sheet can set it beside what ppedu.cluster computes its own way ----

def ring_all_reduce_seconds(n: int, nbytes: float, latency: float, bandwidth: float) -> float:
    """A ring all-reduce of ``nbytes`` over ``n`` GPUs: ``2(n−1)α + 2(n−1)/n · M/B``.

    >>> round(ring_all_reduce_seconds(8, 1e9, 3e-6, 450e9) * 1e3, 3)  # 1 GB over NVLink: 14 latencies, 1.75 GB sent
    3.931
    """
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * nbytes / bandwidth


def ring_half_seconds(n: int, nbytes: float, latency: float, bandwidth: float) -> float:
    """A ring reduce-scatter or all-gather of a buffer of ``nbytes`` (all ``n`` pieces): ``(n−1)α + (n−1)/n · M/B``.
    An all-to-all by pairwise exchange costs the same."""
    return (n - 1) * latency + (n - 1) / n * nbytes / bandwidth


def tree_all_reduce_seconds(n: int, nbytes: float, latency: float, bandwidth: float) -> float:
    """NCCL's double binary tree, pipelined, its fill left out (``n > 2``): ``2⌈log₂ n⌉α + 2M/B``."""
    return 2 * math.ceil(math.log2(n)) * latency + 2 * nbytes / bandwidth


def tree_ring_crossover(n: int, latency: float, bandwidth: float) -> float:
    """The all-reduce size below which the tree beats the ring: ``n(n − 1 − ⌈log₂ n⌉)·α·B`` bytes."""
    return n * (n - 1 - math.ceil(math.log2(n))) * latency * bandwidth


#: NCCL-tests' factor from algorithm to bus bandwidth (``doc/PERFORMANCE.md``), a function of ``n``.
BUS_FACTORS = {"all-reduce": lambda n: 2 * (n - 1) / n, "reduce-scatter": lambda n: (n - 1) / n,
               "all-gather": lambda n: (n - 1) / n, "all-to-all": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}


def bus_bandwidth(nbytes: float, seconds: float, n: int, kind: str = "all-reduce") -> float:
    """NCCL-tests' ``busbw = algbw × factor``, ``algbw = S/t``."""
    return nbytes / seconds * BUS_FACTORS[kind](n)


def zero_bytes_per_gpu(params: float, d: int, stage: int, k: float = 12.0) -> float:
    """Model state per GPU under ZeRO (Rajbhandari et al., 2020, Figure 1; 16-bit weights and gradients, ``K`` bytes of
    optimizer state): ``(2 + 2 + K)Ψ``, ``(2 + 2 + K/d)Ψ``, ``(2 + (2 + K)/d)Ψ``, ``(2 + 2 + K)Ψ/d`` for stages 0–3.

    >>> [round(zero_bytes_per_gpu(7.5e9, 64, s) / 1e9, 1) for s in range(4)]  # the paper's Figure 1
    [120.0, 31.4, 16.6, 1.9]
    """
    weights, grads, state = 2.0, 2.0, k
    sharded = ((), (state,), (grads, state), (weights, grads, state))[stage]  # what each stage divides by d
    return params * (weights + grads + state - sum(sharded) + sum(sharded) / d)


def zero_bytes_sent(params: float, d: int, stage: int, dtype_bytes: float = 2.0) -> float:
    """Bytes a GPU sends per step under ZeRO without a pipeline (the paper's section 7): ``2Ψ·(d−1)/d`` elements for
    stages 0–2, ``3Ψ·(d−1)/d`` for stage 3, at ``dtype_bytes`` each."""
    return (3 if stage == 3 else 2) * params * (d - 1) / d * dtype_bytes


def tensor_parallel_block_bytes(tokens: int, hidden: int, t: int, sequence: bool = False,
                                dtype_bytes: float = 2.0) -> float:
    """Bytes one GPU sends per block and micro-batch under ``t``-way tensor parallelism (ring collectives of the
    ``s·b·h`` activations): four all-reduces, ``8(t−1)/t·sbh``; with sequence parallelism four all-gathers, four
    reduce-scatters and two re-gathers in the backward, ``10(t−1)/t·sbh`` — a quarter more."""
    return (10 if sequence else 8) * (t - 1) / t * tokens * hidden * dtype_bytes


def block_activation_bytes(s: int, b: int, h: int, a: int, t: int = 1, sequence: bool = False) -> float:
    """Korthikanti et al. (2022), Table 2: one block's activations in bytes, 16-bit, eager attention with dropout and
    nothing recomputed: ``sbh(34 + 5as/h)``; with ``t``-way tensor parallelism ``sbh(10 + 24/t + 5as/(ht))``; with
    sequence parallelism too ``sbh(34/t + 5as/(ht))``."""
    kept = 34 / t if sequence else 10 + 24 / t  # t = 1: 34 either way
    return s * b * h * (kept + 5 * a * s / (h * t))


def ring_attention_min_block(flops_per_second: float, bandwidth: float, kv_width: int, width: int,
                             dtype_bytes: float = 2.0) -> float:
    """The shortest block (tokens per GPU) whose ring-attention step hides its transfer (latency aside): sending
    ``2·(s/c)·w_kv`` elements takes no longer than ``4·(s/c)²·w`` FLOPs when ``s/c ≥ F·w_kv·bytes / (2·w·B)`` — for
    full multi-head attention in 16 bits, Liu et al.'s ``F/B``."""
    return flops_per_second * kv_width * dtype_bytes / (2 * width * bandwidth)


def young_daly_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's (1974) checkpoint interval, ``√(2·C·MTBF)``."""
    return math.sqrt(2 * checkpoint_s * mtbf_s)


def expert_capacity(tokens: int, experts: int, top_k: int, factor: float) -> int:
    """Tokens an expert takes (GShard, Switch): ``⌈f·T·k/E⌉``."""
    return math.ceil(factor * tokens * top_k / experts)


def model_flops_per_token(params: float, layers: int, seq: int, attention_width: int) -> float:
    """PaLM's count (Chowdhery et al., Appendix B) of a step's model FLOPs per token: ``6N + 12·L·s·w``, ``N`` the
    parameters a token's matrices use (the embedding, a lookup, left out), ``w`` the attention's width."""
    return 6 * params + 12 * layers * seq * attention_width
