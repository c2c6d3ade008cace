"""Parts the widgets share: a grid of clickable cells, feedback as HTML, a diagram drawn for the width it is shown
at, and a still picture beside each widget's live view."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from ppedu.feedback import Feedback
from ppedu.lecture import DRAWN_ZOOM, PICTURE_ZOOM, SLIDE
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


# In the page: the HTML (a diagram) shown, and the width of the box it is shown in, reported back whenever it changes
# (the window resized, a deck presenting it half as large again), so the kernel draws it for that width. Until the
# kernel has, a drawing too wide for the box is shrunk to fit rather than cut off; ``data-drawn`` says the width the
# drawing was made for.
_FITTED_ESM = """
function render({ model, el }) {
  el.classList.add("ppedu-fitted");
  const style = document.createElement("style");
  style.textContent = ".ppedu-fitted { display: block; width: 100%; min-width: 0; } .ppedu-fitted svg { max-width: 100%; height: auto; }";
  const draw = () => { el.innerHTML = model.get("value"); el.prepend(style); el.dataset.drawn = model.get("drawn"); };
  draw();
  model.on("change:value", draw);
  model.on("change:drawn", draw);
  let frame = 0;
  const measure = () => {
    frame = 0;
    const width = Math.floor(el.clientWidth);
    if (width > 0 && width !== model.get("width")) { model.set("width", width); model.save_changes(); }
  };
  const observer = new ResizeObserver(() => { frame = frame || requestAnimationFrame(measure); });
  observer.observe(el);
  return () => { cancelAnimationFrame(frame); observer.disconnect(); };
}
export default { render };
"""


class Fitted(anywidget.AnyWidget):
    """HTML (a diagram) drawn for the width its box has on the page: the page reports that width (``width``, CSS px,
    0 until it has) and the widget's owner draws ``value`` for it, saying which width it drew for (``drawn``). So a
    diagram fits a notebook column and a slide alike, never cut off and never scrolling out of sight.

    >>> box = Fitted("<svg/>")
    >>> box.value, box.width_or(560)
    ('<svg/>', 560)
    """

    _esm = _FITTED_ESM
    value = traitlets.Unicode("").tag(sync=True)
    width = traitlets.Int(0).tag(sync=True)
    drawn = traitlets.Int(0).tag(sync=True)

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        super().__init__(value=value, **kwargs)

    def width_or(self, default: int) -> int:
        """The box's width on the page, or ``default`` before the page has said (no page: a headless run)."""
        return self.width or default


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


# In the page: Enter in a text field of the parent widget commits what was typed (the field loses focus, which sends
# its value) and then presses the parent's Check button, as a student expects of a form.
_ENTER_CHECKS_ESM = """
function render({ el }) {
  let box = null, frame = 0;
  const enter = event => {
    if (event.key !== "Enter" || !event.target.matches("input[type=text], input:not([type])")) return;
    event.preventDefault();
    event.stopPropagation();  // not the notebook's Enter (edit mode)
    event.target.blur();
    box.querySelector(".ppedu-check")?.click();
  };
  const start = () => {
    box = el.parentElement;
    if (!box) { frame = requestAnimationFrame(start); return; }
    box.addEventListener("keydown", enter, true);  // capturing: a text field stops its keys from bubbling
  };
  start();
  return () => { cancelAnimationFrame(frame); box?.removeEventListener("keydown", enter, true); };
}
export default { render };
"""


class EnterChecks(anywidget.AnyWidget):
    """An invisible child: Enter in one of its parent's text fields presses the parent's button of class
    ``ppedu-check``, after the field's value has reached the kernel."""

    _esm = _ENTER_CHECKS_ESM

    def __init__(self) -> None:
        super().__init__(layout=widgets.Layout(display="none"))


#: How wide a still picture draws its diagram: as wide as a static deck's slide (:data:`ppedu.lecture.SLIDE`) lets an
#: output be, where a still is shown larger than a picture by as much as a live slide shows a widget.
STILL_WIDTH = round((SLIDE[0] - 40) * PICTURE_ZOOM / DRAWN_ZOOM)


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

