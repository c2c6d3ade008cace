"""Checking a student's slot counts: total slots, idle slots and the bubble ratio of a grid.

Each answer is compared with what :mod:`ppedu.grid` counts, and a wrong one is matched against
the usual mistakes (busy instead of idle slots, micro-batches instead of time steps, Megatron's
bubble/ideal instead of idle/total, a percentage, one step too many or too few) so the message
says what went wrong without giving the answer away. Answers may be numbers or the strings a
student types ("24", "0.43", "42.9 %", "24/56"); anything else gets a message, never a traceback.

>>> from ppedu import schedules, simulate
>>> t = simulate(schedules.gpipe(4, 4))
>>> check_slot_answers(t, total=56, idle=24, ratio="24/56").correct
True
>>> print(check_slot_answers(t, total=16, idle=32))
total slots: T is the number of time steps (columns of the grid), not the number of micro-batches.
idle slots: you counted the busy slots, not the idle ones.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ppedu.arrays import np

from ppedu.feedback import Feedback
from ppedu.grid import IDLE, Grid, grid
from ppedu.simulate import Timeline

Answer = int | float | str | Fraction | None


@dataclass(frozen=True)
class _Number:
    value: float  # a percentage already divided by 100
    percent: bool  # written with a % sign
    half_unit: float  # half a unit in the last digit the student wrote, as written


_NUMBER = re.compile(r"^\s*([+-]?(?:\d+(?:\.(\d*))?|\.(\d+))(?:[eE][+-]?\d+)?)\s*(%?)\s*$")
_FRACTION = re.compile(r"^\s*([+-]?\d+)\s*/\s*(\d+)\s*$")


def _parse(answer: Answer) -> _Number | str:
    """The number a student wrote, or a message saying why it is not one."""
    if isinstance(answer, bool) or (np is not None and isinstance(answer, np.bool_)):
        return "give a number, not True or False"
    if isinstance(answer, Fraction):
        return _Number(float(answer), False, 0.0)
    if isinstance(answer, numbers.Integral):
        return _Number(float(answer), False, 0.5)
    if isinstance(answer, numbers.Real):
        if not math.isfinite(answer):
            return f"{answer} is not a number you can count to; give a finite number"
        answer = repr(float(answer))  # read like typed text, so 0.43 is taken to two decimals
    if not isinstance(answer, str):
        return f"give a number (got a {type(answer).__name__})"
    text = answer.strip()
    if text.count(",") == 1 and "." not in text:  # a decimal comma: 0,43
        text = text.replace(",", ".")
    if match := _FRACTION.match(text):
        top, bottom = int(match[1]), int(match[2])
        if bottom == 0:
            return f"{answer!r} divides by zero"
        return _Number(top / bottom, False, 0.0)
    if match := _NUMBER.match(text):
        value = float(match[1])
        decimals = match[2] if match[2] is not None else (match[3] or "")
        if not math.isfinite(value):
            return f"{answer!r} is not a number you can count to"
        percent = bool(match[4])
        half_unit = 0.5 * 10.0 ** -len(decimals) if "e" not in match[1].lower() else 0.0
        return _Number(value / 100 if percent else value, percent, half_unit)
    return f"{answer!r} is not a number (write it like 24, 0.43, 42.9% or 24/56)"


def _near(x: _Number, target: float) -> bool:
    # A rounded figure counts when it rounds the true value, but never looser than 0.43 or 43 %.
    tolerance = min(x.half_unit / 100 if x.percent else x.half_unit, 0.005)
    return abs(x.value - target) <= tolerance + 1e-12


def check_slot_answers(timeline_or_grid: Timeline | Grid, total: Answer = None, idle: Answer = None,
                       ratio: Answer = None) -> Feedback:
    """Check a student's total slots, idle slots and bubble ratio (idle ÷ total) of a grid.

    Slots are the grid's cells (``grid(timeline)``: one time unit each under unit costs). Only
    the answers passed are checked; an empty string counts as an answer left blank.

    >>> from ppedu import schedules, simulate
    >>> print(check_slot_answers(simulate(schedules.one_f_one_b(4, 4)), ratio=42.9))
    bubble ratio: 42.9 is not a fraction between 0 and 1: it looks like a percentage (write it with %).
    """
    g = timeline_or_grid if isinstance(timeline_or_grid, Grid) else grid(timeline_or_grid)
    asked = {name: value for name, value in (("total slots", total), ("idle slots", idle), ("bubble ratio", ratio))
             if value is not None}
    if not asked:
        return Feedback(False, ("give at least one answer: total slots, idle slots or the bubble ratio",))
    parsed = {name: _parse(value) if not (isinstance(value, str) and not value.strip()) else "no answer yet"
              for name, value in asked.items()}
    messages, correct = [], True
    for name, number in parsed.items():
        if isinstance(number, str):
            verdict = (False, number)
        elif name == "total slots":
            verdict = _check_total(g, number)
        elif name == "idle slots":
            verdict = _check_idle(g, number)
        else:
            verdict = _check_ratio(g, number, parsed.get("total slots"), parsed.get("idle slots"))
        correct &= verdict[0]
        messages.append(f"{name}: {verdict[1]}")
    return Feedback(correct, tuple(messages))


def _whole(x: _Number, what: str) -> str | None:
    if x.percent:
        return f"{what} is a count of cells, not a percentage"
    if x.value < 0:
        return f"{what} cannot be negative"
    if not float(x.value).is_integer():
        return f"{what} is a whole number of cells (each cell is one GPU for one time step)"
    return None


def _check_total(g: Grid, x: _Number) -> tuple[bool, str]:
    p, steps = g.shape
    m = g.timeline.schedule.microbatches
    if problem := _whole(x, "the total"):
        return False, problem
    n = int(x.value)
    if n == g.total_slots:
        return True, "correct."
    hints = [
        (p * m, "T is the number of time steps (columns of the grid), not the number of micro-batches."),
        (steps, "that is one GPU's time steps; the total counts every GPU: GPUs × time steps."),
        (g.busy_slots, "that counts only the busy slots; the total includes the idle ones too."),
        (p * (m + p - 1), "m + p − 1 steps is the forward wave alone; count every column, backwards included."),
        (p * (steps - 1), "one time step too few: count the columns again, from t1 to the last step."),
        (p * (steps + 1), "one time step too many: count the columns again, from t1 to the last step."),
        ((p - 1) * steps, "one GPU too few: GPU 0 is a row too (the bottom one)."),
        ((p + 1) * steps, "one GPU too many: count the rows, GPU 0 at the bottom."),
    ]
    for value, hint in hints:
        if n == value:
            return False, hint
    return False, "not quite: total slots = number of GPUs (rows) × number of time steps (columns)."


def _edges(g: Grid) -> tuple[int, int]:
    """Idle cells before each GPU's first op (the warm-up triangle) and after its last (cooldown)."""
    lead = trail = 0
    for row in g.rows:
        busy = [t for t, cell in enumerate(row) if cell != IDLE]
        lead += busy[0] if busy else len(row)
        trail += len(row) - 1 - busy[-1] if busy else 0
    return lead, trail


