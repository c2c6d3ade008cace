"""The facts the answers of ps1, ps2, ps4, ps6 and ps7 rest on, held against the simulator and ppedu.cluster over ranges
of costs and sizes — not at f = b = w alone. Each closed form here is the one the model answer derives; the oracle is
the simulation (or the library's own count), which nobody wrote for these questions."""

import math

from hypothesis import given, settings, strategies as st

from ppedu import Costs, lesson, simulate
from ppedu.cluster import Model
from ppedu.cluster.sharding import PRECISIONS, fsdp_step
from ppedu.errata import deepseek_table
from ppedu.schedules import build, dualpipe_v, one_f_one_b, zero_bubble_h1, zero_bubble_h2, zero_bubble_v

COST = st.sampled_from((0.25, 0.5, 1.0, 1.5, 2.0, 3.0))
FEW = settings(max_examples=40, deadline=None)


def worst_idle(t):
    return max(t.makespan - busy for busy in t.busy_per_stage)


@FEW
@given(p=st.integers(2, 9), v=st.integers(2, 4), m=st.integers(1, 27), data=st.data())
def test_interleavings_peak_for_fewer_micro_batches_than_gpus(p, v, m, data):
    """ps2 Q1b: GPU j's peak is its warm-up plus one, in chunks of 1/v: 2(p − j − 1) + (v − 1)·min(m, p) + 1, at most
    v·m — for m a multiple of p (the formula sheet's) and for m < p, one round, where the sheet's form overcounts."""
    m = m if m < p else p * (m // p)
    j = data.draw(st.integers(0, p - 1))
    peak = simulate(build("interleaved", p, m, v)).peak_stage_activations[j]
    assert math.isclose(peak, min(2 * (p - j - 1) + (v - 1) * min(m, p) + 1, v * m) / v)


@FEW
@given(p=st.integers(2, 10), m=st.integers(1, 24), f=COST, b=COST, c=st.sampled_from((0.0, 0.1, 0.25, 1.0, 3.5)))
def test_gpipes_step_with_hand_overs_pays_each_link_twice(p, m, f, b, c):
    """ps1 Q4b: with every hand-over taking c, GPipe's step is m(f + b) + (p − 1)(f + b + 2c) for any f and b — the
    first forward's climb and the last backward's descent — so its bubble is (p − 1)(f + b + 2c) of it."""
    t = simulate(build("gpipe", p, m), Costs(f=f, b=b, comm=c))
    step = m * (f + b) + (p - 1) * (f + b + 2 * c)
    assert math.isclose(t.makespan, step) and math.isclose(t.bubble_ratio, (p - 1) * (f + b + 2 * c) / step)


def idle_stretches(t, stage):
    """The (start, end) of each stretch in which ``stage`` does nothing, from 0 to the makespan."""
    ops = sorted(t.on_stage(stage), key=lambda ev: ev.start)
    ends = [0, *(e for ev in ops for e in (ev.start, ev.end)), t.makespan]
    return [(a, b) for a, b in zip(ends[::2], ends[1::2]) if b > a]


@FEW
@given(p=st.integers(2, 10), m=st.integers(1, 16), data=st.data())
def test_1f1b_fills_two_of_every_three_steps_of_the_slow_gpus_round_trip(p, m, data):
    """ps1 Q2: with GPU s twice as slow (f 2, b 4; the others 1 and 2), the slow GPU idles s steps before its first
    forward and 2s after its last backward under both orders; between, GPipe's waits out the round trip above it,
    3(p − 1 − s), and 1F1B's runs min(p − 1 − s, m − 1) forwards of 2 steps in it — so 1F1B's step is
    3(p − 1) + 6m − 2·min(p − 1 − s, m − 1), the rubric's intervals hold, and with the slow GPU last the two are
    equal."""
    s = data.draw(st.integers(0, p - 1))
    costs = Costs(f=tuple(2 if j == s else 1 for j in range(p)), b=tuple(4 if j == s else 2 for j in range(p)))
    gpipe, ofob = (simulate(build(name, p, m), costs) for name in ("gpipe", "1f1b"))
    u = p - 1 - s
    assert gpipe.makespan == 3 * (p - 1) + 6 * m and ofob.makespan == 3 * (p - 1) + 6 * m - 2 * min(u, m - 1)
    middle = ((s + 2 * (p - s), s + 2 * (p - s) + u) if m >= p - s else (s + 2 * m, s + 2 * m + 3 * u - 2 * (m - 1)))
    for t, gap in ((gpipe, (s + 2 * m, s + 2 * m + 3 * u)), (ofob, middle)):
        tail = [(t.makespan - 2 * s, t.makespan)] if s else []
        assert idle_stretches(t, s) == ([(0, s)] if s else []) + ([gap] if u else []) + tail


@FEW
@given(p=st.integers(2, 8), extra=st.integers(0, 6), f=COST, b=COST, w=COST)
def test_zb_h2s_step_is_the_longest_of_three_paths(p, extra, f, b, w):
    """ps6 Q1: the paper's (p − 1)f + m(f + b + w) holds exactly when b ≤ 2 min(f, w); else GPU 0's warm-up or the
    drain adds (p − 1)(b − 2f) or (p − 1)(b − 2w)."""
    m = 2 * p - 1 + extra
    bound = (p - 1) * f + m * (f + b + w)
    assert simulate(zero_bubble_h2(p, m), Costs(f=f, b=b, w=w)).makespan == \
        bound + (p - 1) * max(0, b - 2 * f, b - 2 * w)


@FEW
@given(p=st.integers(2, 10), k=st.integers(1, 3), f=COST, b=COST, w=COST)
def test_zb1ps_idle_on_any_costs(p, k, f, b, w):
    """ps4 Q1: ZB-H1's GPUs each idle (p − 1)·max(F, B − W, F + B − 2W), B the full backward; DeepSeek's row is the
    last term, the longest exactly when W ≤ min(F, B − W)."""
    t = simulate(zero_bubble_h1(p, k * p), Costs(f=f, b=b, w=w))
    assert worst_idle(t) == (p - 1) * max(f, b, f + b - w)
    if p % 2 == 0:  # DeepSeek's table takes even p (its DualPipe row)
        row = deepseek_table(p, 2 * p, Costs(f=f, b=b, w=w))[1]
        assert (row.formula_bubble == row.simulated_bubble) == (w <= min(f, b))


@FEW
@given(p=st.integers(2, 8), v=st.integers(2, 4), extra=st.integers(0, 4))
def test_interleavings_warm_up_and_peak_for_a_group_of_g(p, v, extra):
    """ps6 Q2: with groups of g ≥ p GPU j warms up with (v − 1)g + 2(p − j − 1) forwards and holds one chunk's
    activations more at its peak; the step under equal costs does not depend on g."""
    g = p + extra
    s = build("interleaved", p, 3 * g, v, group=g)
    t = simulate(s, Costs(f=1, b=1).per_chunk(v))
    for j, ops in enumerate(s.stages):
        warmup = next(i for i, op in enumerate(ops) if op.kind == "B") - 1
        assert warmup == (v - 1) * g + 2 * (p - j - 1) and t.peak_activations[j] == warmup + 1
    assert math.isclose(t.makespan, (v * 3 * g + p - 1) * 2 / v)  # fill and drain p − 1 chunk-steps, as for g = p


@given(p=st.integers(3, 8), v=st.integers(2, 3), short=st.integers(1, 2))
@settings(max_examples=20, deadline=None)
def test_a_group_smaller_than_p_waits_or_deadlocks(p, v, short):
    """ps6 Q2: with Megatron-LM's count and a group of g < p micro-batches the GPUs wait (g = p − 1: a longer step)
    or deadlock (smaller groups)."""
    from ppedu.ops import Schedule
    from ppedu.schedules.interleaved import _interleaved_order

    g = p - short
    if g < 1:
        return
    m = 4 * g
    order = Schedule(tuple(_interleaved_order(p, m, v, g, j, min((p - j - 1) * 2 + (v - 1) * g, m * v))
                           for j in range(p)), "small group", (tuple(c % p for c in range(p * v)),), m, v)
    try:
        step = simulate(order, Costs(f=1, b=1).per_chunk(v)).makespan
    except ValueError as deadlock:
        assert short >= 2 and "deadlock" in str(deadlock)
    else:
        assert short == 1 and step > (v * m + p - 1) * 2 / v


@FEW
@given(p=st.integers(3, 8), f=COST, share=st.sampled_from((0.25, 0.5, 0.75)), k=st.integers(1, 16))
def test_dualpipev_fills_its_tip_last_and_its_row_holds_from_f_plus_w(p, f, share, k):
    """ps6 Q3: DualPipeV's device p − 1 waits (p − 1)F, the longest; with f = b the repository's row,
    (PP/2 − 1)(F&B + B − 3W) at PP = 2p, equals the idlest device's time exactly for F + W ≤ F&B ≤ F + B (from
    p = 3; ps6 draws p ≥ 4)."""
    w, fb = share * f, k * f / 4
    t = simulate(dualpipe_v(p, 2 * p + 2), Costs(f=f, b=f, w=w, fb=fb))
    starts = [min(e.start for e in t.on_stage(j)) for j in range(p)]
    assert max(starts) == starts[p - 1] == (p - 1) * f
    agrees = abs((p - 1) * (fb + f + w - 3 * w) - worst_idle(t)) < 1e-9
    assert agrees == (f + w - 1e-9 <= fb <= 2 * f + w + 1e-9)


@given(p=st.integers(2, 9), h=st.sampled_from((0, 1, 2)))
@settings(max_examples=20, deadline=None)
def test_staleness_of_orders_run_asynchronously(p, h):
    """ps6 Q4: updating at W, ZB-H1 is p − 1 stale on every GPU and ZB-H2 2(p − 1); 1F1B, updating at B, p − j − 1."""
    order = (one_f_one_b, zero_bubble_h1, zero_bubble_h2)[h](p, 3 * p)
    update = "B" if h == 0 else "W"
    for j, ops in enumerate(order.stages):
        seen = max(sum(1 for x in ops[i + 1:ops.index(op._replace(kind=update))] if x.kind == update)
                   for i, op in enumerate(ops) if op.kind == "F")
        assert seen == (p - j - 1, p - 1, 2 * (p - 1))[h]


@given(p=st.integers(2, 10), k=st.integers(2, 4), v=st.integers(2, 6))
@settings(max_examples=20, deadline=None)
def test_a_snake_hands_over_v_times_what_1f1b_does(p, k, v):
    """ps4 Q6: p·v chunks placed in a snake cross v(p − 1) GPU boundaries each way, v times 1F1B's (the round robin
    pv − 1); at v = 2 it is the V of ZB-V and DualPipeV."""
    from grader.keys.ps4 import snake

    m = k * p
    assert lesson.hand_overs(snake(p, m, v)) == v * lesson.hand_overs(one_f_one_b(p, m)) == 2 * m * v * (p - 1)
    assert lesson.hand_overs(snake(p, m, 2)) == lesson.hand_overs(zero_bubble_v(p, m)) == lesson.hand_overs(
        dualpipe_v(p, m))


def test_fsdp2s_peak_unit_by_unit():
    """ps7 Q4b's base, chapter 13's walk: the shards, two units' gathered weights (all of them without resharding)
    and one unit's gradients."""
    for n in (2, 5, 80):
        for reshard in (True, False):
            peak = fsdp_step([3e8] * n, 16, PRECISIONS["bf16"], reshard).peak
            assert math.isclose(peak, n * 3e8 * 16 / 16 + (2 if reshard else n) * 2 * 3e8 + 2 * 3e8)


@FEW
@given(n=st.integers(2, 40), g=st.sampled_from((1, 2, 4, 8)), d=st.sampled_from((16, 64)))
def test_fsdp2s_reshard_onto_g_lies_between_the_two_walks(n, g, d):
    """ps7 Q4b: the key's walk with a post-forward reshard onto g GPUs is chapter 13's walk without resharding at
    g = 1, at most it and at least the walk that reshards fully; the model answer's closed form,
    shards + 2u(3 + (n − 2)/g), is what it finds."""
    from grader.keys.ps7 import _fsdp_to_g

    u = 3e8
    walk = _fsdp_to_g(n, u, d, g) * 1e9
    full, kept = (fsdp_step([u] * n, d, PRECISIONS["bf16"], r).peak for r in (True, False))
    assert full - 1e-3 <= walk <= kept + 1e-3
    assert g > 1 or math.isclose(walk, kept)
    assert math.isclose(walk, n * u * 16 / d + 2 * u * (3 + (n - 2) / g))


@FEW
@given(p=st.integers(2, 12), m=st.integers(1, 40), x=st.sampled_from((0.0, 0.1, 0.25, 0.7, 2.0)), f=COST, b=COST)
def test_1f1bs_step_with_a_slower_last_stage(p, m, x, f, b):
    """ps7 Q7a: with the last stage's forward and backward 1 + x times the others', 1F1B's step is the climb of the
    first forward, the last stage's m forwards and backwards back to back, and the last backward's descent:
    (p − 1)(f + b) + m(1 + x)(f + b), for any f and b and m < p too."""
    slow = lambda c: tuple([c] * (p - 1) + [c * (1 + x)])  # noqa: E731
    step = simulate(one_f_one_b(p, m), Costs(f=slow(f), b=slow(b))).makespan
    assert math.isclose(step, (p - 1) * (f + b) + m * (1 + x) * (f + b))


@FEW
@given(p=st.integers(2, 8), v=st.integers(2, 4), rounds=st.integers(1, 5))
def test_interleaved_1f1bs_step_fills_and_drains_in_chunks(p, v, rounds):
    """ps7 Q9: interleaved 1F1B under equal costs (a stage's forward and backward f + b, each chunk 1/v of it) takes
    (m + (p − 1)/v)(f + b) for m a whole number of rounds of p."""
    m = rounds * p
    step = simulate(build("interleaved", p, m, v), Costs(f=1 / v, b=2 / v)).makespan
    assert math.isclose(step, 3 * (m + (p - 1) / v))


@FEW
@given(tau=st.sampled_from((50.0, 300.0, 1000.0)), persist=st.sampled_from((0.0, 30.0, 120.0, 700.0, 2500.0)))
def test_an_asynchronous_checkpoints_failure_loses_half_an_interval_and_its_persist_time(tau, persist):
    """ps7 Q6: snapshots every τ, each durable P later (later ones may start first): a failure at a uniformly random
    moment loses, on average, τ/2 + P of work since the last durable snapshot — for P above τ too."""
    points = 20_000
    lost = 0.0
    for i in range(points):
        t = 10 * tau + 5 * persist + (i + 0.5) / points * tau  # a failure within one interval, long after the start
        lost += t - tau * math.floor((t - persist) / tau)  # the newest snapshot durable by t
    assert math.isclose(lost / points, tau / 2 + persist, rel_tol=1e-3)


def test_mixtrals_published_totals():
    """ps7 Q5b's base: Mixtral 8x7B counted as the question counts it (its shared expert aside) is the paper's "47B"
    held and "13B" used."""
    mixtral = Model("Mixtral 8x7B", layers=32, hidden=4096, vocab=32000, heads=32, kv_heads=8, ffn=14336, gated=True,
                    experts=8, top_k=2)
    assert round(mixtral.params / 1e9) == 47 and round(mixtral.active_params / 1e9) == 13


def test_palms_count_is_ppedus_for_the_dense_presets():
    """ps7 Q7c's rubric: PaLM's 6N + 12·L·h·s per token, N all but the embedding table, is the model's FLOPs as
    ppedu.cluster counts them block by block (three times the forward) for every dense preset."""
    from ppedu.cluster import MODELS

    for model in (m for m in MODELS.values() if not m.experts):
        palm = 6 * (model.params - model.vocab * model.hidden) + 12 * model.layers * model.hidden * model.seq
        assert math.isclose(3 * sum(model.layer_flops()) / model.tokens, palm, rel_tol=1e-9), model.name


def test_node_limited_routing_crosses_to_fewer_nodes_than_free_routing():
    """ps7 Q5c: with the limit's M nodes a uniform choice and the k experts uniform among their experts, a token
    crosses to (N − 1)(M/N)(1 − C((M − 1)E/N, k)/C(ME/N, k)) other nodes on average — counted over every choice here
    — which for DeepSeek-V3's k = 8 lies just under the library's bound and under the free count, for every drawn
    E, N and M."""
    import itertools

    from ppedu.cluster.experts import nodes_crossed

    def limited(experts, k, nodes, limit):
        per = experts // nodes
        return (nodes - 1) * limit / nodes * (1 - math.comb((limit - 1) * per, k) / math.comb(limit * per, k))

    for experts, k, nodes, limit in ((8, 2, 4, 2), (12, 3, 3, 2), (16, 4, 4, 3)):
        per = experts // nodes
        crossed = [len({e // per for e in c} - {0}) for chosen in itertools.combinations(range(nodes), limit)
                   for c in itertools.combinations([n * per + i for n in chosen for i in range(per)], k)]
        assert math.isclose(sum(crossed) / len(crossed), limited(experts, k, nodes, limit))
    for experts, nodes, limit in itertools.product((64, 128, 256), (4, 8), (2, 3)):
        count = limited(experts, 8, nodes, limit)
        assert 0.95 * nodes_crossed(experts, 8, nodes, limit=limit) < count < nodes_crossed(experts, 8, nodes)


def test_llama3s_long_context_row_and_its_all_gather():
    """ps7 Q7b: at Table 4's third row (131,072 tokens, TP 8, CP 16) attention is over half of PaLM's FLOPs per
    token, the MFU printed is its TFLOP/s over the H100's peak, and the all-gather of a GPU's eighth of each block's
    keys and values over its CP group on InfiniBand is a few per cent of the block's forward on that GPU (causal
    mask) — which a zigzag ring (question 3) would have hidden."""
    from dataclasses import replace

    from ppedu.cluster import GPUS, LINKS, MODELS, context
    from ppedu.cluster.published import LLAMA3_TABLE4

    row, model, gpu, ib = LLAMA3_TABLE4[2], MODELS["405b"], GPUS["h100-80gb"], LINKS["ib-400"]
    s, h = row.seq, model.hidden
    attention = 12 * model.layers * h * s
    assert attention / (6 * model.params + attention) > 0.5 and round(row.tflops_per_gpu / 989, 2) == row.mfu
    assert model.kv_heads == row.tp  # one key-value head a GPU
    mine = context.gathered_kv_bytes(replace(model, seq=s)) / row.tp
    gather = (row.cp - 1) * ib.latency + (row.cp - 1) / row.cp * mine / ib.bandwidth
    forward = (2 * model.layer_params()[1] * s + 2 * s * s * h) / (row.tp * row.cp) / gpu.flops_per_second
    assert 0.01 < gather / forward < 0.1
    kv = model.kv_heads * h // model.heads
    assert 2 * gpu.flops_per_second * kv / (h * ib.bandwidth) < s / row.cp  # question 3's zigzag threshold


def test_the_layout_tables_trade_offs_hold_for_every_drawn_setting():
    """ps7 Q8b's model answer, for each of the 16 drawn settings: at the best row's t, more stages mean a larger m; the
    rows with twice or half the stages, a smaller t or more replicas are slower; recomputation is none, ZeRO-1 only
    where its ZeRO-0 twin does not fit, the top two rows within 1 %; half the batch keeps the layout or keeps m."""
    import itertools

    from ppedu.cluster import GPUS, MODELS
    from ppedu.cluster.layouts import layouts
    from ppedu.grading.assignments.ps7 import LAYOUT_SCHEDULES

    for name, gpu, n, batch in itertools.product(("13b", "70b"), ("a100-80gb", "h100-80gb"), (32, 64), (64, 128)):
        rows = layouts(MODELS[name], GPUS[gpu], n, batch, schedules=LAYOUT_SCHEDULES)
        best, fit = rows[0], [r for r in rows if r.fits]
        same_t = sorted({(r.p, r.m) for r in rows if r.t == best.t})
        assert all(m1 < m2 for (_, m1), (_, m2) in zip(same_t, same_t[1:]))
        others = [r for r in fit if (r.t, r.p) in {(best.t, 2 * best.p), (best.t, best.p // 2)} or r.t < best.t
                  or r.d > best.d]
        assert others and all(r.tokens_per_s < best.tokens_per_s for r in others)
        assert best.recompute == "none" and fit[1].tokens_per_s >= 0.99 * best.tokens_per_s
        assert {best.schedule, fit[1].schedule} <= {"zb-v", "dualpipe-v"}
        twin = [r for r in rows if (r.t, r.p, r.d, r.schedule, r.recompute, r.zero) ==
                (best.t, best.p, best.d, best.schedule, best.recompute, 0)]
        assert best.zero == 0 or not twin[0].fits
        half = [r for r in layouts(MODELS[name], GPUS[gpu], n, batch // 2, schedules=LAYOUT_SCHEDULES) if r.fits][0]
        assert (half.t, half.p, half.d) == (best.t, best.p, best.d) or (half.m, half.d) == (best.m, best.d // 2)


@FEW
@given(p=st.integers(2, 8), m=st.integers(1, 32), v=st.integers(2, 4))
def test_looped_bfs_gathers_a_chunk_2v_minus_1_times_and_reduce_scatters_it_once(p, m, v):
    """ps7 Q4c: under looped BFS each GPU gathers a chunk 2v − 1 times a step (sharding.regathers) and runs each
    chunk's backwards back to back, so its gradients are reduce-scattered once — 3v − 1 collectives, whatever m."""
    from ppedu.cluster.sharding import regathers
    from ppedu.schedules import looped_bfs

    schedule = looped_bfs(p, m, v)
    assert set(regathers(schedule)) == {2 * v - 1}
    for ops in schedule.stages:
        backward = [op.chunk for op in ops if op.kind == "B"]
        assert sum(1 for k, c in enumerate(backward) if k == 0 or c != backward[k - 1]) == v


def _model_answer(assignment, grade_id):
    import nbformat

    from conftest import ROOT

    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_two_chunk_schedules_on_the_sheet_at_p_6_and_off_its_costs():
    """ps6 Q5: at p = 6, m = 12 the sheet's forms hold, ZB-V and interleaved zero bubble tie on idle time and peak and
    DualPipeV needs half a micro-batch more; off equal costs the tie breaks both ways (neither is faster at every cost),
    peaks stay; DualPipeV's step is the shortest once a pair takes less than 2.6875 a stage. Each figure is the model
    answer's."""
    import itertools

    from ppedu import sheet
    from ppedu.schedules import interleaved_zero_bubble

    text, p, m = _model_answer("ps6", "q5_answer"), 6, 12
    assert sheet.agreement(p, m, 2) == []
    names = ("zb-v", "interleaved-zb", "dualpipe-v")
    got = {name: sheet.measure(name, p, m, 2) for name in names}
    for name, share in zip(names, ("5/77", "5/77", "5/41")):
        assert f"{share} = {got[name].idle_total:.2%}".replace("%", " %") in text
    assert [set(got[n].peak) for n in names] == [{6}, {6}, {6.5}] and {got[n].copies for n in names} == {1}
    assert [got[n].hand_overs for n in names] == [240, 264, 240] and "`p + ½` = 6.5" in text
    runs = {"zb-v": zero_bubble_v(p, m), "interleaved-zb": interleaved_zero_bubble(p, m, 2),
            "dualpipe-v": dualpipe_v(p, m)}

    def step(name, f, b, w, fb=None):  # a stage's costs, a chunk half of them; a pair booked as the sheet books it
        fb = f + b + w if fb is None else fb
        return simulate(runs[name], Costs(f=f / 2, b=b / 2, w=w / 2, fb=fb / 2))

    assert (step("interleaved-zb", 1, 1, 2).makespan, step("zb-v", 1, 1, 2).makespan) == (50.5, 52.5)
    assert (worst_idle(step("zb-v", 1, 1, 2)), worst_idle(step("interleaved-zb", 1, 1, 2))) == (4.5, 2.5)
    assert (step("zb-v", 1, 1, 0.5).makespan, step("interleaved-zb", 1, 1, 0.5).makespan) == (32.5, 33.75)
    assert all(x in text for x in ("50.5", "52.5", "4.5 each against 2.5", "32.5 against 33.75"))
    order = {-1: 0, 0: 0, 1: 0}
    for f, b, w in itertools.product((0.5, 1, 1.5, 2, 3), repeat=3):
        zbv, izb = step("zb-v", f, b, w), step("interleaved-zb", f, b, w)
        order[(zbv.makespan > izb.makespan + 1e-9) - (zbv.makespan < izb.makespan - 1e-9)] += 1
        assert max(zbv.peak_stage_activations) == max(izb.peak_stage_activations) == 6
        assert max(step("dualpipe-v", f, b, w).peak_stage_activations) == 6.5
    assert (order[-1], order[0], order[1]) == (16, 33, 76) and "faster at 16 of the 125 costs, as fast at 33 and " \
                                                                "slower at 76" in text
    tie = step("zb-v", 1, 1, 1).makespan
    assert (tie, step("dualpipe-v", 1, 1, 1).makespan, step("dualpipe-v", 1, 1, 1, fb=2.5).makespan) == (38.5, 41, 37)
    assert step("dualpipe-v", 1, 1, 1, fb=2.6875).makespan == tie > step("dualpipe-v", 1, 1, 1, fb=2.6874).makespan
    assert all(x in text for x in ("(41.0 at a pair of 3)", "less than 2.6875 (37.0 at 2.5, against 38.5)"))


def test_llama3s_third_row_against_itself_and_its_pipeline():
    """ps7 Q7b: the third row's degrees give 8,192 GPUs and 8M tokens; DP is the one figure in both checks — the value
    that mends its own check mends the row only for DP; m = 16 = p either way, 1F1B idles 15/31 and interleaving at
    v = 2 15/47, and the first GPU holds all 16 micro-batches under both."""
    from dataclasses import replace

    from ppedu.cluster.published import LLAMA3_TABLE4
    from ppedu.costs import EQUAL

    text, row = _model_answer("ps7", "q7b_answer"), LLAMA3_TABLE4[2]
    assert (row.product, row.tokens) == (8192, 2 ** 23) and not row.consistent
    mends = {"dp": 8, "gpus": 8192, "tp": 16, "cp": 32, "pp": 32, "seq": 2 * row.seq, "batch_per_dp": 32,
             "tokens_per_batch": 2 ** 23}
    assert [name for name, value in mends.items() if replace(row, **{name: value}).consistent] == ["dp"]
    assert all(replace(row, **{name: value}).product == replace(row, **{name: value}).gpus
               or abs(replace(row, **{name: value}).tokens / replace(row, **{name: value}).tokens_per_batch - 1) < 0.05
               for name, value in mends.items())  # each value mends its own check
    m = row.batch_per_dp
    assert m == row.pp == 16 and "8 · 16 · 16 · 4 = 8,192" in text
    for name, v, share in (("1f1b", 1, "15/31 = 48.4 %"), ("interleaved", 2, "15/47 = 31.9 %")):
        s = build(name, row.pp, m, v)
        t = simulate(s, EQUAL.per_chunk(v))
        assert f"{t.bubble_ratio:.1%}".replace("%", " %") in share and t.peak_stage_activations[0] == m
        assert share in text
    assert 2 * (row.pp - 1) + row.pp + 1 == 47 and "= 47 half-stage chunks" in text


def test_chapter_8s_trade_for_llama_2_13b_on_four_a100s():
    """ps2 Q5b: without recomputation 1F1B is 0.4 GB over the table's 80 GB (under the card's 85.9); selective changes
    nothing under FlashAttention; full recomputation fits both schedules at 1.315 times the step. Each figure is the
    model answer's."""
    from dataclasses import replace

    from ppedu import recomputation
    from ppedu.cluster import GB, GPUS, LINKS, MODELS, Cluster

    text = _model_answer("ps2", "q5b_answer")
    rows = {(r.schedule, r.recompute): r for r in recomputation.trade(MODELS["13b"], Cluster(GPUS["a100-80gb"], 4,
                                                                                            LINKS["nvlink"]), m=16)}
    plain, full = rows["1f1b", "none"], rows["1f1b", "full"]
    assert not plain.fits and GPUS["a100-80gb"].memory == 80 * GB < plain.memory_gb * GB < 80 * 2 ** 30
    assert all(replace(rows[s, "selective"], recompute="none") == rows[s, "none"] for s in ("gpipe", "1f1b"))
    assert full.fits and rows["gpipe", "full"].fits and not rows["gpipe", "none"].fits
    card = 80 * 2 ** 30 / GB
    figures = (f"{plain.memory_gb} GB", f"{plain.memory_gb - plain.activations_gb:.1f} GB",
               f"{plain.activations_gb} GB", f"{rows['gpipe', 'none'].memory_gb} GB", f"{full.memory_gb} GB",
               f"{full.activations_gb} GB", f"{full.transient_gb} GB", f"{rows['gpipe', 'full'].memory_gb} GB",
               f"{full.slowdown} times", f"{full.step_time_s} s against {plain.step_time_s} s", f"{card:.1f} GB",
               f"{card - plain.memory_gb:.1f} GB", f"{rows['gpipe', 'full'].memory_gb - full.memory_gb:.0f} GB")
    assert all(x in text for x in figures), [x for x in figures if x not in text]
