"""The cost model: how long each kind of operation takes, per stage or per chunk, and what a
hand-over between stages costs, per link."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TypeGuard, Union, cast


class PerChunk(tuple[float, ...]):
    """Costs given per model chunk rather than per stage: entry ``c`` is chunk ``c``'s cost,
    on whichever stage holds it (an unbalanced cut of an interleaved or V-shaped model).

    As a hand-over cost (``Costs.comm``) entry ``c`` is the latency across the boundary between
    chunks ``c`` and ``c+1``, paid only where the two live on different stages.

    >>> PerChunk([1, 2.5])
    PerChunk(1.0, 2.5)
    """

    def __new__(cls, values: Sequence[float]) -> PerChunk:
        try:
            return super().__new__(cls, tuple(float(x) for x in values))
        except (TypeError, ValueError):
            raise ValueError(f"per-chunk costs are numbers, one per chunk (got {values!r})") from None

    def __repr__(self) -> str:
        return f"PerChunk({', '.join(map(repr, self))})"

    # Per chunk is not per stage, even with the same numbers.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerChunk) and tuple(self) == tuple(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


#: A compute cost: one number, one per stage (a plain tuple), or one per chunk (:class:`PerChunk`).
PerStage = Union[float, tuple[float, ...]]
#: A hand-over cost: one number, one per link between stages ``s`` and ``s+1`` (a tuple of
#: ``p-1``), a ``p × p`` matrix (``comm[a][b]``: from stage ``a`` to ``b``), or :class:`PerChunk`.
Comm = Union[float, tuple[float, ...], tuple[tuple[float, ...], ...]]


@dataclass(frozen=True)
class Costs:
    """Durations of one chunk's forward ``f``, backward ``b`` and weight-gradient ``w`` pass,
    and ``comm``, the latency of handing an activation or gradient to another stage.

    ``b`` is the input-gradient part when a schedule splits W off; a schedule that does not
    pays ``b + w`` for each full backward. ``fb`` is the time of a forward and a backward run
    overlapped (DualPipe's F&B pair); left unset, a pair costs its F plus its B.

    ``f``, ``b`` and ``w`` are one number for every chunk, a tuple with one per stage (a slow
    GPU, an unbalanced partition), or a :class:`PerChunk` with one per model chunk; ``fb`` is one
    number or one per stage.
    ``comm`` is one number for every hand-over, a tuple with one per link between consecutive
    stages, a ``p × p`` matrix, or a :class:`PerChunk` with one per chunk boundary.

    >>> Costs(f=1, b=2).backward(stage=0, full=True)
    2.0
    >>> Costs(f=(1, 3)).forward(1)
    3.0
    >>> Costs(f=PerChunk([1, 2, 3, 4])).forward(stage=0, chunk=2)
    3.0
    >>> Costs(comm=(0.1, 5.0, 0.1)).hand_over(1, 2)  # p = 4, a slow link between GPUs 1 and 2
    5.0
    """

    f: PerStage = 1.0
    b: PerStage = 1.0
    w: PerStage = 0.0
    comm: Comm = 0.0
    fb: PerStage | None = None

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name == "fb":  # unset: a pair costs F plus B
                continue
            try:
                normal = _normal(value, matrix=field.name == "comm")
            except (TypeError, ValueError):
                normal = None
            if normal is None or any(not x >= 0 for x in _flat(normal)):  # `not >=` also rejects NaN
                raise ValueError(f"costs must be non-negative numbers (got {field.name}={value!r})")
            object.__setattr__(self, field.name, normal)
        if isinstance(self.fb, PerChunk):
            raise ValueError("fb (an overlapped pair of two chunks) is one number or one per stage, not per chunk")

    def check(self, p: int, chunks: int | None = None) -> None:
        """Raise ``ValueError`` unless every cost fits ``p`` stages holding ``chunks`` model chunks
        (default ``p``): one per stage, one per chunk, ``p-1`` links or a ``p × p`` matrix."""
        chunks = p if chunks is None else chunks
        for name in ("f", "b", "w", "fb"):
            value = getattr(self, name)
            if isinstance(value, PerChunk) and len(value) != chunks:
                raise ValueError(f"per-chunk cost {name} has {len(value)} values for {chunks} chunks")
            if isinstance(value, tuple) and not isinstance(value, PerChunk) and len(value) != p:
                raise ValueError(f"per-stage cost {name} has {len(value)} values for {p} stages")
        comm = self.comm
        if isinstance(comm, PerChunk):
            if len(comm) != chunks - 1:
                raise ValueError(f"per-chunk comm has {len(comm)} values for {chunks - 1} chunk boundaries")
        elif _is_matrix(comm):
            if len(comm) != p or any(len(row) != p for row in comm):
                raise ValueError(f"a comm matrix must be {p} × {p} for {p} stages")
        elif isinstance(comm, tuple) and len(comm) != p - 1:
            raise ValueError(f"per-link comm has {len(comm)} values for the {p - 1} links between {p} stages")

    def forward(self, stage: int, chunk: int | None = None) -> float:
        return _at(self.f, stage, chunk)

    def backward(self, stage: int, full: bool, chunk: int | None = None) -> float:
        return _at(self.b, stage, chunk) + (_at(self.w, stage, chunk) if full else 0.0)

    def weight(self, stage: int, chunk: int | None = None) -> float:
        return _at(self.w, stage, chunk)

    def pair(self, stage: int) -> float | None:
        """Duration of an overlapped F&B pair on ``stage``, or ``None`` for "F plus B"."""
        return None if self.fb is None else _at(self.fb, stage, None)

    def pair_booking(self) -> str:
        """How an overlapped F&B pair (DualPipe's) is booked, in words. A pair unbooked lets its forward start before
        its backward's input is in; booked as one unit it waits for both and takes ``fb``: the two give different
        steps and bubbles for the same order, so every view of a schedule with such pairs says which it shows.

        >>> EQUAL.pair_booking()
        'F&B pairs booked as one unit of f + b + w = 3'
        >>> Costs(f=1, b=1, w=1).pair_booking(), Costs(f=1, b=1, w=1, fb=2).pair_booking()
        ('F&B pairs unbooked (each op on its own)', 'F&B pairs booked as one unit of 2')
        """
        if self.fb is None:
            return "F&B pairs unbooked (each op on its own)"
        pair = set(_flat(self.fb))
        if len(pair) > 1:
            return "F&B pairs booked as one unit (fb per stage)"
        full = (set(_flat(self.f)), set(_flat(self.b)), set(_flat(self.w)))
        whole = all(len(x) == 1 for x in full) and abs(sum(next(iter(x)) for x in full) - min(pair)) < 1e-9
        return f"F&B pairs booked as one unit of {'f + b + w = ' if whole else ''}{min(pair):g}"

    def hand_over(self, source: int, target: int, boundary: int | None = None) -> float:
        """Latency of passing an activation (or gradient) from stage ``source`` to ``target``
        across the boundary after chunk ``boundary``; nothing when they are the same stage.

        >>> Costs(comm=((0, 1, 9), (1, 0, 1), (9, 1, 0))).hand_over(2, 0)
        9.0
        """
        comm = self.comm
        if source == target:
            return 0.0
        if isinstance(comm, float):
            return comm
        if isinstance(comm, PerChunk):
            if boundary is None:
                raise ValueError("per-chunk comm needs the chunk boundary of the hand-over")
            return comm[boundary]
        if _is_matrix(comm):
            return comm[source][target]
        if abs(source - target) != 1:
            raise ValueError(f"per-link comm covers neighbouring stages only, but stage {source} hands over "
                             f"to stage {target}; give a p × p matrix instead")
        return cast(tuple[float, ...], comm)[min(source, target)]

    def per_chunk(self, v: int) -> Costs:
        """These costs, given for a whole stage, split over ``v`` chunks per stage (comm and
        values already given per chunk unchanged).

        >>> Costs(f=2, b=4).per_chunk(2)
        Costs(f=1.0, b=2.0, w=0.0, comm=0.0, fb=None)
        """
        fb = None if self.fb is None else _scaled(self.fb, 1 / v)
        return Costs(f=_scaled(self.f, 1 / v), b=_scaled(self.b, 1 / v), w=_scaled(self.w, 1 / v), comm=self.comm, fb=fb)

    def as_dict(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def _normal(value: object, matrix: bool) -> Comm | None:
    """``value`` as a float, a tuple of floats (keeping :class:`PerChunk`), or — for comm — a
    tuple of float tuples; ``None`` if it is none of those."""
    if isinstance(value, PerChunk):
        return value
    if isinstance(value, str) or not isinstance(value, Sequence):
        return float(value)  # type: ignore[arg-type]
    if matrix and value and all(isinstance(row, Sequence) and not isinstance(row, str) for row in value):
        return tuple(tuple(float(x) for x in row) for row in value)
    values = tuple(float(x) for x in value)
    return values if values or matrix else None  # a one-stage pipeline has no links


def _flat(value: Comm) -> tuple[float, ...]:
    if isinstance(value, tuple):
        return tuple(x for item in value for x in (item if isinstance(item, tuple) else (item,)))
    return (value,)


def _is_matrix(value: Comm) -> TypeGuard[tuple[tuple[float, ...], ...]]:
    return isinstance(value, tuple) and bool(value) and isinstance(value[0], tuple)


def _scaled(value: PerStage, k: float) -> PerStage:
    if isinstance(value, PerChunk):
        return value
    return tuple(x * k for x in value) if isinstance(value, tuple) else value * k


def _at(value: PerStage, stage: int, chunk: int | None) -> float:
    if isinstance(value, PerChunk):
        if chunk is None:
            raise ValueError("a per-chunk cost needs the chunk, not only the stage")
        return value[chunk]
    return value[stage] if isinstance(value, tuple) else value


#: The course's one shared cost model, per whole stage: a forward, an input-gradient and a
#: weight-gradient pass take one unit each (a full backward two), hand-overs are free, and an
#: overlapped DualPipe pair takes its forward plus its full backward (booked as one unit, as
#: DeepSeek's table books it). A schedule that cuts a stage into ``v`` chunks pays ``1/v`` per chunk.
EQUAL = Costs(f=1, b=1, w=1, fb=3)
