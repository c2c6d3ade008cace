"""Parts the widgets share: a grid of clickable cells, feedback as HTML, and a still picture
beside each widget's live view."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from ppedu.feedback import Feedback
from ppedu.palette import ALERT, BACKGROUND, BORDER, OK, TEXT, ink

#: An empty cell's text: ipywidgets' button keeps its old text when the description becomes "".
EMPTY = "\u00a0"


def feedback_html(feedback: Feedback) -> str:
    """The messages as a list in the theme's text colour (readable in every theme), edged green or
    red (the words say which too); a screen reader announces it (``role="alert"``)."""
    colour = OK if feedback.correct else ALERT
    lines = "".join(f"<li>{escape(message)}</li>" for message in feedback.messages)
    return (f'<div role="alert" style="color:{TEXT};border-left:4px solid {colour};padding-left:.5em;margin:.3em 0">'
            f'<ul style="margin:0;padding-left:1.2em;white-space:normal">{lines}</ul></div>')


def scrolling(html: str) -> str:
    """``html`` (a wide SVG) in a box that scrolls sideways rather than shrinking it. Its width is
    its container's (width 0, at least 100%): never its content's, which would widen the widget."""
    return f'<div class="ppedu-scroll" style="overflow-x:auto;width:0;min-width:100%">{html}</div>'


# In the page: name each slider handle (role="slider") inside the parent widget by its description, or by the longer
# name given for it. ipywidgets ties a dropdown's label to its <select>, but noUiSlider's handles get no name; they
# are named again whenever the page rebuilds them (a slider's range changed).
_NAMING_ESM = """
function render({ model, el }) {
  let observer = null, frame = 0;
  const name = () => {
    const names = model.get("names");
    for (const box of el.parentElement.querySelectorAll(".widget-slider")) {
      const label = box.querySelector(".widget-label")?.textContent.trim() ?? "";
      const wanted = names[label] ?? label;
      for (const handle of box.querySelectorAll("[role=slider]")) {
        if (wanted && handle.getAttribute("aria-label") !== wanted) handle.setAttribute("aria-label", wanted);
      }
    }
  };
  const start = () => {  // the view is drawn before the page places it inside its parent
    if (!el.parentElement) { frame = requestAnimationFrame(start); return; }
    name();
    observer = new MutationObserver(name);
    observer.observe(el.parentElement, { childList: true, subtree: true });
  };
  start();
  model.on("change:names", name);
  return () => { cancelAnimationFrame(frame); observer?.disconnect(); };
}
export default { render };
"""


class ControlNames(anywidget.AnyWidget):
    """An invisible child that gives every slider of its parent widget an accessible name (``aria-label``):
    ``names[description]`` where given, else the slider's description.

    >>> ControlNames({"m": "m, micro-batches"}).names
    {'m': 'm, micro-batches'}
    """

    _esm = _NAMING_ESM
    names = traitlets.Dict(traitlets.Unicode(), key_trait=traitlets.Unicode()).tag(sync=True)

    def __init__(self, names: dict[str, str] | None = None) -> None:
        super().__init__(names=names or {}, layout=widgets.Layout(display="none"))


class StaticFallback:
    """Adds ``text/html`` (from ``_static_html``) to a widget's display data, for places with no
    widget renderer (a static slide deck, an HTML export); JupyterLab still shows the widget."""

    def _static_html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is not None:
            bundle["text/html"] = f'<div class="ppedu-static">{self._static_html()}</div>'
        return bundle


_BORDER = f"1px solid {BORDER}"  # empty cells must be visible: they are where the student clicks
_FLAGS = ("ppedu-marked", "ppedu-violation")


class CellGrid(widgets.GridBox):
    """``p`` rows by ``steps`` columns of buttons; a click calls ``on_click(stage, step)``.

    Each cell carries the classes ``ppedu-cell``, ``ppedu-cell-{stage}-{step}`` (steps from 0),
    and ``ppedu-marked`` (marked idle) or ``ppedu-violation`` (breaks a rule) when flagged,
    so a browser test can find it.
    """

    def __init__(self, p: int, steps: int, on_click: Callable[[int, int], None], width: int = 38) -> None:
        self.cells: dict[tuple[int, int], widgets.Button] = {}
        children: list[widgets.Widget] = []
        for s in reversed(range(p)):
            children.append(widgets.Label(f"GPU {s}"))
            for t in range(steps):
                cell = widgets.Button(description=EMPTY, tooltip=f"GPU {s}, t{t + 1}",
                                      layout=widgets.Layout(width=f"{width}px", height="28px", padding="0",
                                                            border=_BORDER))
                cell.add_class("ppedu-cell").add_class(f"ppedu-cell-{s}-{t}")
                cell.on_click(lambda _button, s=s, t=t: on_click(s, t))
                self.cells[s, t] = cell
                children.append(cell)
        children.append(widgets.Label(""))
        children += [widgets.Label(f"t{t + 1}", layout=widgets.Layout(width=f"{width}px")) for t in range(steps)]
        super().__init__(children, layout=widgets.Layout(
            grid_template_columns=f"56px repeat({steps}, {width}px)", grid_gap="2px"))

    def show(self, stage: int, step: int, text: str, colour: str | None, flag: str | None = None) -> None:
        """Set one cell's text and colour (``None``: the empty-cell look, in the theme's background);
        ``flag`` names a CSS class (``ppedu-marked``, ``ppedu-violation``) that the cell then carries,
        with a thick outline."""
        cell = self.cells[stage, step]
        cell.description = text or EMPTY
        cell.style.button_color = colour or BACKGROUND
        cell.style.text_color = ink(colour) if colour else TEXT
        for name in _FLAGS:
            if name == flag:
                cell.add_class(name)
            else:
                cell.remove_class(name)
        cell.layout.border = f"2px solid {ALERT}" if flag else _BORDER
