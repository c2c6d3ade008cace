"""ScheduleExplorer: pick a schedule, move the sliders, watch the diagram and the metrics change."""

from __future__ import annotations

from functools import lru_cache
from html import escape
from typing import Any

import ipywidgets as widgets

from ppedu.costs import Costs
from ppedu.ops import Schedule
from ppedu.palette import ALERT, TEXT
from ppedu.rounding import rounded
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.svg import render_svg
from ppedu.validate import one_of, require_counts
from ppedu.widgets._parts import STILL_WIDTH, ControlNames, Fitted, StaticFallback

_COUNTS = {"p": (1, 8), "m": (1, 32), "v": (1, 4)}
_WIDTH = 560  # the diagram's width until the page has said how wide its box is
_COSTS = {"f": (0.25, 4.0, 0.25), "b": (0.25, 4.0, 0.25), "w": (0.0, 4.0, 0.25), "comm": (0.0, 2.0, 0.05)}
#: What a screen reader calls each slider (its visible letter first).
NAMES = {
    "p": "p, pipeline stages (GPUs)", "m": "m, micro-batches per step", "v": "v, model chunks per GPU",
    "f": "f, forward time per stage", "b": "b, backward time per stage", "w": "w, weight-gradient time per stage",
    "comm": "comm, hand-over time between GPUs",
}
#: How the explorer books an overlapped F&B pair (DualPipe's): as one unit of f + b + w, as the course's shared cost
#: model does (:data:`ppedu.costs.EQUAL`: a chapter's figure and this explorer then agree), or each op on its own.
PAIRS = {"booked: f + b + w": "booked", "unbooked": "unbooked"}
#: Each control's width: two columns of them and the metrics fit side by side in a slide's width.
_CONTROL = "240px"


