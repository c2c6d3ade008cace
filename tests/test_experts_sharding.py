"""Experts and sharded data parallelism: capacity and node-limited routing counted against brute force, DeepSeek-V3's
parameters against its report, ZeRO's stages against the ZeRO paper's own figures, FSDP's units walked, and how
often a pipeline's order makes a sharded stage gather its weights."""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu.cluster import GPUS, MODELS, Model
from ppedu.cluster.experts import capacity, capacity_trade, moe_layer_overlap, nodes_crossed, route
from ppedu.cluster.published import DEEPSEEK_V3, DEEPSEEK_V3_PARAMS, H800_IB, ZERO_FIGURE_1
from ppedu.cluster.sharding import PRECISIONS, fsdp_step, regathers, zero_stages
from ppedu.schedules import build, looped_bfs, one_f_one_b

BF16 = PRECISIONS["bf16"]


def test_deepseek_v3_has_the_reports_671b_and_37b():
    assert DEEPSEEK_V3.params == pytest.approx(DEEPSEEK_V3_PARAMS["total"], rel=0.005)
    # activated: every matrix a token passes; the embedding is a lookup, and the report's 37B is rounded
    assert DEEPSEEK_V3.active_params - DEEPSEEK_V3.layer_params()[0] == pytest.approx(DEEPSEEK_V3_PARAMS["activated"], rel=0.02)
    assert sum(DEEPSEEK_V3.layer_expert_params()) / DEEPSEEK_V3.params > 0.97  # experts are nearly all of it


def test_a_dense_model_is_unchanged_by_the_expert_fields():
    llama = MODELS["7b"]
    assert llama.layer_params() == llama.layer_active_params() and sum(llama.layer_expert_params()) == 0
    moe = Model("moe", layers=2, hidden=8, vocab=10, seq=4, heads=2, experts=4, top_k=2, shared_experts=1)
    # per block: attention 4h² + (4 + 1) experts × 2·h·4h + router h·4 + norms 2h; a token uses 2 + 1 of the experts
    assert moe.layer_params()[1] == 256 + 5 * 512 + 32 + 16 and moe.layer_active_params()[1] == 256 + 3 * 512 + 32 + 16
    assert moe.layer_flops()[1] == 2 * moe.layer_active_params()[1] * 4 + moe.attention_flops


@given(st.integers(1, 10_000), st.integers(1, 64), st.integers(1, 8), st.floats(0.5, 4))
def test_capacity_is_the_factor_times_an_even_share(tokens, experts, top_k, factor):
    c = capacity(tokens, experts, top_k, factor)
    assert c >= factor * tokens * top_k / experts > c - 1


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 1000), st.floats(0, 1.5))
def test_more_capacity_drops_less_and_pads_more(seed, skew):
    loads = route(2000, 16, 2, skew=skew, seed=seed)
    assert sum(loads) == 4000
    rows = list(capacity_trade(loads, 2, (1.0, 1.5, 2.0, 8.0)))
    assert [r.dropped for r in rows] == sorted((r.dropped for r in rows), reverse=True) and rows[-1].dropped == 0
    assert [r.padding for r in rows] == sorted(r.padding for r in rows)


def test_a_skewed_router_drops_more_at_the_same_capacity():
    even, skewed = (capacity_trade(route(4096, 64, 2, skew=s), 2, (1.25,))[0].dropped for s in (0.0, 1.0))
    assert skewed > even


