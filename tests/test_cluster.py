"""Model and cluster → costs and memory: a toy model worked by hand, the presets against their
published sizes, the interleaving break-even, and ``ppedu plan``."""

import json
import math
from dataclasses import replace

import pytest

from ppedu import simulate
from ppedu.cluster import (
    GPU, GPUS, LINKS, MODELS, Cluster, Link, Model, best, break_even_bandwidth, costs_for, interleaving_break_even,
    interleaving_by_link, memory_for, plan,
)
from ppedu.costs import Costs
from ppedu.schedules import SCHEDULES, dualpipe, gpipe, interleaved_1f1b, one_f_one_b
from test_cli import ppedu

# The worked example, small enough to redo on paper: 2 blocks of width h = 8 (2 heads, MLP 4h, two
# matrices), vocabulary V = 10, one sequence of s = 4 tokens, bf16, FlashAttention, no dropout; a GPU
# doing 1000 FLOP/s; a link of 64 bytes/s with 1 s latency. Everything below is exact up to float rounding.
TOY = Model("toy", layers=2, hidden=8, vocab=10, seq=4, heads=2)
SLOW = Cluster(GPU("toy", tflops=1e-9, memory=16000, efficiency=1.0), 2, Link("toy", bandwidth=64, latency=1))
EXACT = dict(rel=1e-9)


def test_toy_parameters_and_flops_by_hand():
    # Block: Q, K, V, O are 4·h² = 256, MLP 2·h·4h = 512, two norms 2h = 16 → 784 (= 12h² + 2h).
    # Embedding h·V = 80; output layer h·V + final norm h = 88; total 80 + 2·784 + 88 = 1736.
    assert TOY.layer_params() == (80, 784, 784, 88) and TOY.params == 1736
    # Forward: 2 · params · tokens = 2·784·4 = 6272 per block, plus the attention core 4·b·s²·h = 4·16·8 = 512;
    # 2·88·4 = 704 for the output layer.
    assert TOY.layer_flops() == (0, 6784, 6784, 704)
    # Backward: each matrix as much again in B and in W (6272); attention's core all in B, 2.5 × 512 with
    # FlashAttention (it recomputes QKᵀ); full recomputation adds the block's forward (6784) to B.
    assert TOY.layer_backward_flops("none") == ((0, 7552, 7552, 704), (0, 6272, 6272, 704))
    assert TOY.layer_backward_flops("full")[0] == (0, 14336, 14336, 704)
    # Hand-over: s·h activations of 2 bytes = 64 bytes; over the toy link 1 s + 64/64 s = 2 s.
    assert TOY.hand_over_bytes == 64 and SLOW.comm(TOY.hand_over_bytes) == 2


def test_toy_activation_bytes_by_hand():
    # Per block, in units of s·b·h = 32 bytes at 16 bits: norms 4, attention input 2, Q K V 6, projection input 2,
    # MLP input 2, MLP hidden 2 · 2·4 = 16 → 32 · 32 = 1024, plus FlashAttention's fp32 statistic per head and
    # token, 4·2·4 = 32: 1056. The output layer keeps its bf16 input (4·8·2 = 64) and fp32 logits (4·10·4 = 160).
    assert TOY.layer_activation_bytes("none") == TOY.layer_activation_bytes("selective") == (0, 1056, 1056, 224)
    assert TOY.layer_activation_bytes("full") == (0, 64, 64, 224)
    # Korthikanti et al.'s baseline (eager attention, dropout): s·b·h·(34 + 5·a·s/h) = 32·39 = 1248; selective 34·32.
    eager = replace(TOY, flash_attention=False, dropout=True)
    assert eager.layer_activation_bytes("none")[1] == 1248 and eager.layer_activation_bytes("selective")[1] == 1088
    assert eager.recompute_transient_bytes("selective") == 1248 - 1088 and TOY.recompute_transient_bytes("none") == 0


