"""The design space in one table: every schedule on one model, the search's best order, the lower bound."""

import pytest

from ppedu import Costs, simulate
from ppedu.costs import EQUAL
from ppedu.design import chunks_per_gpu, design_space, frontier, run
from ppedu.schedules import NAMES, SCHEDULES, build
from ppedu.search import lower_bound, one_chunk_bound


def test_every_schedule_ppedu_builds_has_a_row_and_the_search_and_the_bound_close_the_table():
    rows = design_space(4, 8, search_seconds=0.1)
    assert [r.schedule.split(" v=")[0] for r in rows[:len(SCHEDULES)]] == list(NAMES.values())
    search, bound = rows[-2], rows[-1]
    assert search.schedule.startswith("search: ") and bound.makespan == lower_bound(4, 8, EQUAL)
    assert all(bound.makespan <= r.makespan for r in rows[:-1])
    assert search.makespan <= min(r.makespan for r in rows[:len(SCHEDULES)])


def test_a_row_is_the_simulator_on_the_shared_model():
    rows = {r.schedule: r for r in design_space(4, 8, search_seconds=0)}
    for name in SCHEDULES:
        t = run(name, 4, 8)
        row = next(r for k, r in rows.items() if k.split(" v=")[0] == NAMES[name])
        assert row.makespan == round(t.makespan, 3) and row.hand_overs == t.schedule.hand_overs
        assert t.schedule.virtual == chunks_per_gpu(name, 2)
    assert rows["DualPipe"].weight_copies == rows["Chimera"].weight_copies == 2 and rows["1F1B"].weight_copies == 1
    assert rows["1F1B"].idle_causes == "fill 18 + drain 18" and rows["GPipe"].balance == "8 … 8"


def test_a_schedule_that_cannot_run_says_its_rule():
    rows = {r.schedule: r for r in design_space(3, 5, search_seconds=0)}
    assert rows["DualPipe"].makespan == "—" and "p even" in rows["DualPipe"].runs_when
    assert rows["Chimera"].makespan == "—"


def test_the_frontier_is_what_no_schedule_beats_on_time_memory_and_copies_at_once():
    front = frontier(4, 8)
    everything = [run(n, 4, 8) for n in SCHEDULES if n not in ("dualpipe", "chimera")] + [run("dualpipe", 4, 8)]
    for x in front:
        assert not any(t.makespan < x.makespan and max(t.peak_stage_activations) <= x.peak_activations
                       for t in everything)


@pytest.mark.parametrize("costs", [Costs(f=1, b=1, w=1), Costs(f=1, b=1, w=0.5), Costs(f=2, b=1, w=1), Costs(f=1, b=2)])
def test_no_one_chunk_order_beats_the_zero_bubble_bound_and_zb_h2_reaches_it_at_equal_costs(costs):
    for p, m in [(2, 4), (4, 8), (4, 12)]:
        bound = one_chunk_bound(p, m, costs)
        for name in ("gpipe", "1f1b", "zb-h1", "zb-h2"):
            assert simulate(build(name, p, m), costs).makespan >= bound - 1e-9
    at_equal = one_chunk_bound(4, 8, Costs(f=1, b=1, w=1))
    assert simulate(build("zb-h2", 4, 8), Costs(f=1, b=1, w=1)).makespan == at_equal
    assert simulate(build("zb-h1", 4, 8), Costs(f=1, b=1, w=1)).makespan == at_equal
    assert simulate(build("zb-h2", 4, 8), Costs(f=1, b=1, w=0.5)).makespan == one_chunk_bound(4, 8, Costs(f=1, b=1, w=0.5))
