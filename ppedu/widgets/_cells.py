"""A grid of clickable cells (one button per GPU and time step, GPU 0 at the bottom)."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets


class CellGrid(widgets.GridBox):
    """``p`` rows by ``steps`` columns of buttons; a click calls ``on_click(stage, step)``.

    Each cell carries the classes ``ppedu-cell``, ``ppedu-cell-{stage}-{step}`` (steps from 0)
    so a browser test can find it.
    """

    def __init__(self, p: int, steps: int, on_click: Callable[[int, int], None], width: int = 38) -> None:
        self.cells: dict[tuple[int, int], widgets.Button] = {}
        children: list[widgets.Widget] = []
        for s in reversed(range(p)):
            children.append(widgets.Label(f"GPU {s}"))
            for t in range(steps):
                cell = widgets.Button(description="", tooltip=f"GPU {s}, t{t + 1}",
                                      layout=widgets.Layout(width=f"{width}px", height="28px", padding="0"))
                cell.add_class("ppedu-cell").add_class(f"ppedu-cell-{s}-{t}")
                cell.on_click(lambda _button, s=s, t=t: on_click(s, t))
                self.cells[s, t] = cell
                children.append(cell)
        children.append(widgets.Label(""))
        children += [widgets.Label(f"t{t + 1}", layout=widgets.Layout(width=f"{width}px")) for t in range(steps)]
        super().__init__(children, layout=widgets.Layout(
            grid_template_columns=f"56px repeat({steps}, {width}px)", grid_gap="2px"))

    def show(self, stage: int, step: int, text: str, colour: str | None, marked: bool = False) -> None:
        """Set one cell's text and colour (``None``: the empty-cell look)."""
        cell = self.cells[stage, step]
        cell.description = text
        cell.style.button_color = colour or "#FFFFFF"
        if marked:
            cell.add_class("ppedu-marked")
        else:
            cell.remove_class("ppedu-marked")
