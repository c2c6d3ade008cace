"""numpy where it is installed, plain Python where it is not: the one module that knows which.

The browser edition runs on Pyodide without numpy, so ppedu's core computes on plain lists and hands its results
out through these few functions: numpy arrays where numpy is installed (what the course's API has always given),
lists and :class:`Table` where it is not. Nothing here knows about pipelines.

>>> grid = table([[1, 2, 3], [4, 5, 6]])
>>> grid.shape, int(grid[1, 2]), [int(x) for x in grid[0]]
((2, 3), 6, [1, 2, 3])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

try:
    import numpy as np
except ImportError:  # the browser edition
    np = None  # type: ignore[assignment]

#: Whether numpy is installed (the fast path for schedules' bulk checks).
NUMPY = np is not None


def vector(values: Sequence[Any], kind: type = float) -> Any:
    """``values`` as a numpy array of ``kind`` (``float``, ``int`` or ``bool``), or as the list itself."""
    if np is None:
        return values if isinstance(values, list) else list(values)
    return np.asarray(values, dtype={float: np.float64, int: np.int64, bool: np.bool_}.get(kind, object))


def table(rows: Sequence[Sequence[Any]], kind: type = object) -> Any:
    """Rows of equal length as a 2-D numpy array of ``kind``, or as a :class:`Table`."""
    if np is None:
        return Table(tuple(map(tuple, rows)))
    array: Any = np.empty((len(rows), len(rows[0]) if rows else 0), dtype=object if kind is str else kind)
    for s, row in enumerate(rows):
        array[s, :] = row
    return array


def gather(table: Sequence[Any], *indices: Sequence[int]) -> list[Any]:
    """``table[i][j][k]…`` for each ``(i, j, k, …)`` of ``indices`` zipped (three or four), as a list. The entries
    are ``table``'s own objects, so equal ones share one float: the replay loop's inputs cost no allocation each."""
    if np is not None:
        return np.array(table, dtype=object)[tuple(np.asarray(i, dtype=np.intp) for i in indices)].tolist()
    if len(indices) == 3:
        return [table[i][j][k] for i, j, k in zip(*indices)]
    return [table[i][j][k][m] for i, j, k, m in zip(*indices)]


def spans(groups: Sequence[int], start: Any, end: Any, size: int) -> list[float]:
    """The total length ``end[i] - start[i]`` of the spans in each of ``size`` groups, added in order."""
    if np is not None and isinstance(start, np.ndarray):
        return np.bincount(groups, end - start, minlength=size).tolist()
    out = [0.0] * size
    for g, a, b in zip(groups, start, end):
        out[g] += b - a
    return out


def largest(values: Any, initial: float = 0.0) -> Any:
    """The largest value, or ``initial`` if there is none or all are smaller."""
    if np is not None and isinstance(values, np.ndarray):
        return values.max(initial=initial)
    return max(initial, max(values, default=initial))


def as_list(values: Any) -> list[Any]:
    """Plain Python numbers, from an array or a sequence."""
    return values if isinstance(values, list) else values.tolist() if hasattr(values, "tolist") else list(values)


class Table:
    """A read-only 2-D table indexed as numpy indexes one: ``t[row, column]``, ``t[row]``, ``t.shape``.

    >>> t = Table(((1, 2), (3, 4)))
    >>> t[0, 1], t[1], t.shape, t.tolist()
    (2, (3, 4), (2, 2), [[1, 2], [3, 4]])
    """

    __slots__ = ("rows",)

    def __init__(self, rows: tuple[tuple[Any, ...], ...]) -> None:
        self.rows = rows

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0]) if self.rows else 0

    def __getitem__(self, at: int | tuple[int, int]) -> Any:
        if isinstance(at, tuple):
            return self.rows[at[0]][at[1]]
        return self.rows[at]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def tolist(self) -> list[list[Any]]:
        return [list(row) for row in self.rows]

    def __repr__(self) -> str:
        return f"Table({self.tolist()!r})"