@pytest.mark.parametrize("experts, top_k, nodes", [(8, 2, 2), (8, 3, 4), (12, 4, 3), (16, 4, 4)])
def test_nodes_crossed_is_the_average_over_every_choice_of_experts(experts, top_k, nodes):
    per = experts // nodes
    choices = list(itertools.combinations(range(experts), top_k))
    # the token's own node is node 0: count the other nodes its experts sit on, over every choice
    brute = sum(len({e // per for e in c} - {0}) for c in choices) / len(choices)
    assert nodes_crossed(experts, top_k, nodes) == pytest.approx(brute)


@pytest.mark.parametrize("experts, top_k, nodes, limit", [(8, 2, 4, 3), (12, 3, 3, 2), (16, 4, 4, 2), (8, 4, 4, 4)])
def test_the_node_limit_bounds_the_average_over_every_choice_of_nodes_and_experts(experts, top_k, nodes, limit):
    per = experts // nodes
    crossed = [len({e // per for e in c} - {0})  # the token's own node is node 0; its limit's nodes any of them
               for chosen in itertools.combinations(range(nodes), limit)
               for c in itertools.combinations([n * per + i for n in chosen for i in range(per)], top_k)]
    bound = nodes_crossed(experts, top_k, nodes, limit=limit)
    assert sum(crossed) / len(crossed) <= bound == min(limit, top_k) * (nodes - 1) / nodes
    assert max(crossed) <= min(limit, top_k)


def test_deepseeks_node_limit_cuts_what_crosses_infiniband():
    free, limited = nodes_crossed(256, 8, 8), nodes_crossed(256, 8, 8, limit=4)
    assert limited == 3.5 and 4.5 < free < 4.7
    o = moe_layer_overlap(DEEPSEEK_V3, GPUS["h800"], H800_IB, 8, 4, fp8=True)
    bf16 = moe_layer_overlap(DEEPSEEK_V3, GPUS["h800"], H800_IB, 8, 4)
    assert o.all_to_all_seconds == bf16.all_to_all_seconds and o.ratio > bf16.ratio  # FP8 computes faster
    with pytest.raises(ValueError, match="has no experts"):
        moe_layer_overlap(MODELS["7b"], GPUS["h800"], H800_IB, 8)


def test_zero_stages_give_the_zero_papers_figure_1():
    # ZeRO (Rajbhandari et al., 2020), Figure 1: Ψ = 7.5B parameters, N_d = 64, K = 12 → 120, 31.4, 16.6 and 1.9 GB.
    totals = [round(r.total_gb, 1) for r in zero_stages(ZERO_FIGURE_1["params"], ZERO_FIGURE_1["d"], BF16)]
    assert totals == [120.0, 31.4, 16.6, 1.9] == list(ZERO_FIGURE_1["gb"])


@given(st.floats(1e6, 1e12), st.integers(2, 1024))
def test_zero_3_sends_one_and_a_half_times_what_the_others_send(params, d):
    sent = [r.sent_gb for r in zero_stages(params, d, BF16)]
    assert sent[0] == sent[1] == sent[2] and sent[3] == pytest.approx(1.5 * sent[0], rel=1e-3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(1e6, 1e9), min_size=1, max_size=12), st.integers(2, 256), st.integers(0, 3))
def test_fsdp_gathers_each_unit_twice_unless_it_keeps_it_and_then_sends_two_thirds(units, d, prefetch):
    once = fsdp_step(units, d, BF16, prefetch=prefetch)
    kept = fsdp_step(units, d, BF16, reshard_after_forward=False, prefetch=prefetch)
    assert (once.gathers, kept.gathers) == (2 * len(units), len(units))
    assert kept.sent == pytest.approx(2 / 3 * once.sent)
    ideal = sum(units) * BF16.total / d
    # the walks add the same bytes in other orders: equal sums may differ in the last bit
    close = 1e-12
    assert ideal < once.peak <= kept.peak * (1 + close) and once.gathered_at_peak <= kept.gathered_at_peak * (1 + close)
    assert kept.gathered_at_peak >= sum(units) * BF16.weights * (1 - close)  # every unit held from its forward on
    three = zero_stages(sum(units), d, BF16)[3]
    assert once.sent / 1e9 == pytest.approx(three.sent_gb, abs=1e-3)  # FSDP's step is ZeRO-3's bytes


@given(st.integers(2, 8), st.integers(1, 4), st.integers(1, 4))
def test_looped_bfs_gathers_each_chunk_once_each_way_whatever_m(p, v, k):
    m = p * k
    assert regathers(looped_bfs(p, m, v)) == (2 * v - 1,) * p
    assert regathers(one_f_one_b(p, m)) == (1,) * p
    if v > 1:
        assert max(regathers(build("interleaved", p, m, v))) >= 2 * v - 1


def test_the_precisions_bytes():
    assert [PRECISIONS[k].total for k in ("bf16", "bf16-fp32-grads", "fp8-deepseek")] == [16, 18, 13]
    assert math.isclose(PRECISIONS["bf16"].optimizer, 12)


def test_a_plan_spreads_the_experts_over_the_replicas_and_reduces_only_the_rest():
    from dataclasses import replace

    from ppedu.cluster import LINKS, Cluster, Parallel, costs_for, plan
    from ppedu.schedules import one_f_one_b

    llama = MODELS["7b"]
    moe = replace(llama, experts=8, top_k=2, expert_ffn=2752)
    cluster, d = Cluster(GPUS["h100-80gb"], 2, LINKS["nvlink"]), 4
    dense, sparse = (plan(x, cluster, [4], ["1f1b"], parallel=Parallel(d=d, zero=1))[0] for x in (llama, moe))
    _, cut = costs_for(moe, cluster, one_f_one_b(2, 4))
    total, experts = cut.totals(moe.layer_params()), cut.totals(moe.layer_expert_params())
    # each GPU: its stage's attention, norms and router whole, a d-th of its experts; Adam sharded only for the first
    assert sparse.memory.weights == pytest.approx(tuple(2 * (x - e + e / d) for x, e in zip(total, experts)))
    assert sparse.memory.optimizer == pytest.approx(tuple(12 * ((x - e) / d + e / d) for x, e in zip(total, experts)))
    assert sparse.traffic[0].data < dense.traffic[0].data  # the experts' gradients are not all-reduced
    assert sparse.traffic[0].expert > 0 == dense.traffic[0].expert
