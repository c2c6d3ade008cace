"""The formula sheet: every closed form it prints agrees with the simulator wherever it claims to
hold, and every printed value is the simulator's."""

import math
import re
from dataclasses import replace
from html import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, formulas, schedules, simulate
from ppedu.cluster import GPUS, LINKS, MODELS, Model, collectives, context, reliability, sharding, tensor
from ppedu.formulas import bubble_over_ideal, bubble_ratio
from ppedu.costs import EQUAL
from ppedu.scale_laws import SCALE_LAWS, ScaleLaw, scale_agreement, scale_sheet
from ppedu.sheet import (
    LAWS, agreement, any_cost_agreement, any_cost_idle, closed, formula_sheet, law, main, measure, render_html,
)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 8), m=st.integers(1, 24), v=st.integers(1, 3))
def test_every_closed_form_matches_the_simulator_where_it_holds(p, m, v):
    assert agreement(p, m, v) == []


@pytest.mark.parametrize("p, m, v", [(4, 8, 2), (8, 16, 2), (8, 20, 1), (6, 12, 3)])
def test_worked_sizes_agree_entry_by_entry(p, m, v):
    assert agreement(p, m, v) == []


def test_the_textbook_worked_example_gpipe_and_1f1b_as_the_course_formulas_say():
    for name in ("gpipe", "1f1b"):
        x = measure(name, 4, 4)
        assert x.idle_total == pytest.approx(bubble_ratio(4, 4)) and x.bubble_ideal == pytest.approx(bubble_over_ideal(4, 4))
    assert measure("interleaved", 4, 8, 2).idle_total == pytest.approx(bubble_ratio(4, 8, 2))


def test_a_closed_form_that_is_wrong_would_be_caught():
    # ZB-H1 below m = p idles more than its steady-state formula: the sheet says so instead of claiming it.
    assert not law("zb-h1").holds(4, 3, 1)
    assert measure("zb-h1", 4, 3).idle_total > closed("zb-h1", 4, 3).idle_total


def test_deepseek_figures_are_the_sheets_dualpipe_rows():
    # DeepSeek-V3's table: DualPipe idles (p/2-1)(F&B+B-3W) per GPU; with F&B = F + full B under EQUAL that is p-2.
    for p in (4, 8):
        t = simulate(schedules.dualpipe(p, 2 * p + 4), EQUAL)
        assert max(t.makespan - busy for busy in t.busy_per_stage) == (p / 2 - 1) * (3 + 2 - 3) == p - 2


def test_printed_values_come_from_the_simulator():
    rows = {r.schedule: r for r in formula_sheet(4, 8, 2)}
    t = simulate(schedules.interleaved_1f1b(4, 8, 2), Costs(f=1, b=1, w=1).per_chunk(2))
    assert rows["Interleaved 1F1B"].idle_total.endswith(f"{t.bubble_ratio:.2%}".replace("%", " %"))
    assert rows["DualPipe"].parameter_copies == "2" and rows["DualPipeV"].hand_overs == "4m(p−1) = 96"
    assert set(rows) == {x.name for x in LAWS}


def test_a_schedule_that_cannot_run_shows_its_constraint():
    rows = {r.schedule: r for r in formula_sheet(3, 4, 2)}
    assert "not at this size" in rows["DualPipe"].constraints and "even" in rows["DualPipe"].constraints
    # interleaving runs m = 4 on 3 GPUs (not a multiple of p): its bubble forms hold there, its peak form does not
    assert "not every form holds at this size" in rows["Interleaved 1F1B"].constraints


def test_unknown_schedule_is_named():
    with pytest.raises(ValueError, match="unknown schedule 'pipedream' \\(choose from gpipe"):
        law("pipedream")


def test_html_page_holds_both_tables_then_glossary_and_takeaways(tmp_path):
    page = render_html(4, 8, 2)
    for r in formula_sheet(4, 8, 2):
        assert r.idle_total in page and r.hand_overs in page
    for r in scale_sheet():
        assert escape(r.formula_gives) in page and escape(r.closed_form) in page
    assert "Glossary" in page and "weight stashing" in page and "9 · 3D parallelism" in page
    assert "@page" in page  # printable
    assert not re.search(r"\d+\.\d+ %", page.split("<table")[0])  # numbers only from the tables
    formulas, words = page.split('<h2 class="page">')  # page 2 starts at the glossary, after both tables
    assert formulas.count("<table") == 2 and "<table" not in words and words.startswith("Glossary")
    assert main(["--out", str(tmp_path / "s.html"), "-p", "8", "-m", "20"]) == 0
    assert "p = 8, m = 20" in (tmp_path / "s.html").read_text()


