"""Failures, batch size and the two case studies: Young–Daly's interval is the best one, the noise scale matches
per-example gradients formed by numpy, and the case studies compute from the published figures what the reports
say they achieved — or show where a report's own figures disagree."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppedu.batch_size import mnist_noise_scales, noise_scale, steps_and_examples
from ppedu.cluster.cases import deepseek_v3, dualpipe_against_exposed, llama3_405b
from ppedu.cluster.published import DEEPSEEK_V3_RUN, LLAMA3_INTERRUPTIONS, LLAMA3_TABLE4
from ppedu.cluster.reliability import goodput, job_mtbf_s, restart_budget, young_daly
from ppedu.formulas import bubble_ratio

POSITIVE = st.floats(1.0, 1e5)


@given(POSITIVE, st.floats(100.0, 1e7), st.floats(0.5, 2.0))
def test_the_young_daly_interval_loses_least(checkpoint, mtbf, scale):
    best = young_daly(checkpoint, mtbf)
    assert goodput(best, checkpoint, mtbf, 0.0) >= goodput(best * scale, checkpoint, mtbf, 0.0) - 1e-12


@given(st.integers(1, 100_000), st.integers(1, 1000))
def test_a_jobs_mean_time_between_failures_shrinks_as_its_gpus_grow(gpus, failures):
    assert job_mtbf_s(gpus, failures, 10, 1000) * gpus == pytest.approx(job_mtbf_s(1, failures, 10, 1000))


def test_llama_3s_effective_time_leaves_a_restart_budget():
    mtbf = job_mtbf_s(16384, LLAMA3_INTERRUPTIONS["unexpected"], LLAMA3_INTERRUPTIONS["days"], 16384)
    assert mtbf / 3600 == pytest.approx(54 * 24 / 419)
    budget = restart_budget(LLAMA3_INTERRUPTIONS["effective_training_time"], 30.0, mtbf)
    left = 1 - budget.checkpoint_share - budget.lost_work_share - budget.restart_s / mtbf
    assert left == pytest.approx(0.9) and budget.restart_s > 0


def test_the_noise_scale_is_tr_sigma_over_g_squared_from_explicit_gradients():
    rng = np.random.default_rng(3)
    r, x = rng.normal(size=(50, 3)) + 1.0, rng.normal(size=(50, 4)) + 1.0  # a gradient above its noise
    g = np.einsum("nc,nf->ncf", r, x).reshape(50, -1)  # every per-example gradient, formed
    trace = g.var(axis=0, ddof=1).sum()
    signal = (g.mean(axis=0) ** 2).sum() - trace / 50
    assert signal > 0 and noise_scale(r, x) == pytest.approx(trace / signal)


def test_the_noise_scale_of_mnist_grows_as_training_goes_on():
    rows = list(mnist_noise_scales((0, 100, 1000)))
    assert [r.loss for r in rows] == sorted((r.loss for r in rows), reverse=True)
    assert rows[0].b_simple < rows[1].b_simple < rows[2].b_simple


@given(st.floats(1.0, 1e6), st.integers(1, 10**7))
def test_steps_and_examples_trade_against_each_other(b_noise, batch):
    (row,) = steps_and_examples(b_noise, [batch])  # shown to six digits, as the course rounds
    assert row.steps_over_min == pytest.approx(1 + b_noise / batch, rel=1e-5)
    assert row.examples_over_min == pytest.approx(1 + batch / b_noise, rel=1e-5)
    (at,) = steps_and_examples(float(batch), [batch], p=4, d=1)
    assert at.steps_over_min == at.examples_over_min == 2 and at.bubble == pytest.approx(bubble_ratio(4, batch), abs=1e-4)


def test_table_4s_third_row_does_not_multiply_out():
    first, second, third = LLAMA3_TABLE4
    assert first.product == first.gpus and second.product == second.gpus
    assert third.product == third.gpus // 2 and third.tokens * 2 == pytest.approx(third.tokens_per_batch, rel=0.01)


@pytest.fixture(scope="module")
def llama():
    return llama3_405b()


def test_llama_3_the_published_mfu_and_the_pipeline(llama):
    assert llama.mfu == pytest.approx(400 / 989) == pytest.approx(llama.mfu_from_tflops)
    assert abs(llama.mfu_from_tflops - llama.mfu_published) < 0.01  # Table 4 rounds 40.4 % to 41 %
    # interleaved 1F1B at p = 16, m = 16, v = 2 on equal chunks: bubble/ideal (p − 1)/(v·m)
    assert llama.timeline.bubble_over_ideal == pytest.approx(15 / 32, rel=0.1)
    assert llama.traffic["tensor (NVLink)"] > llama.traffic["data (FSDP)"] > llama.traffic["pipeline"]
    assert 0.3 < llama.mfu_whole_run < llama.mfu  # the whole run, failures and all, sits below a stage's


def test_deepseek_v3_the_throughput_the_pipeline_and_the_all_to_all():
    case = deepseek_v3()
    run = DEEPSEEK_V3_RUN
    assert run.gpu_hours_per_trillion * run.tokens / 1e12 == pytest.approx(run.pretraining_gpu_hours)  # 180K × 14.8
    assert case.tokens_per_second_per_gpu == pytest.approx(1e12 / 180e3 / 3600)
    assert case.timeline.schedule.name == "dualpipe" and case.timeline.bubble_ratio < 0.05
    assert max(case.traffic, key=case.traffic.get) == "expert all-to-all (InfiniBand)"
    # ZeRO-1 over the stage's 128 GPUs: each GPU's optimizer share is 1/128 of the two stages it holds, while its
    # weights hold every non-expert parameter of them and 1/64 of their experts
    assert case.optimizer / case.precision.optimizer < case.weights / case.precision.weights
    rows = {r.schedule: r for r in dualpipe_against_exposed()}
    assert rows["DualPipe"].step < rows["ZB-H1"].step < rows["1F1B"].step
