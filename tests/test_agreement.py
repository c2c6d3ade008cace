"""One dependency rule, one replay loop: the simulator, the executor's replay of measured durations
and the schedule builder's checks agree exactly on every schedule, memory included."""

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, simulate
from ppedu.mnist.executor import StepResult
from ppedu.placement import check_placement, violations
from ppedu.schedules import SCHEDULES, build
from ppedu.widgets import ScheduleBuilder


@st.composite
def schedules(draw, names=tuple(sorted(SCHEDULES))):
    name = draw(st.sampled_from(names))
    p, m = draw(st.integers(1, 5)), draw(st.integers(1, 8))
    v = draw(st.integers(1, 3)) if name == "interleaved" else 1
    try:
        return build(name, p, m if name != "interleaved" else p * draw(st.integers(1, 2)), v)
    except ValueError:
        return build("1f1b", p, m)


@settings(max_examples=80, deadline=None)
@given(schedules(), st.integers(0, 2**32 - 1))
def test_the_executor_replays_measured_durations_as_the_simulator_does(schedule, seed):
    rng = random.Random(seed)
    durations = {op: rng.choice([0.5, 1.0, 2.0, 3.25]) for stage in schedule.stages for op in stage}
    sizes = {op[1:]: rng.randint(1, 4) for stage in schedule.stages for op in stage if op.kind == "F"}
    measured = StepResult(schedule, 0.0, durations, sizes).measured
    replayed = simulate(schedule, Costs(), durations=durations)
    assert np.array_equal(measured.start, replayed.start) and np.array_equal(measured.end, replayed.end)
    result = StepResult(schedule, 0.0, durations, {key: 1 for key in sizes})
    assert result.peak_activation_bytes == replayed.peak_activations
    weighted = StepResult(schedule, 0.0, durations, sizes)
    per_op = np.array([sizes[op[1:]] for op in schedule.columns.ops])[schedule.columns.forward]
    assert weighted.peak_activation_bytes == tuple(int(a.max(initial=0)) for _, a in replayed.memory_profile(per_op))


@settings(max_examples=80, deadline=None)
@given(schedules(("gpipe", "1f1b", "interleaved", "zb-h1")), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2))
def test_the_builders_checks_accept_the_simulated_timeline_and_catch_every_early_start(schedule, f, b, w):
    split = bool(schedule.split_backwards)
    costs = Costs(f=f, b=b, w=w if split else 0)
    t = simulate(schedule, costs)
    placed = {(e.stage, round(e.start)): e.op for e in t.events}
    lengths = {"F": f, "B": b, "W": w}
    args = (schedule.p, schedule.microbatches, schedule.virtual, split)
    assert check_placement(placed, *args, durations=lengths).correct
    c = schedule.columns
    for i, op in enumerate(c.ops):
        gap = t.start[i] - (t.end[i - 1] if i > c.start[c.stage[i]] else 0.0)
        if t.waited[i] >= 0 and gap >= 1:  # it waited for its input: one step earlier breaks the rule
            early = {**placed, (int(c.stage[i]), round(t.start[i]) - 1): op}
            del early[int(c.stage[i]), round(t.start[i])]
            found = violations(early, *args, durations=lengths)
            assert [x.kind for x in found] == ["dependency"] and repr(c.ops[t.waited[i]])[:2] in found[0].message


@settings(max_examples=40, deadline=None)
@given(schedules(("gpipe", "1f1b", "interleaved", "zb-h1")))
def test_a_schedule_placed_on_the_builder_replays_as_simulated(schedule):
    t = simulate(schedule, Costs(w=1 if schedule.split_backwards else 0))  # the builder's ops take one step each
    builder = ScheduleBuilder(schedule.p, schedule.microbatches, schedule.virtual, bool(schedule.split_backwards),
                              steps=max(1, round(t.makespan)))
    for e in t.events:
        builder.place(e.stage, round(e.start), e.op)
    assert builder.complete
    assert [(e.op, e.start) for e in builder.timeline().events] == [(e.op, e.start) for e in t.events]
