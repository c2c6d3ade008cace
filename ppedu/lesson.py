"""Small computations the chapters ask of a schedule beyond the simulator's own metrics, and
the tables and self-check verdicts the notebooks show."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import astuple, dataclass, fields
from math import isclose
from typing import Generic, TypeVar, overload

from ppedu.costs import Costs
from ppedu.feedback import Feedback
from ppedu.ops import Schedule
from ppedu.schedules import interleaved_1f1b, one_f_one_b
from ppedu.simulate import Timeline, simulate
from ppedu.text import columns

Row = TypeVar("Row")


class _Cells:
    """What a table shows: its cells (a header row first), as Markdown in a notebook and aligned text when printed."""

    def _cells(self) -> list[tuple[str, ...]]:
        raise NotImplementedError

    def _repr_markdown_(self) -> str:
        cells = self._cells()
        if not cells:
            return "*(no rows)*"
        lines = ["| " + " | ".join(row) + " |" for row in cells]
        lines.insert(1, "|" + "---|" * len(cells[0]))
        return "\n".join(lines)

    def __str__(self) -> str:
        return columns(self._cells())


#: A field name's last words that name a unit, and the unit as a heading writes it.
_UNITS = {("gb", "s"): "GB/s", ("mb", "s"): "MB/s", ("gb",): "GB", ("mb",): "MB", ("kb",): "KB"}


def heading(name: str) -> str:
    """A field's name as a column heading: its words spaced, a unit at its end written as a unit is.

    >>> heading("size_mb"), heading("algbw_gb_s"), heading("time_ms"), heading("mb")
    ('size MB', 'algbw GB/s', 'time ms', 'mb')
    """
    words = name.split("_")
    unit = next((u for u in _UNITS if len(words) > len(u) and tuple(words[-len(u):]) == u), ())
    return " ".join(words[:len(words) - len(unit)] + ([_UNITS[unit]] if unit else []))


@dataclass(frozen=True)
class Table(_Cells, Generic[Row]):
    """Records shown as a table: Markdown in a notebook, aligned plain text when printed."""

    rows: tuple[Row, ...]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> Table[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | Table[Row]:
        return Table(self.rows[i]) if isinstance(i, slice) else self.rows[i]

    def _cells(self) -> list[tuple[str, ...]]:
        if not self.rows:
            return []
        header = tuple(heading(f.name) for f in fields(self.rows[0]))  # type: ignore[arg-type]
        return [header] + [tuple(_show(x) for x in astuple(r)) for r in self.rows]  # type: ignore[call-overload]

    def wide(self, key: str, across: str, *shown: str) -> Wide:
        """The same records laid out wide: a row for each value of the field ``key``, and for each value of ``across``
        its records' ``shown`` fields side by side (a table of sizes by collectives fits a slide where one row a
        record runs off it). A pair with no record shows a blank.

        >>> from dataclasses import make_dataclass
        >>> Timed = make_dataclass("Timed", ["kind", "size_mb", "time_ms"])
        >>> rows = Table(tuple(Timed(k, s, s * t) for k, t in (("all-reduce", 2), ("all-gather", 1)) for s in (1, 4)))
        >>> print(rows.wide("size_mb", "kind", "time_ms"))
        size MB  all-reduce time ms  all-gather time ms
        1        2                   1
        4        8                   4
        """
        names = [f.name for f in fields(self.rows[0])] if self.rows else []  # type: ignore[arg-type]
        if unknown := [name for name in (key, across, *shown) if name not in names]:
            raise ValueError(f"no field {unknown[0]!r} in these rows (the fields are {', '.join(names)})")
        keys = list(dict.fromkeys(getattr(r, key) for r in self.rows))
        groups = list(dict.fromkeys(getattr(r, across) for r in self.rows))
        at = {(getattr(r, key), getattr(r, across)): r for r in self.rows}
        header = (heading(key), *(f"{g} {heading(name)}" for g in groups for name in shown))
        return Wide((header, *((_show(k), *(_show(getattr(at[k, g], name)) if (k, g) in at else "" for g in groups
                                            for name in shown)) for k in keys)))


@dataclass(frozen=True)
class Wide(_Cells):
    """A :class:`Table` laid out wide (:meth:`Table.wide`): its cells, a header row first."""

    cells: tuple[tuple[str, ...], ...]

    def _cells(self) -> list[tuple[str, ...]]:
        return list(self.cells)


def hand_overs(schedule: Schedule) -> int:
    """How many operations take their input from another GPU (each one an activation or a
    gradient sent over a link): ``2·m·(p·v - 1)`` for interleaved 1F1B, ``2·m·(p - 1)`` for 1F1B.

    >>> hand_overs(one_f_one_b(4, 8)), hand_overs(interleaved_1f1b(4, 8, 2))
    (48, 112)
    """
    return schedule.hand_overs


def parameter_copies(schedule: Schedule) -> float:
    """How many whole model stages' parameters each GPU holds: 1 for a one-directional pipeline
    (a v-way cut holds v chunks of 1/v each), 2 for DualPipe.

    >>> parameter_copies(interleaved_1f1b(4, 8, 2))
    1.0
    """
    return sum(row.count(0) for row in schedule.placement) / schedule.virtual


@dataclass(frozen=True)
class Limits:
    """What one schedule costs and saves, on a model shared with the other schedules."""

    schedule: str
    makespan: float
    idle_total: str
    bubble_ideal: str
    peak_activations: str
    hand_overs: int
    parameter_copies: float


def limits(schedules: list[Schedule], costs: Costs) -> Table[Limits]:
    """Each schedule on the same model: ``costs`` are per whole stage, and a schedule that cuts
    the model ``v`` times finer pays ``1/v`` of them per chunk.

    >>> [row.makespan for row in limits([one_f_one_b(4, 8), interleaved_1f1b(4, 8, 2)], Costs())]
    [22.0, 19.0]
    """
    rows = []
    for s in schedules:
        t = simulate(s, costs.per_chunk(s.virtual))
        name = s.name + (f" v={s.virtual}" if s.virtual > 1 else "")
        rows.append(Limits(name, t.makespan, f"{t.bubble_ratio:.2%}", f"{t.bubble_over_ideal:.2%}",
                           " ".join(f"{x:g}" for x in t.peak_stage_activations), hand_overs(s), parameter_copies(s)))
    return Table(tuple(rows))


def spans(timeline: Timeline) -> tuple[float, ...]:
    """Per micro-batch, the time from its first forward to its last backward (or W): how long it
    is in flight, its activations with it.

    >>> spans(simulate(one_f_one_b(2, 3)))
    (4.0, 5.0, 4.0)
    """
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for e in timeline.events:
        k = e.op.microbatch
        first[k] = min(first.get(k, e.start), e.start)
        last[k] = max(last.get(k, e.end), e.end)
    return tuple(last[k] - first[k] for k in sorted(first))


def check(answer: object, expected: object, hint: str) -> Feedback:
    """Judge a student's ``answer`` against ``expected`` (computed by ppedu): right, not yet (with
    ``hint``), or not answered (``None``). Numbers match to 0.5 %; words ignore case and spaces.

    >>> print(check(None, 24, "count the dots"))
    Write your answer in place of None, then run the cell again.
    >>> print(check(18, 24, "count every dot, in every row"))
    Not yet: count every dot, in every row
    >>> check(0.4286, 3 / 7, "").correct, check(" Memory", "memory", "").correct
    (True, True)
    """
    if answer is None:
        return Feedback(False, ("Write your answer in place of None, then run the cell again.",))
    numbers = (int, float)
    if isinstance(answer, bool) != isinstance(expected, bool):  # True is not the number 1 here
        right = False
    elif isinstance(expected, numbers) and isinstance(answer, numbers):
        right = isclose(answer, expected, rel_tol=5e-3, abs_tol=1e-9)
    elif isinstance(expected, str) and isinstance(answer, str):
        right = answer.strip().casefold() == expected.strip().casefold()
    else:
        right = answer == expected
    return Feedback(True, ("Right.",)) if right else Feedback(False, (f"Not yet: {hint}",))


def _show(x: object) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:g}"
    return str(x)
