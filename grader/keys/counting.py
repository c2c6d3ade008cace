"""counting, the widget exam: its grids, made here and shipped to students only as pictures (:func:`shown`, written
into ``questions.json`` by :mod:`grader.questiondata`); no test cell hands answers in (the exercises save them in
the submission's ``counting.json``), so the Judge has nothing to score here: :mod:`grader.exam` judges the saved
file against :func:`grid`, the whole grid of each question, covered cells included.

Every grid is an order built by hand here (:func:`by_hand`): each GPU runs its forwards and its backwards in
micro-batch order, and before each backward as many forwards as a random draw gave it — 1F1B's count plus a few,
changing from one backward to the next, so no schedule ppedu ships, at any ``p``, ``m`` or ``v``, and no
``with_warmups`` list draws it (tests/grading/test_counting_orders.py searches them all). Question 1 counts such a
grid with a backward twice a forward, question 2 marks the idle cells of another; both are covered from the step
after their last forward, so what lies under the cover (the backwards left, each as soon as the one above sends its
gradient) is inferred from the dependencies, not seen. Questions 4 and 5 read a third, whole, for a critical path and
each idle cell's cause. A student who transcribes a picture into a :class:`~ppedu.ops.Schedule` can simulate it,
but only after working out what the cover hides; docs/instructor.md says what the timed sitting carries.

>>> pic = shown(0)["count"]
>>> grid(0, "count").shape == (len(pic["rows"]), len(pic["rows"][0]))
True
>>> by_hand(((2, 3, 3), (1, 3, 3))).stages[1]
(F0c1, B0c1, F1c1, F2c1, B1c1, B2c1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from ppedu import Costs, simulate
from ppedu.grid import Grid, grid as cut
from ppedu.grading.students import Picker, draw
from ppedu.idle import SORTS
from ppedu.ops import Op, Schedule
from ppedu.picture import Picture
from ppedu.reading import readable

KEYS: dict[str, object] = {}
#: Question 1's costs: a backward takes twice a forward (the chapters count under equal costs).
COUNT_COSTS = Costs(f=1, b=2)
#: Each grid's question, its GPUs and micro-batches to draw from, and its costs.
GRIDS = {"count": ((3, 4), (4, 5, 6), COUNT_COSTS), "mark": ((3, 4), (4, 5), Costs()),
         "read": ((3, 4), (5, 6), Costs())}
#: The most forwards a GPU runs beyond 1F1B's before a backward.
EXTRA = 2


def params(k: int) -> dict[str, Any]:
    """Variant ``k``'s orders, drawn from a hash of its number until sound."""
    return draw("counting-variant", str(k), _draw, _sound)


def by_hand(forwards: Sequence[Sequence[int]]) -> Schedule:
    """The order in which GPU ``j`` has run ``forwards[j][i]`` forwards when it runs backward ``i`` (forwards and
    backwards each in micro-batch order). It runs without deadlock when no GPU runs fewer forwards before a backward
    than the GPU above it, and the last runs forward ``i`` before backward ``i``."""
    m = len(forwards[0])
    stages = []
    for j, counts in enumerate(forwards):
        ops: list[Op] = []
        for i, n in enumerate(counts):
            ops += [Op("F", f, j) for f in range(sum(op.kind == "F" for op in ops), n)] + [Op("B", i, j)]
        stages.append(tuple(ops))
    return Schedule(tuple(stages), "an order built by hand", (tuple(range(len(forwards))),), m)


def _forwards(pick: Picker, question: str, p: int, m: int) -> tuple[tuple[int, ...], ...]:
    """Per GPU, from the top, the forwards before each backward: 1F1B's ``p − j + i`` plus an extra of 0 to
    :data:`EXTRA` drawn afresh for each backward, within what keeps the order valid (never fewer than the GPU above,
    never fewer than before the previous backward)."""
    rows: list[tuple[int, ...]] = []
    for j in reversed(range(p)):
        row: list[int] = []
        for i in range(m):
            low = max([i + 1, p - j + i, *(row[-1:]), *(r[i] for r in rows[:1])])
            row.append(min(m, pick(f"{question}:{j}:{i}", range(low, p - j + i + EXTRA + 1))))
        rows.insert(0, tuple(row))
    return tuple(rows)


