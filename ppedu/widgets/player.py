"""TimelinePlayer: step a spacetime diagram through time, for a lecturer to run live."""

from __future__ import annotations

import asyncio

import ipywidgets as widgets

from ppedu.grid import grid
from ppedu.simulate import Timeline
from ppedu.svg import render_svg
from ppedu.widgets._parts import STILL_WIDTH, ControlNames, Fitted, StaticFallback

#: What a screen reader calls the time slider.
NAME = "t, time step shown"


class TimelinePlayer(StaticFallback, widgets.VBox):
    """A play button and a time slider over ``timeline``'s diagram; at step ``t`` the diagram
    shows what has run by the end of time step ``t`` (0: nothing yet).

    The play button is a labelled toggle (a screen reader names it "play" or "pause"; ipywidgets'
    own Play shows three unnamed icon buttons) that steps the slider from the kernel's event loop.

    >>> from ppedu import schedules, simulate
    >>> player = TimelinePlayer(simulate(schedules.gpipe(2, 2)))
    >>> player.steps, player.seek(3).running()
    (6, ('', 'F1'))
    """

    def __init__(self, timeline: Timeline, interval_ms: int = 600) -> None:
        self.timeline = timeline
        cells = grid(timeline)
        self.dt = cells.dt
        self._labels = cells.labels()
        self.steps = cells.shape[1]
        self.interval_ms = interval_ms
        self.play = widgets.ToggleButton(description="▶ play", tooltip="play the diagram step by step",
                                         layout=widgets.Layout(width="7em")).add_class("ppedu-play")
        self.play.observe(self._toggled, names="value")
        self.slider = widgets.IntSlider(value=0, min=0, max=self.steps, description="t",
                                        tooltip=NAME).add_class("ppedu-time")
        self.diagram = Fitted(layout=widgets.Layout(width="100%")).add_class("ppedu-diagram")
        self.diagram.observe(lambda _change: self._draw(), names="width")
        self.caption = widgets.HTML().add_class("ppedu-caption")
        self.slider.observe(lambda _change: self._draw(), names="value")
        super().__init__([widgets.HBox([self.play, self.slider]), self.diagram, self.caption,
                          ControlNames({"t": NAME})])
        self.add_class("ppedu-player")
        self._draw()

    @property
    def step(self) -> int:
        return int(self.slider.value)

    def seek(self, step: int) -> TimelinePlayer:
        """Show the diagram as it stands at the end of time step ``step`` (0 … ``steps``)."""
        if not 0 <= step <= self.steps:
            raise ValueError(f"step lies between 0 and {self.steps} (got {step})")
        self.slider.value = step
        return self

    def running(self) -> tuple[str, ...]:
        """What each GPU runs in the current step (GPU 0 first; ``""`` where idle)."""
        if self.step == 0:
            return ("",) * self.timeline.p
        return tuple(str(row[self.step - 1]) for row in self._labels)

    def _static_html(self) -> str:
        return render_svg(self.timeline, width=STILL_WIDTH)

    def _toggled(self, change: dict) -> None:
        self.play.description = "❚❚ pause" if change["new"] else "▶ play"
        if change["new"]:
            if self.step == self.steps:
                self.seek(0)
            asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        """Step on every ``interval_ms`` until the end or until paused (runs in the kernel's event loop)."""
        while self.play.value and self.step < self.steps:
            await asyncio.sleep(self.interval_ms / 1000)
            if self.play.value:
                self.seek(self.step + 1)
        self.play.value = False

    def _draw(self) -> None:
        width = self.diagram.width_or(560)
        self.diagram.value = render_svg(self.timeline, upto=self.step * self.dt, width=width)
        self.diagram.drawn = width
        doing = ", ".join(f"GPU {s}: {x}" for s, x in enumerate(self.running()) if x)
        text = f"t{self.step}: {doing}" if self.step else "t0: nothing has run yet"
        self.caption.value = f'<span aria-live="polite">{text}</span>'
