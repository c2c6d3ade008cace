"""ScheduleBuilder: the student places F and B blocks on an empty grid; broken rules show at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as widgets

from ppedu.costs import Costs
from ppedu.feedback import Feedback
from ppedu.ops import Op, Schedule
from ppedu.palette import STYLE
from ppedu.placement import PlacementTask, Violation, check_placement, violations
from ppedu.simulate import Timeline, simulate
from ppedu.widgets._parts import CellGrid, StaticFallback, feedback_html

if TYPE_CHECKING:
    from ppedu.search import Found

_ERASE = "(remove)"


class ScheduleBuilder(StaticFallback, widgets.VBox):
    """An empty ``p`` × ``steps`` grid; pick an operation, click a cell to place it there (click
    a filled cell to take its operation off). Every op takes one time step.

    ``steps`` defaults to GPipe's makespan for this model plus two, room enough for any sensible
    order. Steps count from 0 in code and show as t1, t2, … on the grid.

    >>> b = ScheduleBuilder(p=2, m=1)
    >>> b.place(0, 0, "F0"); b.place(1, 0, "F0")
    >>> [str(v) for v in b.violations()]
    ['GPU 1, t1: F0 starts before its input F0 from GPU 0 is ready (GPU 0 finishes it at the end of t1).']
    >>> b.remove(1, 0); b.place(1, 1, "F0"); b.place(1, 2, "B0"); b.place(0, 3, "B0")
    >>> b.complete, b.timeline().makespan
    (True, 4.0)
    """

    def __init__(self, p: int = 2, m: int = 2, v: int = 1, split_w: bool = False, steps: int | None = None,
                 challenge: bool = False) -> None:
        self.model = PlacementTask(p, m, v, split_w)
        self.challenge = challenge
        self._found: Found | None = None
        self.steps = steps or 2 * (m * v + p - 1) + (m * v if split_w else 0) + 2
        self.placed: dict[tuple[int, int], Op] = {}
        self._bad: set[tuple[int, int]] = set()  # cells drawn as breaking a rule
        self.picker = widgets.Dropdown(options=[_ERASE, *self._labels()], description="op")
        self.picker.value = self._labels()[0]
        self.cells = CellGrid(p, self.steps, self._clicked)
        self.feedback = widgets.HTML().add_class("ppedu-feedback")
        self.button = widgets.Button(description="Check", button_style="primary")
        self.button.on_click(lambda _b: self.check())
        super().__init__([self.picker, self.cells, self.button, self.feedback])
        self.add_class("ppedu-builder")
        self._refresh()

    # -- the plain-Python face ---------------------------------------------------------------
    def place(self, stage: int, step: int, op: Op | str) -> None:
        """Put ``op`` (an :class:`Op` or a label such as ``F2`` or ``B1c3``) on GPU ``stage`` at ``step``."""
        if not (0 <= stage < self.model.p and 0 <= step < self.steps):
            raise ValueError(f"GPU {stage}, t{step + 1} is not a cell of this {self.model.p}×{self.steps} grid")
        if (stage, step) in self.placed:
            raise ValueError(f"GPU {stage}, t{step + 1} already holds {self.model.name(self.placed[stage, step])}; "
                             "remove it first")
        parsed = self.model.parse(op, stage)
        if isinstance(parsed, str):
            raise ValueError(parsed)
        self.placed[stage, step] = parsed
        self._refresh(stage, step)

    def remove(self, stage: int, step: int) -> None:
        """Take the operation off the cell (nothing happens if it is empty)."""
        if self.placed.pop((stage, step), None) is not None:
            self._refresh(stage, step)

    def violations(self) -> list[Violation]:
        """The rules the operations placed so far break (missing ones are not counted here)."""
        return violations(self.placed, self.model.p, self.model.m, self.model.v, self.model.split_w, self.steps)

    @property
    def complete(self) -> bool:
        """Every operation placed and no rule broken."""
        return len(self.placed) == len(self.model.ops()) and not self.violations()

    def check(self) -> Feedback:
        """The verdict on the placement, as the Check button shows it."""
        feedback = check_placement(self.placed, self.model.p, self.model.m, self.model.v, self.model.split_w, self.steps)
        if feedback.correct:
            span = max(step for _, step in self.placed) + 1
            feedback = Feedback(True, (*feedback.messages, f"Your schedule takes {span} time steps.",
                                       *([self._verdict(span)] if self.challenge else [])))
        self._show(feedback)
        return feedback

    def target(self) -> float:
        """The makespan of the best order :func:`ppedu.search.search` finds on this grid (same GPUs,
        micro-batches and chunks, one time step per operation): the one to beat."""
        return self._search().makespan

    def _search(self) -> Found:
        if self._found is None:
            from ppedu.search import search

            m = self.model
            per_stage = Costs(f=m.v, b=m.v, w=m.v if m.split_w else 0)  # one step per chunk's op
            self._found = search(m.p, m.m, per_stage, cut=m.v, one_direction=True, seconds=0.5)
        return self._found

    def _verdict(self, span: int) -> str:
        """How the placement compares with the search's best order, and whether that order can be beaten at all.

        >>> b = ScheduleBuilder(p=2, m=1, challenge=True)
        >>> b._verdict(4)
        'That is the fewest steps possible: no order of these operations takes fewer than 4 (the search tried them all).'
        """
        found = self._search()
        best = found.makespan
        if span < best - 1e-9:
            return f"You beat the search: its best order takes {best:g} steps."
        if span <= best + 1e-9 and (found.exact or best <= found.lower_bound + 1e-9):
            why = "the search tried them all" if found.exact else "every GPU's work and one micro-batch's path say so"
            return f"That is the fewest steps possible: no order of these operations takes fewer than {best:g} ({why})."
        if span <= best + 1e-9:
            return f"That ties the search's best order ({best:g} steps). Can you beat it?"
        return f"The search found an order in {best:g} steps: can you beat it?"

    def schedule(self) -> Schedule:
        """The per-GPU order the placement implies (each GPU's ops by time step)."""
        p = self.model.p
        stages = tuple(tuple(op for (s, _), op in sorted(self.placed.items()) if s == stage) for stage in range(p))
        placement = (tuple(self.model.home(c) for c in range(self.model.chunks)),)
        return Schedule(stages, "built", placement, self.model.m, self.model.v)

    def timeline(self) -> Timeline:
        """The placement's order replayed by the simulator with every op one step long, as on the
        grid (W included), which needs it complete."""
        if not self.complete:
            raise ValueError("the schedule is not complete yet: place every operation without breaking a rule")
        return simulate(self.schedule(), Costs(f=1, b=1, w=1 if self.model.split_w else 0))

    # -- drawing -------------------------------------------------------------------------------
    def _labels(self) -> list[str]:
        # With one chunk per GPU a label names no chunk: the GPU clicked decides it.
        return list(dict.fromkeys(self.model.name(op) for op in self.model.ops()))

    def _static_html(self) -> str:
        return (f"<p>Schedule builder: place {len(self.model.ops())} operations on {self.model.p} GPUs × "
                f"{self.steps} time steps ({len(self.placed)} placed). Run the notebook to build.</p>")

    def _clicked(self, stage: int, step: int) -> None:
        if (stage, step) in self.placed or self.picker.value == _ERASE:
            self.remove(stage, step)
            return
        try:
            self.place(stage, step, self.picker.value)
        except ValueError as problem:
            self._show(Feedback(False, (str(problem),)))

    def _refresh(self, *only: int) -> None:
        found = self.violations()
        bad = {(v.stage, v.step) for v in found}
        cells = [tuple(only)] if only else list(self.cells.cells)
        for s, t in {*cells, *bad, *self._bad}:
            op = self.placed.get((s, t))
            text = self.model.name(op) if op else ""
            self.cells.show(s, t, text, STYLE[op.kind, 0][0] if op else None,
                            "ppedu-violation" if (s, t) in bad else None, f"{text}, breaks a rule" if (s, t) in bad else None)
        self._bad = bad
        self._show(Feedback(not found, tuple(map(str, found))) if found else
                   Feedback(True, (f"{len(self.placed)} of {len(self.model.ops())} operations placed; no rule broken.",)))

    def _show(self, feedback: Feedback) -> None:
        self.feedback.value = feedback_html(feedback)
