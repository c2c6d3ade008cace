"""The formula sheet: every closed form it prints agrees with the simulator wherever it claims to
hold, and every printed value is the simulator's."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.formulas import bubble_over_ideal, bubble_ratio
from ppedu.costs import EQUAL
from ppedu.sheet import LAWS, agreement, closed, formula_sheet, law, main, measure, render_html


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


def test_html_page_holds_table_glossary_and_takeaways(tmp_path):
    page = render_html(4, 8, 2)
    for r in formula_sheet(4, 8, 2):
        assert r.idle_total in page and r.hand_overs in page
    assert "Glossary" in page and "weight stashing" in page and "9 · 3D parallelism" in page
    assert "@page" in page  # printable
    assert not re.search(r"\d+\.\d+ %", page.split("<table>")[0])  # numbers only from the table
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
