"""Reading a grid: a critical path traced cell by cell and the idle cells sorted by cause (ppedu.reading), in the
SlotCountingExercise's path and causes modes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, schedules, simulate
from ppedu.grid import IDLE, grid
from ppedu.idle import SORTS
from ppedu.reading import causes_share, check_causes, check_path, path_share
from ppedu.schedules.one_f_one_b import with_warmups
from ppedu.widgets import SlotCountingExercise


def cells(timeline, events):
    return {(e.stage, t) for e in events for t in range(round(e.start), round(e.end))}


def sorts(g):
    return {(s, t): SORTS[c] for s, row in enumerate(g.causes()) for t, c in enumerate(row) if c}


orders = st.one_of(
    st.builds(lambda p, m: schedules.gpipe(p, m), st.integers(2, 5), st.integers(1, 6)),
    st.builds(lambda p, m: schedules.one_f_one_b(p, m), st.integers(2, 5), st.integers(1, 6)),
    st.builds(lambda p, m, extra: with_warmups((p - 1 + extra,) * p, m), st.integers(2, 5), st.integers(1, 6),
              st.integers(0, 1)),
)


@settings(max_examples=60, deadline=None)
@given(orders, st.integers(1, 2))
def test_the_simulators_critical_path_is_always_read_as_one(schedule, b):
    t = simulate(schedule, Costs(f=1, b=b))
    g, path = grid(t), cells(t, t.critical_path())
    assert check_path(g, path).correct and path_share(g, path) == 1.0
    assert check_causes(g, sorts(g)).correct and causes_share(g, sorts(g)) == 1.0
    # Any one cell of it left out breaks it; any other busy cell added is off it.
    for cell in sorted(path)[:: max(1, len(path) // 4)]:
        assert not check_path(g, path - {cell}).correct and path_share(g, path - {cell}) < 1
    busy = {(s, x) for s, row in enumerate(g.rows) for x, c in enumerate(row) if c != IDLE} - path
    if busy:
        extra = min(busy)
        assert "off the path you traced" in str(check_path(g, path | {extra}))


def test_equal_costs_give_several_paths_and_each_is_right():
    """GPipe, p = 2, m = 2 (GPU 0: F0 F1 . . B0 B1; GPU 1: . F0 F1 B0 B1 .): at t2 GPU 1's F0 or GPU 0's F1 (whose
    output GPU 1's F1 takes next) — both chains are the makespan's length."""
    t = simulate(schedules.gpipe(2, 2))
    g = grid(t)
    one = {(0, 0), (1, 1), (1, 2), (1, 3), (0, 4), (0, 5)}
    other = (one - {(1, 1)}) | {(0, 1)}
    assert check_path(g, one).correct and check_path(g, other).correct
    both = one | other
    assert "off the path you traced" in str(check_path(g, both)) and path_share(g, both) < 1


def test_a_cause_sorted_wrong_is_told_its_rule():
    g = grid(simulate(with_warmups((3, 3, 3, 3), 5)))
    truth = sorts(g)
    order = next(cell for cell, sort in truth.items() if sort == "order")
    fill = next(cell for cell, sort in truth.items() if sort == "fill")
    wrong = {**truth, order: "fill", fill: "drain"}
    told = str(check_causes(g, wrong))
    assert "not fill: that is the order's own" in told and "not drain: the pipeline is still filling" in told
    assert causes_share(g, wrong) == pytest.approx((len(truth) - 2) / len(truth))
    busy = next((s, x) for s, row in enumerate(g.rows) for x, c in enumerate(row) if c != IDLE)
    assert "it is not idle" in str(check_causes(g, {**truth, busy: "fill"}))
    assert "3 idle cells have no cause yet" in str(check_causes(g, dict(list(truth.items())[3:])))


def test_the_exercise_cycles_causes_and_checks_what_was_clicked():
    x = SlotCountingExercise(with_warmups((3, 3, 3, 3), 5), mode="causes")
    s, t = next(iter(sorts(x.grid)))
    for expected in ("fill", "drain", "order", None):
        x.toggle(s, t)
        assert x.sorted.get((s, t)) == expected
    for (s, t), sort in sorts(x.grid).items():
        for _ in range(("fill", "drain", "order").index(sort) + 1):
            x.toggle(s, t)
    assert x.check_marking().correct and x.answer.causes == {(s, t, c) for (s, t), c in sorts(x.grid).items()}
    path = SlotCountingExercise(x.timeline, mode="path")
    for s, t in cells(path.timeline, path.timeline.critical_path()):
        path.toggle(s, t)
    assert path.check_marking().correct and "◆" in path.picture.cells[0, 0].description


def test_a_grid_with_hand_over_time_is_not_read_cell_by_cell():
    with pytest.raises(ValueError, match="cannot be read cell by cell.*hand-over"):
        SlotCountingExercise(simulate(schedules.gpipe(3, 2), Costs(comm=1)), mode="path")
    with pytest.raises(ValueError, match="needs the whole grid"):
        SlotCountingExercise("gpipe", mode="causes", hide=0.5)
