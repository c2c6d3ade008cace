"""Checking a placement of operations: each rule broken gets one message; a real schedule passes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.placement import check_placement, missing, violations

GOOD = {(0, 0): "F0", (1, 1): "F0", (1, 2): "B0", (0, 3): "B0"}


def placed_by(timeline):
    """The placement a simulated unit-cost schedule makes: every op at the step it starts."""
    return [(e.stage, round(e.start), e.op) for e in timeline.events]


def test_a_correct_placement_is_correct():
    feedback = check_placement(GOOD, p=2, m=1)
    assert feedback.correct and feedback.messages == ("correct: every operation is placed and every dependency holds.",)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["gpipe", "1f1b", "interleaved", "zb-h1"]), p=st.integers(1, 4), k=st.integers(1, 3))
def test_every_simulated_schedule_is_a_valid_placement(name, p, k):
    v = 2 if name == "interleaved" else 1
    t = simulate(schedules.build(name, p, p * k, v), Costs(w=1 if name == "zb-h1" else 0))
    assert check_placement(placed_by(t), p, p * k, v=v, split_w=name == "zb-h1", steps=round(t.makespan)).correct


def test_a_dependency_violation_names_the_input_and_when_it_is_ready():
    [v] = violations({(0, 0): "F0", (1, 1): "F0", (1, 2): "B0", (0, 2): "B0"}, p=2, m=1)
    assert v.kind == "dependency" and (v.stage, v.step) == (0, 2)
    assert v.message == ("GPU 0, t3: B0 starts before its input B0 from GPU 1 is ready "
                         "(GPU 1 finishes it at the end of t3).")


def test_a_backward_needs_the_forward_on_its_own_gpu_at_the_last_chunk():
    [v] = violations({(0, 0): "F0", (1, 1): "B0", (1, 2): "F0"}, p=2, m=1)
    assert v.kind == "dependency" and "input F0 is ready" in v.message and "from GPU" not in v.message


@pytest.mark.parametrize("placed, kind, words", [
    ({(0, 0): "F0", (0, 1): "F1c1"}, "wrong-gpu", "belongs on GPU 1"),
    ([(0, 0, "F0"), (0, 1, "F0")], "duplicate", "already placed at t1"),
    ([(0, 0, "F0"), (0, 0, "F1")], "clash", "one operation at a time"),
    ({(0, 0): "X1"}, "unknown", "is not an operation"),
    ({(0, 0): "F9"}, "unknown", "there are 2 (0 to 1)"),
    ({(0, 0): "W0"}, "unknown", "does not split W off"),
    ({(5, 0): "F0"}, "off-grid", "no such cell"),
    ({(0, -1): "F0"}, "off-grid", "no such cell"),
])
def test_each_broken_rule_gets_one_message(placed, kind, words):
    found = violations(placed, p=2, m=2)
    assert [v.kind for v in found] == [kind] and words in found[0].message


def test_interleaved_labels_need_their_chunk_and_long_ops_can_clash():
    [v] = violations({(0, 0): "F0"}, p=2, m=2, v=2)
    assert "needs its chunk" in v.message
    assert [v.kind for v in violations({(0, 0): "F0c0", (0, 1): "F1c0"}, p=2, m=2, v=2, durations={"F": 2})] == ["clash"]
    assert [v.kind for v in violations({(0, 1): "F0"}, p=2, m=2, steps=2, durations={"F": 2})] == ["off-grid"]


def test_missing_operations_are_listed_per_gpu_only_in_the_final_check():
    placed = {(0, 0): "F0"}
    assert violations(placed, p=2, m=1) == []
    assert {s: [repr(op) for op in ops] for s, ops in missing(placed, p=2, m=1).items()} == {0: ["B0c0"], 1: ["F0c1", "B0c1"]}
    assert check_placement(placed, p=2, m=1).messages == ("GPU 0 still needs B0.", "GPU 1 still needs F0, B0.")


def test_a_shifted_schedule_still_passes_but_an_early_forward_fails():
    placed = placed_by(simulate(schedules.one_f_one_b(3, 3)))
    assert check_placement([(s, step + 1, op) for s, step, op in placed], 3, 3).correct
    early = [(s, step - 1 if (s, op.kind, op.microbatch) == (1, "F", 0) else step, op) for s, step, op in placed]
    [v] = violations(early, 3, 3)
    assert (v.kind, v.stage, v.step) == ("dependency", 1, 0) and "from GPU 0" in v.message