def test_bad_size_exits_2_with_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["-p", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_zb_h1_peak_under_both_memory_models():
    # W keeps its activations (the default): every GPU holds min(p, m); if B freed them, 1F1B's min(p-j, m).
    from ppedu.memory import FREE_AT_B

    for p, m in ((4, 8), (5, 3), (8, 20)):
        s = schedules.zero_bubble_h1(p, m)
        assert simulate(s, EQUAL).peak_activations == tuple(min(p, m) for _ in range(p))
        assert simulate(s, EQUAL, memory=FREE_AT_B).peak_activations == tuple(min(p - j, m) for j in range(p))
    assert "if B freed them" in law("zb-h1").peak.text


def test_the_sheet_covers_every_schedule_ppedu_builds():
    assert {x.schedule for x in LAWS} == set(schedules.SCHEDULES)
    # v reaches every schedule that takes it, not interleaving alone
    assert measure("looped-bfs", 4, 8, 3).hand_overs == closed("looped-bfs", 4, 8, 3).hand_overs == 2 * 8 * (4 * 3 - 1)


def test_zb_v_closed_forms_hold_from_2p_minus_1_as_chapter_10_says():
    for p in range(2, 7):
        assert law("zb-v").holds(p, 2 * p - 1, 1) and agreement(p, 2 * p - 1, 2) == []
        assert closed("zb-v", p, 2 * p - 2).peak != measure("zb-v", p, 2 * p - 2).peak  # below it, they do not


COST = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])


@settings(max_examples=80, deadline=None)
@given(p=st.integers(2, 8), extra=st.integers(0, 2 * 8), v=st.integers(2, 3), f=COST, b=COST, w=COST)
def test_any_cost_forms_match_the_simulator_over_costs_not_only_f_b_w_equal(p, extra, v, f, b, w):
    assert any_cost_agreement(p, p + extra, Costs(f=f, b=b, w=w), v) == []
    assert any_cost_agreement(p, p * (1 + extra % 3), Costs(f=f, b=b, w=w), v) == []  # interleaving's m = kp


@settings(max_examples=40, deadline=None)
@given(p=st.sampled_from([6, 8]), f=st.sampled_from([1.0, 1.5, 2.0, 3.0]), w=COST, k=st.integers(0, 4))
def test_deepseeks_dualpipe_form_holds_in_its_stated_region(p, f, w, k):
    if w > f:  # outside W ≤ B − W (here b = f)
        return
    fb = f + w + f * k / 4  # from F + W to F + B
    assert law("dualpipe").any_costs.holds(p, 2 * p + 4, 1, f, f + w, w, fb)  # B full = b + w, b = f
    got, want = any_cost_idle("dualpipe", p, 2 * p + 4, Costs(f=f, b=f, w=w, fb=fb))
    assert got == pytest.approx(want)


def test_the_any_cost_forms_say_where_equal_cost_forms_mislead():
    # ZB-H1 with W longer than F: DeepSeek's (p−1)(F+B−2W) books 0, the simulator 3, and the sheet does not claim it
    got, want = any_cost_idle("zb-h1", 4, 8, Costs(f=1, b=1, w=2))
    assert got == 3 * 1 != want == 3 * (1 + 3 - 4)
    assert not law("zb-h1").any_costs.holds(4, 8, 1, 1, 3, 2, None)
    # DualPipe with f ≠ b: off its region, the form is not claimed, and the simulator indeed disagrees
    costs = Costs(f=1, b=2, w=1, fb=2)
    assert not law("dualpipe").any_costs.holds(8, 20, 1, 1, 3, 1, 2)
    got, want = any_cost_idle("dualpipe", 8, 20, costs)
    assert got != want
    assert any_cost_agreement(8, 20, costs) == []  # ... so the sheet does not flag what it does not claim
    rows = {r.schedule: r for r in formula_sheet(4, 8, 2)}
    assert rows["ZB-H2"].before_backward.endswith("7 5 3 1")


