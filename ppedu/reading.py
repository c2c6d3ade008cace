"""Checking a student's reading of a grid: the critical path traced cell by cell, and the idle cells sorted by cause.

A critical path is any chain of operations from the first time step to the last, each starting as the one before it
ends — the next on the same GPU, or the one that takes its output (:func:`ppedu.critical.traced`). Under equal costs
there are often several of the makespan's length, and any of them is right. The idle cells are sorted as
:data:`ppedu.idle.SORTS` does: the pipeline filling, draining, or the order's own. A wrong answer is told what the
rule is, cell by cell, without the rest of the answer.

>>> from ppedu import schedules, simulate
>>> from ppedu.grid import grid
>>> g = grid(simulate(schedules.gpipe(2, 1)))  # F0, then F0 B0 on GPU 1, then B0 on GPU 0
>>> print(check_path(g, {(0, 0), (1, 1), (1, 2), (0, 3)}))
correct: 4 operations, each starting as the one before it ends, from t1 to t4.
>>> print(check_causes(g, {(1, 0): "fill", (0, 1): "drain", (0, 2): "fill", (1, 3): "drain"}))
GPU 0, t2: not drain: the pipeline is still filling there (GPU 0 has not run its first backward yet).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ppedu.critical import traced
from ppedu.feedback import Feedback
from ppedu.grid import IDLE, Grid, label
from ppedu.idle import SORTS

Cell = tuple[int, int]
#: Why an idle cell is of its sort, as a student is told when they sorted it otherwise.
_WHY = {
    "fill": "the pipeline is still filling there (GPU {s} has not run its first backward yet)",
    "drain": "the pipeline is draining there (GPU {s} has run its last forward and its first backward)",
    "order": ("that is the order's own: GPU {s} has run a backward and has forwards still to run, so the pipeline is "
              "neither filling nor draining; the order left it waiting for an input"),
}
_SHOWN = 8  # wrong cells named one by one; the rest are counted


def readable(g: Grid) -> str | None:
    """Why the grid cannot be read cell by cell for its path and causes, or ``None`` if it can: a hand-over or a
    slower GPU puts idle time on the path, which no cell shows."""
    others = {c for row in g.causes() for c in row if c and c not in SORTS}
    if others:
        return f"its idle time includes {', '.join(sorted(others))}, which a grid's cells do not show"
    return None


def _where(g: Grid, i: int) -> str:
    e = g.timeline.events[i]
    a, b = round(e.start / g.dt), round(e.end / g.dt)
    return f"{label(e.op, g.timeline)} on GPU {e.stage} (t{a + 1}{f'–t{b}' if b - a > 1 else ''})"


def _path(g: Grid, marked: Collection[Cell]) -> tuple[frozenset[int], frozenset[int], frozenset[int], list[Cell]]:
    """The marked ops whole (an op is on a path whole or not at all), the chains of them that open and close a
    critical path, and the marked cells outside both."""
    p, steps = g.shape
    rows = g.rows
    cells: dict[int, int] = {}
    for s, t in marked:
        if 0 <= s < p and 0 <= t < steps and rows[s][t] != IDLE:
            cells[rows[s][t]] = cells.get(rows[s][t], 0) + 1
    whole = frozenset(i for i, n in cells.items() if n == sum(row.count(i) for row in rows))
    opened, closed = traced(g.timeline, set(whole))
    if opened and max(g.timeline.events[i].end for i in opened) >= g.timeline.makespan:
        closed = opened  # one path traced in full: any other marked, a second path included, is off it
    good = opened | closed
    return whole, opened, closed, sorted(c for c in marked if not (0 <= c[0] < p and 0 <= c[1] < steps)
                                         or rows[c[0]][c[1]] not in good)


def _steps(g: Grid, ops: frozenset[int]) -> int:
    return sum(round(g.timeline.events[i].duration / g.dt) for i in ops)


def path_share(g: Grid, marked: Collection[Cell]) -> float:
    """The share of a critical path traced, from 0 to 1: the steps of the chains that open and close one (the
    longer, where the two overlap in time without meeting), less one for each other cell marked."""
    _, opened, closed, wrong = _path(g, marked)
    events, steps = g.timeline.events, g.shape[1]
    apart = not opened or not closed or max(events[i].end for i in opened) <= min(events[i].start for i in closed)
    good = _steps(g, opened | closed) if apart else max(_steps(g, opened), _steps(g, closed))
    return max(0.0, min(good, steps) - len(wrong)) / steps if steps else 0.0


def check_path(g: Grid, marked: Collection[Cell]) -> Feedback:
    """Check the cells ``(stage, step)`` a student marked as a critical path of ``g`` (see the module's notes)."""
    p, steps = g.shape
    rows, events = g.rows, g.timeline.events
    whole, opened, closed, wrong = _path(g, marked)
    messages = []
    for s, t in wrong:
        if not (0 <= s < p and 0 <= t < steps):
            messages.append(f"GPU {s}, t{t + 1} is not a cell of this grid.")
        elif rows[s][t] == IDLE:
            messages.append(f"GPU {s}, t{t + 1} is idle: a critical path runs through operations only, with no gap.")
        elif rows[s][t] not in whole:
            messages.append(f"{_where(g, rows[s][t])} is marked in part: an operation is on a path whole or not at "
                            "all.")
        elif opened and max(events[i].end for i in opened) >= g.timeline.makespan:
            messages.append(f"{_where(g, rows[s][t])} is busy but off the path you traced: the step does not wait "
                            "for it.")
        else:
            messages.append(f"{_where(g, rows[s][t])} is busy, but no chain you marked reaches it from t1 or leads "
                            "from it to the end.")
    messages = list(dict.fromkeys(messages))
    if not opened:
        messages.append("no marked operation starts at t1: a critical path begins with one that starts at once.")
    elif max(events[i].end for i in opened) < g.timeline.makespan:
        last = max(opened, key=lambda i: events[i].end)
        messages.append(f"your path breaks after {_where(g, last)}: the next operation on it starts as that one ends "
                        "— the next on the same GPU, or the one that takes its output.")
    if not closed:
        messages.append(f"no marked operation ends at t{steps}: a critical path ends with the one that finishes the "
                        "step.")
    if messages:
        return Feedback(False, tuple(messages))
    return Feedback(True, (f"correct: {len(opened)} operations, each starting as the one before it ends, "
                           f"from t1 to t{steps}.",))


def causes_share(g: Grid, given: Mapping[Cell, str]) -> float:
    """The share of the idle cells sorted right, from 0 to 1, less one for each busy cell given a cause."""
    truth = g.causes()
    p, steps = g.shape
    inside = {(s, t): sort for (s, t), sort in given.items() if 0 <= s < p and 0 <= t < steps}
    right = sum(bool(truth[s][t]) and SORTS.get(truth[s][t]) == sort for (s, t), sort in inside.items())
    busy = sum(not truth[s][t] for s, t in inside) + len(given) - len(inside)
    return max(0.0, right - busy) / g.idle_slots if g.idle_slots else 0.0


def check_causes(g: Grid, given: Mapping[Cell, str]) -> Feedback:
    """Check the sort (``"fill"``, ``"drain"`` or ``"order"``) a student gave each idle cell ``(stage, step)``."""
    truth = g.causes()
    p, steps = g.shape
    messages, unsorted = [], 0
    for s, t in sorted(given):
        if not (0 <= s < p and 0 <= t < steps):
            messages.append(f"GPU {s}, t{t + 1} is not a cell of this grid.")
        elif not truth[s][t]:
            messages.append(f"GPU {s}, t{t + 1} runs an operation: it is not idle, so it has no idle cause.")
        elif (right := SORTS.get(truth[s][t], truth[s][t])) != given[s, t]:
            messages.append(f"GPU {s}, t{t + 1}: not {given[s, t]}: {_WHY.get(right, right).format(s=s)}.")
    unsorted = sum(1 for s, row in enumerate(truth) for t, c in enumerate(row) if c and (s, t) not in given)
    shown = messages[:_SHOWN]
    if len(messages) > _SHOWN:
        shown.append(f"… and {len(messages) - _SHOWN} more cells sorted wrong.")
    if unsorted:
        shown.append(f"{unsorted} idle cell{'s have' if unsorted > 1 else ' has'} no cause yet.")
    if shown:
        return Feedback(False, tuple(shown))
    return Feedback(True, (f"correct: all {g.idle_slots} idle cells sorted (fill, drain or the order's own).",))
