"""The records a schedule is made of: an operation and a schedule (per-stage op lists)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, NamedTuple

Kind = Literal["F", "B", "W"]


class Op(NamedTuple):
    """One unit of work on one stage: forward ``F``, backward ``B`` or weight-gradient ``W``.

    ``B`` is a full backward unless the schedule also has the matching ``W``, in which case
    it is only the input-gradient part. ``direction`` is 1 for micro-batches that enter a
    bidirectional pipeline (DualPipe) at the last GPU. An immutable tuple, so that the
    simulator can use an op itself as a dictionary key.

    >>> Op("F", 3, 5)
    F3c5
    """

    kind: Kind
    microbatch: int
    chunk: int
    direction: int = 0

    def __repr__(self) -> str:
        return f"{self.kind}{self.microbatch}c{self.chunk}" + ("'" if self.direction else "")


@dataclass(frozen=True)
class Schedule:
    """Per stage (GPU), the ordered operations it runs, plus where each model chunk lives.

    ``placement[d][c]`` is the stage that holds chunk ``c`` for direction ``d``; micro-batches
    of direction ``d`` pass through chunks ``0, 1, …`` in order, then back. ``overlapped`` holds
    the backwards that run overlapped with the forward just before them on their stage.

    >>> from ppedu.schedules import gpipe
    >>> gpipe(2, 2).stages[0]
    (F0c0, F1c0, B0c0, B1c0)
    """

    stages: tuple[tuple[Op, ...], ...]
    name: str
    placement: tuple[tuple[int, ...], ...]
    microbatches: int
    virtual: int = 1
    overlapped: frozenset[Op] = frozenset()

    @property
    def p(self) -> int:
        return len(self.stages)

    @property
    def chunks(self) -> int:
        return len(self.placement[0])

    @cached_property
    def split_backwards(self) -> frozenset[tuple[int, int, int]]:
        """The (micro-batch, chunk, direction) whose backward this schedule splits into B and W.

        >>> from ppedu.schedules import zero_bubble_h1
        >>> sorted(zero_bubble_h1(2, 1).split_backwards)
        [(0, 0, 0), (0, 1, 0)]
        """
        return frozenset(op[1:] for stage in self.stages for op in stage if op.kind == "W")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first operation that is missing, repeated or misplaced."""
        ops = [op for stage in self.stages for op in stage]
        counts = Counter(ops)
        if len(counts) < len(ops):
            op, n = next((op, n) for op, n in counts.items() if n > 1)
            raise ValueError(f"operation {op!r} appears {n} times (each operation runs exactly once)")
        for s, stage in enumerate(self.stages):
            for c, d in {(op.chunk, op.direction) for op in stage}:
                op = next(op for op in stage if (op.chunk, op.direction) == (c, d))
                if not 0 <= d < len(self.placement) or not 0 <= c < self.chunks:
                    raise ValueError(f"operation {op!r} names a chunk or direction the model does not have")
                if self.placement[d][c] != s:
                    raise ValueError(f"operation {op!r} is on stage {s} but chunk {c} lives on stage {self.placement[d][c]}")
        batches = {(op.microbatch, op.direction) for op in ops}
        kinds = Counter(op.kind for op in ops)
        if unknown := set(kinds) - {"F", "B", "W"}:
            op = next(op for op in ops if op.kind in unknown)
            raise ValueError(f"operation {op!r} has kind {op.kind!r}; the kinds are F, B and W")
        # With no repeats and every chunk real, full counts mean nothing is missing.
        if kinds["F"] != len(batches) * self.chunks or kinds["B"] != len(batches) * self.chunks:
            missing = next(Op(k, mb, c, d) for mb, d in sorted(batches) for c in range(self.chunks)
                           for k in ("F", "B") if Op(k, mb, c, d) not in counts)
            raise ValueError(f"operation {missing!r} is missing")
        for s, stage in enumerate(self.stages):
            for before, op in zip((None, *stage), stage):
                if op in self.overlapped and (op.kind != "B" or before is None or before.kind != "F"):
                    raise ValueError(f"operation {op!r} is marked overlapped but does not follow an F on stage {s}")
        for op in ops:
            if op.kind == "W" and Op("B", op.microbatch, op.chunk, op.direction) not in counts:
                raise ValueError(f"operation {op!r} has no matching B")
        if len({mb for mb, _ in batches}) != len(batches):
            raise ValueError("a micro-batch appears in both directions")
        if len(batches) != self.microbatches:
            raise ValueError(f"schedule runs {len(batches)} micro-batches, expected {self.microbatches}")

    def __str__(self) -> str:
        return "\n".join(f"GPU {s}: " + " ".join(map(repr, ops)) for s, ops in enumerate(self.stages))
