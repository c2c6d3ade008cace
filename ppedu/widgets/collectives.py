"""CollectiveExplorer: pick a collective, a link, the GPUs and the message size; see how long a ring (and, for an
all-reduce, a tree) takes, where the time goes, and the two bandwidths NCCL-tests would print."""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets

from ppedu.cluster.chart import render_bandwidth, size_label
from ppedu.cluster.collectives import KINDS, Cost, cost
from ppedu.cluster.hardware import LINKS
from ppedu.rounding import rounded
from ppedu.validate import one_of
from ppedu.widgets._parts import STILL_WIDTH, ControlNames, Fitted, StaticFallback

#: The group sizes and message sizes the sliders offer: powers of two; 1, 2 and 5 times each power of ten.
GROUPS = tuple(2 ** k for k in range(1, 11))
SIZES = tuple(float(f * 10 ** e) for e in range(3, 11) for f in (1, 2, 5) if f * 10 ** e <= 1e10)
NAMES = {"n": "n, GPUs in the group", "size": "size, bytes in the buffer"}
_WIDTH = 560


class CollectiveExplorer(StaticFallback, widgets.VBox):
    """A collective, a link and sliders for ``n`` (GPUs) and ``size`` (the buffer, NCCL-tests' ``S``); every change
    recomputes each algorithm's α–β cost (:func:`ppedu.cluster.collectives.cost`) and redraws the bus-bandwidth
    chart (:mod:`ppedu.cluster.chart`) and the table: time, its latency and bandwidth parts, ``algbw``, ``busbw``.

    >>> x = CollectiveExplorer("all-reduce", n=8, size=1e9, link="nvlink")
    >>> x.metrics()["ring"]["busbw_gb_s"], x.metrics()["ring"]["steps"]
    (445.19, 14)
    >>> x.set(size=1e4).best()  # a small all-reduce: the tree's fewer steps win
    'tree'
    """

    def __init__(self, kind: str = "all-reduce", n: int = 8, size: float = 1e9, link: str = "nvlink") -> None:
        values = _validated(dict(kind=kind, n=n, size=size, link=link))
        self.picker = widgets.Dropdown(options=list(KINDS), value=values["kind"], description="collective")
        self.link = widgets.Dropdown(options=[(v.name, k) for k, v in LINKS.items()], value=values["link"],
                                     description="link")
        self.n = widgets.SelectionSlider(options=list(GROUPS), value=values["n"], description="n")
        self.size = widgets.SelectionSlider(options=[(size_label(s), s) for s in SIZES], value=values["size"],
                                            description="size")
        self.table = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em", flex="0 0 auto")).add_class("ppedu-metrics")
        self.diagram = Fitted(layout=widgets.Layout(width="100%")).add_class("ppedu-diagram")
        self.diagram.observe(lambda _change: self._draw(), names="width")
        self._holding = False
        controls = widgets.HBox([widgets.VBox([self.picker, self.link, self.n, self.size]), self.table],
                                layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start"))
        super().__init__([controls, self.diagram, ControlNames(NAMES)], layout=widgets.Layout(max_width="100%"))
        self.add_class("ppedu-collectives")
        for control in (self.picker, self.link, self.n, self.size):
            control.observe(self._changed, names="value")
        self._redraw()

    # -- the plain-Python face ---------------------------------------------------------------
    @property
    def values(self) -> dict[str, Any]:
        return {"kind": self.picker.value, "n": self.n.value, "size": self.size.value, "link": self.link.value}

    def set(self, **changes: Any) -> CollectiveExplorer:
        """Change several controls at once (one redraw); an unknown name or a value no control offers is refused."""
        if unknown := set(changes) - set(self.values):
            raise ValueError(f"unknown control {sorted(unknown)[0]!r} (the controls are {', '.join(self.values)})")
        values = _validated({**self.values, **changes})
        self._holding = True
        try:
            for control, name in ((self.picker, "kind"), (self.link, "link"), (self.n, "n"), (self.size, "size")):
                control.value = values[name]
        finally:
            self._holding = False
        self._redraw()
        return self

    def costs(self) -> dict[str, Cost]:
        """Each algorithm's cost at the current settings (the tree for an all-reduce over more than two GPUs)."""
        v = self.values
        algorithms = ("ring", "tree") if v["kind"] == "all-reduce" and v["n"] > 2 else ("ring",)
        return {a: cost(v["kind"], v["size"], v["n"], LINKS[v["link"]], a) for a in algorithms}

    def best(self) -> str:
        """The faster algorithm at the current settings."""
        return min(self.costs().items(), key=lambda item: item[1].seconds)[0]

    def metrics(self) -> dict[str, dict[str, object]]:
        """What the table shows, per algorithm, rounded as the course rounds (times in µs, bandwidths in GB/s)."""
        return {a: rounded({"seconds_us": c.seconds * 1e6, "latency_us": c.latency_seconds * 1e6,
                            "bandwidth_us": c.bandwidth_seconds * 1e6, "steps": c.steps, "sent_gb": c.sent / 1e9,
                            "algbw_gb_s": round(c.algbw / 1e9, 2), "busbw_gb_s": round(c.busbw / 1e9, 2)})
                for a, c in self.costs().items()}

    # -- drawing -------------------------------------------------------------------------------
    def _changed(self, _change: object) -> None:
        if not self._holding:
            self._redraw()

    def _redraw(self) -> None:
        self.table.value = _table(self.costs())
        self._draw()

    def _draw(self) -> None:
        width = self.diagram.width_or(_WIDTH)
        self.diagram.value, self.diagram.drawn = self._chart(width), width

    def _chart(self, width: int) -> str:
        v = self.values
        return render_bandwidth(v["kind"], v["n"], LINKS[v["link"]], v["size"], width)

    def _static_html(self) -> str:
        v = self.values
        shown = escape(f"{v['kind']}, n = {v['n']}, {size_label(v['size'])} on {LINKS[v['link']].name}")
        return (f'<div style="display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start"><p style="flex:1 1 20em">'
                f"<em>A still picture of the collective explorer at {shown}; run the notebook to move its sliders."
                f"</em></p>{self.table.value}</div>" + self._chart(STILL_WIDTH))


def _table(costs: dict[str, Cost]) -> str:
    cell = "padding:.1em .6em .1em 0;line-height:1.3;text-align:right"
    head = "".join(f"<th style='{cell}'>{a}</th>" for a in costs)
    rows = [
        ("time", lambda c: _time(c.seconds)),
        ("latency part (steps × α)", lambda c: f"{c.steps} × α = {_time(c.latency_seconds)}"),
        ("bandwidth part", lambda c: _time(c.bandwidth_seconds)),
        ("sent by each GPU", lambda c: size_label(c.sent)),
        ("algbw = S / t", lambda c: f"{c.algbw / 1e9:.3g} GB/s"),
        ("busbw = algbw × factor", lambda c: f"{c.busbw / 1e9:.3g} GB/s"),
    ]
    body = "".join(f"<tr><th style='{cell};text-align:left'>{name}</th>"
                   + "".join(f"<td style='{cell}'>{show(c)}</td>" for c in costs.values()) + "</tr>" for name, show in rows)
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e6:.3g} µs"


def _validated(values: dict[str, Any]) -> dict[str, Any]:
    one_of("collective", values["kind"], KINDS)
    one_of("link preset", values["link"], LINKS)
    one_of("n (GPUs, a power of two from 2 to 1024)", values["n"], GROUPS)
    size = float(values["size"])
    one_of("size (1, 2 or 5 × a power of ten bytes, 1 kB to 10 GB)", size, SIZES)
    return {**values, "size": size}
