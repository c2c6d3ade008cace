"""The counting exam's grids are orders built by hand (grader/keys/counting.py): over the whole variant pool, no
schedule ppedu ships — any name, ``p``, ``m``, ``v`` — and no ``with_warmups`` list draws a picture whose visible
cells are the question's, under the question's costs, so matching simulated grids against the picture (the red
team's route) finds nothing; and the claims of the model answers hold on every grid of the pool."""

from itertools import product

import pytest

from grader.keys import counting as key
from ppedu import simulate
from ppedu.grading.assignments.counting import VARIANTS
from ppedu.grid import grid
from ppedu.picture import COVERED, Picture
from ppedu.schedules import GROUPED, SCHEDULES, VIRTUAL, build
from ppedu.schedules.one_f_one_b import with_warmups

QUESTIONS = {"count": "count", "mark": "mark", "read": "path"}


def _shown(k):
    return {q: Picture.from_json(pic) for q, pic in key.shown(k).items()}


def _matches(candidate, shown):
    """Whether a simulated grid shows every visible cell of the picture as the picture does."""
    rows = Picture.of(candidate).rows
    if len(rows) != len(shown.rows):
        return False
    if COVERED not in shown.rows[0] and len(rows[0]) != len(shown.rows[0]):
        return False
    return all(t < len(rows[s]) and rows[s][t] == cell for s, row in enumerate(shown.rows)
               for t, cell in enumerate(row) if cell != COVERED)


def _visible_order(row):
    return tuple(cell for cell in row if cell not in ("", "·", COVERED))


def test_no_schedule_ppedu_ships_draws_a_pictured_grid():
    pictures = [(k, q, pic) for k in range(VARIANTS) for q, pic in _shown(k).items()]
    tried = 0
    for name in SCHEDULES:
        for p, m, v in product(range(2, 6), range(1, 9), (1, 2, 3) if name in VIRTUAL else (1,)):
            try:
                schedule = build(name, p, m, v)
            except ValueError:
                continue
            for costs in {key.GRIDS[q][2] for q in key.GRIDS}:
                try:
                    candidate = grid(simulate(schedule, costs))
                except ValueError:
                    continue
                tried += 1
                hits = [(k, q) for k, q, pic in pictures
                        if key.GRIDS[q][2] == costs and _matches(candidate, pic)]
                assert not hits, f"{name} p={p} m={m} v={v} draws {hits}"
    assert tried > 300


def test_no_warmup_list_draws_a_pictured_grid():
    # with_warmups's GPU j runs the same ops whatever the other GPUs' warm-ups: a warm-up list can only draw the
    # picture if each GPU's warm-up alone gives that GPU's visible sequence of operations
    for k in range(VARIANTS):
        for q, pic in _shown(k).items():
            p, m = len(key.params(k)[q]), len(key.params(k)[q][0])
            fits = [[w for w in range(m + 1)
                     if tuple(op.label(chunk=False) for op in with_warmups([w] * p, m).stages[j])[
                         :len(_visible_order(row))] == _visible_order(row)]
                    for j, row in enumerate(pic.rows)]
            for warmups in product(*fits):
                assert not _matches(grid(simulate(with_warmups(warmups, m), key.GRIDS[q][2])), pic), (k, q, warmups)


def test_the_cover_hides_only_backwards_whose_times_the_dependencies_give():
    for k in range(VARIANTS):
        for q in ("count", "mark"):
            whole, pic = key.grid(k, q), _shown(k)[q]
            start = pic.rows[0].index(COVERED)
            events = whole.timeline.events
            assert all(e.op.kind == "B" for e in events if e.end > start * whole.dt)
            assert any(e.op.kind == "B" for e in events if e.start >= start * whole.dt)


@pytest.mark.parametrize("question", ["count", "mark", "read"])
def test_every_order_idles_beyond_the_fewest_any_order_has_which_gpipe_and_1f1b_meet(question):
    costs = key.GRIDS[question][2]
    f, b = float(costs.f), float(costs.b)
    for k in range(VARIANTS):
        forwards = key.params(k)[question]
        p, m = len(forwards), len(forwards[0])
        g = key.grid(k, QUESTIONS[question])
        fewest = key.fewest_idle(question, p, m)
        assert g.idle_slots > fewest
        assert g.idle_slots == p * g.timeline.makespan - p * m * (f + b)
        assert sum(map(key.hand_built, forwards)) >= 2
        for name in ("gpipe", "1f1b"):  # Q3's model answer: each GPU idles j·f first, j·b last, (p-1)(f+b) in all
            t = simulate(build(name, p, m), costs)
            assert t.makespan == (m + p - 1) * (f + b) and t.idle_slots == fewest
            for j in range(p):
                mine = [e for e in t.events if e.stage == j]
                assert min(e.start for e in mine) == j * f and t.makespan - max(e.end for e in mine) == j * b
                assert t.makespan - sum(e.end - e.start for e in mine) == (p - 1) * (f + b)
