"""The practice set's key and the self-check answers: every answer recomputed here from the
closed forms or an independent simulation, so a key that drifts from ppedu fails."""

import math
from fractions import Fraction
from pathlib import Path

import pytest

from ppedu import Costs, schedules, simulate
from ppedu.formulas import bubble_ratio
from ppedu.practice import key, practice_set, questions, self_check_answers
from ppedu.sheet import closed

ITEMS = {x.label: x for x in practice_set() + self_check_answers()}


def test_p1_counting_by_hand_with_f_not_b():
    p, m, f, b = 3, 4, 1, 2
    T = (m + p - 1) * (f + b)
    assert ITEMS["P1"].answer == (T, p * T, p * T - p * m * (f + b))
    assert Fraction(ITEMS["P1"].answer[2] / ITEMS["P1"].answer[1]).limit_denominator() == Fraction(2, 6)


def test_p2_p3_the_memory_argument():
    assert ITEMS["P2"].answer == ((8 + 3) * 3, 4, 8)
    assert ITEMS["P3"].answer == tuple(min(6 - j, 12) for j in range(6))


def test_p4_the_textbooks_eleven_steps_cannot_hold():
    busy, left, least = ITEMS["P4"].answer
    assert (busy, left, least) == (4 * 4 * 2, 44 - 18, 2 * (4 + 4 - 1))
    assert busy > left and least > 11


def test_p5_interleaving_from_the_closed_forms():
    idle, makespan, handed, handed_1f1b = ITEMS["P5"].answer
    assert idle == pytest.approx(3 * 3 / 2) and makespan == pytest.approx(8 * 3 + idle)
    x = closed("interleaved", 4, 8, 2)
    assert (handed, handed_1f1b) == (x.hand_overs, closed("1f1b", 4, 8).hand_overs)
    assert idle / makespan == pytest.approx(bubble_ratio(4, 8, 2))


def test_p6_deepseeks_formulas():
    p, F, B, W, FB = 8, 1, 2, 1, 3
    assert ITEMS["P6"].answer[:4] == ((p - 1) * (F + B - 2 * W), (p / 2 - 1) * (FB + B - 3 * W), 2, p + 1)
    W = 1.5  # longer than F and than B − W: the formula books 0, the forward's climb (p − 1)F sets the idle
    assert ITEMS["P6"].answer[4:] == ((p - 1) * (F + B - 2 * W), (p - 1) * max(F, B - W, F + B - 2 * W)) == (0, 7)


def test_p7_to_p9():
    assert ITEMS["P7"].answer == ((1, 6), 1, 0)
    d, m, bubble, state, d8, m8, bubble8, state8 = ITEMS["P8"].answer
    assert (d, m, d8, m8) == (16, 32, 32, 16) and (state, state8) == (175e9 * 16 / 128 / 1e9, 175e9 * 16 / 64 / 1e9)
    assert (bubble, bubble8) == (f"{15 / 47:.2%}".replace("%", " %"), f"{7 / 23:.2%}".replace("%", " %"))
    assert ITEMS["P9"].answer == (3, 2, 1, 0)


def test_p10_to_p12_the_scale_chapters_by_hand():
    steps, sent, ms, busbw = ITEMS["P10"].answer
    assert (steps, sent) == (30, pytest.approx(2 * 15 / 16 * 2))
    assert ms == pytest.approx((30 * 10e-6 + 3.75 / 50) * 1e3) and busbw == pytest.approx(2 / (ms / 1e3) * 1.875)
    h, e = 4096, 3 * 4096 * 1408
    dense = 4 * (4 * h * h + 64 * h + 2 * h)  # the replicated part of 4 blocks: ZeRO-1, -2, -3 over 8
    assert ITEMS["P11"].answer == (4 * h * h + 64 * e + 64 * h + 2 * h, 4 * h * h + 2 * e + 64 * h + 2 * h,
                                   pytest.approx(4 * 64 * e / 8 * 16 / 1e9),
                                   *(pytest.approx(dense * x / 1e9, rel=1e-5)
                                     for x in (4 + 12 / 8, 2 + 14 / 8, 16 / 8)))
    tokens, tflops, mfu = ITEMS["P12"].answer
    assert tokens == pytest.approx(1e12 / (180e3 * 3600)) and mfu == pytest.approx(tflops / 989)


