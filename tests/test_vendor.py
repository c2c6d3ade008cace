"""The vendor brief's remaining figures: which pipelines, clusters and models could show them."""

import pytest

from ppedu.cluster import GPUS, LINKS, MODELS
from ppedu.formulas import bubble_ratio
from ppedu.vendor import NODE, claims, hand_over_ms, idle_matches, model_state_nodes, naive_idle, node_readings


def test_a_naive_pipeline_idles_at_least_half_the_time():
    assert [naive_idle(p) for p in (2, 4, 8)] == [pytest.approx(1 - 1 / p) for p in (2, 4, 8)]


def test_45_percent_needs_micro_batching_with_m_about_1_2_p():
    rows = idle_matches(0.45, range(2, 20))
    assert [(r.p, r.m) for r in rows] == [(10, 11), (19, 22)]
    assert all(round(bubble_ratio(r.p, r.m), 3) == 0.45 for r in rows)


def test_a_single_node_is_eight_gpus_and_3_4x_at_94_2_percent_needs_a_slower_node():
    # the old reading compared p GPUs with one GPU; a node is 8, and the brief never names its node count
    rows = node_readings(3.4, 0.942, range(1, 6))
    assert NODE == 8 and [r.gpus for r in rows] == [8, 16, 24, 32, 40]
    assert [r.nodes for r in rows if r.possible] == [1, 2, 3]  # 4 nodes would need the one node above 100 %
    assert all(float(r.baseline_utilization.split()[0]) < 94.2 for r in rows if r.possible)


def test_the_brief_s_models_do_not_fit_on_one_node_at_all():
    h100 = GPUS["h100-80gb"]
    assert 1 < model_state_nodes(MODELS["70b"], h100) < 2 and model_state_nodes(MODELS["405b"], h100) > 10


def test_hand_overs_are_milliseconds_and_405b_is_over_3_2():
    ib = LINKS["ib-400"]
    assert hand_over_ms(MODELS["70b"], ib) < 3.2 < hand_over_ms(MODELS["405b"], ib) < 10


def test_the_claims_table_gives_each_figure_a_computed_verdict():
    naive, speedup, one_node, latency, streaming, asynchronous, zero, *_ = claims()
    assert not naive.holds and "50%" in naive.computed
    assert not speedup.holds and "27.71 %" in speedup.computed and "a node is 8 GPUs" in speedup.computed
    assert not one_node.holds and latency.holds and not streaming.holds
    assert not asynchronous.holds and "staleness 0" in asynchronous.computed
    assert not zero.holds and "15.79%" in zero.computed


def test_the_briefs_remaining_words_are_refuted_by_their_computations():
    from ppedu import Costs, simulate
    from ppedu.cluster import GPUS, LINKS, MODELS
    from ppedu.schedules import build
    from ppedu.vendor import claims, hand_over_ms

    words = {c.statement: c for c in claims()}
    unit = Costs(f=1, b=1)
    assert simulate(build("1f1b", 4, 8), unit).bubble_ratio == simulate(build("gpipe", 4, 8), unit).bubble_ratio
    assert not words["1F1B schedule bubble elimination"].holds
    naive = simulate(build("gpipe", 4, 1), Costs(f=1, b=2))
    assert set(naive.busy_per_stage) == {naive.makespan / 4}
    assert not words["naive schedules leave early GPU stages completely idle"].holds
    mfu = words["94.2 % cluster utilization (read as MFU, as training reports use the word)"]
    assert not mfu.holds and f"{GPUS['h100-80gb'].efficiency * 0.942:.1%}" in mfu.computed
    latency = hand_over_ms(MODELS["405b"], LINKS["ib-400"])
    both = words["inter-stage latency under 10 ms, activations streamed in under 3.2 ms"]
    assert 3.2 < latency < 10 and not both.holds and words["sub-10 ms inter-stage latency"].holds