def _draw(pick: Picker) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for question, (ps, ms, _) in GRIDS.items():
        p, m = pick(f"{question}:p", ps), pick(f"{question}:m", ms)
        out[question] = _forwards(pick, question, p, m)
    return out


def hand_built(row: Sequence[int]) -> bool:
    """Whether a GPU's forwards before each backward are of no 1F1B pattern: not a warm-up then one forward per
    backward (``with_warmups``), nor every forward first (GPipe)."""
    m = len(row)
    return all(row != tuple(min(m, w + 1 + i) for i in range(m)) for w in range(m))


def _sound(v: Mapping[str, Any]) -> bool:
    """Each order is built by hand on at least two GPUs and idles beyond the fewest idle slots any order of its
    size has (``p(p − 1)(f + b)``, in :func:`fewest_idle`); the counted grid must not have as many busy as idle
    slots (counting the busy ones would score); each covered part must hide idle cells (else there is nothing to
    predict) and busy ones; the read grid must be readable cell by cell."""
    for question, forwards in v.items():
        g = _grid(v, question)
        if sum(map(hand_built, forwards)) < 2 or g.idle_slots <= fewest_idle(question, len(forwards), len(forwards[0])):
            return False
    count, read = _grid(v, "count"), _grid(v, "read")
    if count.idle_slots == count.busy_slots or readable(read) is not None:
        return False
    for question in ("count", "mark"):
        g, cover = _grid(v, question), _covered(v, question)
        hidden = [g.rows[s][t] for s, row in enumerate(cover) for t, c in enumerate(row) if c]
        if hidden.count(-1) in (0, len(hidden)):
            return False
    return any(SORTS.get(c) == "order" for row in read.causes() for c in row)


def fewest_idle(question: str, p: int, m: int) -> float:
    """The fewest idle slots any order of ``p`` GPUs and ``m`` micro-batches can have under ``question``'s costs:
    the last GPU starts ``(p − 1)f`` late and its last gradient takes ``(p − 1)b`` to reach GPU 0, so
    ``T ≥ (m + p − 1)(f + b)``; GPipe and 1F1B meet it."""
    costs = GRIDS[question][2]
    return p * (p - 1) * (float(costs.f) + float(costs.b))


def _grid(v: Mapping[str, Any], question: str) -> Grid:
    return cut(simulate(by_hand(v[question]), GRIDS[question][2]))


def _covered(v: Mapping[str, Any], question: str) -> list[list[bool]]:
    """Questions 1 and 2 cover every step after the one in which their last forward ends; the read grid is whole."""
    g = _grid(v, question)
    p, steps = g.shape
    if question == "read":
        return [[False] * steps for _ in range(p)]
    last = max(round(e.end / g.dt) for e in g.timeline.events if e.op.kind == "F")
    return [[t >= last for t in range(steps)] for _ in range(p)]


@lru_cache(maxsize=None)
def grid(k: int, question: str) -> Grid:
    """Variant ``k``'s whole grid of ``question`` ("count", "mark", "path" or "causes": the last two read one)."""
    return _grid(params(k), "read" if question in ("path", "causes") else question)


def shown(k: int) -> dict[str, Any]:
    """What variant ``k`` shows: three pictures, covered where the question covers them."""
    v = params(k)
    costs = "a forward takes one step, a backward two"
    return {"count": Picture.of(grid(k, "count"), _covered(v, "count"), f"Question 1 ({costs})").to_json(),
            "mark": Picture.of(grid(k, "mark"), _covered(v, "mark"), "Question 2 (every operation one step)").to_json(),
            "read": Picture.of(grid(k, "path"), title="Questions 4 to 6 (every operation one step)").to_json()}