def test_p13_to_p19_the_scale_part_from_its_own_formulas():
    assert ITEMS["P13"].answer[0] == ("2/5", "3/10", "3/10")
    collectives, with_sp, sent, sent_sp = ITEMS["P14"].answer
    assert (collectives, with_sp) == (4, 10) and sent_sp == pytest.approx(1.25 * sent)
    assert sent == pytest.approx(4 * 2 * 7 / 8 * 4096 * 8192 * 2 / 1e9)  # four all-reduces of s·h 16-bit values
    nv, ib, contiguous, zigzag = ITEMS["P15"].answer
    assert len(set(zigzag)) == 1 and sum(zigzag) == sum(contiguous) and ib / nv == pytest.approx(450 / 50)
    capacities, at_1, at_125, padding, factor, its_padding = ITEMS["P16"].answer
    loads = tuple(int(x) for x in ITEMS["P16"].question.split("receive ")[1].split(" token")[0].split(", "))
    even = 40 * 2 / 8
    assert capacities == tuple(math.ceil(f * even) for f in (1.0, 1.25, 2.0))
    for cap, dropped in zip(capacities, (at_1, at_125)):
        assert dropped == pytest.approx(sum(max(0, x - cap) for x in loads) / sum(loads), abs=1e-4)
    assert padding == pytest.approx(1 - sum(loads) / (8 * capacities[2]), abs=1e-4)
    assert factor == max(loads) / even and its_padding == pytest.approx(1 - sum(loads) / (8 * max(loads)), abs=1e-4)
    gathers, kept, ratio, held, interleaved, looped = ITEMS["P17"].answer
    assert (gathers, kept, ratio, held) == (16, 8, pytest.approx(2 / 3), 8) and interleaved > looped
    assert ITEMS["P18"].answer == (16384 // (8 * 16), 2 ** 24 // 8192 // 128, "15/31", pytest.approx(0.5 * 16 / 31),
                                   pytest.approx(0.5 * 32 / 47))
    mtbf, interval, good, steps, examples = ITEMS["P19"].answer
    assert mtbf == pytest.approx(54 * 24 * 16384 / 419 / 4096) and interval == pytest.approx((2 * 60 * mtbf * 3600) ** 0.5 / 60)
    assert good == pytest.approx(1 - 60 / (interval * 60) - (interval * 30 + 600) / (mtbf * 3600))
    assert (steps, examples) == (1 + 1024 / 256, 1 + 4096 / 1024)


