"""Spacetime grids and their renderings."""

import numpy as np
import pytest

from ppedu import Costs, schedules, simulate
from ppedu.grid import IDLE, grid
from ppedu.plot import IDLE_STYLE, STYLE, DisplayFigure, plot_memory, plot_timeline, texts
from ppedu.text import render_grid, render_metrics


def test_gpipe_grid_has_the_warm_up_and_cooldown_triangles():
    g = grid(simulate(schedules.gpipe(4, 4)))
    assert g.shape == (4, 14)
    idle = g.idle_mask
    for j in range(4):
        assert idle[j, :j].all() and not idle[j, j]  # warm-up: GPU j waits j steps
        assert idle[j, 14 - j:].all()  # cooldown: GPU j finishes j steps early
    assert (g.total_slots, g.busy_slots, g.idle_slots) == (56, 32, 24)
    assert g.bubble_ratio == pytest.approx(3 / 7)


def test_grid_counts_agree_with_the_timeline_for_integer_costs():
    for name in ["1f1b", "interleaved", "zb-h1", "dualpipe"]:
        t = simulate(schedules.build(name, 4, 8, 2 if name == "interleaved" else 1), Costs(f=1, b=2, w=1))
        g = grid(t)
        assert g.dt == 1 and (g.total_slots, g.idle_slots) == (t.total_slots, t.idle_slots)


def test_fractional_costs_get_a_finer_time_step():
    g = grid(simulate(schedules.one_f_one_b(2, 2), Costs(f=0.5, b=1)))
    assert g.dt == 0.5
    assert g.total_slots * g.dt == pytest.approx(simulate(schedules.one_f_one_b(2, 2), Costs(f=0.5, b=1)).total_slots)


def test_labels_and_kinds_per_cell():
    g = grid(simulate(schedules.one_f_one_b(2, 2), Costs(f=1, b=2)))
    # GPU 0 waits two steps for B0, then one more for B1, which GPU 1 runs after F1.
    assert list(g.labels()[0]) == ["F0", "F1", "", "", "B0", "B0", "", "B1", "B1"]
    assert list(g.kinds()[1]) == ["", "F", "B", "B", "F", "B", "B", "", ""]
    assert list(g.starts()[0]) == [True, True, False, False, True, False, False, True, False]
    assert (g.cells[g.idle_mask] == IDLE).all()


def test_interleaved_and_dualpipe_labels_name_chunk_and_direction():
    inter = grid(simulate(schedules.interleaved_1f1b(2, 2, 2)))
    assert inter.labels()[0, 0] == "F0c0"
    dual = grid(simulate(schedules.dualpipe(2, 4)))
    assert dual.labels()[1, 0] == "F2'"


def test_text_grid_draws_gpu_0_at_the_bottom():
    text = render_grid(simulate(schedules.gpipe(3, 2)))
    lines = text.splitlines()
    assert lines[0].startswith("GPU 2 |") and lines[2].startswith("GPU 0 | F0 F1")
    assert lines[-2].split() == [f"t{i}" for i in range(1, 9)]


def test_every_text_grid_ends_with_a_legend_of_its_marks():
    one = render_grid(simulate(schedules.gpipe(2, 1), Costs(f=1, b=2))).splitlines()[-1]
    assert ". idle" in one and "· the operation to its left continues" in one and "'" not in one
    assert "' second direction" in render_grid(simulate(schedules.dualpipe(2, 4))).splitlines()[-1]


def test_text_grid_marks_continuations_and_idle_slots():
    text = render_grid(simulate(schedules.gpipe(2, 1), Costs(f=1, b=2)))
    assert text.splitlines()[1].split("|")[1].split() == ["F0", ".", ".", ".", "B0", "·"]


def test_metrics_table_reports_both_bubble_definitions():
    table = render_metrics(simulate(schedules.one_f_one_b(4, 4)))
    assert "idle slots                 24" in table
    assert "0.4286 (42.86%)" in table and "bubble / ideal time        0.7500" in table


def test_plot_hatches_idle_time_and_distinguishes_kinds_without_colour():
    t = simulate(schedules.zero_bubble_h1(4, 8), Costs(1, 1, 1))
    fig = plot_timeline(t)
    ax = fig.axes[0]
    hatches = {patch.get_hatch() for patch in ax.patches}
    assert {STYLE["F", 0][1], STYLE["B", 0][1], STYLE["W", 0][1], IDLE_STYLE[1]} <= hatches
    assert len({STYLE[k, 0][1] for k in "FBW"}) == 3  # F, B, W differ in hatching, not only colour
    assert ax.get_xlabel() == "time (steps)" and ax.get_ylabel() == "GPU"
    assert ax.get_ylim()[0] < 0 < 3 < ax.get_ylim()[1]  # GPU 0 lowest
    assert len([p for p in ax.patches if p.get_hatch() != IDLE_STYLE[1]]) == len(t.events)


def test_a_diagram_on_a_longer_shared_axis_fits_its_labels_to_that_axis():
    """A prediction drawn above a slower measured run shares its time axis: labelled for its own makespan and then
    squeezed, its labels would pile onto each other."""
    t = simulate(schedules.zero_bubble_h1(4, 8), Costs(1, 1, 1))

    def overlaps(figure):
        boxes = [w.box for w in texts(figure) if w.text.strip()]
        return sum(min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
                   for i, a in enumerate(boxes) for b in boxes[i + 1:])

    squeezed = DisplayFigure(figsize=(12, 3))
    plot_timeline(t, ax=squeezed.subplots()).axes[0].set_xlim(0, 6 * t.makespan)
    fitted = DisplayFigure(figsize=(12, 3))
    plot_timeline(t, ax=fitted.subplots(), until=6 * t.makespan)
    assert fitted.axes[0].get_xlim() == (0, 6 * t.makespan)
    assert overlaps(squeezed) > 0 and overlaps(fitted) == 0


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "d.png"
    plot_timeline(simulate(schedules.dualpipe(4, 8))).savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_memory_plot_draws_one_line_per_gpu_without_dips_where_a_free_meets_an_allocation():
    t = simulate(schedules.one_f_one_b(4, 8))
    lines = plot_memory(t).axes[0].get_lines()
    assert len(lines) == 4
    assert [int(np.max(line.get_ydata())) for line in lines] == [4, 3, 2, 1]
    # In 1F1B's steady state GPU 0 frees one micro-batch as it takes the next: its line stays at 4, never 3 and back.
    times, counts = lines[0].get_xdata(), lines[0].get_ydata()
    steady = [c for x, c in zip(times, counts) if 4 <= x < 15]
    assert steady and set(steady) == {4}
    assert len(set(times)) == len(times)  # one point per instant
