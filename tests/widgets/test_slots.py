"""Checking slot counts: the textbook's worked example, each typical mistake, and the truth always right."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.slots import Feedback, check_slot_answers
from ppedu.grid import grid
from ppedu.schedules import SCHEDULES

GPIPE = simulate(schedules.gpipe(4, 4))  # 14 steps, 56 slots, 24 idle, 32 busy


def hint(**answers) -> str:
    feedback = check_slot_answers(GPIPE, **answers)
    assert not feedback.correct and len(feedback.messages) == 1
    return feedback.messages[0]


def test_the_worked_example_is_right_in_every_spelling():
    for total, idle, ratio in [(56, 24, 24 / 56), ("56", " 24 ", "0.43"), (56.0, 24.0, "42.86%"),
                               ("56", "24", "3/7"), (56, 24, "0,4286"), (56, 24, 0.429)]:
        feedback = check_slot_answers(GPIPE, total=total, idle=idle, ratio=ratio)
        assert feedback.correct and feedback == Feedback(True, ("total slots: correct.", "idle slots: correct.",
                                                                "bubble ratio: correct."))


def test_a_grid_and_its_timeline_give_the_same_verdict():
    assert check_slot_answers(grid(GPIPE), idle=24).correct and check_slot_answers(GPIPE, idle=24).correct


@pytest.mark.parametrize("total, words", [
    (16, "not the number of micro-batches"),
    (28, "the forward wave alone"),
    (14, "one GPU's time steps"),
    (32, "only the busy slots"),
    (52, "one time step too few"),
    (60, "one time step too many"),
    (42, "one GPU too few"),
    (57, "GPUs (rows) × number of time steps"),
])
def test_each_wrong_total_gets_its_own_hint(total, words):
    assert words in hint(total=total)


@pytest.mark.parametrize("idle, words", [
    (32, "busy slots, not the idle ones"),
    (56, "every slot"),
    (6, "only the warm-up triangle"),
    (23, "close, but not quite"),
    (3, "count them row by row"),
    (99, "more idle slots than there are"),
    (-1, "cannot be negative"),
    (24.5, "whole number of cells"),
])
def test_each_wrong_idle_count_gets_its_own_hint(idle, words):
    assert words in hint(idle=idle)


def test_warm_up_and_cooldown_alone_miss_the_idle_slots_in_between():
    # 1F1B at p = 4, m = 4 has idle cells inside the steady state too.
    t = simulate(schedules.one_f_one_b(4, 4))
    g = grid(t)
    lead = sum(int((~row).argmax()) for row in g.idle_mask)
    trail = sum(int((~row[::-1]).argmax()) for row in g.idle_mask)
    assert lead + trail < g.idle_slots
    assert "missed idle slots in between" in check_slot_answers(t, idle=lead + trail).messages[0]


@pytest.mark.parametrize("ratio, words", [
    (0.75, "Megatron-LM's figure"),
    ("42.86", "looks like a percentage"),
    (75, "read as a percentage, that is bubble time ÷ ideal"),
    (32 / 56, "utilization"),
    ("56/24", "upside down"),
    (0.2, "idle slots ÷ total slots"),
    (1.5, "not a fraction between 0 and 1"),
    (-0.1, "between 0 and 1"),
])
def test_each_wrong_ratio_gets_its_own_hint(ratio, words):
    assert words in hint(ratio=ratio)


def test_a_ratio_consistent_with_wrong_counts_says_the_counts_are_off():
    feedback = check_slot_answers(GPIPE, total=56, idle=28, ratio=0.5)
    assert feedback.messages[2] == "bubble ratio: that follows from your counts, but a count is off; fix it and divide again."


def test_the_closed_form_is_not_accepted_where_the_grid_differs():
    t = simulate(schedules.zero_bubble_h1(4, 4), Costs(f=1, b=1, w=1))
    closed = 3 / (4 + 3)
    assert not math.isclose(grid(t).bubble_ratio, closed)
    assert "closed form" in check_slot_answers(t, ratio=closed).messages[0]


@pytest.mark.parametrize("answer, words", [
    (None, "give at least one answer"),
    ("", "no answer yet"),
    ("twenty", "is not a number"),
    (float("nan"), "not a number you can count to"),
    ("inf", "is not a number"),
    (True, "not True or False"),
    ([24], "got a list"),
    ("3/0", "divides by zero"),
    ("24%", "not a percentage"),
])
def test_malformed_answers_get_a_message_not_a_traceback(answer, words):
    feedback = check_slot_answers(GPIPE, idle=answer)
    assert not feedback.correct and words in str(feedback)


def test_only_the_answers_given_are_checked_and_all_must_be_right():
    feedback = check_slot_answers(GPIPE, total=56, idle=32)
    assert not feedback.correct and feedback.messages[0] == "total slots: correct."


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(SCHEDULES)), p=st.integers(1, 6), k=st.integers(1, 4), b=st.sampled_from([1.0, 2.0]))
def test_the_true_counts_are_always_correct(name, p, k, b):
    p = p + p % 2 if name in ("dualpipe", "chimera") else p  # they need an even p (dualpipe: m ≥ 2p)
    m = {"dualpipe": 2 * p + 2 * k, "dualpipe-v": 2 * p + k, "chimera": 2 * k}.get(name, 2 * k - 1)
    g = grid(simulate(schedules.build(name, p, m, 2 if name in schedules.VIRTUAL else 1), Costs(f=1, b=b, w=1)))
    for ratio in (g.bubble_ratio, f"{g.idle_slots}/{g.total_slots}", f"{g.bubble_ratio:.2%}", f"{g.bubble_ratio:.3f}"):
        assert check_slot_answers(g, total=g.total_slots, idle=g.idle_slots, ratio=ratio).correct


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 6), m=st.integers(1, 10))
def test_busy_for_idle_and_micro_batches_for_steps_are_always_named(p, m):
    g = grid(simulate(schedules.one_f_one_b(p, m)))
    assert "busy slots" in check_slot_answers(g, idle=g.busy_slots).messages[0] or g.busy_slots == g.idle_slots
    assert "micro-batches" in check_slot_answers(g, total=p * m).messages[0]