class ScheduleExplorer(StaticFallback, widgets.VBox):
    """A schedule picker and sliders for ``p``, ``m``, ``v`` and the costs ``f``, ``b``, ``w``,
    ``comm``; every change re-simulates and redraws the spacetime diagram and the metrics.

    The costs are per stage (one GPU's share of the model), so every schedule runs the same model and
    switching schedules compares equal work per GPU: a schedule that cuts each GPU's share into ``v``
    chunks (interleaving, the V shapes) gives each chunk 1/v of them, and says so above the diagram.
    ``comm`` is the latency of one hand-over between GPUs. ``pairs`` books an overlapped F&B pair (DualPipe's) as
    one unit of f + b + w (``"booked"``, the course's shared model) or each op on its own (``"unbooked"``); the
    metrics say which, beside the steps and the bubble it changes.

    ``v`` (chunks per GPU) applies to the schedules in :data:`~ppedu.schedules.VIRTUAL` only; an
    impossible combination (say DualPipe with an odd ``p``) shows its one-line reason above the last
    diagram, dimmed (so the widget keeps its height), with a button to the nearest ``m`` that works;
    ``.timeline`` is ``None`` until the next valid choice.

    >>> x = ScheduleExplorer("gpipe", p=4, m=4)
    >>> x.metrics()["makespan"], x.metrics()["idle_slots"]
    (14.0, 24.0)
    >>> x.set(schedule="zb-v", m=8, w=1).metrics()["makespan"] < x.set(schedule="1f1b").metrics()["makespan"]
    True
    >>> x.set(schedule="dualpipe", m=6).timeline is None, x.error, x.nearest_m
    (True, 'dualpipe needs an even m with m ≥ 2p micro-batches (got p=4, m=6)', 8)
    >>> x.set(m=8, w=1).metrics()["makespan"], x.set(pairs="unbooked").metrics()["makespan"]
    (26.0, 25.0)
    """

    def __init__(self, schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 1, f: float = 1.0, b: float = 1.0,
                 w: float = 0.0, comm: float = 0.0, pairs: str = "booked") -> None:
        values = _validated(dict(schedule=schedule, p=p, m=m, v=v, f=f, b=b, w=w, comm=comm, pairs=pairs))
        size = widgets.Layout(width=_CONTROL)
        self.picker = widgets.Dropdown(options=list(SCHEDULES), value=values["schedule"], description="schedule",
                                       layout=size)
        self.pairs = widgets.Dropdown(options=PAIRS, value=values["pairs"], description="F&B pairs", layout=size)
        self.sliders: dict[str, Any] = {}
        for name, (first, last) in _COUNTS.items():
            self.sliders[name] = widgets.IntSlider(value=values[name], min=first, max=max(last, values[name]),
                                                   description=name, layout=size)
        for name, (low, high, step) in _COSTS.items():
            self.sliders[name] = widgets.FloatSlider(value=values[name], min=min(low, values[name]),
                                                     max=max(high, values[name]), step=step, description=name,
                                                     layout=size)
        self.message = widgets.HTML().add_class("ppedu-message")
        self.fix = widgets.Button(layout=widgets.Layout(visibility="hidden")).add_class("ppedu-fix")
        self.fix.on_click(lambda _b: self.set(m=self.nearest_m) if self.nearest_m else None)
        self.diagram = Fitted(layout=widgets.Layout(width="100%")).add_class("ppedu-diagram")
        self.diagram.observe(lambda _change: self._draw_diagram(), names="width")
        self.table = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em", flex="0 0 auto")).add_class("ppedu-metrics")
        self.timeline: Timeline | None = None
        self.error: str | None = None
        self.nearest_m: int | None = None
        self._holding = False
        self._last: Timeline | None = None  # the last valid choice's, shown dimmed while a choice is impossible
        self._drawn = (0, "")  # its diagram, and the width it was drawn for
        # The two columns of controls and the metrics sit side by side where there is room (a slide), one above the
        # other where not; the diagram below them has the widget's whole width, and is drawn for it (it folds its
        # time axis into bands rather than scroll), so a lecturer sees all of it.
        controls = widgets.HBox([
            widgets.VBox([self.picker, *(self.sliders[k] for k in _COUNTS)]),
            widgets.VBox([*(self.sliders[k] for k in _COSTS), self.pairs]),
            self.table,
        ], layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start"))
        # The message line keeps its height whether or not it has something to say.
        self.message.layout.flex = "1 1 auto"
        status = widgets.HBox([self.message, self.fix], layout=widgets.Layout(min_height="36px", align_items="center"))
        super().__init__([controls, status, self.diagram, ControlNames(NAMES)], layout=widgets.Layout(max_width="100%"))
        self.add_class("ppedu-explorer")
        for control in (self.picker, self.pairs, *self.sliders.values()):
            control.observe(self._changed, names="value")
        self._redraw()

    # -- the plain-Python face ---------------------------------------------------------------
    @property
    def values(self) -> dict[str, Any]:
        """The current choice: schedule name, p, m, v, the costs and how F&B pairs are booked."""
        sliders = {k: s.value for k, s in self.sliders.items()}
        return {"schedule": self.picker.value, **sliders, "pairs": self.pairs.value}

    def set(self, **changes: Any) -> ScheduleExplorer:
        """Change several controls at once (one redraw), as a student moving them would.

        Raises ``ValueError`` for an unknown name or a value no control can take (p = 0, a
        negative cost); impossible combinations are shown, not raised.
        """
        if unknown := set(changes) - set(self.values):
            raise ValueError(f"unknown control {sorted(unknown)[0]!r} (the controls are {', '.join(self.values)})")
        values = _validated({**self.values, **changes})
        self._holding = True
        try:
            if "schedule" in changes:
                self.picker.value = values["schedule"]
            if "pairs" in changes:
                self.pairs.value = values["pairs"]
            for name in set(changes) - {"schedule", "pairs"}:
                slider = self.sliders[name]
                slider.max = max(slider.max, values[name])
                slider.min = min(slider.min, values[name])
                slider.value = values[name]
        finally:
            self._holding = False
        self._redraw()
        return self

    def metrics(self) -> dict[str, object]:
        """The numbers the table shows, rounded as :func:`~ppedu.rounding.rounded` does (empty while the
        choice is impossible)."""
        if self.timeline is None:
            return {}
        t = self.timeline
        return rounded({
            "schedule": t.schedule.name,
            "makespan": t.makespan,
            "total_slots": t.total_slots,
            "idle_slots": t.idle_slots,
            "bubble_ratio": t.bubble_ratio,
            "bubble_over_ideal": t.bubble_over_ideal,
            "peak_activations": t.peak_activations,
            "peak_stage_activations": t.peak_stage_activations,
            "handovers": t.schedule.hand_overs,
            "pairs": t.costs.pair_booking() if t.schedule.overlapped else None,
            "idle_causes": t.idle_causes().totals(),
        })

    # -- drawing -------------------------------------------------------------------------------
    def _static_html(self) -> str:
        # Says which settings it shows: a later cell that moves the sliders must not contradict it.
        shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.values.items())
        # Laid out as the widget is: the metrics at the top (beside what the picture shows), the diagram below.
        return ('<div style="display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start">'
                f'<div style="flex:1 1 20em"><p><em>A still picture of the schedule explorer at {escape(shown)}; '
                f"run the notebook to move its sliders.</em></p>{self.message.value}</div>{self.table.value}</div>"
                + self._diagram(STILL_WIDTH))

    def _changed(self, _change: object) -> None:
        if not self._holding:
            self._redraw()

    def _redraw(self) -> None:
        values = self.values
        chunked = values["schedule"] in VIRTUAL
        self.sliders["v"].disabled = not chunked
        try:
            schedule = self._build(values["m"])
            self.timeline, self.error = simulate(schedule, _costs(values, schedule)), None
            self.pairs.disabled = not schedule.overlapped
        except ValueError as problem:
            self.timeline, self.error = None, str(problem)
        if self.timeline is None:
            self.nearest_m = self._nearest_m()
            self.message.value = (f'<span role="alert" style="color:{TEXT}"><span aria-hidden="true" '
                                  f'style="color:{ALERT}">⚠ </span>{escape(self.error or "")}</span>')
            self.fix.description = f"use m = {self.nearest_m}" if self.nearest_m else ""
            self.fix.layout.visibility = "visible" if self.nearest_m else "hidden"
            table = _table(self._last) if self._last else ""
            self.table.value = f'<div style="opacity:.3" aria-hidden="true">{table}</div>' if table else ""
        else:
            self.nearest_m, self._last = None, self.timeline
            self.message.value, self.fix.layout.visibility = _cut(self.timeline.schedule), "hidden"
            self.table.value = _table(self.timeline)
        self._draw_diagram()

    def _draw_diagram(self) -> None:
        width = self.diagram.width_or(_WIDTH)
        self.diagram.value, self.diagram.drawn = self._diagram(width), width

    def _diagram(self, width: int) -> str:
        """The diagram drawn for ``width`` px (the last valid one dimmed while the choice is impossible)."""
        if self.timeline is not None:
            self._drawn = (width, render_svg(self.timeline, width=width))
            return self._drawn[1]
        drawn = self._drawn[1] if self._drawn[0] == width or not self._last else render_svg(self._last, width=width)
        return f'<div style="opacity:.3" aria-hidden="true">{drawn}</div>'

    def _build(self, m: int) -> Schedule:
        values = self.values
        return _built(values["schedule"], values["p"], m, values["v"] if values["schedule"] in VIRTUAL else 1)

    def _nearest_m(self) -> int | None:
        """The m closest to the chosen one (smaller first) for which the other settings work."""
        m, low, high = self.values["m"], self.sliders["m"].min, self.sliders["m"].max
        for candidate in sorted(range(low, high + 1), key=lambda k: (abs(k - m), k)):
            try:
                self._build(candidate)
            except ValueError:
                continue
            return candidate
        return None


