"""The lab's predicted-against-measured comparison means something: after a warm-up, with each op's
fastest of several runs, the simulator's prediction from the measured costs matches the measured
replay within the stated tolerance, on the model the lab times (the chapter runs the same under PPEDU_FAST)."""

import pytest
import torch
from torch.nn.functional import cross_entropy

from ppedu.mnist import AGREEMENT, gap, load_mnist, max_grad_diff, measure_step, mlp, reference_gradients, split_model
from ppedu.mnist.executor import run_schedule
from ppedu.schedules import one_f_one_b


@pytest.fixture(scope="module")
def lab():
    torch.manual_seed(0)
    images, labels = load_mnist("train")
    model = mlp(hidden=512)
    return model, (images[:256], labels[:256])


def test_predicted_and_measured_agree_within_the_stated_tolerance(lab):
    model, batch = lab
    step = measure_step(one_f_one_b(4, 8), split_model(model, 4), batch, cross_entropy)
    assert abs(gap(step)) <= AGREEMENT
    assert abs(step.predicted.bubble_ratio - step.measured.bubble_ratio) <= AGREEMENT


def test_measuring_leaves_the_gradients_of_one_step(lab):
    model, batch = lab
    chunks = split_model(model, 4)
    measure_step(one_f_one_b(4, 8), chunks, batch, cross_entropy, warmup=1, repeats=2)
    assert max_grad_diff(chunks, reference_gradients(model, batch, cross_entropy)) < 1e-5


def test_each_op_keeps_its_fastest_run(lab):
    model, batch = lab
    chunks = split_model(model, 2)
    step = measure_step(one_f_one_b(2, 4), chunks, batch, cross_entropy, warmup=0, repeats=3)
    single = run_schedule(one_f_one_b(2, 4), chunks, batch, cross_entropy)
    assert list(step.durations) == list(single.durations)  # the execution order, which the replay needs
    assert all(d > 0 for d in step.durations.values())


def test_a_measurement_needs_at_least_one_timed_run(lab):
    model, batch = lab
    with pytest.raises(ValueError, match="repeats ≥ 1"):
        measure_step(one_f_one_b(2, 4), split_model(model, 2), batch, cross_entropy, repeats=0)
