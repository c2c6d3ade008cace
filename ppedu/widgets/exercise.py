"""SlotCountingExercise: count the slots of a spacetime grid, mark its idle cells, trace its critical path or sort its
idle cells by cause, and get a hint."""

from __future__ import annotations

from html import escape
from itertools import product
from pathlib import Path
from typing import Literal

import ipywidgets as widgets

from ppedu import answer_file as saved
from ppedu.arrays import table
from ppedu.feedback import Wrong
from ppedu.slots import Answer, Feedback, check_marking, check_slot_answers
from ppedu.grid import Grid, grid
from ppedu.ops import Schedule
from ppedu.idle import CAUSE_STYLE
from ppedu.picture import Picture
from ppedu.reading import check_causes, check_path, readable
from ppedu.schedules import build
from ppedu.simulate import Timeline, simulate
from ppedu.svg import cell_look, render_grid_svg
from ppedu.widgets._parts import STILL_WIDTH, CellGrid, EnterChecks, Fitted, StaticFallback, feedback_html

_WIDTH = 560  # the grid's width until the page has said how wide its box is

Mode = Literal["count", "mark", "path", "causes"]
_MARK_STEPS = 64
#: In causes mode each click on an idle cell gives it the next sort, then clears it: (sort, cell text, tint).
_CYCLE = (("fill", "f", CAUSE_STYLE["fill"][0]), ("drain", "d", "#D9D9D9"),
          ("order", "o", CAUSE_STYLE["activation"][0]))
_ASK = {"mark": "Click every idle cell", "path": "Click every cell of a critical path (the chain of operations that "
        "sets the step's length)", "causes": "Click each idle cell to say why it is idle: once for the pipeline "
        "filling (f), twice for draining (d), three times for the order's own (o), four to clear"}