@pytest.mark.parametrize("p", [2, 4, 6])
def test_the_sheet_claims_zero_bubbles_forms_only_where_the_chapters_derive_them_not_the_graded_ones(p):
    # ps4 Q1a and ps6 Q1a ask for ZB-H1's and ZB-H2's idle under every cost; the sheet (which students have) gives only
    # chapter 6b's and chapter 10's regimes. The graded forms, written here where students do not see them, hold
    # everywhere; the sheet's agree with them where claimed, and leave costs unclaimed where they differ.
    rows = {r.schedule: r.worst_idle_any_costs_the_same_on_every_GPU for r in formula_sheet(4, 8, 2)}
    assert "max" not in rows["ZB-H1"] + rows["ZB-H2"] and "problem set 4" in rows["ZB-H1"]
    assert "problem set 6" in rows["ZB-H2"]
    unclaimed = 0
    for F in (0.5, 1.0, 2.0):
        for b in (0.5, 1.0, 3.0):
            for W in (0.25, 1.0, 2.5):
                B, costs = b + W, Costs(f=F, b=b, w=W)
                graded = {"zb-h1": (p - 1) * max(F, b, F + b - W),
                          "zb-h2": (p - 1) * (F + max(0, b - 2 * F, b - 2 * W))}
                for name, m in (("zb-h1", 2 * p), ("zb-h2", 2 * p - 1)):
                    got, sheet = any_cost_idle(name, p, m, costs)
                    assert got == pytest.approx(graded[name])
                    if law(name).any_costs.holds(p, m, 1, F, B, W, None):
                        assert sheet == pytest.approx(got)
                    else:
                        unclaimed += sheet != pytest.approx(got)
    assert unclaimed > 10


def test_the_scale_rows_state_the_conditions_they_depend_on():
    from ppedu.cluster.parallel import Parallel, data_parallel

    rows = {x.topic: x.formula for x in SCALE_LAWS}
    assert "(m+1)Ψ·(d−1)/d" in rows["ZeRO: sent per GPU and step"] and "3mΨ" in rows["ZeRO: sent per GPU and step"]
    kinds = [[k for k, _ in data_parallel(1e9, MODELS["7b"], Parallel(d=2, zero=z), m=5)] for z in (2, 3)]
    assert len(kinds[0]) == 5 + 1 and len(kinds[1]) == 3 * 5  # stage 2: m + 1 collectives, stage 3: 3m
    assert "without dropout sbh(32 + 2as/h)" in rows["activations per block"]
    h, a, s = 4096, 32, 2048
    for dropout, flash, per_sbh in ((False, False, 32 + 2 * a * s / h), (False, True, 32.0)):
        m = Model("m", layers=2, hidden=h, vocab=100, seq=s, heads=a, dropout=dropout, flash_attention=flash)
        assert sum(m.block_activations("none", 1, False).values()) / (s * h) == pytest.approx(per_sbh, abs=0.05)
    assert "no mask" in rows["ring attention hides from"]


# ---- the scale part: every closed form beside ppedu.cluster's own computation ----

def test_every_scale_law_agrees_with_ppedu_cluster_at_its_example():
    assert scale_agreement() == []
    assert {x.topic for x in SCALE_LAWS} >= {
        "ring all-reduce", "tree all-reduce (double binary)", "NCCL-tests' bus bandwidth", "ZeRO: model state per GPU",
        "tensor parallelism per block", "ring attention hides from", "checkpoint interval", "MoE all-to-all; capacity"}


def test_a_wrong_scale_formula_would_be_caught():
    ring = SCALE_LAWS[0]
    wrong = replace(ring, closed=lambda: tuple(2 * x for x in ring.closed()))  # e.g. 4(n−1)/n for 2(n−1)/n
    assert scale_agreement((wrong,)) and not scale_agreement((ring,))


def test_the_zero_paper_figure_1_is_the_sheets_zero_row():
    row = next(r for r in scale_sheet() if r.topic == "ZeRO: model state per GPU")
    assert [round(formulas.zero_bytes_per_gpu(7.5e9, 64, s) / 1e9, 1) for s in range(4)] == [120.0, 31.4, 16.6, 1.9]
    assert row.formula_gives == row.ppedu_computes


