"""Stale updates read from a schedule's order: PipeDream's weight stashing keeps one version per
micro-batch in flight, exactly the activations the simulator counts."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.staleness import stashed_versions, staleness, versions_seen


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 8), m=st.integers(1, 20))
def test_1f1b_stashes_min_p_minus_j_m_versions_and_is_that_minus_one_stale(p, m):
    s = schedules.one_f_one_b(p, m)
    assert stashed_versions(s) == tuple(min(p - j, m) for j in range(p))
    assert staleness(s) == tuple(min(p - j, m) - 1 for j in range(p))
    # The same count the simulator's memory model reports: a stash per activation in flight.
    assert stashed_versions(s) == simulate(s, Costs(f=1, b=1)).peak_activations


def test_gpipe_would_be_m_minus_one_stale_everywhere():
    assert staleness(schedules.gpipe(4, 8)) == (7, 7, 7, 7)


def test_one_micro_batch_sees_different_weight_ages_on_different_stages():
    assert versions_seen(schedules.one_f_one_b(4, 8), 5) == (2, 3, 4, 5)
    assert versions_seen(schedules.one_f_one_b(4, 8), 0) == (0, 0, 0, 0)
    with pytest.raises(ValueError, match="micro-batch 9 has no forward"):
        versions_seen(schedules.one_f_one_b(4, 8), 9)


def test_updates_count_only_the_same_chunks_weights():
    # Interleaving's other chunk is other weights: counting every backward would say 14, not 7.
    assert staleness(schedules.interleaved_1f1b(4, 8, 2))[0] == 7
