"""The closed forms agree with the simulator, which is the authority."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import simulate
from ppedu.formulas import bubble_over_ideal, bubble_ratio, microbatches_for, to_bubble_over_ideal, to_idle_total
from ppedu.schedules import interleaved_1f1b, one_f_one_b


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10), st.integers(1, 6), st.integers(1, 4))
def test_closed_forms_match_simulation(p, groups, v):
    m = p * groups
    t = simulate(interleaved_1f1b(p, m, v) if v > 1 else one_f_one_b(p, m))
    assert t.bubble_ratio == pytest.approx(bubble_ratio(p, m, v))
    assert t.bubble_over_ideal == pytest.approx(bubble_over_ideal(p, m, v))


@given(st.floats(0, 100))
def test_the_two_definitions_convert_both_ways(r):
    assert to_bubble_over_ideal(to_idle_total(r)) == pytest.approx(r)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 16), st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.5]), st.sampled_from([1, 2, 4]))
def test_microbatches_for_is_the_fewest_that_meet_the_target(p, target, v):
    m = microbatches_for(target, p, v)
    step = p if v > 1 else 1
    assert m % step == 0
    assert simulate(interleaved_1f1b(p, m, v) if v > 1 else one_f_one_b(p, m)).bubble_ratio <= target + 1e-12
    if m > step:
        assert bubble_ratio(p, m - step, v) > target


def test_the_vendor_figure_needs_large_pipelines():
    # "Interleaved v=2, 5.8 % bubble": as idle/total it needs e.g. p=64, m=512; p=4, m=24 gives 5.88 %.
    assert bubble_ratio(64, 512, 2) == pytest.approx(0.058, abs=5e-4)
    assert bubble_ratio(4, 24, 2) == pytest.approx(0.0588, abs=5e-5)


@pytest.mark.parametrize("call", [lambda: microbatches_for(0, 4), lambda: microbatches_for(1.5, 4),
                                  lambda: to_bubble_over_ideal(1.0), lambda: bubble_ratio(0, 4)])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()