def test_every_item_practises_an_objective_the_plans_name():
    from grader.objectives import OBJECTIVE, PLANS

    ids = {m.group(1) for m in OBJECTIVE.finditer(PLANS.read_text(encoding="utf-8"))}
    assert all(x.objectives and set(x.objectives) <= ids for x in practice_set())
    scale = {i for i in ids if i[:2] in ("12", "13", "14")}
    assert scale <= {t for x in practice_set() for t in x.objectives}, "every scale objective is practised"
    from math import comb

    free, limited, factor = ITEMS["P20"].answer
    assert free == pytest.approx(7 * (1 - comb(56, 6) / comb(64, 6)))
    # limited to 3 nodes, the 6 experts drawn among their 24 may miss one: an average below the bound 3 × 7/8
    assert limited == pytest.approx(3 * 7 / 8 * (1 - comb(16, 6) / comb(24, 6))) and limited < 3 * 7 / 8
    assert factor == pytest.approx(free / limited)
    from random import Random

    rng, total = Random(3), 0
    for _ in range(20000):  # a Monte Carlo of the stated model, nobody's formula
        own, nodes = rng.randrange(8), rng.sample(range(8), 3)
        hit = {e // 8 for e in rng.sample([e for e in range(64) if e // 8 in nodes], 6)}
        total += len(hit - {own})
    assert total / 20000 == pytest.approx(limited, abs=0.03)


def test_self_check_answers_agree_with_independent_simulation():
    g = simulate(schedules.gpipe(4, 4), Costs(f=1, b=1))
    assert ITEMS["Chapter 2, question 1"].answer == (g.total_slots, g.idle_slots, "3/7")
    assert ITEMS["Chapter 1, question 1"].answer == (24, 12, "1/2")
    assert ITEMS["Chapter 4, question 1"].answer == [2, 6]
    assert ITEMS["Chapter 6, question 1"].answer == (2, 1)
    assert ITEMS["Chapter 5, question 1"].answer == 3
    assert 1.2 < ITEMS["Chapter 8, question 2"].answer < 4 / 3  # a little below: attention's and the head's FLOPs
    assert ITEMS["Chapter 4b, question 1"].answer == 3 and ITEMS["Chapter 10, question 2"].answer == 11
    assert ITEMS["Chapter 6b, question 2"].answer == (2, 3, 5) and ITEMS["Chapter 14, question 1"].answer == "tensor"
    assert "a floor, not where the row holds" in ITEMS["Chapter 6b, question 2"].working
    assert "10 collectives" in ITEMS["Chapter 14, question 1"].working
    assert "The first step runs as one bucket" in ITEMS["Chapter 15, question 2"].working
    assert ITEMS["Chapter 12, question 2"].answer == pytest.approx(37.5) and ITEMS["Chapter 12, question 3"].answer == 10  # 8, and two re-gathers
    assert ITEMS["Chapter 13, question 2"].answer == 192 and ITEMS["Chapter 14, question 2"].answer == 8
    assert ITEMS["Chapter 12, question 1"].answer == pytest.approx(64 * (63 - 6) * 10e-6 * 50)  # GB: n(n − 1 − 6)αB
    assert ITEMS["Chapter 14, question 3"].answer == pytest.approx((2 * 30 * 3 * 3600) ** 0.5 / 60)


def test_the_workings_of_chapters_10_and_13_say_what_ppedu_computes():
    """The sentences around those answers: the frontier's schedules tie, ZeRO-0 and -1 tie above 2 and 3."""
    from dataclasses import replace

    from ppedu.cluster import GPUS, LINKS, MODELS, Cluster, Parallel, plan
    from ppedu.design import frontier

    front = frontier(4, 8)
    assert "tie on makespan and peak with one weight copy" in ITEMS["Chapter 10, question 1"].working
    assert len({(x.makespan, x.peak_activations) for x in front}) == 1 and {x.weight_copies for x in front} == {1}
    assert "Stages 0 and 1 reduce the gradients once per step and tie" in ITEMS["Chapter 13, question 1"].working
    base, cluster = Parallel(t=4, d=4, sequence=True), Cluster(GPUS["h100-80gb"], 8, LINKS["nvlink"])
    mfu = [plan(MODELS["70b"], cluster, [32], ["1f1b"], recompute="none", parallel=replace(base, zero=z))[0].mfu
           for z in (0, 1, 2, 3)]
    assert mfu[0] == mfu[1] > mfu[2] > mfu[3]


def test_every_chapter_has_answers_and_every_answer_appears_in_its_working():
    chapters = {label.split(",")[0] for label in ITEMS if label.startswith("Chapter")}
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    assert chapters == {f"Chapter {p.stem.split('-')[0].lstrip('0')}" for p in notebooks.glob("[0-9]*.ipynb")}
    page = key(practice_set() + self_check_answers())
    assert all(f"**{label}.**" in page for label in ITEMS)
    assert "*Answer:*" not in questions(practice_set())


def test_6b_question_2_the_row_holds_from_f_plus_w_to_f_plus_b_and_nowhere_else():
    from ppedu.errata import deepseek_table

    F, B, W = 2, 3, 1
    for p in (6, 8):
        rows = {x / 4: deepseek_table(p, 20, Costs(f=F, b=B - W, w=W, fb=x / 4))[2] for x in range(6, 29)}
        held = [x for x, r in rows.items() if r.formula_bubble == r.simulated_bubble]
        assert held == [x / 4 for x in range(4 * (F + W), 4 * (F + B) + 1)]
    assert ITEMS["Chapter 6b, question 2"].answer == (F + 3 * W - B, F + W, F + B)


def test_p21_a_slow_backward_its_bounds_hold_for_every_order_and_the_fewest_forwards_that_reach_them():
    from itertools import product

    from ppedu.schedules.one_f_one_b import with_warmups

    assert ITEMS["P21"].answer == (62, 61, 66, 10, 7)
    for p, s, m, kb in ((p, s, m, kb) for p in (3, 4, 5) for s in range(p) for m in (p, p + 3) for kb in (3, 6)):
        costs = Costs(f=1, b=tuple(kb if j == s else 2 for j in range(p)))
        bound = max(s * 3 + m * (1 + kb), p + 2 * (p - 1) + m * kb)  # its own work; micro-batch 0's round trip
        times = {}
        for warm in product(*(range(min(p - 1 - j, m - 1), m) for j in range(p))):
            try:
                times[warm] = simulate(with_warmups(list(warm), m), costs).makespan
            except ValueError:  # an order that deadlocks is no order
                pass
        assert min(times.values()) >= bound - 1e-9
        if (p, s, m, kb) == (5, 2, 8, 6):  # the item: reached, and never with fewer than 7 forwards on GPU 2
            reach = [w for w, t in times.items() if t == bound]
            assert reach and min(w[s] for w in reach) + 1 == 7
            assert times[(4, 3, 2, 1, 0)] == 66 == simulate(schedules.one_f_one_b(5, 8), costs).makespan


def test_p22_ordering_an_exchange_frees_an_order_exactly_when_no_warm_up_leads_the_next_by_two():
    from itertools import product

    from ppedu.practice import _blocking
    from ppedu.schedules.one_f_one_b import with_warmups

    assert ITEMS["P22"].answer == ((2, 3), False, False, 1)
    rules = (lambda j, k: j % 2 == 0, lambda j, k: j > k, lambda j, k: j < k)
    for p in range(2, 9):
        for m in range(1, 13):
            assert not _blocking(schedules.gpipe(p, m))  # no two sends ever meet: it finishes
            if m >= 2:  # 1F1B: the top GPU sends B0's gradient while the one below sends F1 up; each rule frees it
                stuck = _blocking(schedules.one_f_one_b(p, m))
                assert {j for j, (kind, *_), _ in stuck if kind == "send"} >= {p - 2, p - 1}
            assert all(not _blocking(schedules.one_f_one_b(p, m), rule) for rule in rules)
    for p in range(2, 5):
        for m in range(1, 7):
            for warm in product(range(m), repeat=p):
                try:
                    order = with_warmups(list(warm), m)
                    simulate(order)
                except ValueError:  # not an order the simulator runs
                    continue
                even = all(warm[j] - warm[j + 1] <= 1 for j in range(p - 1))
                assert all((not _blocking(order, rule)) == even for rule in rules), (p, m, warm)


def test_p23_a_llama_style_blocks_inventory_by_korthikanti_counting():
    none, selective, full, extra, transient = ITEMS["P23"].answer
    s, b, h, heads, kv, ffn = 4096, 2, 5120, 40, 8, 13824
    sbh = s * b * h
    kept = sbh * (4 + 2 + (2 + 4 * kv / heads) + 2 + 2 + 6 * ffn / h) + 4 * b * heads * s  # 2-byte units, fp32 stats
    assert none == pytest.approx(kept / 1e9) and selective == none and full == pytest.approx(2 * sbh / 1e9)
    assert extra == pytest.approx(1.0) and transient == pytest.approx(none)


def test_p24_zb_h1_idles_the_longest_path_over_costs():
    formula, idle, setter, largest = ITEMS["P24"].answer
    assert (formula, idle, setter, largest) == (8, 9, "input-gradient", 1)
    # the general form below is ps4 Q1a's graded answer: the key gives this instance's numbers, not the form
    assert not any("max(" in x.working for x in (ITEMS["P6"], ITEMS["P24"]))
    for p in (3, 4, 5):
        for F in (1, 2):
            for b in (0.5, 1, 2, 3):
                for W in (0.5, 1, 1.5, 2, 3):
                    t = simulate(schedules.zero_bubble_h1(p, 2 * p + 1), Costs(f=F, b=b, w=W))
                    worst = max(t.makespan - x for x in t.busy_per_stage)
                    assert worst == pytest.approx((p - 1) * max(F, b, F + b - W)), (p, F, b, W)


def test_p25_the_vendors_figure_under_both_definitions():
    megatron, textbook, first, second = ITEMS["P25"].answer
    assert Fraction(4, 2 * megatron) == Fraction(1, 16) == Fraction(4, 2 * textbook + 4)
    assert (first, second) == ("1/17", "1/15")
    for m, ratio in ((megatron, Fraction(1, 17)), (textbook, Fraction(1, 15))):
        t = simulate(schedules.interleaved_1f1b(5, m, 2))
        assert t.bubble_ratio == pytest.approx(float(ratio) if m == megatron else 4 / (2 * m + 4))
        assert t.bubble_over_ideal == pytest.approx(4 / (2 * m))


def test_p26_the_ring_counts_and_ddps_buckets():
    from ppedu.ranks import bucket_plan

    messages, each, total, first, later, buckets = ITEMS["P26"].answer
    assert (messages, each, total) == (10, pytest.approx(16), pytest.approx(2 * 5 / 6 * 96))
    sizes = [4 * 1024 * 1024, 4 * 1024] * 6  # weight, bias, layer by layer: DDP's own assignment
    plan = bucket_plan(sizes, 10 * 2 ** 20)
    assert (first, later) == (1, len(plan))
    assert [tuple(sorted({i // 2 + 1 for i in x}, reverse=True)) for x in plan] == list(buckets)


def test_p27_micro_batches_under_a_memory_budget_from_the_closed_form():
    m30, t30, m6, t6, gpipe_gb = ITEMS["P27"].answer
    p, batch = 4, 48

    def step(m):
        return (m + p - 1) * (2 * 0.5 + 3 * batch / m), min(p, m) * batch / m

    for room, (m, t) in ((30, (m30, t30)), (6, (m6, t6))):
        assert (t, m) == min((step(x)[0], x) for x in range(1, batch + 1) if batch % x == 0 and step(x)[1] <= room)
    assert gpipe_gb == batch


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_the_grid_reading_key_agrees_with_the_grid_itself(seed):
    from ppedu.practice import CountingPractice

    x = CountingPractice.draw(seed)
    t, (g1, g2, g3, g4) = x.read, x.reading()
    p, m = t.p, t.schedule.microbatches
    length = {(e.op.kind + str(e.op.microbatch), str(e.stage)): (e.start, e.end) for e in t.events}
    f, b = length["F0", "0"][1] - length["F0", "0"][0], length["B0", "0"][1] - length["B0", "0"][0]
    assert g1.answer == (t.makespan, p * t.makespan, p * t.makespan - p * m * (f + b))
    chain = [length[tuple(op.split("@"))] for op in g2.answer.split()]
    assert chain[0][0] == 0 and chain[-1][1] == t.makespan  # back to back from the first step to the last
    assert all(a[1] == c[0] for a, c in zip(chain, chain[1:]))
    for j, (fill, drain, order) in enumerate(g3.answer):  # each idle step sorted from the GPU's own row
        ops = sorted((e.start, e.end, e.op.kind) for e in t.events if e.stage == j)
        first_b = next(s for s, _, k in ops if k == "B")
        last_f = max(s for s, _, k in ops if k == "F")
        idle = [s for s in range(int(t.makespan)) if not any(a <= s < z for a, z, _ in ops)]
        assert fill == sum(s < first_b for s in idle) and drain == sum(s > max(first_b, last_f) for s in idle)
        assert fill + drain + order == len(idle)
    assert g4.answer[0] == t.idle_slots - p * (p - 1) * (f + b) > 0 and g4.answer[2] == (m + p - 1) * (f + b)


def test_the_grid_reading_draws_many_grids_with_their_own_warm_ups_and_costs():
    from ppedu.practice import CountingPractice
    from ppedu.text import render_grid

    draws = [CountingPractice.draw(seed).read for seed in range(60)]
    assert len({render_grid(t) for t in draws}) > 30
    assert {t.costs.backward(0, full=True) for t in draws} == {1, 2}
    ahead = [tuple(next(i for i, op in enumerate(ops) if op.kind == "B") for ops in t.schedule.stages) for t in draws]
    assert any(len(set(a)) > 1 for a in ahead)  # not one warm-up on every GPU
