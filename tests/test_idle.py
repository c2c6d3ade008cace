"""Why each slot is idle: the causes cover the idle time exactly, and read as the textbook says."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, simulate
from ppedu.idle import CAUSES
from ppedu.schedules import SCHEDULES, build, gpipe, one_f_one_b

NAMES = sorted(SCHEDULES)
cost = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])


@st.composite
def timelines(draw):
    name = draw(st.sampled_from(NAMES))
    p = draw(st.integers(1, 6))
    m = draw(st.integers(1, 10))
    v = draw(st.integers(1, 3)) if name == "interleaved" else 1
    if name == "interleaved":
        m = p * draw(st.integers(1, 3))
    try:
        schedule = build(name, p, m, v)
    except ValueError:
        schedule = build("1f1b", p, m)
    costs = Costs(f=tuple(draw(cost) for _ in range(p)), b=draw(cost), w=draw(st.sampled_from([0.0, 1.0])),
                  comm=draw(st.sampled_from([0.0, 0.25, 1.0])), fb=draw(st.sampled_from([None, 2.0])))
    return simulate(schedule, costs)


@settings(max_examples=150, deadline=None)
@given(timelines())
def test_the_causes_cover_each_gpus_idle_time_exactly_and_only_idle_time(t):
    causes = t.idle_causes()
    busy = {s: [(e.start, e.end) for e in t.on_stage(s)] for s in range(t.p)}
    for s, per in enumerate(causes.per_stage()):
        assert sum(per.values()) == pytest.approx(t.makespan - t.busy_per_stage[s], abs=1e-9)
    for x in causes:
        assert x.cause in CAUSES and 0 <= x.start < x.end <= t.makespan + 1e-9
        assert all(x.end <= a + 1e-9 or x.start >= b - 1e-9 for a, b in busy[x.stage])
    assert sum(causes.totals().values()) == pytest.approx(t.idle_slots, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([gpipe, one_f_one_b]), st.integers(1, 8), st.integers(1, 24), st.sampled_from([0.5, 1.0, 2.0]))
def test_gpipe_and_1f1b_on_equal_costs_idle_only_to_fill_and_drain(make, p, m, f):
    t = simulate(make(p, m), Costs(f=f, b=2 * f))
    totals = t.idle_causes().totals()
    assert {k for k, v in totals.items() if v} <= {"fill", "drain"}
    assert (totals["fill"] + totals["drain"]) / t.total_slots == pytest.approx((p - 1) / (m + p - 1))


def test_a_slower_stage_shows_as_imbalance():
    even = simulate(one_f_one_b(4, 16)).idle_causes().totals()
    slow = simulate(one_f_one_b(4, 16), Costs(f=(1, 1, 2, 1), b=(1, 1, 2, 1))).idle_causes().totals()
    assert even["imbalance"] == 0 and slow["imbalance"] > 0
    assert slow["imbalance"] >= 16 * 2 * 3 * 0.5  # the three fast GPUs wait about half of the steady state


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe"])
def test_comm_latency_shows_as_hand_over_waits(name):
    s = build(name, 4, 8, 2 if name == "interleaved" else 1)
    free, slow = simulate(s, Costs(w=1)).idle_causes().totals(), simulate(s, Costs(w=1, comm=0.5)).idle_causes().totals()
    assert free["hand-over"] == 0 < slow["hand-over"]
    assert slow["hand-over"] <= simulate(s, Costs(w=1, comm=0.5)).idle_slots - simulate(s, Costs(w=1)).idle_slots + 1e-9


def test_an_overlapped_pair_waits_for_its_backwards_input():
    totals = simulate(build("dualpipe", 4, 8), Costs(f=1, b=1, w=1, fb=2)).idle_causes().totals()
    assert totals["pair"] > 0


def test_zero_bubble_h1_fills_the_drain_with_w():
    zb = simulate(build("zb-h1", 4, 8), Costs(f=1, b=1, w=1)).idle_causes().totals()
    base = simulate(one_f_one_b(4, 8), Costs(f=1, b=1, w=1)).idle_causes().totals()
    assert zb["drain"] < base["drain"]


def test_a_w_run_ahead_of_a_needed_input_shows_as_deferred_w():
    # ZB-V's order is made for f = b = w; with a slower forward its W passes now run while a
    # neighbour waits for the forward they stand in front of.
    equal = simulate(build("zb-v", 4, 8), Costs(f=1, b=1, w=1)).idle_causes().totals()
    slow_forward = simulate(build("zb-v", 4, 8), Costs(f=2, b=1, w=1)).idle_causes().totals()
    assert equal["deferred W"] == 0 < slow_forward["deferred W"]
