"""The replay loop knows no pipelines: numbered items on resources, one input each; and the memory
model's release point, stated once, moves the peaks the way the Zero Bubble paper says."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, simulate
from ppedu.memory import FREE_AT_B, FREE_AT_W, MemoryModel, zero_bubble_split
from ppedu.replay import Deadlock, replay
from ppedu.schedules import dualpipe, gpipe, one_f_one_b, zero_bubble_h1


def test_an_item_waits_for_its_resource_and_its_input_plus_the_delay():
    r = replay([0, 2, 3], needs=[-1, -1, 0], delay=[0, 0, 0.5], length=[1, 1, 2])
    assert (r.start, r.end, list(r.waited)) == ([0.0, 1.0, 1.5], [1.0, 2.0, 3.5], [-1, -1, 0])


def test_a_glued_pair_starts_when_both_inputs_are_in_and_runs_back_to_back():
    # Resource 1 runs 2 then 3 as one unit; 3 needs 0, which ends at 4.
    r = replay([0, 2, 4], needs=[-1, -1, -1, 0], delay=[0] * 4, length=[4, 0, 1, 1], glued={3})
    assert r.start[2:] == [4.0, 5.0] and r.waited[2] == 0


def test_queues_that_wait_on_each_other_deadlock_naming_what_they_wait_for():
    with pytest.raises(Deadlock) as caught:
        replay([0, 2, 4], needs=[3, -1, 1, -1], delay=[0] * 4, length=[1] * 4)
    assert sorted(caught.value.stuck) == [(0, 0, 3), (1, 2, 1)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 5), min_size=1, max_size=30), st.data())
def test_every_item_starts_after_its_input_and_its_resources_previous_item(lengths, data):
    n = len(lengths)
    needs = [data.draw(st.integers(-1, i - 1)) for i in range(n)]  # inputs come earlier: no deadlock
    delay = [data.draw(st.sampled_from([0.0, 0.5])) for _ in range(n)]
    owner = [data.draw(st.integers(0, 2)) for _ in range(n)]
    # Number the items resource by resource, as replay takes them; each keeps its input.
    order = sorted(range(n), key=owner.__getitem__)
    number = {old: i for i, old in enumerate(order)}
    needs = [number[needs[old]] if needs[old] >= 0 else -1 for old in order]
    delay, lengths = [delay[old] for old in order], [lengths[old] for old in order]
    bounds = [sum(o < q for o in owner) for q in range(4)]
    queues = [range(a, b) for a, b in zip(bounds, bounds[1:])]
    r = replay(bounds, needs, delay, lengths)
    for i in range(n):
        assert r.end[i] == r.start[i] + lengths[i]
        if needs[i] >= 0:
            assert r.start[i] >= r.end[needs[i]] + delay[i]
    for queue in queues:
        for a, b in zip(queue, queue[1:]):
            assert r.start[b] >= r.end[a]
            # it starts as soon as it can: when its resource is free or its input arrives
            assert r.start[b] in (r.end[a], r.end[needs[b]] + delay[b])


def test_where_w_is_split_off_the_release_point_decides_the_later_gpus_peaks():
    s, costs = zero_bubble_h1(4, 8), Costs(f=1, b=1, w=1)
    assert simulate(s, costs, FREE_AT_W).peak_activations == (4, 4, 4, 4)  # W still holds the inputs
    assert simulate(s, costs, FREE_AT_B).peak_activations == (4, 3, 2, 1)  # as 1F1B
    split = simulate(s, costs, zero_bubble_split(0.25)).peak_activations
    assert all(b <= x <= w for b, x, w in zip((4, 3, 2, 1), split, (4, 4, 4, 4))) and split != (4, 3, 2, 1)


def test_schedules_without_w_do_not_care_where_w_would_free():
    for s in (gpipe(4, 8), one_f_one_b(4, 8)):
        costs = Costs(f=1, b=1, w=1)
        assert simulate(s, costs, FREE_AT_B).peak_activations == simulate(s, costs, FREE_AT_W).peak_activations


def test_dualpipe_peaks_at_p_plus_1_wherever_w_frees():
    costs = Costs(f=1, b=1, w=1)
    for memory in (FREE_AT_B, FREE_AT_W):
        assert max(simulate(dualpipe(4, 8), costs, memory).peak_activations) == 5


def test_a_release_fraction_outside_0_to_1_is_refused():
    with pytest.raises(ValueError, match="kept_for_w is a fraction between 0 and 1"):
        MemoryModel(1.5)
