"""Parts the widgets share: a grid of clickable cells, feedback as HTML, and a still picture
beside each widget's live view."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as widgets

from ppedu.feedback import Feedback


def feedback_html(feedback: Feedback) -> str:
    """The messages as a list, green when correct, red otherwise."""
    colour = "#1B7F3B" if feedback.correct else "#B00020"
    lines = "".join(f"<li>{escape(message)}</li>" for message in feedback.messages)
    return f'<ul style="color:{colour};margin:0.3em 0">{lines}</ul>'


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


_BORDER = "1px solid #BDBDBD"  # empty cells must be visible: they are where the student clicks
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
                cell = widgets.Button(description="", tooltip=f"GPU {s}, t{t + 1}",
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
        """Set one cell's text and colour (``None``: the empty-cell look); ``flag`` names a CSS class
        (``ppedu-marked``, ``ppedu-violation``) that the cell then carries, with a red outline."""
        cell = self.cells[stage, step]
        cell.description = text
        cell.style.button_color = colour or "#FFFFFF"
        for name in _FLAGS:
            if name == flag:
                cell.add_class(name)
            else:
                cell.remove_class(name)
        cell.layout.border = "2px solid #B00020" if flag else _BORDER
