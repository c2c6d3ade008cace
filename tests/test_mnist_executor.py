"""The executor: every schedule computes the unpipelined model's gradients; memory follows the schedule."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.functional import cross_entropy

from ppedu import simulate
from ppedu.mnist import cnn, max_grad_diff, mlp, reference_gradients, run_schedule, split_model
from ppedu.schedules import build

torch.set_num_threads(1)


def batch(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, 28, 28, generator=g), torch.randint(0, 10, (n,), generator=g)


def step(name: str, p: int, m: int, v: int = 1, n: int = 16, model=None):
    """One pipelined step and the unpipelined gradients of the same model on the same batch."""
    torch.manual_seed(0)
    model = model or mlp(layers=8, hidden=16)
    schedule = build(name, p, m, v)
    data = batch(n)
    reference = reference_gradients(model, data, cross_entropy)
    chunks = split_model(model, schedule.chunks)
    return run_schedule(schedule, chunks, data, cross_entropy), chunks, reference


@pytest.mark.parametrize("name,p,m,v", [
    ("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1), ("interleaved", 2, 4, 2), ("interleaved", 4, 8, 2),
    ("zb-h1", 4, 8, 1), ("dualpipe", 4, 8, 1), ("dualpipe-v", 4, 8, 1), ("dualpipe-v", 2, 6, 1),
    ("zb-h2", 4, 8, 1), ("zb-v", 4, 8, 1), ("interleaved-zb", 2, 6, 2), ("looped-bfs", 2, 4, 3),
    ("interleaved", 4, 6, 2), ("chimera", 4, 8, 1),
])
def test_one_step_gives_the_unpipelined_gradients(name, p, m, v):
    result, chunks, reference = step(name, p, m, v)
    assert max_grad_diff(chunks, reference) <= 1e-6
    assert all(p.grad is not None for c in chunks for p in c.parameters())
    assert len(result.measured.events) == sum(map(len, result.measured.schedule.stages))


def test_the_cnn_too():
    result, chunks, reference = step("1f1b", 3, 4, n=8, model=cnn(channels=4))
    assert max_grad_diff(chunks, reference) <= 1e-6


def test_one_micro_batch_on_one_stage_is_bit_for_bit_the_reference():
    _, chunks, reference = step("gpipe", 1, 1)
    assert max_grad_diff(chunks, reference) == 0.0


def test_the_loss_is_the_mini_batch_mean():
    torch.manual_seed(0)
    model = mlp(layers=4, hidden=8)
    data = batch(12)
    expected = cross_entropy(model(data[0]), data[1]).item()
    result = run_schedule(build("1f1b", 2, 3), split_model(model, 2), data, cross_entropy)
    assert result.loss == pytest.approx(expected, abs=1e-6)


def test_an_optimizer_step_moves_the_model_that_was_cut():
    torch.manual_seed(0)
    model = mlp(layers=4, hidden=8)
    before = [p.detach().clone() for p in model.parameters()]
    run_schedule(build("dualpipe", 2, 4), split_model(model, 2), batch(8), cross_entropy,
                 torch.optim.SGD(model.parameters(), lr=0.1))
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_1f1b_holds_about_p_over_m_of_gpipes_activations_on_stage_0():
    p, m = 2, 16
    gpipe, _, _ = step("gpipe", p, m, n=32)
    one_f_one_b, _, _ = step("1f1b", p, m, n=32)
    ratio = one_f_one_b.peak_activation_bytes[0] / gpipe.peak_activation_bytes[0]
    assert ratio == pytest.approx(p / m, rel=0.05)
    assert one_f_one_b.peak_activation_bytes[-1] == pytest.approx(gpipe.peak_activation_bytes[-1] / m, rel=0.05)


def test_measured_memory_peaks_follow_the_simulated_activation_counts():
    result, _, _ = step("1f1b", 4, 8)
    per_microbatch = [result.memory[s][0][1] for s in range(4)]  # the first F's bytes
    counts = simulate(result.measured.schedule).peak_activations
    assert result.peak_activation_bytes == tuple(n * b for n, b in zip(counts, per_microbatch))
    assert all(points[-1][1] == 0 for points in result.memory)  # everything is freed


def test_split_schedules_keep_activations_until_w():
    result, _, _ = step("zb-h1", 2, 4)
    frees = [t for t, b in result.memory[1][1:] if b < result.memory[1][0][1]]
    w_ends = sorted(e.end for e in result.measured.on_stage(1) if e.op.kind == "W")
    assert frees and set(frees) <= set(w_ends)


def test_measured_and_predicted_timelines_replay_the_same_ops():
    result, _, _ = step("interleaved", 2, 4, v=2)
    measured, predicted = result.measured, result.predicted
    assert sorted(e.op for e in measured.events) == sorted(e.op for e in predicted.events)
    assert predicted.costs == measured.costs
    for s in range(2):  # each GPU runs its ops in the schedule's order, one at a time
        on = measured.on_stage(s)
        assert tuple(e.op for e in on) == measured.schedule.stages[s]
        assert all(a.end <= b.start for a, b in zip(on, on[1:]))
    assert 0 < measured.bubble_ratio < 1 and 0 < predicted.bubble_ratio < 1


def test_bad_input_names_the_rule():
    torch.manual_seed(0)
    chunks = split_model(mlp(layers=4, hidden=8), 2)
    with pytest.raises(ValueError, match="need a batch of at least 8"):
        run_schedule(build("gpipe", 2, 8), chunks, batch(4), cross_entropy)
    with pytest.raises(ValueError, match="runs 4 chunks but 2 were given"):
        run_schedule(build("interleaved", 2, 2, 2), chunks, batch(4), cross_entropy)
    with pytest.raises(ValueError, match="cannot cut a model of 4 layers into 5 chunks"):
        split_model(mlp(layers=4), 5)


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(["gpipe", "1f1b", "zb-h1", "interleaved", "dualpipe", "dualpipe-v"]),
       p=st.integers(1, 3), m=st.integers(1, 6), extra=st.integers(0, 3))
def test_any_valid_schedule_gives_the_reference_gradients(name, p, m, extra):
    try:
        schedule = build(name, p, m, 2 if name == "interleaved" else 1)
    except ValueError:
        return  # this schedule refuses (p, m): nothing to run
    torch.manual_seed(1)
    model = mlp(layers=schedule.chunks + 1, hidden=8)
    data = batch(m + extra, seed=m)  # uneven micro-batches too
    reference = reference_gradients(model, data, cross_entropy)
    chunks = split_model(model, schedule.chunks)
    run_schedule(schedule, chunks, data, cross_entropy)
    assert max_grad_diff(chunks, reference) <= 1e-6


@given(layers=st.integers(1, 12), chunks=st.integers(1, 12))
def test_split_model_keeps_every_layer_in_order(layers, chunks):
    model = torch.nn.Sequential(*(torch.nn.Identity() for _ in range(layers)))
    if chunks > layers:
        with pytest.raises(ValueError):
            split_model(model, chunks)
        return
    pieces = split_model(model, chunks)
    assert [layer for piece in pieces for layer in piece] == list(model)
    assert max(map(len, pieces)) - min(map(len, pieces)) <= 1
