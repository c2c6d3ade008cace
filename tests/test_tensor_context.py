"""Tensor, sequence and context parallelism derived: Megatron's column-then-row split computes the whole MLP
(checked against numpy's matrix product and an unsplit layer), its collectives carry what ppedu's traffic counts,
and ring attention's block-by-block softmax is attention (checked against numpy's softmax)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu.cluster import GPUS, LINKS, MODELS, Model, Parallel, traffic
from ppedu.cluster.collectives import ring
from ppedu.cluster.context import (
    attention, blockwise_attention, causal_work, gathered_kv_bytes, min_block_tokens, ring_step,
)
from ppedu.cluster.tensor import block_collectives, gelu, matmul, megatron_mlp, shards, split_error

SEEDS = st.integers(0, 10_000)


def arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).tolist() for shape in shapes]


@settings(max_examples=25, deadline=None)
@given(SEEDS, st.sampled_from([1, 2, 4, 8]))
def test_megatrons_split_sums_to_the_whole_mlp_and_a_row_split_does_not(seed, t):
    x, a, b = arrays(seed, (3, 8), (8, 16), (16, 4))
    whole, parts = megatron_mlp(x, a, b, t)
    expected = np.asarray([[gelu(v) for v in row] for row in (np.asarray(x) @ np.asarray(a)).tolist()]) @ np.asarray(b)
    assert np.allclose(whole, expected) and np.allclose(sum(np.asarray(p) for p in parts), expected)
    assert split_error(x, a, b, t) < 1e-9
    if t > 1:
        assert split_error(x, a, b, t, "row") > 1e-3  # GeLU of a partial sum is not a partial GeLU


@given(SEEDS)
def test_the_plain_matrix_product_is_numpys(seed):
    x, y = arrays(seed, (3, 5), (5, 2))
    assert np.allclose(matmul(x, y), np.asarray(x) @ np.asarray(y))


@pytest.mark.parametrize("t", [2, 4, 8])
def test_sequence_parallelism_sends_a_quarter_more_than_tensor_parallelism(t):
    llama = MODELS["70b"]
    volume = {sp: sum(ring(c.nbytes, t, c.kind) for c in block_collectives(llama, t, sp)) for sp in (False, True)}
    assert volume[False] == pytest.approx(4 * 2 * llama.hand_over_bytes * (t - 1) / t)
    assert volume[True] == pytest.approx(1.25 * volume[False])
    tp = block_collectives(llama, t)
    assert [c.phase for c in tp].count("forward") == 2 and {c.kind for c in tp} == {"all-reduce"}
    sp = block_collectives(llama, t, True)
    # the four that replace the all-reduces, then the backward's two re-gathers (Megatron-LM's layers.py)
    assert [c.kind for c in sp if "again" not in c.where].count("all-gather") == 4
    assert [c.kind for c in sp].count("reduce-scatter") == 4
    assert [(c.phase, c.kind) for c in sp if "again" in c.where] == [("backward", "all-gather")] * 2
    # ppedu's traffic per step is these collectives, every block and micro-batch
    x = traffic(llama, Parallel(t=t, sequence=True), m=3, blocks=5, hand_overs=0, params=0)
    assert x.tensor == pytest.approx(3 * 5 * volume[True])
    assert block_collectives(llama, 1) == ()


def test_each_gpu_holds_a_tth_of_every_matrix():
    table = {s.matrix: s for s in shards(MODELS["70b"], 8)}
    assert table["queries"].per_gpu == "8192 × 1024" and table["MLP down"].per_gpu == "3584 × 8192"
    assert table["attention output"].split == "row" and table["MLP gate and up"].split == "column"
    # fewer key-value heads than GPUs: replicated, as Megatron-LM accepts (transformer_config.py: multiple or divisor)
    assert shards(MODELS["70b"], 16)[1].per_gpu == "8192 × 128 (each; every head on 2 GPUs)"
    with pytest.raises(ValueError, match=r"kv_heads \(12\) must divide by t \(32\) or divide it"):
        shards(replace(MODELS["70b"], heads=96, kv_heads=12, hidden=12288), 32)
    with pytest.raises(ValueError, match=r"heads \(64\) must divide by t \(3\)"):
        shards(MODELS["70b"], 3)


@settings(max_examples=25, deadline=None)
@given(SEEDS, st.integers(1, 7))
def test_blockwise_softmax_is_attention_for_any_block(seed, block):
    q, k, v = arrays(seed, (3, 4), (7, 4), (7, 2))
    scores = np.asarray(q) @ np.asarray(k).T / 2.0
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    expected = weights / weights.sum(axis=1, keepdims=True) @ np.asarray(v)
    assert np.allclose(attention(q, k, v), expected) and np.allclose(blockwise_attention(q, k, v, block), expected)


def test_a_ring_step_hides_from_the_block_size_f_over_b_on():
    gpu, link = GPUS["h100-80gb"], replace(LINKS["ib-400"], latency=0.0)
    mha = Model("MHA", layers=1, hidden=4096, vocab=10, heads=32, seq=2 ** 17)
    least = min_block_tokens(mha, gpu, link)
    assert least == pytest.approx(gpu.flops_per_second / link.bandwidth)  # Ring Attention's condition, c ≥ F/B
    hides = {c: ring_step(mha, c, gpu, link).hidden for c in (2 ** k for k in range(1, 10))}
    assert all(ok == (mha.seq / c >= least) for c, ok in hides.items()) and set(hides.values()) == {True, False}
    gqa = replace(mha, kv_heads=4)  # keys and values an eighth as wide: blocks can be an eighth as long
    assert min_block_tokens(gqa, gpu, link) == pytest.approx(least / 8)


@given(st.integers(1, 64))
def test_zigzag_balances_the_causal_work_and_both_do_all_of_it(c):
    plain, zig = causal_work(c), causal_work(c, "zigzag")
    assert sum(plain) == sum(zig) == (2 * c) * (2 * c + 1) // 2  # every lower-triangular block pair once
    assert len(set(zig)) == 1 and (c == 1 or max(plain) > min(plain))


def test_all_gather_context_parallelism_gathers_every_key_and_value():
    llama = replace(MODELS["405b"], seq=131072)
    assert gathered_kv_bytes(llama) == 2 * 131072 * 8 * 128 * 2  # 8 of 128 heads: keys and values are small
    with pytest.raises(ValueError, match="must divide by c"):
        ring_step(llama, 3, GPUS["h100-80gb"], LINKS["nvlink"])
