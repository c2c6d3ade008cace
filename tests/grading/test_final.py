"""The final exam's keys against oracles of their own: question 3's fastest makespan with one slow GPU is what a
search over every order of its kind finds, and an order built as the model answer says reaches it; question 4's
two-level all-reduce is the ring of chapter 12 at its ends; question 1's definitions, applied to the picture alone,
give the key; question 7's goodput is what a run of failures at random finds, and chapter 14's without the write;
and the exam imports nothing that simulates."""

import itertools
import math

import nbformat
import numpy as np
import pytest

from conftest import ROOT
from grader.keys import final
from ppedu import Costs, simulate
from ppedu.cluster import reliability
from ppedu.grading.assignments import load
from ppedu.picture import Picture
from ppedu.schedules.one_f_one_b import with_warmups


def _costs(p, s, k, f, b):
    return Costs(f=tuple(k * f if j == s else f for j in range(p)), b=tuple(k * b if j == s else b for j in range(p)))


@pytest.mark.parametrize("p, m", [(3, 3), (3, 5), (4, 4)])
def test_fastest_is_what_a_search_over_every_warm_up_finds(p, m):
    for s, k, (f, b) in itertools.product(range(p), (2, 3), ((1, 2), (1, 1), (2, 1), (1, 4))):
        best = math.inf
        for warmups in itertools.product(range(m + 1), repeat=p):
            try:
                best = min(best, simulate(with_warmups(warmups, m), _costs(p, s, k, f, b)).makespan)
            except ValueError:  # a warm-up that deadlocks
                continue
        assert best == pytest.approx(final.fastest(p, m, s, k, f, b)), (p, m, s, k, f, b)


def test_the_model_answers_order_reaches_it_and_gpipe_loses_the_fill_above():
    costs = ((1, 2), (1, 1), (2, 3), (1, 4), (1, 5))
    for p, s, k, (f, b) in itertools.product((3, 4, 5, 6, 7, 8), range(8), (2, 3, 4), costs):
        if s >= p:
            continue
        for m in (p, 2 * p, 3 * p):
            slow = (p - 1 - s) + math.ceil((p - 1 - s) * (f + b) / (k * f))
            warmups = [m] * s + [min(m, slow)] + [p - 1 - j for j in range(s + 1, p)]
            reached = simulate(with_warmups(warmups, m), _costs(p, s, k, f, b)).makespan
            assert reached == pytest.approx(final.fastest(p, m, s, k, f, b)), (p, m, s, k, f, b)
            gpipe = final.slow_timeline(p, m, s, k, f, b, "gpipe").makespan
            assert gpipe == pytest.approx((p - 1) * (f + b) + m * k * (f + b))


def test_two_level_is_the_ring_at_its_ends():
    size, a_in, b_in, a_out, b_out = 1e9, 2e-6, 200e9, 10e-6, 50e9

    def ring(n, a, bw):
        return 2 * (n - 1) * a + 2 * (n - 1) / n * size / bw

    assert final.two_level(size, 8, 1, a_in, b_in, a_out, b_out) == pytest.approx(ring(8, a_out, b_out))
    assert final.two_level(size, 1, 8, a_in, b_in, a_out, b_out) == pytest.approx(ring(8, a_in, b_in))
    flat = ring(64 * 8, a_out, b_out)
    assert flat / final.two_level(size, 64, 8, a_in, b_in, a_out, b_out) > 3  # the slow links carry a g-th


def _simulated_goodput(gpus, gpu_mtbf_h, c, w, r, interval, failures=40_000):
    """Failures at random (exponential, seeded): from each restart the job trains, stalls ``c`` at every ``interval``
    for a snapshot whose write ends ``w`` later; a failure keeps the newest snapshot already written."""
    mtbf = gpu_mtbf_h * 3600 / gpus
    kept = spent = 0.0
    for x in np.random.default_rng(7).exponential(mtbf, failures):
        written = max(0, math.floor((x - c - w) / interval))  # snapshots at k·interval, k ≥ 1, written by x
        kept += written * (interval - c) + (c if written else 0)  # training before a snapshot: k·interval − (k−1)·c
        spent += x + r
    return kept / spent


@pytest.mark.parametrize("args", [(16384, 50_000, 5, 120, 600), (8192, 25_000, 2, 300, 900), (2048, 80_000, 3, 1, 450),
                                  (32768, 40_000, 1.5, 207, 300), (1024, 50_000, 5, 600, 300),
                                  (1024, 50_000, 0.5, 900, 300)])
def test_async_goodput_is_the_best_interval_of_a_run_with_failures(args):
    gpus, gpu_mtbf_h, c, w, r = args
    mtbf = gpu_mtbf_h * 3600 / gpus
    want = final.async_goodput(*args)
    young_daly = reliability.young_daly(c, mtbf)
    interval = max(young_daly, w)
    # a run of failures at random agrees to first order: within the second-order term
    second_order = ((interval + w + r) / mtbf) ** 2
    simulated = _simulated_goodput(*args, interval)
    assert simulated == pytest.approx(want, abs=second_order)
    if mtbf > 100_000 and w > 100:  # where that term is small, the run tells the slips apart: no write, or τ < W
        slips = [1 - c / young_daly - (young_daly / 2 + r) / mtbf, 1 - c / young_daly - (young_daly / 2 + w + r) / mtbf]
        assert all(abs(simulated - slip) > 3 * second_order for slip in slips[: 1 + (young_daly < w)])

    # no interval the write allows does better, by the first-order waste (the mean lost work from the failures'
    # moments, not from the closed form)
    def first_order(tau):
        moments = (np.arange(10_000) + 0.5) / 10_000 * tau
        lost = np.where(moments < w, moments + tau, moments).mean()
        return 1 - c / tau - (lost + r) / mtbf

    assert max(first_order(t) for t in np.linspace(w, 10 * interval, 2000)) <= want + 1e-5
    assert first_order(interval) == pytest.approx(want, abs=1e-5)
    # the write costs w per failure: chapter 14's goodput with the restart longer by w, where the write does not bind
    if young_daly >= w:
        assert want == pytest.approx(reliability.goodput(young_daly, c, mtbf, r + w))


@pytest.mark.parametrize("k", range(load("final").VARIANTS))
def test_question_one_reads_off_the_picture(k):
    """The question's definitions, applied to the cells of the picture the student gets, give the key."""
    shown = final.shown(k)
    rows = Picture.from_json(shown["grid"]).rows

    def between(row):
        first_b = next(t for t, c in enumerate(row) if c.startswith("B"))
        last_f = max(t for t, c in enumerate(row) if c.startswith("F"))
        return sum(c == "" for c in row[first_b:last_f])

    key = final._grid_key({"variant": k})
    assert key["T"] == len(rows[0]) and key["idle_slots"] == sum(c == "" for row in rows for c in row)
    assert key["order_idle"] == sum(between(row) for row in rows)
    assert key["per_microbatch"] == 2 * (1 + shown["grid_b"])  # the loop through the short GPU and the next


def test_the_exam_imports_nothing_that_simulates():
    source = "\n".join(c.source for c in nbformat.read(ROOT / "exercises" / "final" / "final.ipynb", as_version=4).cells
                       if c.cell_type == "code")
    imports = {line.strip() for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports == {"from ppedu.grading import check, my_data, my_values"}