def test_toy_1f1b_step_time_by_hand():
    # Cut on FLOPs: [embedding, block] = 6784 | [block, head] = 7488. f = 6.784 s and 7.488 s; a full backward
    # 7.552 + 6.272 = 13.824 s and 8.256 + 6.976 = 15.232 s. GPU 0: F0 0–6.784, F1 –13.568. GPU 1: F0 from
    # 8.784 (hand-over 2 s) to 16.272, B0 to 31.504, F1 to 38.992, B1 to 54.224. GPU 0: B0 from 33.504 to
    # 47.328, B1 from 56.224 to 70.048.
    schedule = one_f_one_b(2, 2)
    costs, cut = costs_for(TOY, SLOW, schedule)
    assert cut.bounds == (0, 2, 4)
    assert costs.forward(0, 0) == pytest.approx(6.784, **EXACT) and costs.backward(1, True, 1) == pytest.approx(15.232)
    assert simulate(schedule, costs).makespan == pytest.approx(70.048, **EXACT)


def test_toy_memory_by_hand():
    # GPU 0 holds 80 + 784 = 864 parameters, GPU 1 784 + 88 = 872: weights and gradients 2 bytes each,
    # Adam 12 → 13824 and 13952 bytes. 1F1B at p = 2, m = 2 keeps 2 micro-batches on GPU 0 (2 · 1056)
    # and 1 on GPU 1 (1056 + 224): totals 15936 and 15232 bytes.
    schedule = one_f_one_b(2, 2)
    costs, cut = costs_for(TOY, SLOW, schedule)
    memory = memory_for(TOY, simulate(schedule, costs), cut)
    assert memory.weights == (1728, 1744) and memory.optimizer == (10368, 10464)
    assert memory.activations == (2112, 1280)
    assert memory.total == (15936, 15232)
    assert plan(TOY, replace(SLOW, gpu=replace(SLOW.gpu, memory=15936)), [2], schedules=["1f1b"])[0].fits
    assert not plan(TOY, replace(SLOW, gpu=replace(SLOW.gpu, memory=15935)), [2], schedules=["1f1b"])[0].fits


def test_gpipe_keeps_every_micro_batch_and_dualpipe_holds_two_copies():
    c = replace(SLOW, gpus=2)
    g = memory_for(TOY, *_run(TOY, c, gpipe(2, 4)))
    assert g.activations == (4 * 1056, 4 * 1280)
    d = memory_for(TOY, *_run(TOY, c, dualpipe(2, 4)))
    # GPU j holds stages j and p-1-j: here both GPUs hold the whole model, twice its bytes in all.
    assert d.weights == (1728 + 1744,) * 2 and sum(d.weights) == 2 * TOY.params * TOY.dtype_bytes


def _run(model, cluster, schedule):
    costs, cut = costs_for(model, cluster, schedule)
    return simulate(schedule, costs), cut


@pytest.mark.parametrize("name, published", [("7b", 6.74e9), ("13b", 13.0e9), ("70b", 69.0e9), ("405b", 405e9)])
def test_presets_match_their_published_sizes(name, published):
    assert MODELS[name].params == pytest.approx(published, rel=0.01)


def test_presets_are_editable():
    gpu = replace(GPUS["h100-80gb"], efficiency=0.5)
    assert gpu.seconds(989e12) == pytest.approx(2.0)
    assert replace(MODELS["7b"], seq=2048).hand_over_bytes == MODELS["7b"].hand_over_bytes // 2


def test_nodes_put_a_slower_link_between_them():
    c = Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"], node_size=2, between_nodes=LINKS["ib-200"])
    comm = c.comm(1e6)
    assert comm[0][1] == LINKS["nvlink"].seconds(1e6) and comm[1][2] == comm[3][0] == LINKS["ib-200"].seconds(1e6)
    # interleaved's wrap-around hand-over from GPU 3 to GPU 0 crosses nodes too
    slow = simulate(interleaved_1f1b(4, 8, 2), costs_for(MODELS["7b"], c, interleaved_1f1b(4, 8, 2))[0])
    fast = simulate(interleaved_1f1b(4, 8, 2), costs_for(MODELS["7b"], replace(c, node_size=None, between_nodes=None),
                                                         interleaved_1f1b(4, 8, 2))[0])
    assert slow.makespan > fast.makespan


