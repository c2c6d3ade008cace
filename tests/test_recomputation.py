"""Recomputation trades memory for time: less kept, more run — checked on the simulator's numbers."""

from dataclasses import replace

import pytest

from ppedu.cluster import GPUS, LINKS, MODELS, RECOMPUTE, Cluster
from ppedu.recomputation import checkpointing, cheapest_fit, selective_share, trade

CLUSTER = Cluster(GPUS["a100-80gb"], 4, LINKS["nvlink"])


@pytest.fixture(scope="module")
def rows():
    return trade(MODELS["7b"], CLUSTER, m=16)


def test_more_recomputation_never_keeps_more_and_full_costs_time(rows):
    for schedule in ("gpipe", "1f1b"):
        mine = {r.recompute: r for r in rows if r.schedule == schedule}
        kept = [mine[mode].activations_gb for mode in RECOMPUTE]
        assert kept == sorted(kept, reverse=True) and kept[0] > kept[-1]
        assert mine["full"].step_time_s > mine["none"].step_time_s == mine["selective"].step_time_s
        assert mine["none"].slowdown == 1 and mine["full"].transient_gb > 0 == mine["none"].transient_gb


def test_full_recomputation_reruns_one_forward_in_every_backward(rows):
    # per block and micro-batch: F, then B (2.5 × attention with FlashAttention) and W; full adds one F more
    llama = MODELS["7b"]
    f, (b, w) = llama.layer_flops()[1], (x[1] for x in llama.layer_backward_flops("none"))
    full = next(r for r in rows if r.schedule == "1f1b" and r.recompute == "full")
    assert full.slowdown == pytest.approx((f + b + w + f) / (f + b + w), abs=0.02)


def test_with_flash_attention_1f1b_fits_with_nothing_recomputed_and_eager_scores_triple_the_activations(rows):
    # the old chapter said nothing fits without recomputation: it kept attention's s² scores, as no framework does now
    assert (cheapest_fit(rows, "gpipe"), cheapest_fit(rows, "1f1b")) == ("full", "none")
    eager = {(r.schedule, r.recompute): r for r in trade(replace(MODELS["7b"], flash_attention=False), CLUSTER, m=16)}
    flash = {(r.schedule, r.recompute): r for r in rows}
    assert eager["1f1b", "none"].activations_gb > 2.5 * flash["1f1b", "none"].activations_gb
    assert eager["1f1b", "selective"].activations_gb == pytest.approx(flash["1f1b", "none"].activations_gb, rel=0.02)
    assert cheapest_fit(trade(MODELS["70b"], CLUSTER, m=4), "1f1b") is None


def test_selective_share_is_the_attention_core():
    gpt3 = MODELS["7b"].__class__("GPT-3", layers=96, hidden=12288, vocab=50257, seq=2048, heads=96)
    assert selective_share(gpt3) == pytest.approx(2048 / (6 * 12288 + 2048), rel=1e-3)
    assert 0 < selective_share(MODELS["405b"]) < selective_share(MODELS["7b"]) < 1


def test_gpipe_keeps_less_than_every_block_but_rebuilds_the_whole_stage_at_once():
    rows = {r.recompute: r for r in checkpointing(MODELS["7b"], 8)}
    stage, block = rows["the whole stage (GPipe)"], rows["full (every block)"]
    assert stage.kept_gb == pytest.approx(block.kept_gb / 8, rel=1e-2)
    assert stage.transient_gb == pytest.approx(rows["none"].kept_gb, rel=1e-2) == pytest.approx(8 * block.transient_gb, rel=1e-2)
