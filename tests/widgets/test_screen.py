"""What the diagrams and widgets look like, checked without a browser: contrast, ids, labels that fit."""

import re
import subprocess
import sys
from xml.etree import ElementTree

import numpy as np

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ppedu import Costs, schedules, simulate
from ppedu.grid import grid
from ppedu.palette import STYLE, contrast, ink, shade
from ppedu.plot import plot_timeline
from ppedu.svg import render_grid_svg, render_svg
from ppedu.widgets import ScheduleBuilder, SlotCountingExercise
from ppedu.widgets._parts import EMPTY

from drawn import blocks, labels


def test_importing_the_widgets_loads_no_matplotlib():
    code = "import sys, ppedu.widgets; print(any(m.startswith('matplotlib') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize("laps", [1, 2, 4])
def test_text_on_every_block_colour_meets_wcag_aa(laps):
    for colour, _ in STYLE.values():
        for lap in range(laps):
            fill = shade(colour, lap, laps)
            assert contrast(ink(fill), fill) >= 4.5, (colour, lap, fill)
    assert contrast(ink("#616161"), "#616161") >= 4.5  # a hidden cell's "?"


def test_each_drawing_has_ids_of_its_own_and_uses_only_its_own():
    t = simulate(schedules.zero_bubble_h1(2, 2), Costs(1, 1, 1))
    one, two = render_svg(t), render_grid_svg(t)
    ids = [re.findall(r'id="([^"]+)"', svg) for svg in (one, two)]
    assert ids[0] and ids[1] and not set(ids[0]) & set(ids[1])
    for svg, own in zip((one, two), ids):
        assert set(re.findall(r"url\(#([^)]+)\)", svg)) <= set(own)


def test_every_diagram_has_a_text_alternative_and_follows_the_theme():
    t = simulate(schedules.one_f_one_b(4, 8))
    svg = render_svg(t)
    assert 'role="img"' in svg and "aria-label=\"Spacetime diagram of 1F1B" in svg.replace("1f1b", "1F1B")
    assert "var(--jp-ui-font-color1" in svg and "var(--jp-layout-color2" in svg  # text and idle time themed
    assert not re.search(r'<text (?!class="ppedu-label")[^>]*fill="#', svg)  # fixed colours only on blocks


def test_every_drawing_is_well_formed_svg_whose_texts_are_words():
    t = simulate(schedules.interleaved_1f1b(2, 4, v=2), Costs(f=0.5, b=0.5))
    hidden = np.zeros((2, grid(t).cells.shape[1]), dtype=bool)
    hidden[0, :3] = True
    for svg in (render_svg(t), render_svg(t, upto=3, causes=True), render_grid_svg(t, hidden=hidden, marked={(1, 0)})):
        texts = [e.text or "" for e in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        assert texts and not [x for x in texts if "<" in x or "=" in x]


def test_a_long_schedule_is_drawn_wide_enough_to_label_every_block():
    t = simulate(schedules.gpipe(8, 32))
    svg = render_svg(t)
    placed, written = labels(svg)
    assert "<title>" not in svg.split('class="ppedu-blocks"')[1]  # no block left unlabelled (naming itself on hover)
    assert placed == len(written) == sum(len(str(e.op.microbatch)) for e in t.events)  # not stopping after 9
    assert blocks(svg) == len(t.events)
    big = simulate(schedules.interleaved_1f1b(8, 32, v=4), Costs(f=0.25, b=0.25))
    svg = render_svg(big)
    assert "<title>" not in svg.split('class="ppedu-blocks"')[1] and blocks(svg) == len(big.events)
    placed, written = labels(svg)
    assert placed == len(written) >= len(big.events)


def test_a_block_too_narrow_for_its_label_names_itself_on_hover():
    t = simulate(schedules.gpipe(2, 2), Costs(f=(1, 0.001), b=1))  # GPU 1's forwards: too short even 8000 px wide
    svg = render_svg(t)
    assert svg.count("<title>F0</title></rect>") == svg.count("<title>F1</title></rect>") == 1
    assert blocks(svg) == len(t.events) and labels(svg) == (6, "010101")  # the other six are labelled


def test_a_weight_gradient_of_no_duration_is_not_in_the_legend():
    assert "weight gradient" not in render_svg(simulate(schedules.zero_bubble_h1(2, 2), Costs(1, 1, 0)))
    assert "weight gradient" in render_svg(simulate(schedules.zero_bubble_h1(2, 2), Costs(1, 1, 1)))


def test_the_builder_clears_a_cell_it_takes_an_operation_off():
    b = ScheduleBuilder(p=2, m=2)
    b.place(0, 0, "F0"), b.place(1, 3, "B1")
    b.remove(0, 0), b.remove(1, 3)
    assert {b.cells.cells[c].description for c in [(0, 0), (1, 3)]} == {EMPTY}
    assert "0 of 8 operations placed" in b.feedback.value


def test_mark_mode_clears_an_unmarked_cell():
    x = SlotCountingExercise("gpipe", p=2, m=1, mode="mark")
    x.toggle(1, 0)
    assert x.picture.cells[1, 0].description == "✗"
    x.toggle(1, 0)
    assert x.picture.cells[1, 0].description == EMPTY


def test_matplotlib_labels_fit_their_blocks_and_chunks_are_shaded():
    t = simulate(schedules.interleaved_1f1b(4, 8, v=2), Costs(f=0.5, b=0.5))
    fig = plot_timeline(t)
    ax = fig.axes[0]
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    blocks = [p for p in ax.patches if p.get_hatch() != "xx"]
    labels = [x for x in ax.texts if x.get_text()]
    assert labels  # not all left out
    for text in labels:
        box = text.get_window_extent(renderer)
        x, y = ax.transData.inverted().transform(((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))
        block = next(p for p in blocks if p.get_x() <= x <= p.get_x() + p.get_width() and p.get_y() <= y <= p.get_y() + 0.8)
        left, right = ax.transData.transform([(block.get_x(), 0), (block.get_x() + block.get_width(), 0)])[:, 0]
        assert box.width <= right - left, text.get_text()
    assert len({p.get_facecolor() for p in blocks if p.get_hatch() == ""}) == 2  # forwards of the two laps
    assert ax.get_xlabel() == "time (cost units)"  # half steps: not whole time steps