@lru_cache(maxsize=32)
def _built(name: str, p: int, m: int, v: int) -> Schedule:
    """The schedule, built once per choice: a cost slider's move reuses it and its columns
    (schedules are immutable, so sharing one is safe)."""
    return build(name, p, m, v)


def _costs(values: dict[str, Any], schedule: Schedule) -> Costs:
    """The per-stage costs of the sliders as the simulator takes them: per chunk, 1/v of a stage each; an F&B pair
    booked as one unit of f + b + w, or unbooked."""
    fb = values["f"] + values["b"] + values["w"] if values["pairs"] == "booked" else None
    return Costs(f=values["f"], b=values["b"], w=values["w"], comm=values["comm"], fb=fb).per_chunk(schedule.virtual)


def _cut(schedule: Schedule) -> str:
    """What a schedule that cuts the model finer does with the costs, said above its diagram (empty if nothing)."""
    v = schedule.virtual
    if v == 1:
        return ""
    return (f'<span style="color:{TEXT}">{escape(schedule.name)}: {v} chunks per GPU, each 1/{v} of f, b, w '
            "(the same work per GPU)</span>")


def _validated(values: dict[str, Any]) -> dict[str, Any]:
    one_of("schedule", values["schedule"], SCHEDULES)
    one_of("pairs", values["pairs"], PAIRS.values())
    require_counts(**{name: values[name] for name in _COUNTS})
    for name in _COSTS:
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name} must be a non-negative number (got {value!r})")
        values[name] = float(value)
    return values


def _table(t: Timeline) -> str:
    rows = [
        ("makespan", f"{t.makespan:g}"),
        ("idle slots", f"{t.idle_slots:g} of {t.total_slots:g}"),
        ("bubble, idle / total", f"{t.bubble_ratio:.2%}"),
        ("bubble / ideal (Megatron)", f"{t.bubble_over_ideal:.2%}"),
        ("peak activations, GPU 0…", " ".join(f"{x:g}" for x in t.peak_stage_activations) + " stages"),
        ("hand-overs", str(t.schedule.hand_overs)),
        *([("F&B pairs", t.costs.pair_booking().removeprefix("F&B pairs "))] if t.schedule.overlapped else []),
        ("why idle (slots)", " + ".join(f"{k} {v:g}" for k, v in t.idle_causes().totals().items() if v > 1e-12) or "never"),
    ]
    # Narrow enough to sit beside the two columns of controls on a slide (a long value takes a second line).
    cell = "padding:.1em .5em .1em 0;line-height:1.3;white-space:normal;vertical-align:top"
    body = "".join(f"<tr><th style='text-align:left;{cell};white-space:nowrap'>{k}</th>"
                   f"<td style='max-width:15em;{cell}'>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"
