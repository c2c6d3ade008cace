"""The cost model: how long each kind of operation takes, per stage, and what a hand-over costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

PerStage = float | tuple[float, ...]


@dataclass(frozen=True)
class Costs:
    """Durations of one chunk's forward ``f``, backward ``b`` and weight-gradient ``w`` pass,
    and ``comm``, the latency of handing an activation or gradient to another stage.

    ``b`` is the input-gradient part when a schedule splits W off; a schedule that does not
    pays ``b + w`` for each full backward. ``fb`` is the time of a forward and a backward run
    overlapped (DualPipe's F&B pair); left unset, a pair costs its F plus its B. ``f``, ``b``,
    ``w`` and ``fb`` may be one number for all stages or one per stage (a slow GPU, an
    unbalanced partition).

    >>> Costs(f=1, b=2).backward(stage=0, full=True)
    2.0
    >>> Costs(f=(1, 3)).forward(1)
    3.0
    """

    f: PerStage = 1.0
    b: PerStage = 1.0
    w: PerStage = 0.0
    comm: float = 0.0
    fb: PerStage | None = None

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name == "fb":  # unset: a pair costs F plus B
                continue
            try:
                values = tuple(float(x) for x in value) if isinstance(value, Sequence) else (float(value),)
            except (TypeError, ValueError):
                values = ()
            if not values or any(not x >= 0 for x in values):  # `not >=` also rejects NaN
                raise ValueError(f"costs must be non-negative numbers (got {field.name}={value!r})")
            object.__setattr__(self, field.name, values if isinstance(value, Sequence) else values[0])

    def check(self, p: int) -> None:
        """Raise ``ValueError`` unless every per-stage cost has exactly ``p`` entries."""
        for name in ("f", "b", "w", "fb"):
            value = getattr(self, name)
            if isinstance(value, tuple) and len(value) != p:
                raise ValueError(f"per-stage cost {name} has {len(value)} values for {p} stages")

    def forward(self, stage: int) -> float:
        return _at(self.f, stage)

    def backward(self, stage: int, full: bool) -> float:
        return _at(self.b, stage) + (_at(self.w, stage) if full else 0.0)

    def weight(self, stage: int) -> float:
        return _at(self.w, stage)

    def pair(self, stage: int) -> float | None:
        """Duration of an overlapped F&B pair on ``stage``, or ``None`` for "F plus B"."""
        return None if self.fb is None else _at(self.fb, stage)

    def per_chunk(self, v: int) -> Costs:
        """These costs, given for a whole stage, split over ``v`` chunks per stage (comm unchanged).

        >>> Costs(f=2, b=4).per_chunk(2)
        Costs(f=1.0, b=2.0, w=0.0, comm=0.0, fb=None)
        """
        fb = None if self.fb is None else _scaled(self.fb, 1 / v)
        return Costs(f=_scaled(self.f, 1 / v), b=_scaled(self.b, 1 / v), w=_scaled(self.w, 1 / v), comm=self.comm, fb=fb)

    def as_dict(self) -> dict[str, PerStage]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def _scaled(value: PerStage, k: float) -> PerStage:
    return tuple(x * k for x in value) if isinstance(value, tuple) else value * k


def _at(value: PerStage, stage: int) -> float:
    return value[stage] if isinstance(value, tuple) else value