# In the page: the grid of cells as one control for the keyboard. One Tab stop (the cell last visited; roving
# tabindex), the arrow keys move between cells (↑ the GPU above, as drawn), Home and End to a row's ends; Enter or
# Space clicks, as on any button. Each cell's name (aria-label) is its tooltip ("GPU 2, t5: F3"); in a grid of
# toggles a marked cell is pressed (aria-pressed). The focused cell wears a thick ring.
_GRID_KEYS_ESM = """
const STYLE = `.ppedu-cell:focus-visible { outline: 3px solid var(--jp-brand-color1, #1976D2) !important;
  outline-offset: 1px; box-shadow: 0 0 0 5px var(--jp-layout-color0, #fff) !important; z-index: 1; }`;

function render({ model, el }) {
  let grid = null, observer = null, frame = 0, current = null;
  const at = cell => (cell.className.match(/ppedu-cell-(\\d+)-(\\d+)/) || []).slice(1).map(Number);
  const cells = () => [...grid.querySelectorAll(":scope > .ppedu-cell")];
  const label = () => {
    for (const cell of cells()) {
      const name = cell.getAttribute("title") || "";
      if (cell.getAttribute("aria-label") !== name) cell.setAttribute("aria-label", name);
      if (model.get("toggles")) {
        const pressed = String(cell.classList.contains("ppedu-marked"));
        if (cell.getAttribute("aria-pressed") !== pressed) cell.setAttribute("aria-pressed", pressed);
      }
      const tab = cell === current ? "0" : "-1";
      if (cell.getAttribute("tabindex") !== tab) cell.setAttribute("tabindex", tab);
    }
  };
  const move = event => {
    const cell = event.target.closest(".ppedu-cell");
    if (!cell || !grid.contains(cell)) return;
    const [s, t] = at(cell), last = model.get("steps") - 1, top = model.get("stages") - 1;
    const to = {ArrowRight: [s, Math.min(t + 1, last)], ArrowLeft: [s, Math.max(t - 1, 0)],
                ArrowUp: [Math.min(s + 1, top), t], ArrowDown: [Math.max(s - 1, 0), t],
                Home: [s, 0], End: [s, last]}[event.key];
    if (!to) return;
    event.preventDefault();
    event.stopPropagation();  // the notebook's own arrow keys move between cells of the notebook
    const next = grid.querySelector(`:scope > .ppedu-cell-${to[0]}-${to[1]}`);
    if (next) { current = next; label(); next.focus(); }
  };
  const focused = event => {
    const cell = event.target.closest(".ppedu-cell");
    if (cell && cell !== current) { current = cell; label(); }
  };
  const start = () => {  // the view is drawn before the page places it inside the grid
    grid = el.parentElement;
    if (!grid) { frame = requestAnimationFrame(start); return; }
    if (!document.getElementById("ppedu-grid-keys")) {
      const style = document.createElement("style");
      style.id = "ppedu-grid-keys";
      style.textContent = STYLE;
      document.head.appendChild(style);
    }
    grid.setAttribute("role", "group");
    grid.setAttribute("aria-label", model.get("name"));
    current = cells()[0] || null;
    label();
    grid.addEventListener("keydown", move);
    grid.addEventListener("focusin", focused);
    observer = new MutationObserver(label);
    observer.observe(grid, { subtree: true, attributes: true, attributeFilter: ["class", "title"] });
  };
  start();
  return () => {
    cancelAnimationFrame(frame);
    observer?.disconnect();
    grid?.removeEventListener("keydown", move);
    grid?.removeEventListener("focusin", focused);
  };
}
export default { render };
"""


class GridKeys(anywidget.AnyWidget):
    """An invisible child of a :class:`CellGrid` that makes its cells one control for the keyboard and names them
    for a screen reader (see the page script above).

    >>> GridKeys(4, 14, "4 GPUs by 14 time steps", toggles=True).toggles
    True
    """

    _esm = _GRID_KEYS_ESM
    stages = traitlets.Int().tag(sync=True)
    steps = traitlets.Int().tag(sync=True)
    name = traitlets.Unicode().tag(sync=True)
    toggles = traitlets.Bool(False).tag(sync=True)

    def __init__(self, stages: int, steps: int, name: str, toggles: bool = False) -> None:
        super().__init__(stages=stages, steps=steps, name=name, toggles=toggles, layout=widgets.Layout(display="none"))


class CellGrid(widgets.GridBox):
    """``p`` rows by ``steps`` columns of buttons; a click calls ``on_click(stage, step)``.

    Each cell carries the classes ``ppedu-cell``, ``ppedu-cell-{stage}-{step}`` (steps from 0),
    and ``ppedu-marked`` (marked idle) or ``ppedu-violation`` (breaks a rule) when flagged,
    so a browser test can find it. Its name says GPU, step and what it holds ("GPU 1, t3: F0");
    the grid is one Tab stop, walked with the arrow keys (:class:`GridKeys`); ``toggles`` makes a
    marked cell read as pressed. The columns share the widget's whole width (a slide's too); they narrow to 30 px, a
    label's width, before the grid scrolls sideways.
    """

    def __init__(self, p: int, steps: int, on_click: Callable[[int, int], None],
                 toggles: bool = False, name: str = "") -> None:
        self.cells: dict[tuple[int, int], widgets.Button] = {}
        children: list[widgets.Widget] = []
        for s in reversed(range(p)):
            children.append(widgets.Label(f"GPU {s}"))
            for t in range(steps):
                cell = widgets.Button(description=EMPTY, tooltip=f"GPU {s}, t{t + 1}: empty",
                                      layout=widgets.Layout(width="auto", height="28px", padding="0", border=_BORDER))
                cell.add_class("ppedu-cell").add_class(f"ppedu-cell-{s}-{t}")
                cell.on_click(lambda _button, s=s, t=t: on_click(s, t))
                self.cells[s, t] = cell
                children.append(cell)
        children.append(widgets.Label(""))
        children += [widgets.Label(f"t{t + 1}", layout=widgets.Layout(width="auto")) for t in range(steps)]
        keys = GridKeys(p, steps, name or f"grid of {p} GPUs by {steps} time steps: arrow keys move, Enter clicks",
                        toggles)
        super().__init__([*children, keys], layout=widgets.Layout(
            grid_template_columns=f"56px repeat({steps}, minmax(30px, 1fr))", grid_gap="2px",
            max_width="100%", overflow="auto"))

    def show(self, stage: int, step: int, text: str, colour: str | None, flag: str | None = None,
             name: str | None = None) -> None:
        """Set one cell's text and colour (``None``: the empty-cell look, in the theme's background);
        ``flag`` names a CSS class (``ppedu-marked``, ``ppedu-violation``) that the cell then carries,
        with a thick outline; ``name`` what the cell holds, for its tooltip and a screen reader
        (by default its text, or "empty")."""
        cell = self.cells[stage, step]
        cell.description = text or EMPTY
        cell.tooltip = f"GPU {stage}, t{step + 1}: {name or text.strip() or 'empty'}"
        cell.style.button_color = colour or BACKGROUND
        cell.style.text_color = ink(colour) if colour else TEXT
        for flagged in _FLAGS:
            if flagged == flag:
                cell.add_class(flagged)
            else:
                cell.remove_class(flagged)
        cell.layout.border = f"2px solid {ALERT}" if flag else _BORDER
