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
from ppedu.idle import SORTS
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


def _sorted_by_question_5(g):
    """Per idle cell ``(GPU, step)``, question 5's sort from the picture alone: filling before the GPU's first
    backward, draining once it has run its last forward and its first backward, the order's own between its first
    backward and its last forward; and how many idle cells lie after a GPU's last forward and before its first
    backward."""
    ops = [op for stage in g.timeline.schedule.stages for op in stage]
    out, between = {}, 0
    for s, row in enumerate(g.rows):
        kinds = ["" if c < 0 else ops[c].kind for c in row]
        first_b, last_f = kinds.index("B"), max(t for t, kind in enumerate(kinds) if kind == "F")
        for t, c in enumerate(row):
            if c < 0:
                sorts = {"fill": t < first_b, "drain": t > last_f and t > first_b, "order": first_b < t < last_f}
                assert sum(sorts.values()) == 1, (s, t)  # the three definitions never overlap
                out[s, t] = next(sort for sort, holds in sorts.items() if holds)
                between += last_f < t < first_b
    return out, between


@pytest.mark.parametrize("question", ["count", "read"])
def test_question_5s_sorts_are_the_keys_on_every_grid(question):
    between = 0
    for k in range(VARIANTS):
        g = key.grid(k, QUESTIONS[question])
        causes = g.causes()
        mine, n = _sorted_by_question_5(g)
        assert mine == {(s, t): SORTS[causes[s][t]] for s, t in mine}, k
        between += n
    # idle after a GPU's last forward but before its first backward is filling, by the key and by the wording
    # ("draining" asks for the first backward too): a careful student meets such cells
    assert between


def test_lengthening_any_operation_on_a_critical_path_lengthens_the_step_where_shortening_one_may_not():
    ties = 0
    for k in range(VARIANTS):
        t = key.grid(k, "path").timeline
        durations = {op: 1.0 for stage in t.schedule.stages for op in stage}
        for e in t.critical_path():
            longer, shorter = dict(durations), dict(durations)
            longer[e.op], shorter[e.op] = 1.5, 0.5
            assert simulate(t.schedule, durations=longer).makespan == t.makespan + 0.5
            ties += simulate(t.schedule, durations=shorter).makespan == t.makespan
    assert ties  # question 4 says "lengthen", not "shorten": chains of the same length are common


def test_question_3s_gpipe_and_1f1b_only_fill_and_drain_as_question_5_sorts_them():
    f, b = (float(x) for x in (key.COUNT_COSTS.f, key.COUNT_COSTS.b))
    for p, m in product((3, 4), (4, 5, 6)):
        for name, fill, drain in (("gpipe", lambda j: (p - 1) * f + (p - 1 - j) * b, lambda j: j * b),
                                  ("1f1b", lambda j: j * f + (p - 1 - j) * b, lambda j: (p - 1 - j) * f + j * b)):
            per = simulate(build(name, p, m), key.COUNT_COSTS).idle_causes().per_stage()
            for j, causes in enumerate(per):
                sorted_ = {sort: sum(x for cause, x in causes.items() if SORTS.get(cause) == sort)
                           for sort in ("fill", "drain", "order")}
                assert sorted_ == {"fill": fill(j), "drain": drain(j), "order": 0}, (name, p, m, j)
