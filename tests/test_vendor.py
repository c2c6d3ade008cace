"""The vendor brief's 45 % and 3.4× figures: which pipelines could show them, by simulation."""

import pytest

from ppedu.formulas import bubble_ratio
from ppedu.vendor import both_at_once, claims, idle_matches, naive_idle, speedup_matches


def test_a_naive_pipeline_idles_at_least_half_the_time():
    assert [naive_idle(p) for p in (2, 4, 8)] == [pytest.approx(1 - 1 / p) for p in (2, 4, 8)]


def test_45_percent_needs_micro_batching_with_m_about_1_2_p():
    rows = idle_matches(0.45, range(2, 20))
    assert [(r.p, r.m) for r in rows] == [(10, 11), (19, 22)]
    assert all(round(bubble_ratio(r.p, r.m), 3) == 0.45 for r in rows)


def test_3_4x_matches_are_simulated_and_none_at_94_2_percent_utilization():
    rows = speedup_matches(3.4, range(2, 9), (1, 2))
    assert rows and all(round(r.speedup, 1) == 3.4 for r in rows)
    assert (4, 8, 2) in [(r.p, r.m, r.v) for r in rows]
    assert not float(both_at_once()).is_integer() and not any(r.utilization == 0.942 for r in rows)


def test_the_claims_table_gives_each_figure_a_computed_verdict():
    naive, both = claims()
    assert not naive.holds and "50%" in naive.computed
    assert not both.holds and f"{both_at_once():.2f}" in both.computed
