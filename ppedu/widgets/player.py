"""TimelinePlayer: step a spacetime diagram through time, for a lecturer to run live."""

from __future__ import annotations

import ipywidgets as widgets

from ppedu.grid import grid
from ppedu.simulate import Timeline
from ppedu.svg import render_svg
from ppedu.widgets._parts import StaticFallback


class TimelinePlayer(StaticFallback, widgets.VBox):
    """A play button and a time slider over ``timeline``'s diagram; at step ``t`` the diagram
    shows what has run by the end of time step ``t`` (0: nothing yet).

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
        self.play = widgets.Play(value=0, min=0, max=self.steps, step=1, interval=interval_ms, description="play")
        self.slider = widgets.IntSlider(value=0, min=0, max=self.steps, description="t")
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.diagram = widgets.HTML().add_class("ppedu-diagram")
        self.caption = widgets.HTML()
        self.slider.observe(lambda _change: self._draw(), names="value")
        super().__init__([widgets.HBox([self.play, self.slider]), self.diagram, self.caption])
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
        self.play.value = step  # jslink syncs them in a browser; here keep both in step
        return self

    def running(self) -> tuple[str, ...]:
        """What each GPU runs in the current step (GPU 0 first; ``""`` where idle)."""
        if self.step == 0:
            return ("",) * self.timeline.p
        return tuple(str(x) for x in self._labels[:, self.step - 1])

    def _static_html(self) -> str:
        return render_svg(self.timeline)

    def _draw(self) -> None:
        self.diagram.value = render_svg(self.timeline, upto=self.step * self.dt)
        doing = ", ".join(f"GPU {s}: {x}" for s, x in enumerate(self.running()) if x)
        self.caption.value = f"t{self.step}: {doing}" if self.step else "t0: nothing has run yet"
