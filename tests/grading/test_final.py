"""The final exam's keys against oracles of their own: question 3's fastest makespan with one slow GPU is what a
search over every order of its kind finds, and an order built as the model answer says reaches it; question 4's
two-level all-reduce is the ring of chapter 12 at its ends; question 1's definitions, applied to the picture alone,
give the key; and the exam imports nothing that simulates."""

import itertools
import math

import nbformat
import pytest

from conftest import ROOT
from grader.keys import final
from ppedu import Costs, simulate
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
