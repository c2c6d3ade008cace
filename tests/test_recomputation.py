"""Recomputation trades memory for time: less kept, more run — checked on the simulator's numbers."""

import pytest

from ppedu.cluster import GPUS, LINKS, MODELS, RECOMPUTE, Cluster
from ppedu.recomputation import cheapest_fit, selective_share, trade

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
        assert mine["none"].slowdown == 1


def test_full_recomputation_reruns_one_forward_in_every_backward(rows):
    # f + b + w = 3 forwards' worth per micro-batch and stage; full recomputation makes it 4.
    full = next(r for r in rows if r.schedule == "1f1b" and r.recompute == "full")
    assert full.slowdown == pytest.approx(4 / 3, abs=1e-3)


def test_gpipe_needs_full_recomputation_where_1f1b_fits_with_selective(rows):
    assert (cheapest_fit(rows, "gpipe"), cheapest_fit(rows, "1f1b")) == ("full", "selective")
    assert cheapest_fit(trade(MODELS["70b"], CLUSTER, m=4), "1f1b") is None


def test_selective_share_is_the_attention_core():
    gpt3 = MODELS["7b"].__class__("GPT-3", layers=96, hidden=12288, vocab=50257, seq=2048, heads=96)
    assert selective_share(gpt3) == pytest.approx(2048 / (6 * 12288 + 2048))
    assert 0 < selective_share(MODELS["405b"]) < selective_share(MODELS["7b"]) < 1
