"""counting, the widget exam: its grids, made here and shipped to students only as pictures (:func:`shown`, written
into ``questions.json`` by :mod:`grader.questiondata`); no test cell hands answers in (the exercises save them in
the submission's ``counting.json``), so the Judge has nothing to score here: :mod:`grader.exam` judges the saved
file against :func:`grid`, the whole grid of each question, covered cells included.

Each variant holds three grids, none of which a student can rebuild with one call of ppedu from what they see:
question 1 counts a grid of GPipe or 1F1B whose backward takes twice a forward, its last third covered; question 2
marks the idle cells of the other schedule, its last steps covered (the covered idle cells are predicted, not seen);
questions 4 and 5 read an order no chapter draws (1F1B's pattern with every GPU warming up as GPU 0 does, or one
more) for a critical path and each idle cell's cause.

>>> pic = shown(0)["count"]
>>> grid(0, "count").shape == (len(pic["rows"]), len(pic["rows"][0]))
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ppedu import Costs, simulate
from ppedu.grid import Grid, grid as cut
from ppedu.grading.students import Picker, draw
from ppedu.idle import SORTS
from ppedu.picture import Picture
from ppedu.reading import readable
from ppedu.schedules import build
from ppedu.schedules.one_f_one_b import with_warmups

KEYS: dict[str, object] = {}
#: Question 1's costs: a backward takes twice a forward (the chapters count under equal costs).
COUNT_COSTS = Costs(f=1, b=2)


def params(k: int) -> dict[str, Any]:
    """Variant ``k``'s sizes, drawn from a hash of its number until sound."""
    return draw("counting-variant", str(k), _draw, _sound)


def _draw(pick: Picker) -> dict[str, Any]:
    count, mark = pick("schedules", (("gpipe", "1f1b"), ("1f1b", "gpipe")))
    return {"count_schedule": count, "p": pick("p", (3, 4, 5)), "m": pick("m", range(3, 7)),
            "mark_schedule": mark, "mark_p": pick("mark_p", (3, 4)), "mark_m": pick("mark_m", (3, 4, 5)),
            "read_p": pick("read_p", (3, 4)), "read_m": pick("read_m", (5, 6)),
            "read_warmup": pick("read_warmup", (0, 1))}


def _sound(v: Mapping[str, Any]) -> bool:
    """The counted grid must not have as many busy as idle slots (counting the busy ones would score); each covered
    part must hide idle cells (else there is nothing to predict) and busy ones; the read grid must have idle cells of
    the order's own (else "fill or drain" would do) and be readable cell by cell."""
    count, read = _grid(v, "count"), _grid(v, "path")
    if count.idle_slots == count.busy_slots or readable(read) is not None:
        return False
    for question in ("count", "mark"):
        g, cover = _grid(v, question), _covered(v, question)
        hidden = [g.rows[s][t] for s, row in enumerate(cover) for t, c in enumerate(row) if c]
        if hidden.count(-1) in (0, len(hidden)):
            return False
    return any(SORTS.get(c) == "order" for row in read.causes() for c in row)


def warmups(v: Mapping[str, Any]) -> tuple[int, ...]:
    """The read grid's warm-ups: every GPU runs GPU 0's ``p - 1`` forwards before its first backward, plus
    ``read_warmup`` (1F1B's GPU ``j`` runs ``p - 1 - j``)."""
    return (v["read_p"] - 1 + v["read_warmup"],) * v["read_p"]


def _grid(v: Mapping[str, Any], question: str) -> Grid:
    if question == "count":
        return cut(simulate(build(v["count_schedule"], v["p"], v["m"]), COUNT_COSTS))
    if question == "mark":
        return cut(simulate(build(v["mark_schedule"], v["mark_p"], v["mark_m"])))
    return cut(simulate(with_warmups(warmups(v), v["read_m"], "eager warm-up")))


def _covered(v: Mapping[str, Any], question: str) -> list[list[bool]]:
    """Question 1 covers the last third of its steps, question 2 the last two fifths; the read grid is whole."""
    p, steps = _grid(v, question).shape
    share = {"count": 1 / 3, "mark": 2 / 5}.get(question, 0)
    start = steps - math.ceil(share * steps)
    return [[t >= start for t in range(steps)] for _ in range(p)]


@lru_cache(maxsize=None)
def grid(k: int, question: str) -> Grid:
    """Variant ``k``'s whole grid of ``question`` ("count", "mark", "path" or "causes": the last two read one)."""
    return _grid(params(k), question)


def shown(k: int) -> dict[str, Any]:
    """What variant ``k`` shows: three pictures, covered where the question covers them."""
    v = params(k)
    costs = "a forward takes one step, a backward two"
    return {"count": Picture.of(grid(k, "count"), _covered(v, "count"), f"Question 1 ({costs})").to_json(),
            "mark": Picture.of(grid(k, "mark"), _covered(v, "mark"), "Question 2 (every operation one step)").to_json(),
            "read": Picture.of(grid(k, "path"), title="Questions 4 to 6 (every operation one step)").to_json()}