class SlotCountingExercise(StaticFallback, widgets.VBox):
    """The grid of a schedule and three questions: total slots, idle slots, bubble ratio.

    ``schedule_or_timeline`` is a :class:`Timeline`, a :class:`Schedule` (run under unit costs),
    a schedule's name with ``p`` and ``m``, or a :class:`~ppedu.picture.Picture`: a graded question's grid as
    data, which the exercise shows (its covered cells as ``?``) and saves answers on, but never checks: it holds
    nothing to check them with. ``hide`` covers that fraction of the time steps,
    from the right, so the student reasons about what is hidden. In ``mode="mark"`` the student
    clicks the cells that are idle instead of typing counts; in ``mode="path"`` the cells of a
    critical path; in ``mode="causes"`` each idle cell, as often as it takes to give it its cause
    (:mod:`ppedu.reading` checks those two).

    As an exam question, ``answers`` names a file beside the notebook (``"counting.json"``) where
    every change is saved at once under ``question``, for nbgrader's submit to carry and the
    autograder to grade; the exercise starts from what is saved there, and shows no verdict.

    >>> x = SlotCountingExercise("gpipe", p=4, m=4)
    >>> print(x.check(total=56, idle=32, ratio="24/56"))
    total slots: correct.
    idle slots: you counted the busy slots, not the idle ones.
    bubble ratio: correct.
    >>> m = SlotCountingExercise("gpipe", p=2, m=1, mode="mark")
    >>> for cell in [(0, 1), (0, 2), (1, 0), (1, 3)]:
    ...     m.toggle(*cell)
    >>> m.check_marking().correct
    True
    >>> c = SlotCountingExercise("gpipe", p=2, m=1, mode="causes")
    >>> for _ in range(2):
    ...     c.toggle(0, 1)
    >>> c.sorted
    {(0, 1): 'drain'}
    """

    def __init__(self, schedule_or_timeline: Timeline | Schedule | str, hide: float = 0.0, mode: Mode = "count",
                 p: int = 4, m: int = 4, answers: str | None = None, question: str = "slots") -> None:
        if mode not in _ASK and mode != "count":
            raise ValueError(f"mode is 'count', 'mark', 'path' or 'causes' (got {mode!r})")
        if hide and mode in ("path", "causes"):
            raise ValueError(f"hide covers steps to count or mark; a {mode} reading needs the whole grid")
        if not 0 <= hide <= 1:
            raise ValueError(f"hide is the fraction of time steps to hide, between 0 and 1 (got {hide!r})")
        self.timeline: Timeline | None
        self.grid: Grid | Picture
        if isinstance(schedule_or_timeline, Picture):
            if hide:
                raise ValueError("a picture is covered where its question covers it: give no hide")
            self.timeline, self.grid = None, schedule_or_timeline
        else:
            source = build(schedule_or_timeline, p, m) if isinstance(schedule_or_timeline, str) else schedule_or_timeline
            self.timeline = source if isinstance(source, Timeline) else simulate(source)
            self.grid = grid(self.timeline)
        self.mode: Mode = mode
        steps = self.grid.shape[1]
        if mode in ("path", "causes") and isinstance(self.grid, Grid) and (why := readable(self.grid)):
            raise ValueError(f"this grid cannot be read cell by cell for its {mode}: {why}")
        if mode != "count" and steps > _MARK_STEPS:
            raise ValueError(f"mark mode clicks cell by cell, so it takes at most {_MARK_STEPS} time steps (this grid has "
                             f"{steps}); use mode='count', or costs on a coarser grid")
        covered = steps - round(hide * steps)  # the first hidden step
        self.hidden = table(self.grid.covered() if isinstance(self.grid, Picture) else
                            [[t >= covered for t in range(steps)] for _ in range(self.grid.shape[0])], bool)
        self.marked: set[tuple[int, int]] = set()
        self.sorted: dict[tuple[int, int], str] = {}  # causes mode: idle cell → "fill", "drain" or "order"
        if answers is not None and Path(answers).name != answers:
            raise ValueError(f"answers is a file name in the notebook's folder, without a folder (got {answers!r})")
        self.answers, self.question = (Path(answers) if answers else None), question
        self.feedback = widgets.HTML().add_class("ppedu-feedback")
        self.button = widgets.Button(description="Check", button_style="primary").add_class("ppedu-check")
        self.button.on_click(lambda _b: self._check_from_ui())
        # A field's value reaches the kernel when the student leaves it or presses Enter, so Check never grades what
        # was typed before (an exam saves every keystroke instead: nothing typed is lost).
        self.fields = {name: widgets.Text(description=name, placeholder="your answer", continuous_update=answers is not None,
                                          style={"description_width": "7em"})
                       for name in ("total slots", "idle slots", "bubble ratio")}
        if mode == "count":
            # Drawn for the width its box has (a slide's: the cells widen until their labels stand apart).
            self.picture: widgets.Widget = Fitted(layout=widgets.Layout(width="100%")).add_class("ppedu-diagram")
            self.picture.observe(lambda _change: self._draw_grid(), names="width")
            self._draw_grid()
            inputs: list[widgets.Widget] = list(self.fields.values())
        else:
            name = f"{self.grid.shape[0]} GPUs by {steps} time steps: arrow keys move, Enter or Space clicks a cell"
            self.picture = CellGrid(*self.grid.shape, on_click=self.toggle, toggles=True, name=name).add_class("ppedu-diagram")
            inputs = [widgets.HTML(f"{escape(_ASK[mode])}, then check." if self.answers is None else
                                   f"{escape(_ASK[mode])}; each click is saved.")]
        buttons = [self.button, EnterChecks()] if self.answers is None else []
        if self.answers is not None:
            self._restore()
            for text in self.fields.values():
                text.observe(lambda _change: self._save(), names="value")
        else:
            for text in self.fields.values():  # a verdict on answers since changed would mislead
                text.observe(lambda _change: self._clear(), names="value")
        if mode != "count":
            self._paint()
        super().__init__([self.picture, *inputs, *buttons, self.feedback])
        self.add_class("ppedu-slot-exercise")

    def _draw_grid(self) -> None:
        assert isinstance(self.picture, Fitted)
        width = self.picture.width_or(_WIDTH)
        self.picture.value, self.picture.drawn = render_grid_svg(self.grid, self.hidden, width=width), width

    @property
    def answer(self) -> saved.SlotAnswer:
        """The answer as it stands: the counts typed (count mode), the cells marked (mark and path modes) or the idle
        cells sorted (causes mode)."""
        if self.mode == "causes":
            return saved.SlotAnswer(causes=frozenset((s, t, sort) for (s, t), sort in self.sorted.items()))
        if self.mode != "count":
            return saved.SlotAnswer(marked=frozenset(self.marked))
        total, idle, ratio = (self.fields[name].value for name in ("total slots", "idle slots", "bubble ratio"))
        return saved.SlotAnswer(total=total, idle=idle, ratio=ratio)

    def saved(self) -> str:
        """What the autograder will grade: the answer saved in the answers file (read from the file, not
        from this widget); :class:`~ppedu.feedback.Wrong` if it is missing or incomplete."""
        __tracebackhide__ = True
        if self.answers is None:
            raise ValueError("this exercise saves nothing: give it answers='<file>.json'")
        try:
            answer = saved.read(self.answers).get(self.question)
        except saved.Unreadable as problem:
            raise Wrong(f"{problem}; answer in the exercise again to save it anew.") from None
        if answer is None:
            raise Wrong(f"nothing saved for this question in {self.answers.name} yet: answer in the exercise above.")
        if self.mode == "causes":
            if not answer.causes:
                raise Wrong("no idle cell has a cause yet: click the idle cells of the grid above.")
            return f"saved in {self.answers.name}: {len(answer.causes)} idle cells given a cause."
        if self.mode != "count":
            if not answer.marked:
                raise Wrong(f"no cell is marked yet: {_ASK[self.mode][0].lower()}{_ASK[self.mode][1:]} above.")
            return f"saved in {self.answers.name}: {len(answer.marked)} cells marked{' idle' * (self.mode == 'mark')}."
        missing = [name for name, text in (("total slots", answer.total), ("idle slots", answer.idle),
                                           ("bubble ratio", answer.ratio)) if not text.strip()]
        if missing:
            raise Wrong(f"no answer for {' and '.join(missing)} yet: type it in the exercise above.")
        return f"saved in {self.answers.name}: total {answer.total}, idle {answer.idle}, ratio {answer.ratio}."

    def check(self, total: Answer = None, idle: Answer = None, ratio: Answer = None) -> Feedback:
        """Check an attempt (and show it in the fields); answers left out are taken from the fields."""
        given = {"total slots": total, "idle slots": idle, "bubble ratio": ratio}
        for name, value in given.items():
            if value is not None:
                self.fields[name].value = str(value)
        values = [self.fields[name].value if value is None else value for name, value in given.items()]
        return self._show(check_slot_answers(self._checkable(), *values))

    def toggle(self, stage: int, step: int) -> None:
        """Mark the cell (``stage``, ``step``; steps from 0), or unmark it; in causes mode give it the next cause."""
        if not (0 <= stage < self.grid.shape[0] and 0 <= step < self.grid.shape[1]):
            raise ValueError(f"GPU {stage}, t{step + 1} is not a cell of this {self.grid.shape[0]}×{self.grid.shape[1]} grid")
        if self.mode == "causes":
            sorts = [sort for sort, _, _ in _CYCLE]
            now = self.sorted.pop((stage, step), None)
            if (then := sorts.index(now) + 1 if now else 0) < len(sorts):
                self.sorted[stage, step] = sorts[then]
        else:
            self.marked ^= {(stage, step)}
        if self.mode != "count":
            self._paint(stage, step)
        self._clear()
        self._save()

    def check_marking(self) -> Feedback:
        """Check the cells marked (or, in causes mode, sorted) so far."""
        if self.mode == "path":
            return self._show(check_path(self._checkable(), self.marked))
        if self.mode == "causes":
            return self._show(check_causes(self._checkable(), self.sorted))
        return self._show(check_marking(self._checkable(), self.marked, self.hidden))

    def _checkable(self) -> Grid:
        if not isinstance(self.grid, Grid):
            raise ValueError("this exercise shows a graded question's picture: the autograder checks it, not the exercise")
        return self.grid

    def _static_html(self) -> str:
        marked = None if self.mode == "count" else set(self.sorted) if self.mode == "causes" else self.marked
        ask = ("Count the total slots, the idle slots and the bubble ratio." if self.mode == "count" else
               _ASK[self.mode] + ".")
        return render_grid_svg(self.grid, self.hidden, marked, width=STILL_WIDTH) + f"<p>{ask}</p>"

    def _restore(self) -> None:
        assert self.answers is not None
        try:
            answer = saved.read(self.answers).get(self.question, saved.SlotAnswer())
        except saved.Unreadable as problem:
            self.feedback.value = feedback_html(Feedback(False, (f"{problem}: start again; your answers will replace it.",)))
            return
        for name, text in zip(("total slots", "idle slots", "bubble ratio"), (answer.total, answer.idle, answer.ratio)):
            self.fields[name].value = text
        p, steps = self.grid.shape
        self.marked = {(s, t) for s, t in answer.marked if 0 <= s < p and 0 <= t < steps}
        self.sorted = {(s, t): sort for s, t, sort in sorted(answer.causes) if 0 <= s < p and 0 <= t < steps}

    def _save(self) -> None:
        if self.answers is None:
            return
        saved.save(self.answers, self.question, self.answer)
        # Neutral, not green: saving says nothing about whether the answer is right.
        self.feedback.value = f'<p class="ppedu-saved">Saved in {escape(self.answers.name)}.</p>'

    def _check_from_ui(self) -> None:
        if self.mode == "count":
            self.check()
        else:
            self.check_marking()

    def _show(self, feedback: Feedback) -> Feedback:
        self.feedback.value = feedback_html(feedback)
        return feedback

    def _clear(self) -> None:
        """No verdict shown on answers that have changed since it was given."""
        if self.answers is None:
            self.feedback.value = ""

    def _paint(self, *only: int) -> None:
        assert isinstance(self.picture, CellGrid)
        labels, starts, kinds = self.grid.labels(), self.grid.starts(), self.grid.kinds()
        cells = [tuple(only)] if only else list(product(*map(range, self.grid.shape)))
        cycle = {sort: (letter, tint) for sort, letter, tint in _CYCLE}
        for s, t in cells:
            sort = self.sorted.get((s, t))
            marked = (s, t) in self.marked or sort is not None
            # What the student's click left on the cell: its sign, what a screen reader says, the tint of an idle one.
            tick, mark, tint = ((cycle[sort][0], f", blamed on {sort}", cycle[sort][1]) if sort else
                                ("◆", ", marked on the path", "#FCE4D6") if self.mode == "path" else
                                ("✗", ", marked idle", "#FCE4D6"))
            flag = "ppedu-marked" if marked else None
            tick, mark = (tick, mark) if marked else ("", "")
            if self.hidden[s][t]:
                self.picture.show(s, t, f"{tick}?", "#616161", flag, "hidden" + mark)
            elif kinds[s][t]:
                # A marked busy cell keeps its label: the student sees what they marked.
                text = labels[s][t] if starts[s][t] else "·"
                what = labels[s][t] if starts[s][t] else f"{labels[s][t]} continues"
                self.picture.show(s, t, f"{tick}{text}", cell_look(self.grid, s, t)[0], flag, what + mark)
            else:
                self.picture.show(s, t, tick, tint if marked else None, flag, "empty" + mark)
