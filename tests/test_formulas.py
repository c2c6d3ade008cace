"""The closed forms agree with the simulator, which is the authority."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import simulate
from ppedu.formulas import bubble_over_ideal, bubble_ratio, microbatches_for, to_bubble_over_ideal, to_idle_total
from ppedu.schedules import interleaved_1f1b, one_f_one_b


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 10), st.integers(1, 40), st.integers(1, 4))
def test_closed_forms_match_simulation_for_every_m(p, m, v):
    # m below p and m not a multiple of p included: the flexible interleaving runs them all
    t = simulate(interleaved_1f1b(p, m, v) if v > 1 else one_f_one_b(p, m))
    assert t.bubble_ratio == pytest.approx(bubble_ratio(p, m, v))
    assert t.bubble_over_ideal == pytest.approx(bubble_over_ideal(p, m, v))


@given(st.floats(0, 100))
def test_the_two_definitions_convert_both_ways(r):
    assert to_bubble_over_ideal(to_idle_total(r)) == pytest.approx(r)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 16), st.sampled_from([0.05, 0.1, 0.2, 0.25, 0.5]), st.sampled_from([1, 2, 4]))
def test_microbatches_for_is_the_fewest_that_meet_the_target(p, target, v):
    def simulated(m):
        return simulate(interleaved_1f1b(p, m, v) if v > 1 else one_f_one_b(p, m)).bubble_ratio

    m = microbatches_for(target, p, v)
    assert simulated(m) <= target + 1e-12
    if m > 1:
        assert simulated(m - 1) > target


def test_below_p_micro_batches_interleaving_idles_more_than_the_steady_state_form():
    assert bubble_ratio(4, 2, 2) == pytest.approx(5 / 9)
    assert bubble_ratio(4, 2, 2) > (4 - 1) / (2 * 2 + 4 - 1)  # the steady-state form, wrong here
    assert microbatches_for(0.5, p=4, v=4) == 3  # below p, found by the general form


def test_the_vendor_figure_needs_large_pipelines():
    # "Interleaved v=2, 5.8 % bubble": as idle/total it needs e.g. p=64, m=512; p=4, m=24 gives 5.88 %.
    assert bubble_ratio(64, 512, 2) == pytest.approx(0.058, abs=5e-4)
    assert bubble_ratio(4, 24, 2) == pytest.approx(0.0588, abs=5e-5)


@pytest.mark.parametrize("call", [lambda: microbatches_for(0, 4), lambda: microbatches_for(1.5, 4),
                                  lambda: to_bubble_over_ideal(1.0), lambda: bubble_ratio(0, 4)])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()
