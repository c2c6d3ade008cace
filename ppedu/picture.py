"""A spacetime grid as data: what a graded question shows, cell by cell, and nothing that made it.

A question that asks students to read a grid gives them a :class:`Picture`, never the order or the simulation behind
it: its cells are text (an op's label where the op starts, ``·`` where it continues, nothing where the GPU is idle,
``?`` where the question covers the grid), so no method here can count, trace or explain anything. The instructors'
side makes pictures from simulated grids (:meth:`Picture.of`) and ships them as JSON in the assignment's question
data (:mod:`ppedu.grading.questiondata`).

>>> pic = Picture.from_json({"rows": [["F0", "·", "", "B0"], ["", "F0", "B0", "?"]]})
>>> print(pic)
GPU 1 | .  F0 B0 ?
GPU 0 | F0 ·  .  B0
        t1 t2 t3 t4
        . idle   · the operation to its left continues   ? covered
>>> pic.shape, pic.kinds()[0], pic.starts()[0]
((2, 4), ['F', 'F', '', 'B'], [True, False, False, True])
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: What a cell may hold besides an op's label.
IDLE, CONTINUES, COVERED = "", "·", "?"
#: An op's label: its kind, its micro-batch, maybe its chunk, a ``'`` for a second direction.
LABEL = re.compile(r"[FBW]\d{1,3}(c\d{1,3})?'?")
#: The largest picture a question may show (more than a grid that can be clicked cell by cell needs).
MAX_GPUS, MAX_STEPS = 32, 256


class NotAPicture(ValueError):
    """Data that is not a picture; the message says why, in one line."""


@dataclass(frozen=True)
class Picture:
    """``rows[s][t]``: what GPU ``s`` shows in time step ``t`` (GPU 0 first; drawn at the bottom)."""

    rows: tuple[tuple[str, ...], ...]
    title: str = ""

    def __post_init__(self) -> None:
        if not self.rows or not self.rows[0] or len(self.rows) > MAX_GPUS or len(self.rows[0]) > MAX_STEPS:
            raise NotAPicture(f"a picture has 1 to {MAX_GPUS} GPUs and 1 to {MAX_STEPS} time steps")
        if any(len(row) != len(self.rows[0]) for row in self.rows):
            raise NotAPicture("every GPU's row of a picture has as many time steps")
        for s, row in enumerate(self.rows):
            for t, cell in enumerate(row):
                if cell not in (IDLE, CONTINUES, COVERED) and not LABEL.fullmatch(cell):
                    raise NotAPicture(f"GPU {s}, t{t + 1} holds {cell[:20]!r}, which is no cell of a picture")
                if cell == CONTINUES and (t == 0 or row[t - 1] in (IDLE, COVERED)):
                    raise NotAPicture(f"GPU {s}, t{t + 1} continues an operation that is not there")

    @classmethod
    def from_json(cls, data: Any) -> Picture:
        """The picture ``data`` describes (``{"rows": [[cell, …], …], "title": …}``, as :meth:`to_json` writes)."""
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise NotAPicture("a picture is a JSON object with its rows")
        rows = data["rows"]
        if not all(isinstance(row, list) and all(isinstance(c, str) for c in row) for row in rows):
            raise NotAPicture("a picture's rows are lists of cells, each a short text")
        title = data.get("title", "")
        if not isinstance(title, str):
            raise NotAPicture("a picture's title is a text")
        return cls(tuple(tuple(row) for row in rows), title[:200])

    def to_json(self) -> dict[str, Any]:
        return {"rows": [list(row) for row in self.rows], **({"title": self.title} if self.title else {})}

    @classmethod
    def of(cls, grid: Any, covered: Any = None, title: str = "") -> Picture:
        """The picture of a :class:`~ppedu.grid.Grid` (what the instructors' side turns a simulation into), with the
        cells ``covered[s][t]`` covered: their content is not in the picture at all."""
        labels, starts = grid.labels(), grid.starts()
        p, steps = grid.shape
        rows = []
        for s in range(p):
            row = []
            for t in range(steps):
                if covered is not None and covered[s][t]:
                    row.append(COVERED)
                elif not labels[s, t]:
                    row.append(IDLE)
                else:
                    row.append(str(labels[s, t]) if starts[s, t] or row[-1] == COVERED else CONTINUES)
            rows.append(tuple(row))
        return cls(tuple(rows), title)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0])

    def covered(self) -> list[list[bool]]:
        return [[c == COVERED for c in row] for row in self.rows]

    def labels(self) -> list[list[str]]:
        """Per cell the label of the op it shows (a continuing cell's is the op's to its left), or ``""``."""
        out = []
        for row in self.rows:
            now, line = "", []
            for cell in row:
                now = now if cell == CONTINUES else cell if cell not in (IDLE, COVERED) else ""
                line.append(now)
            out.append(line)
        return out

    def kinds(self) -> list[list[str]]:
        """Per cell ``"F"``, ``"B"``, ``"W"`` or ``""`` (idle or covered)."""
        return [[label[:1] for label in row] for row in self.labels()]

    def starts(self) -> list[list[bool]]:
        """True where a cell is the first step of the op it shows."""
        return [[c not in (IDLE, COVERED, CONTINUES) for c in row] for row in self.rows]

    def __str__(self) -> str:
        steps = self.shape[1]
        width = max([len(c) for row in self.rows for c in row] + [len(f"t{steps}")])
        lines = []
        for s in reversed(range(self.shape[0])):
            cells = (c or "." for c in self.rows[s])
            row = " ".join(c.ljust(width) for c in cells).rstrip()
            lines.append(f"GPU {s:<{len(str(self.shape[0] - 1))}} | {row}")
        indent = " " * (lines[0].index("|") + 2)
        lines.append(indent + " ".join(f"t{t + 1}".ljust(width) for t in range(steps)).rstrip())
        legend = ". idle   · the operation to its left continues"
        extras = [("   ? covered", COVERED), ("   ' second direction", "'")]
        legend += "".join(text for text, mark in extras if any(mark in c for row in self.rows for c in row))
        lines.append(indent + legend)
        return (self.title + "\n" if self.title else "") + "\n".join(lines)

    def _repr_html_(self) -> str:
        from ppedu.svg import render_grid_svg

        return render_grid_svg(self)