LINK = st.sampled_from(sorted(LINKS))


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 512), st.floats(1.0, 1e11), LINK)
def test_collective_closed_forms_are_ppedus_costs(n, nbytes, name):
    link = LINKS[name]
    args = (n, nbytes, link.latency, link.bandwidth)
    ring = collectives.cost("all-reduce", nbytes, n, link)
    assert ring.seconds == pytest.approx(formulas.ring_all_reduce_seconds(*args))
    for kind in ("reduce-scatter", "all-gather", "all-to-all"):
        assert collectives.cost(kind, nbytes, n, link).seconds == pytest.approx(formulas.ring_half_seconds(*args))
    tree = collectives.cost("all-reduce", nbytes, n, link, "tree")
    assert tree.seconds == pytest.approx(formulas.tree_all_reduce_seconds(*args))
    assert ring.busbw == pytest.approx(formulas.bus_bandwidth(nbytes, ring.seconds, n))
    # the crossover is where the two costs meet: the tree wins below it, the ring above
    m_star = formulas.tree_ring_crossover(n, link.latency, link.bandwidth)
    assert collectives.crossover(n, link) == pytest.approx(max(0.0, m_star))
    if m_star > 0:
        at = [collectives.cost("all-reduce", m_star, n, link, a).seconds for a in ("ring", "tree")]
        assert at[0] == pytest.approx(at[1])


@settings(max_examples=60, deadline=None)
@given(st.floats(1e6, 1e12), st.integers(2, 1024))
def test_zero_closed_forms_are_ppedus_stages(params, d):
    rows = sharding.zero_stages(params, d, sharding.PRECISIONS["bf16"])
    for stage, row in enumerate(rows):
        assert row.total_gb == pytest.approx(formulas.zero_bytes_per_gpu(params, d, stage) / 1e9, rel=1e-5)
        assert row.sent_gb == pytest.approx(formulas.zero_bytes_sent(params, d, stage) / 1e9, rel=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(1024, 8), (2048, 16), (4096, 32), (12288, 96)]), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([512, 2048, 4096]), st.booleans())
def test_tensor_and_activation_closed_forms_are_ppedus_inventory(shape, t, seq, sequence):
    h, a = shape
    model = Model("m", layers=2, hidden=h, vocab=100, seq=seq, heads=a, dropout=True, flash_attention=False)
    sent = sum(collectives.ring(c.nbytes, t, c.kind) for c in tensor.block_collectives(model, t, sequence))
    assert sent == pytest.approx(formulas.tensor_parallel_block_bytes(seq, h, t, sequence) if t > 1 else 0.0)
    kept = sum(model.block_activations("none", t, sequence).values())
    assert kept == pytest.approx(formulas.block_activation_bytes(seq, 1, h, a, t, sequence))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(MODELS)), st.sampled_from(sorted(GPUS)), LINK)
def test_ring_attention_hides_exactly_from_the_closed_forms_block(name, gpu, link):
    model, free = MODELS[name], replace(LINKS[link], latency=0.0)
    kv = (model.kv_heads or model.heads) * (model.hidden // model.heads)
    block = formulas.ring_attention_min_block(GPUS[gpu].flops_per_second, free.bandwidth, kv, model.hidden)
    assert context.min_block_tokens(model, GPUS[gpu], free) == pytest.approx(block)
    above, below = math.ceil(block * 1.001) + 1, max(1, math.floor(block * 0.999) - 1)
    assert context.ring_step(replace(model, seq=above), 1, GPUS[gpu], free).hidden
    assert below >= block or not context.ring_step(replace(model, seq=below), 1, GPUS[gpu], free).hidden


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 600.0), st.floats(600.0, 1e6))
def test_young_dalys_interval_is_where_ppedus_goodput_peaks(checkpoint, mtbf):
    best = formulas.young_daly_interval(checkpoint, mtbf)
    assert reliability.young_daly(checkpoint, mtbf) == pytest.approx(best)
    for scale in (0.9, 1.1):
        off = reliability.goodput(best * scale, checkpoint, mtbf, 0.0)
        assert reliability.goodput(best, checkpoint, mtbf, 0.0) > off


@pytest.mark.parametrize("name", sorted(MODELS))
def test_palms_model_flops_per_token_are_ppedus(name):
    model = MODELS[name]
    n = sum(model.layer_active_params()[1:])  # the embedding is a lookup
    assert 3 * sum(model.layer_flops()) / model.tokens == pytest.approx(
        formulas.model_flops_per_token(n, model.layers, model.seq, model.attention_width or model.hidden))