def _check_idle(g: Grid, x: _Number) -> tuple[bool, str]:
    if problem := _whole(x, "the number of idle slots"):
        return False, problem
    n = int(x.value)
    if n == g.idle_slots:
        return True, "correct."
    if n > g.total_slots:
        return False, "that is more idle slots than there are slots in the grid."
    lead, trail = _edges(g)
    hints = [
        (g.busy_slots, "you counted the busy slots, not the idle ones."),
        (g.total_slots, "that is every slot; count only the empty (idle) ones."),
        (lead, "that is only the warm-up triangle (idle before each GPU starts); GPUs also wait later on."),
        (trail, "that is only the cooldown triangle (idle after each GPU finishes); GPUs also wait earlier."),
        (lead + trail, "you counted the warm-up and cooldown triangles but missed idle slots in between."),
    ]
    for value, hint in hints:
        if n == value:
            return False, hint
    if abs(n - g.idle_slots) <= max(2, g.shape[0] // 2):
        return False, "close, but not quite: recount the empty cells row by row."
    return False, "not quite: idle slots are the empty cells; count them row by row (or total − busy)."


def _check_ratio(g: Grid, x: _Number, total: _Number | str | None, idle: _Number | str | None) -> tuple[bool, str]:
    truth = g.bubble_ratio
    if _near(x, truth):
        return True, "correct."
    p, m = g.shape[0], g.timeline.schedule.microbatches
    v = g.timeline.schedule.virtual
    closed_form = (p - 1) / (v * m + p - 1)
    alternatives = [
        (g.idle_slots / g.busy_slots if g.busy_slots else math.inf,
         "that is bubble time ÷ ideal (busy) time, Megatron-LM's figure; the course's ratio is idle ÷ total."),
        (g.busy_slots / g.total_slots, "that is the utilization (busy ÷ total); the bubble ratio is idle ÷ total."),
        (g.total_slots / g.idle_slots if g.idle_slots else math.inf, "upside down: the ratio is idle ÷ total."),
        (closed_form, "that is the closed form for equal costs; this grid's own counts differ, so count them."),
    ]
    if not x.percent and x.value > 1 and _near(x, alternatives[2][0]):
        return False, alternatives[2][1]
    if not x.percent and 1 < x.value <= 100:
        scaled = _Number(x.value / 100, True, x.half_unit)
        if _near(scaled, truth):
            return False, f"{x.value:g} is not a fraction between 0 and 1: it looks like a percentage (write it with %)."
        for value, hint in alternatives:
            if _near(scaled, value):
                return False, f"read as a percentage, {hint}"
        return False, f"{x.value:g} is not a fraction between 0 and 1 (a ratio of slots is at most 1)."
    for value, hint in alternatives:
        if _near(x, value):
            return False, hint
    if isinstance(total, _Number) and isinstance(idle, _Number) and total.value > 0 \
            and _near(x, idle.value / total.value) and not (_near(total, g.total_slots) and _near(idle, g.idle_slots)):
        return False, "that follows from your counts, but a count is off; fix it and divide again."
    if x.value < 0 or x.value > 1:
        return False, "a ratio of slots lies between 0 and 1."
    return False, "not quite: the bubble ratio is idle slots ÷ total slots."


def check_marking(timeline_or_grid: Timeline | Grid, marked: set[tuple[int, int]] | frozenset[tuple[int, int]],
                  hidden: Sequence[Sequence[bool]] | None = None) -> Feedback:
    """Check the cells ``(stage, step)`` a student marked as idle. A wrong mark on a cell the
    student can see is pointed out; under ``hidden`` cells only how many are wrong is said.

    >>> from ppedu import schedules, simulate
    >>> t = simulate(schedules.gpipe(2, 2))
    >>> print(check_marking(t, {(0, 2), (0, 3), (1, 0), (1, 1)}))
    GPU 1, t2 runs an operation: it is not idle.
    1 idle cell is not marked yet.
    """
    g = timeline_or_grid if isinstance(timeline_or_grid, Grid) else grid(timeline_or_grid)
    p, steps = g.shape
    hidden = [[False] * steps for _ in range(p)] if hidden is None else hidden
    outside = sorted(cell for cell in marked if not (0 <= cell[0] < p and 0 <= cell[1] < steps))
    if outside:
        return Feedback(False, tuple(f"GPU {s}, t{t + 1} is not a cell of this grid." for s, t in outside))
    idle = {(s, t) for s, row in enumerate(g.rows) for t, cell in enumerate(row) if cell == IDLE}
    busy_marked = sorted(set(marked) - idle)
    unmarked = len(idle - set(marked))
    messages = [f"GPU {s}, t{t + 1} runs an operation: it is not idle." for s, t in busy_marked if not hidden[s][t]]
    if secret := sum(1 for s, t in busy_marked if hidden[s][t]):
        messages.append(f"{secret} of the hidden cells you marked {'is' if secret == 1 else 'are'} busy.")
    if unmarked:
        messages.append(f"{unmarked} idle cell{'s are' if unmarked > 1 else ' is'} not marked yet.")
    if messages:
        return Feedback(False, tuple(messages))
    return Feedback(True, (f"correct: all {len(idle)} idle cells are marked, and only those.",))