def test_interleaving_break_even_is_where_the_two_step_times_cross():
    p, m, costs = 4, 8, Costs(f=1, b=1, w=1)
    latency = interleaving_break_even(p, m, costs)
    step = lambda s, c, x: simulate(s, replace(c, comm=x)).makespan  # noqa: E731
    for x, faster in [(latency * 0.9, True), (latency * 1.1, False)]:
        assert (step(interleaved_1f1b(p, m, 2), costs.per_chunk(2), x) < step(one_f_one_b(p, m), costs, x)) == faster
    assert interleaving_break_even(1, 4, costs) == 0  # one GPU has no bubble for interleaving to shrink


def test_break_even_bandwidth_separates_links_that_pay_from_those_that_do_not():
    c = Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"])
    model = replace(MODELS["7b"], seq=256)
    bw = break_even_bandwidth(model, c, 8)
    assert 0 < bw < math.inf
    above, below = Link("above", bw * 1.2, c.link.latency), Link("below", bw / 1.2, c.link.latency)
    (_, plain_a, inter_a), (_, plain_b, inter_b) = interleaving_by_link(model, c, 8, links=[above, below])
    assert inter_a < plain_a and inter_b > plain_b


def test_best_is_the_fastest_schedule_that_fits():
    rows = plan(MODELS["7b"], Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"]), [8, 16])
    winner = best(rows)
    assert winner is not None and winner.fits
    assert all(winner.tokens_per_second >= r.tokens_per_second for r in rows if r.fits)
    assert {r.schedule for r in rows} == set(SCHEDULES)


@pytest.mark.parametrize("make, words", [
    (lambda: Model("x", layers=0, hidden=8, vocab=10), "layers must be a whole number ≥ 1"),
    (lambda: Model("x", layers=2, hidden=9, vocab=10, heads=2), "hidden (9) must be a multiple of heads (2)"),
    (lambda: TOY.layer_activation_bytes("some"), "recompute is one of none, selective, full"),
    (lambda: Cluster(GPUS["l4"], 2, LINKS["nvlink"], node_size=2), "node_size and between_nodes go together"),
    (lambda: costs_for(TOY, SLOW, one_f_one_b(3, 3)), "the schedule has 3 stages for 2 GPUs"),
    (lambda: costs_for(TOY, SLOW, interleaved_1f1b(2, 2, 3)), "toy has 4 units to cut, fewer than 6 chunks"),
    (lambda: costs_for(TOY, SLOW, one_f_one_b(2, 2), recompute="half"), "recompute is one of none, selective, full"),
    (lambda: plan(TOY, SLOW, [3], schedules=["dualpipe"]), "dualpipe needs an even m with m ≥ 2p"),
])
def test_bad_input_names_the_rule(make, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_plan_cli_table_json_and_png(tmp_path):
    out = ppedu("plan", "--model", "7b", "--gpus", "4", "--gpu", "a100-80gb", "--link", "pcie-gen4", "-m", "8")
    assert out.returncode == 0, out.stderr
    assert "Llama 2 7B" in out.stdout and "best: " in out.stdout and "interleaving (v=2)" in out.stdout
    data = json.loads(ppedu("plan", "--model", "7b", "--gpus", "4", "-m", "8,16", "--json").stdout)
    assert {r["schedule"] for r in data["rows"]} >= {"1f1b", "dualpipe"} and data["best"] is not None
    assert set(data["rows"][0]["memory"]) == {"weights", "grads", "optimizer", "activations", "transient", "total"}
    png = tmp_path / "plan.png"
    assert ppedu("plan", "--model", "7b", "--gpus", "2", "-m", "4", "--png", str(png)).returncode == 0
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("args, words", [
    (["--model", "7b", "--gpus", "0"], "gpus must be a whole number ≥ 1"),
    (["--model", "9b", "--gpus", "4"], "invalid choice: '9b'"),
    (["--model", "7b", "--gpus", "4", "--efficiency", "2"], "efficiency lies in (0, 1]"),
    (["--model", "7b", "--gpus", "4", "-m", "2.5"], "m (micro-batches) must be whole numbers"),
    (["--model", "7b", "--gpus", "4", "--dp", "0"], "d must be a whole number ≥ 1"),
    (["--model", "7b", "--gpus", "4", "--zero", "1"], "--zero shards over data-parallel replicas"),
    (["--model", "7b", "--gpus", "4", "--sp"], "sequence parallelism splits what tensor parallelism leaves whole"),
    (["--model", "7b", "--gpus", "4", "--layouts"], "--layouts needs --global-batch"),
    (["--model", "7b", "--gpus", "4", "--global-batch", "8"], "--global-batch goes with --layouts"),
])
def test_plan_cli_bad_input_exits_2_with_one_line(args, words):
    out = ppedu("plan", *args)
    assert out.returncode == 2 and words in out.stderr and len(out.stderr.splitlines()) == 1


def test_a_mixed_cluster_gives_the_faster_gpus_more_layers():
    h100, a100 = GPUS["h100-80gb"], GPUS["a100-80gb"]
    mixed = Cluster((h100, h100, a100, a100), 4, LINKS["nvlink"])
    schedule = one_f_one_b(4, 8)
    costs, cut = costs_for(MODELS["7b"], mixed, schedule)
    assert cut.sizes[0] > cut.sizes[3]
    # Each chunk costs its FLOPs at its own GPU's rate, and the cut beats the even one on this hardware.
    flops = cut.totals(MODELS["7b"].layer_flops())
    assert costs.forward(3, 3) == pytest.approx(a100.seconds(flops[3]))
    uniform_cut = costs_for(MODELS["7b"], Cluster(h100, 4, LINKS["nvlink"]), schedule)[1]
    even = [x / mixed.device(s).flops_per_second for s, x in enumerate(uniform_cut.totals(MODELS["7b"].layer_flops()))]
    assert cut.bottleneck < max(even)
    with pytest.raises(ValueError, match="dualpipe runs each chunk on two GPUs"):
        costs_for(MODELS["7b"], mixed, dualpipe(4, 8))
    names = {r.schedule for r in plan(MODELS["7b"], mixed, [8])}
    assert "dualpipe" not in names and "1f1b" in names


def test_each_gpu_is_checked_against_its_own_memory():
    small = replace(GPUS["l4"], memory=1e9)
    rows = plan(MODELS["7b"], Cluster((GPUS["h100-80gb"],) * 3 + (small,), 4, LINKS["nvlink"]), [8], ["1f1b"])
    assert not rows[0].fits and rows[0].memory.total[0] <= GPUS["h100-80gb"].memory
    with pytest.raises(ValueError, match="3 GPUs named for a pipeline of 4"):
        Cluster((small,) * 3, 4, LINKS["nvlink"])


def test_plan_cli_takes_one_gpu_preset_per_gpu():
    out = ppedu("plan", "--model", "7b", "--gpus", "2", "--gpu", "h100-80gb,a100-80gb", "-m", "4")
    assert out.returncode == 0, out.stderr
    assert "1 × H100 80GB SXM" in out.stdout and "1 × A100 80GB SXM" in out.stdout and "dualpipe " not in out.stdout
    bad = ppedu("plan", "--model", "7b", "--gpus", "2", "--gpu", "h100-80gb,b200")
    assert bad.returncode == 2 and "unknown GPU preset 'b200'" in bad.stderr


def test_sharding_adam_over_data_parallel_replicas_makes_70b_fit_on_8_gpus():
    args = ["plan", "--model", "70b", "--gpus", "8", "-m", "32", "--recompute", "full", "--json"]
    alone, sharded = json.loads(ppedu(*args).stdout), json.loads(ppedu(*args, "--dp", "8", "--zero", "1").stdout)
    assert alone["best"] is None and sharded["best"] is not None
    one = next(r for r in alone["rows"] if r["schedule"] == "1f1b")
    eight = next(r for r in sharded["rows"] if r["schedule"] == "1f1b")
    assert eight["memory"]["optimizer"] == pytest.approx([x / 8 for x in one["memory"]["optimizer"]])
    assert eight["memory"]["weights"] == one["memory"]["weights"]
    assert eight["data_seconds"] > 0 and eight["tokens_per_second"] > 7 * one["tokens_per_second"]
