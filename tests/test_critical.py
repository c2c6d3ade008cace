"""The critical path: a chain of dependencies (data or a GPU's order) from time 0 to the makespan, so lengthening any
operation on it lengthens the step by as much."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, simulate
from ppedu.schedules import SCHEDULES, build, gpipe

cost = st.sampled_from([0.5, 1.0, 2.0, 3.0])


@st.composite
def timelines(draw):
    name = draw(st.sampled_from(sorted(SCHEDULES)))
    p, m = draw(st.integers(1, 5)), draw(st.integers(1, 8))
    try:
        schedule = build(name, p, m * p if name == "interleaved" else m)
    except ValueError:
        schedule = build("1f1b", p, m)
    costs = Costs(f=tuple(draw(cost) for _ in range(p)), b=draw(cost), w=draw(st.sampled_from([0.0, 1.0])),
                  comm=draw(st.sampled_from([0.0, 0.25, 1.0])))
    return simulate(schedule, costs)


@settings(max_examples=120, deadline=None)
@given(timelines())
def test_the_path_runs_from_zero_to_the_makespan_without_a_gap_but_transit(t):
    path = t.critical_path()
    assert path[0].start == pytest.approx(0) and path[-1].end == pytest.approx(t.makespan)
    for a, b in zip(path, path[1:]):
        gap = b.start - a.end
        assert gap == pytest.approx(0, abs=1e-9) if a.stage == b.stage else gap == pytest.approx(t.costs.comm, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(timelines(), st.data())
def test_lengthening_an_operation_on_the_path_lengthens_the_step_by_as_much(t, data):
    durations = {e.op: e.duration for e in t.events}
    on = data.draw(st.sampled_from(t.critical_path())).op
    slower = simulate(t.schedule, t.costs, durations={**durations, on: durations[on] + 1})
    assert slower.makespan >= t.makespan + 1 - 1e-9


def test_gpipe_waits_on_micro_batch_0_up_the_pipeline_and_its_gradient_down():
    # the textbook's T = 2(m + p - 1): the fill along micro-batch 0, the last GPU's m forwards, the gradient back down
    # and GPU 0's m backwards, every step of it on the path
    path = simulate(gpipe(3, 3)).critical_path()
    assert [(e.op.kind, e.op.microbatch, e.stage) for e in path] == [
        ("F", 0, 0), ("F", 0, 1), ("F", 0, 2), ("F", 1, 2), ("F", 2, 2),
        ("B", 0, 2), ("B", 0, 1), ("B", 0, 0), ("B", 1, 0), ("B", 2, 0)]
