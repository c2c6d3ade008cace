"""StepPicker: the MNIST lab's schedule picker — choose a schedule and its sizes, run one real
training step, and see the measured diagram beside the simulator's prediction."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as widgets
import torch
from torch import nn

from ppedu.mnist.executor import StepResult
from ppedu.mnist.measure import AGREEMENT, gap, measure_step
from ppedu.mnist.models import split_model
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.svg import render_svg
from ppedu.widgets._parts import STILL_WIDTH, ControlNames, Fitted, StaticFallback
from ppedu.widgets.explorer import NAMES


class StepPicker(StaticFallback, widgets.VBox):
    """A schedule picker and sliders for ``m`` and ``v`` over one model cut for ``p`` simulated
    GPUs; any change of them, or *Run step* (to measure again), measures one real training step of
    ``batch`` as the lab does (warm-up runs, then each op's fastest of ``repeats`` runs:
    :func:`~ppedu.mnist.measure.measure_step`) and shows the measured and the predicted spacetime
    diagrams (milliseconds on the time axis), their gap against the lab's tolerance, and the step's
    numbers. ``v`` is live only for the schedules that take it.

    An impossible choice (DualPipe with an odd ``m``, say) shows its one-line reason and leaves
    ``.result`` ``None``.

    >>> from torch.nn.functional import cross_entropy
    >>> from ppedu.mnist import mlp
    >>> batch = (torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,)))
    >>> picker = StepPicker(mlp(layers=4, hidden=8), batch, cross_entropy, p=2, m=4)
    >>> picker.run(schedule="gpipe").result.schedule.name
    'gpipe'
    >>> picker.run(schedule="dualpipe", m=3).result is None, picker.error
    (True, 'dualpipe needs an even m with m ≥ 2p micro-batches (got p=2, m=3)')
    """

    def __init__(self, model: nn.Sequential, batch: tuple[torch.Tensor, torch.Tensor],
                 loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], p: int = 4, m: int = 8,
                 schedule: str = "1f1b", v: int = 2, repeats: int = 9) -> None:
        self.model, self.batch, self.loss_fn, self.p, self.repeats = model, batch, loss_fn, p, repeats
        self.picker = widgets.Dropdown(options=list(SCHEDULES), value=schedule, description="schedule")
        self.m = widgets.IntSlider(value=m, min=1, max=max(32, m), description="m")
        self.v = widgets.IntSlider(value=v, min=1, max=4, description="v (chunked)")
        self.button = widgets.Button(description="Run step", button_style="primary")
        self.message = widgets.HTML().add_class("ppedu-message")
        self.diagrams = Fitted(layout=widgets.Layout(width="100%")).add_class("ppedu-diagram")
        self.diagrams.observe(lambda _change: self._draw(), names="width")
        self.result: StepResult | None = None
        self.error: str | None = None
        names = ControlNames({"m": NAMES["m"], "v (chunked)": NAMES["v"]})
        super().__init__([widgets.HBox([self.picker, self.m, self.v, self.button]), self.message, self.diagrams, names])
        self.add_class("ppedu-step-picker")
        self._holding = False
        self.button.on_click(lambda _: self.run())
        for control in (self.picker, self.m, self.v):
            control.observe(lambda _: self._holding or self.run(), names="value")
        self.run()

    def run(self, **changes: Any) -> StepPicker:
        """Set any of ``schedule``, ``m``, ``v`` (as a student would), then run one step."""
        if unknown := set(changes) - {"schedule", "m", "v"}:
            raise ValueError(f"unknown control {sorted(unknown)[0]!r} (the controls are schedule, m, v)")
        self._holding = True  # one step for all the changes, not one per control
        try:
            for name, value in changes.items():
                control = self.picker if name == "schedule" else getattr(self, name)
                if name != "schedule":
                    control.max = max(control.max, value)
                control.value = value
        finally:
            self._holding = False
        name = self.picker.value
        self.v.disabled = name not in VIRTUAL
        try:
            schedule = build(name, self.p, self.m.value, self.v.value if name in VIRTUAL else 1)
            chunks = split_model(self.model, schedule.chunks)
            step = measure_step(schedule, chunks, self.batch, self.loss_fn, repeats=self.repeats)
            self.result, self.error = step, None
        except ValueError as problem:
            self.result, self.error = None, str(problem)
        self._draw()
        return self

    def _draw(self) -> None:
        width = self.diagrams.width_or(560)
        self.diagrams.value, self.diagrams.drawn = self._diagrams(width), width
        if self.result is None:
            self.message.value = f'<span style="color:#B00020">{escape(self.error or "")}</span>'
            return
        r = self.result
        peaks = ", ".join(f"{b / 1024:.0f}" for b in r.peak_activation_bytes)
        self.message.value = (f"loss {r.loss:.4f} · measured {r.measured.makespan * 1e3:.2f} ms, predicted "
                              f"{r.predicted.makespan * 1e3:.2f} ms (gap {gap(r):+.1%}, the lab's tolerance "
                              f"±{AGREEMENT:.0%}) · peak saved activations per GPU (KiB): {peaks}")

    def _diagrams(self, width: int) -> str:
        """The measured and the predicted diagram, each drawn for ``width`` px (none while the choice is impossible)."""
        if self.result is None:
            return ""
        ms = ("time (ms)", 1e3)
        return (render_svg(self.result.measured, title="measured", time=ms, width=width)
                + render_svg(self.result.predicted, title="predicted from the measured mean costs", time=ms,
                             width=width))

    def _static_html(self) -> str:
        return self.message.value + self._diagrams(STILL_WIDTH)
