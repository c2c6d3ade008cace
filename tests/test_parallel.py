"""Tensor, sequence and data parallelism beside the pipeline: what each divides, what it sends, what a step
achieves — Korthikanti et al.'s activation table, ZeRO's stages, ring collectives, MFU, and the layout search."""

from dataclasses import replace

import pytest

from ppedu.cluster import (
    GPUS, LINKS, MODELS, Cluster, Model, Parallel, data_parallel, layouts, plan, ring, states, traffic,
)

GPT = Model("GPT-3 shape", layers=2, hidden=12288, vocab=50257, seq=2048, heads=96, dropout=True,
            flash_attention=False)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_activations_per_block_follow_korthikanti_et_al(t):
    sbh, a, s, h = GPT.seq * GPT.hidden, GPT.heads, GPT.seq, GPT.hidden
    plain = sum(GPT.block_activations("none", t).values())
    assert plain == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))  # tensor parallelism alone
    if t > 1:
        both = sum(GPT.block_activations("none", t, sequence=True).values())
        assert both == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))  # and sequence parallelism
    assert sum(GPT.block_activations("selective", t).values()) == pytest.approx(sbh * (10 + 24 / t))
    flash = sum(replace(GPT, flash_attention=True).block_activations("none", t).values())
    assert flash < sbh * (10 + 24 / t) + sbh and flash > sbh * (10 + 24 / t)  # + FlashAttention's statistics


def test_zero_shards_one_more_kind_of_state_per_stage():
    llama = MODELS["7b"]
    full = states(1e9, 1e8, llama, Parallel(d=8))
    one, two, three = (states(1e9, 1e8, llama, Parallel(d=8, zero=z)) for z in (1, 2, 3))
    assert (full.weights, full.grads, full.optimizer) == (2e9, 2e9, 12e9)
    assert (one.weights, one.grads, one.optimizer) == (2e9, 2e9, 1.5e9)
    assert (two.weights, two.grads) == (2e9, 0.25e9) and (three.weights, three.gathered) == (0.25e9, 2e8)
    assert states(1e9, 1e8, llama, Parallel(t=4)).weights == 0.5e9  # tensor parallelism splits the weights


def test_zero_beside_a_pipeline_pays_for_every_micro_batch():
    llama, m = MODELS["7b"], 8
    kinds = {z: [k for k, _ in data_parallel(1e9, llama, Parallel(d=4, zero=z), m)] for z in (0, 1, 2, 3)}
    # ZeRO-1 splits the all-reduce into its halves, around the sharded optimizer step: the same bytes, once a step
    assert kinds[0] == ["all-reduce"] and kinds[1] == ["reduce-scatter", "all-gather"]
    assert kinds[2].count("reduce-scatter") == m and kinds[3].count("all-gather") == 2 * m
    volume = {z: sum(ring(n, 4, k) for k, n in data_parallel(1e9, llama, Parallel(d=4, zero=z), m)) for z in (0, 1, 3)}
    assert volume[0] == pytest.approx(volume[1])
    assert volume[3] == pytest.approx(3 * m / 2 * volume[1])  # 3m collectives of half an all-reduce each


def test_ring_collectives_send_what_the_textbook_formulas_say():
    assert ring(8e9, 8, "all-reduce") == pytest.approx(2 * 8e9 * 7 / 8)
    assert ring(8e9, 8, "all-gather") == ring(8e9, 8, "reduce-scatter") == pytest.approx(7e9)
    assert ring(8e9, 1, "all-reduce") == 0


def test_traffic_per_parallelism():
    llama = MODELS["7b"]
    act = llama.tokens * llama.hidden * 2
    x = traffic(llama, Parallel(t=4, d=2), m=8, blocks=8, hand_overs=16, params=1e9)
    assert x.tensor == pytest.approx(8 * 8 * 4 * 2 * act * 3 / 4)  # 4 all-reduces per block and micro-batch
    assert x.pipeline == pytest.approx(16 * act / 4) and x.expert == 0
    assert x.data == pytest.approx(2 * (1e9 / 4 * 2) / 2)
    moe = replace(llama, experts=8, top_k=2)
    assert traffic(moe, Parallel(d=8), m=1, blocks=1, hand_overs=0, params=0).expert == pytest.approx(4 * 2 * act * 7 / 8)
    with pytest.raises(ValueError, match="1 ≤ top_k ≤ experts"):
        replace(llama, experts=2, top_k=4)


def test_mfu_is_the_kernels_efficiency_where_nothing_idles_or_runs_twice():
    eager = replace(MODELS["7b"], flash_attention=False)
    one = Cluster(GPUS["h100-80gb"], 1, LINKS["nvlink"])
    row = plan(eager, one, [4], ["1f1b"], recompute="none")[0]
    assert row.mfu == pytest.approx(GPUS["h100-80gb"].efficiency) and row.hfu == pytest.approx(row.mfu)
    full = plan(eager, one, [4], ["1f1b"], recompute="full")[0]
    assert full.mfu < row.mfu < full.hfu  # recomputation is work the GPU does that the model did not ask for
    four = plan(MODELS["7b"], Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"]), [16], ["1f1b"])[0]
    assert four.mfu < GPUS["h100-80gb"].efficiency * (1 - four.timeline.bubble_ratio) + 1e-9


def test_tensor_and_sequence_parallelism_divide_the_memory_and_data_parallelism_the_optimizer():
    llama, c = MODELS["13b"], Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"])
    base, tp, sp = (plan(llama, c, [16], ["1f1b"], parallel=x)[0] for x in
                    (Parallel(), Parallel(t=4), Parallel(t=4, sequence=True)))
    assert max(tp.memory.weights) == pytest.approx(max(base.memory.weights) / 4)
    assert max(sp.memory.activations) < max(tp.memory.activations) < max(base.memory.activations)
    assert tp.traffic[0].tensor > 0 and base.traffic[0].tensor == 0
    act = llama.tokens * llama.hidden * llama.dtype_bytes
    assert tp.traffic[0].pipeline == pytest.approx(16 * act / 4)  # GPU 0 sends each micro-batch's activation on


def test_the_layout_search_covers_every_split_and_ranks_what_fits_first():
    rows = layouts(MODELS["7b"], GPUS["h100-80gb"], 16, global_batch=64, schedules=("1f1b", "zb-h1"), zeros=(0, 1))
    assert all(r.t * r.p * r.d == 16 and r.m * r.d == 64 for r in rows)
    assert {(r.t, r.p, r.d) for r in rows} >= {(1, 16, 1), (2, 4, 2), (8, 1, 2), (1, 1, 16)}
    fitting = [r for r in rows if r.fits]
    assert list(rows[:len(fitting)]) == fitting and fitting[0].tokens_per_s == max(r.tokens_per_s for r in fitting)
    assert all(r.recompute != "selective" for r in rows)  # FlashAttention already recomputes what selective would
