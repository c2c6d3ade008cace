"""ScheduleExplorer: pick a schedule, move the sliders, watch the diagram and the metrics change."""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets

from ppedu.costs import Costs
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.svg import render_svg
from ppedu.validate import one_of, require_counts
from ppedu.widgets._parts import StaticFallback

_COUNTS = {"p": (1, 8), "m": (1, 32), "v": (1, 4)}
_COSTS = {"f": (0.25, 4.0, 0.25), "b": (0.25, 4.0, 0.25), "w": (0.0, 4.0, 0.25), "comm": (0.0, 2.0, 0.05)}


class ScheduleExplorer(StaticFallback, widgets.VBox):
    """A schedule picker and sliders for ``p``, ``m``, ``v`` and the costs ``f``, ``b``, ``w``,
    ``comm``; every change re-simulates and redraws the spacetime diagram and the metrics.

    The costs are per chunk, as :func:`~ppedu.simulate.simulate` takes them: to compare
    interleaving on the same model, give each of its ``v`` chunks 1/v of a stage (``f = b = 1/v``
    against ``f = b = 1`` for 1F1B). ``comm`` is the latency of one hand-over between GPUs.

    ``v`` (chunks per GPU) applies to the schedules in :data:`~ppedu.schedules.VIRTUAL` only; an
    impossible combination (say DualPipe with an odd ``p``) shows its one-line reason instead of
    a diagram, and ``.timeline`` is ``None`` until the next valid choice.

    >>> x = ScheduleExplorer("gpipe", p=4, m=4)
    >>> x.metrics()["makespan"], x.metrics()["idle_slots"]
    (14.0, 24.0)
    >>> x.set(schedule="interleaved", v=2, m=6).timeline is None
    False
    >>> x.set(schedule="dualpipe", p=3).timeline is None, x.error
    (True, 'dualpipe needs an even number of stages p (got p=3)')
    """

    def __init__(self, schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 1, f: float = 1.0, b: float = 1.0,
                 w: float = 0.0, comm: float = 0.0) -> None:
        values = _validated(dict(schedule=schedule, p=p, m=m, v=v, f=f, b=b, w=w, comm=comm))
        self.picker = widgets.Dropdown(options=list(SCHEDULES), value=values["schedule"], description="schedule")
        self.sliders: dict[str, Any] = {}
        for name, (first, last) in _COUNTS.items():
            self.sliders[name] = widgets.IntSlider(value=values[name], min=first, max=max(last, values[name]),
                                                   description=name)
        for name, (low, high, step) in _COSTS.items():
            self.sliders[name] = widgets.FloatSlider(value=values[name], min=min(low, values[name]),
                                                     max=max(high, values[name]), step=step, description=name)
        self.message = widgets.HTML().add_class("ppedu-message")
        self.diagram = widgets.HTML().add_class("ppedu-diagram")
        self.table = widgets.HTML().add_class("ppedu-metrics")
        self.timeline: Timeline | None = None
        self.error: str | None = None
        self._holding = False
        controls = widgets.HBox([
            widgets.VBox([self.picker, *(self.sliders[k] for k in _COUNTS)]),
            widgets.VBox([self.sliders[k] for k in _COSTS]),
        ])
        super().__init__([controls, self.message, self.diagram, self.table])
        self.add_class("ppedu-explorer")
        for control in (self.picker, *self.sliders.values()):
            control.observe(self._changed, names="value")
        self._redraw()

    # -- the plain-Python face ---------------------------------------------------------------
    @property
    def values(self) -> dict[str, Any]:
        """The current choice: schedule name, p, m, v and the costs."""
        return {"schedule": self.picker.value, **{k: s.value for k, s in self.sliders.items()}}

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
            for name in set(changes) - {"schedule"}:
                slider = self.sliders[name]
                slider.max = max(slider.max, values[name])
                slider.min = min(slider.min, values[name])
                slider.value = values[name]
        finally:
            self._holding = False
        self._redraw()
        return self

    def metrics(self) -> dict[str, object]:
        """The numbers the table shows (empty while the choice is impossible)."""
        if self.timeline is None:
            return {}
        t = self.timeline
        return {
            "schedule": t.schedule.name,
            "makespan": t.makespan,
            "total_slots": t.total_slots,
            "idle_slots": t.idle_slots,
            "bubble_ratio": t.bubble_ratio,
            "bubble_over_ideal": t.bubble_over_ideal,
            "peak_activations": t.peak_activations,
            "peak_stage_activations": t.peak_stage_activations,
            "handovers": t.schedule.hand_overs,
            "idle_causes": t.idle_causes().totals(),
        }

    # -- drawing -------------------------------------------------------------------------------
    def _static_html(self) -> str:
        return self.message.value + self.diagram.value + self.table.value

    def _changed(self, _change: object) -> None:
        if not self._holding:
            self._redraw()

    def _redraw(self) -> None:
        values = self.values
        chunked = values["schedule"] in VIRTUAL
        self.sliders["v"].disabled = not chunked
        try:
            schedule = build(values["schedule"], values["p"], values["m"], values["v"] if chunked else 1)
            costs = Costs(f=values["f"], b=values["b"], w=values["w"], comm=values["comm"])
            self.timeline, self.error = simulate(schedule, costs), None
        except ValueError as problem:
            self.timeline, self.error = None, str(problem)
        if self.timeline is None:
            self.message.value = f'<span style="color:#B00020">{escape(self.error or "")}</span>'
            self.diagram.value, self.table.value = "", ""
            return
        self.message.value = ""
        self.diagram.value = render_svg(self.timeline)
        self.table.value = _table(self.timeline)


def _validated(values: dict[str, Any]) -> dict[str, Any]:
    one_of("schedule", values["schedule"], SCHEDULES)
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
        ("bubble ratio (idle / total)", f"{t.bubble_ratio:.2%}"),
        ("bubble / ideal time (Megatron-LM)", f"{t.bubble_over_ideal:.2%}"),
        ("peak activations per GPU (0…), in stages", " ".join(f"{x:g}" for x in t.peak_stage_activations)),
        ("hand-overs between GPUs", str(t.schedule.hand_overs)),
        ("why idle (slots)", " + ".join(f"{k} {v:g}" for k, v in t.idle_causes().totals().items() if v > 1e-12) or "never"),
    ]
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"

