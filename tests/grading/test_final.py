"""The final exam's keys against oracles of their own: question 3's fastest makespan with one slow GPU is what a
search over every order of its kind finds, and an order built as the model answer says reaches it; question 4's
two-level all-reduce is the ring of chapter 12 at its ends; question 1's definitions, applied to the picture alone,
give the key; question 7's two levels of checkpoints are what a run of failures at random finds, their intervals
the best by search, and chapter 14's where every failure restarts from memory; and the exam imports nothing that
simulates."""

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


def _simulated_goodput(gpus, gpu_mtbf_h, q, c1, r1, c2, r2, t1, t2, failures=40_000):
    """Failures at random (exponential, seeded; a share ``q`` of them restarts from memory): from each restart the job
    trains, stalls ``c1`` for a snapshot at every multiple of ``t1`` and ``c2`` for storage at every multiple of ``t2``;
    a failure keeps the newest checkpoint it can restart from, finished by then."""
    rng = np.random.default_rng(7)
    mtbf = gpu_mtbf_h * 3600 / gpus

    def latest(x, c, t):  # the time of the newest checkpoint of this kind whose stall ended by x (0: the restart's)
        return max(0, math.floor((x - c) / t)) * t

    def trained(at):  # training before the moment ``at``: less the stalls begun before it
        return at - c1 * max(0, math.ceil(at / t1) - 1) - c2 * max(0, math.ceil(at / t2) - 1)

    kept = spent = 0.0
    for x, in_memory in zip(rng.exponential(mtbf, failures), rng.random(failures) < q):
        on_storage = latest(x, c2, t2)
        kept += trained(max(latest(x, c1, t1), on_storage) if in_memory else on_storage)
        spent += x + (r1 if in_memory else r2)
    return kept / spent


@pytest.mark.parametrize("args", [(16384, 50_000, 0.8, 5, 300, 60, 1200), (2048, 25_000, 0.5, 2, 120, 120, 900),
                                  (1024, 50_000, 0.8, 5, 300, 60, 1200), (1024, 80_000, 0.3, 2, 60, 20, 600)])
def test_two_levels_of_checkpoints_at_their_best_intervals_as_a_run_with_failures_finds(args):
    gpus, gpu_mtbf_h, q, c1, r1, c2, r2 = args
    mtbf = gpu_mtbf_h * 3600 / gpus
    want = final.two_level_goodput(*args)
    t1, t2 = math.sqrt(2 * c1 * mtbf / q), math.sqrt(2 * c2 * mtbf / (1 - q))
    # a run of failures at random agrees to first order: within (twice) the second-order terms, each kind of failure's
    second_order = 2 * (q * (t1 + r1) ** 2 + (1 - q) * (t2 + r2) ** 2) / mtbf ** 2
    simulated = _simulated_goodput(*args, t1, t2)
    assert simulated == pytest.approx(want, abs=second_order)
    # where that term is small, the run tells storage alone apart (the snapshots left out)
    storage_alone = reliability.goodput(reliability.young_daly(c2, mtbf), c2, mtbf, r2)
    assert mtbf < 100_000 or q < 0.5 or abs(simulated - storage_alone) > 3 * second_order

    # no pair of intervals does better, by the first-order waste (the mean work redone from the failures' moments)
    def first_order(a, b):
        redone = (np.arange(1000) + 0.5) / 1000
        return 1 - c1 / a - c2 / b - (q * (redone.mean() * a + r1) + (1 - q) * (redone.mean() * b + r2)) / mtbf

    grid = [(a, b) for a in np.geomspace(t1 / 3, 3 * t1, 61) for b in np.geomspace(t2 / 3, 3 * t2, 61)]
    assert max(first_order(a, b) for a, b in grid) <= want + 1e-9
    assert first_order(t1, t2) == pytest.approx(want, abs=1e-9)
    # every failure caught in memory: chapter 14's goodput with the snapshots' stall and restart
    assert final.two_level_goodput(gpus, gpu_mtbf_h, 1, c1, r1, c2, r2) == pytest.approx(
        reliability.goodput(reliability.young_daly(c1, mtbf), c1, mtbf, r1))


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
