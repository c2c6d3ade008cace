"""The collective explorer driven as a student would, without a browser: every control recomputes what
ppedu.cluster.collectives computes, the chart marks it, and a value no control offers is refused."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu.cluster import LINKS
from ppedu.cluster.chart import render_bandwidth
from ppedu.cluster.collectives import KINDS, cost, crossover
from ppedu.widgets import CollectiveExplorer
from ppedu.widgets.collectives import GROUPS, SIZES


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(KINDS)), st.sampled_from(GROUPS), st.sampled_from(SIZES), st.sampled_from(sorted(LINKS)))
def test_the_table_shows_what_the_cost_model_computes(kind, n, size, link):
    x = CollectiveExplorer(kind, n, size, link)
    ring = cost(kind, size, n, LINKS[link])
    assert x.costs()["ring"] == ring and ("tree" in x.costs()) == (kind == "all-reduce" and n > 2)
    assert x.metrics()["ring"]["steps"] == ring.steps
    assert f"{ring.busbw / 1e9:.3g} GB/s" in x.table.value
    assert x.best() == min(x.costs(), key=lambda a: x.costs()[a].seconds)


def test_moving_the_size_slider_redraws_and_crosses_over_from_tree_to_ring():
    x = CollectiveExplorer("all-reduce", n=8, size=1e3, link="nvlink")
    svg, table = x.diagram.value, x.table.value
    assert x.best() == "tree"
    x.size.value = 1e9
    assert x.best() == "ring" and x.diagram.value != svg and x.table.value != table
    edge = crossover(8, LINKS["nvlink"])
    assert [x.set(size=s).best() for s in SIZES] == ["tree" if s < edge else "ring" for s in SIZES]


def test_the_chart_marks_the_size_and_the_crossover_and_writes_legibly():
    svg = render_bandwidth("all-reduce", 8, LINKS["nvlink"], 1e9, width=700)
    assert 'class="ppedu-here"' in svg and "tree faster below 43 MB" in svg and "1 GB: 445 GB/s (ring)" in svg
    assert min(int(s) for s in re.findall(r'font-size="(\d+)"', svg)) >= 12  # 18 px where a slide shows it 1.5×
    assert 'width="700"' in svg and "tree" not in render_bandwidth("all-gather", 8, LINKS["nvlink"], 1e9)


def test_a_still_picture_stands_in_where_no_widget_renders():
    x = CollectiveExplorer("reduce-scatter", n=16, size=2e6, link="ib-400")
    html = x._repr_mimebundle_()["text/html"]
    assert "reduce-scatter, n = 16, 2 MB on InfiniBand NDR 400 Gb/s" in html and "<svg" in html


@pytest.mark.parametrize("change, words", [
    (dict(n=3), "unknown n (GPUs, a power of two from 2 to 1024) 3"),
    (dict(size=3e6), "unknown size"),
    (dict(kind="all-sum"), "unknown collective 'all-sum'"),
    (dict(link="carrier-pigeon"), "unknown link preset 'carrier-pigeon'"),
    (dict(gpus=8), "unknown control 'gpus'"),
])
def test_bad_settings_name_the_rule(change, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        CollectiveExplorer().set(**change)
