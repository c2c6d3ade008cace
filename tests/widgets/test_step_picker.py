"""The lab's schedule picker runs a real step for every schedule and shows both diagrams."""

import pytest
import torch
from torch.nn.functional import cross_entropy

from ppedu.mnist import mlp
from ppedu.schedules import SCHEDULES
from ppedu.widgets.lab import StepPicker


@pytest.fixture(scope="module")
def picker():
    torch.manual_seed(0)
    batch = (torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,)))
    return StepPicker(mlp(layers=4, hidden=8), batch, cross_entropy, p=2, m=4)


def test_every_schedule_runs_a_step_with_the_same_loss(picker):
    losses = {}
    for name in SCHEDULES:
        r = picker.run(schedule=name, m=4).result
        assert r is not None and r.schedule.name == name and r.schedule.microbatches == 4
        losses[name] = r.loss
    assert max(losses.values()) - min(losses.values()) < 1e-6


def test_both_diagrams_and_the_numbers_show(picker):
    picker.run(schedule="1f1b", m=6)
    html = picker._static_html()
    assert html.count("<svg") == 2 and "measured" in html and "predicted" in html and "loss" in html


def test_impossible_choice_shows_its_reason_and_unknown_control_raises(picker):
    assert picker.run(schedule="dualpipe", m=3).result is None
    assert "even" in picker.message.value
    with pytest.raises(ValueError, match="unknown control 'p'"):
        picker.run(p=3)


def test_v_is_live_only_for_a_schedule_that_takes_it_and_any_change_runs_a_step(picker):
    picker.run(schedule="1f1b", m=4)
    assert picker.v.disabled
    picker.picker.value = "interleaved"  # as a student picks it: a step runs at once
    assert not picker.v.disabled and picker.result.schedule.name == "interleaved" and picker.result.schedule.virtual == 2
    picker.m.value = 6
    assert picker.result.schedule.microbatches == 6
    assert "time (ms)" in picker.diagrams.value  # a time scale, with its unit
