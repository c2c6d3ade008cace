"""The records a schedule is made of: an operation and a schedule (per-stage op lists)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, chain
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from ppedu.arrays import as_list, np

Kind = Literal["F", "B", "W"]
_LABEL = re.compile(r"^\s*([FBW])\s*(\d+)\s*(?:c\s*(\d+))?\s*('?)\s*$", re.IGNORECASE)


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
        return self.label()

    def label(self, chunk: bool = True) -> str:
        """The op's short name: ``F3c5``, or ``F3`` without the chunk (where the GPU names it);
        a trailing ``'`` marks DualPipe's second direction.

        >>> Op("B", 2, 7, 1).label(), Op("F", 3, 1).label(chunk=False)
        ("B2c7'", 'F3')
        """
        return f"{self.kind}{self.microbatch}" + (f"c{self.chunk}" if chunk else "") + ("'" if self.direction else "")

    @classmethod
    def parse(cls, text: str, chunk: int | None = None) -> Op | None:
        """The op a label names (``F2``, ``b1c5``, ``W0c3'``), taking ``chunk`` where the label
        names none; ``None`` if the text is no label or the chunk is unknown.

        >>> Op.parse("b1 c5"), Op.parse("F2", chunk=0), Op.parse("F2"), Op.parse("X1")
        (B1c5, F2c0, None, None)
        """
        match = _LABEL.match(text)
        if not match or (match[3] is None and chunk is None):
            return None
        return cls(match[1].upper(), int(match[2]), int(match[3]) if match[3] is not None else chunk,  # type: ignore[arg-type]
                   1 if match[4] else 0)

    def needs(self, chunks: int) -> Op | None:
        """The op whose output this one consumes in a model of ``chunks`` chunks (see
        :func:`needed`): same micro-batch, same direction.

        >>> Op("F", 2, 1).needs(4), Op("B", 2, 3).needs(4), Op("B", 2, 1).needs(4), Op("W", 2, 1).needs(4)
        (F2c0, F2c3, B2c2, B2c1)
        >>> Op("F", 2, 0).needs(4) is None
        True
        """
        kind, chunk, exists = needed(KINDS.index(self.kind), self.chunk, chunks)
        return Op(KINDS[kind], self.microbatch, chunk, self.direction) if exists else None


#: The kinds in the order of their codes (0, 1, 2) in :func:`needed` and :class:`Columns`.
KINDS: tuple[Kind, ...] = ("F", "B", "W")
_CODE = {k: code for code, k in enumerate(KINDS)}


def needed(kind: Any, chunk: Any, chunks: int) -> tuple[Any, Any, Any]:
    """The one dependency rule of the course, on kind codes (0 F, 1 B, 2 W) and chunk numbers —
    plain ints or numpy arrays alike: ``(kind, chunk, exists)`` of the op consumed, always of the
    same micro-batch and direction.

    - F on chunk c needs F on chunk c-1; on chunk 0 nothing (its input is the data);
    - B on chunk c needs B on chunk c+1 (the gradient); on the last chunk its own F (the loss);
    - W on chunk c needs B on chunk c (W finishes what its B began).

    >>> needed(1, 3, chunks=4), needed(0, 0, chunks=4)
    ((0, 3, 1), (0, -1, 0))
    """
    f, b, w = 1 * (kind == 0), 1 * (kind == 1), 1 * (kind == 2)  # 0/1 as ints or int arrays
    turn = b * (chunk == chunks - 1)  # the last chunk's backward starts from its own forward
    return b + w - turn, chunk - f + b - turn, 1 - f * (chunk == 0)


@dataclass(frozen=True, eq=False)
class Columns:
    """A schedule's ops in one flat order (stage by stage, each in its order), as arrays (numpy's, or lists where
    numpy is not installed): what the simulator and the checks read in bulk. ``needs[i]`` is the index of the op that op ``i``
    consumes (``-1``: none), ``forward[i]`` that of the F whose activations it works on, ``split[i]`` whether it is a B or W
    of a backward split in two, and ``start[s]`` where stage ``s``'s ops begin."""

    ops: tuple[Op, ...]
    stage: Any
    kind: Any
    microbatch: Any
    chunk: Any
    direction: Any
    needs: Any
    forward: Any
    split: Any
    start: Any


@dataclass(frozen=True)
class Schedule:
    """Per stage (GPU), the ordered operations it runs, plus where each model chunk lives.

    ``placement[d][c]`` is the stage that holds chunk ``c`` for direction ``d``; micro-batches
    of direction ``d`` pass through chunks ``0, 1, …`` in order, then back. ``overlapped`` holds
    the backwards that run overlapped with the forward just before them on their stage (never the
    forward whose output the backward needs: the two of a pair are independent).

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

    @cached_property
    def columns(self) -> Columns:
        """The ops as arrays, each op's input found by :func:`needed`: in one vectorised pass where numpy is
        installed, op by op where it is not. Raises ``ValueError`` naming the first problem if the schedule is not
        well formed.

        >>> from ppedu.arrays import as_list
        >>> from ppedu.schedules import one_f_one_b
        >>> as_list(one_f_one_b(2, 1).columns.needs)  # F0c0 B0c0 | F0c1 B0c1
        [-1, 3, 0, 2]
        """
        columns = self._columns() if np is not None else self._columns_one_by_one()
        if columns is None:
            self._explain()  # raises, naming the problem
            raise ValueError(f"schedule {self.name} is not well formed")
        return columns

    def _columns(self) -> Columns | None:
        """:attr:`columns` with numpy, or ``None`` where some rule of :meth:`validate` is broken."""
        ops = tuple(chain.from_iterable(self.stages))
        n, p, dirs_, chunks_ = len(ops), self.p, len(self.placement), self.chunks
        lengths = [len(stage) for stage in self.stages]
        start = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        stage = np.repeat(np.arange(p), lengths)
        try:
            letters = np.frombuffer("".join(map(itemgetter(0), ops)).encode("ascii"), dtype=np.uint8)
            mbs, chunks, dirs = (np.fromiter(map(itemgetter(k), ops), np.int64, n) for k in (1, 2, 3))
        except (TypeError, ValueError, UnicodeEncodeError):
            return None
        codes = np.full(256, 3, dtype=np.int64)  # an op's kind letter (a byte) → its code; 3: no kind
        codes[[ord(k) for k in KINDS]] = (0, 1, 2)
        kind = codes[letters] if len(letters) == n else np.full(n, 3)
        home = np.array(self.placement) if all(len(row) == chunks_ for row in self.placement) else None
        if home is None or (kind > 2).any() or (mbs < 0).any() or not ((0 <= dirs) & (dirs < dirs_)).all() \
                or not ((0 <= chunks) & (chunks < chunks_)).all() or (home[dirs, chunks] != stage).any():
            return None
        # Each op's dense id by (kind, direction, micro-batch, chunk), to find its input by id
        # (the ranges are checked above, so plain arithmetic makes the ids).
        mb_ids = mbs if mbs.max(initial=0) <= 2 * n else np.unique(mbs, return_inverse=True)[1]
        row = (dirs * (int(mb_ids.max(initial=0)) + 1) + mb_ids) * chunks_  # (direction, micro-batch)
        per_kind = int(row.max(initial=0)) + chunks_
        index = np.full(3 * per_kind, -1, dtype=np.int64)
        own = kind * per_kind + row + chunks
        index[own] = np.arange(n)
        batches = np.count_nonzero(np.bincount(mb_ids * dirs_ + dirs, minlength=1))
        counts = np.bincount(kind, minlength=3)
        if (index[own] != np.arange(n)).any() or counts[0] != batches * chunks_ or counts[1] != batches * chunks_ \
                or np.count_nonzero(np.bincount(mb_ids, minlength=1)) != batches or batches != self.microbatches:
            return None
        need_kind, need_chunk, exists = needed(kind, chunks, chunks_)
        need_id = need_kind * per_kind + row + np.clip(need_chunk, 0, chunks_ - 1)
        needs = np.where(exists.astype(bool), index[need_id], -1)
        forward = index[row + chunks]  # the F of the same micro-batch and chunk
        split = (index[2 * per_kind + row + chunks] >= 0) & (kind > 0)
        if (needs[kind == 2] < 0).any():
            return None  # a W without its B
        if not self._overlaps_follow_forwards(ops, start, stage, kind, needs):
            return None
        return Columns(ops, stage, kind, mbs, chunks, dirs, needs, forward, split, start)

    def _columns_one_by_one(self) -> Columns | None:
        """:attr:`columns` in plain Python (no numpy: the browser edition), or ``None`` where some rule of
        :meth:`validate` is broken: the same rules as :meth:`_columns`, each op's input found by a dictionary."""
        ops = tuple(chain.from_iterable(self.stages))
        n, dirs_, chunks_ = len(ops), len(self.placement), self.chunks
        index: dict[tuple[Any, ...], int] = dict(zip(ops, range(n)))
        if not n or len(index) < n or any(len(row) != chunks_ for row in self.placement):
            return None
        start = list(accumulate(map(len, self.stages), initial=0))
        stage = [s for s, row in enumerate(self.stages) for _ in row]
        # Per kind letter and chunk: the kind letter and chunk of the op it needs (None: nothing), by the one rule.
        source = {k: [(KINDS[kind], chunk) if exists else None for kind, chunk, exists in
                      (needed(code, c, chunks_) for c in range(chunks_))] for k, code in _CODE.items()}
        try:
            letters, mbs, chunks, dirs = zip(*ops)
            kind = [_CODE[k] for k in letters]
            home = {(d, c): s for d, row in enumerate(self.placement) for c, s in enumerate(row)}
            if min(mbs) < 0 or list(map(home.get, zip(dirs, chunks))) != stage:  # None: no such chunk
                return None
            # A KeyError here is an input missing: a W without its B, or an op of a micro-batch.
            needs = [-1 if (at := source[k][c]) is None else index[at[0], mb, at[1], d] for k, mb, c, d in ops]
            forward = [i if k == "F" else index["F", mb, c, d] for i, (k, mb, c, d) in enumerate(ops)]
        except (KeyError, TypeError, ValueError):
            return None
        batches = len(set(zip(mbs, dirs)) if dirs_ > 1 else set(mbs))
        if letters.count("F") != batches * chunks_ or letters.count("B") != batches * chunks_ \
                or len(set(mbs)) != batches or batches != self.microbatches \
                or not self._overlaps_follow_forwards(ops, start, stage, kind, needs):
            return None  # a micro-batch counted wrong
        split = [k != "F" and ("W", mb, c, d) in index for k, mb, c, d in ops] if "W" in letters else [False] * n
        return Columns(ops, stage, kind, list(mbs), list(chunks), list(dirs), needs, forward, split, start)

    def _overlaps_follow_forwards(self, ops: tuple[Op, ...], start: Any, stage: Any, kind: Any, needs: Any) -> bool:
        """Whether each overlapped op is a B straight after an F on its stage, and not the F it needs."""
        if not self.overlapped:
            return True
        found = {op: i for i, op in enumerate(ops) if op in self.overlapped}
        return len(found) == len(self.overlapped) and all(
            op.kind == "B" and i != start[stage[i]] and kind[i - 1] == 0 and needs[i] != i - 1
            for op, i in found.items())

    def home(self, op: Op) -> int:
        """The stage that runs ``op``: the one holding its chunk for its direction."""
        return self.placement[op.direction][op.chunk]

    def hand_over(self, op: Op) -> tuple[int, int] | None:
        """``(from stage, to stage)`` when ``op``'s input comes from another GPU (an activation
        or a gradient sent over a link, paying ``comm``), else ``None``.

        >>> from ppedu.schedules import one_f_one_b
        >>> s = one_f_one_b(2, 1)
        >>> s.hand_over(Op("F", 0, 1)), s.hand_over(Op("B", 0, 1))
        ((0, 1), None)
        """
        source = op.needs(self.chunks)
        if source is None:
            return None
        a, b = self.home(source), self.home(op)
        return (a, b) if a != b else None

    @cached_property
    def sent(self) -> tuple[int, ...]:
        """Per GPU, how many of its outputs (activations and gradients) another GPU takes as input.

        >>> from ppedu.schedules import one_f_one_b
        >>> one_f_one_b(3, 2).sent  # GPU 0 sends activations on, GPU 2 gradients back
        (2, 4, 2)
        """
        c = self.columns
        stage = as_list(c.stage)
        sent = [0] * self.p
        for need, s in zip(as_list(c.needs), stage):
            if need >= 0 and stage[need] != s:
                sent[stage[need]] += 1
        return tuple(sent)

    @cached_property
    def hand_overs(self) -> int:
        """How many ops take their input from another GPU: ``2·m·(p·v - 1)`` for interleaved
        1F1B, ``2·m·(p - 1)`` for 1F1B.

        >>> from ppedu.schedules import interleaved_1f1b, one_f_one_b
        >>> one_f_one_b(4, 8).hand_overs, interleaved_1f1b(4, 8, 2).hand_overs
        (48, 112)
        """
        return sum(self.sent)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first operation that is missing, repeated or misplaced.

        >>> from ppedu.schedules import gpipe
        >>> s = gpipe(2, 1)
        >>> Schedule(((s.stages[0][0],), s.stages[1]), "cut", s.placement, 1).validate()
        Traceback (most recent call last):
        ...
        ValueError: operation B0c0 is missing
        """
        self.columns  # checks every rule at once, in bulk, and explains a broken one

    def _explain(self) -> None:
        """Raise ``ValueError`` naming the first rule the schedule breaks, op by op (slow: it runs
        only when the bulk check in :attr:`columns` has found a problem)."""
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
                if op in self.overlapped and op.needs(self.chunks) == before:
                    raise ValueError(f"operation {op!r} is marked overlapped with {before!r}, whose output it needs: "
                                     "a pair overlaps two independent operations")
        for op in ops:
            if op.kind == "W" and Op("B", op.microbatch, op.chunk, op.direction) not in counts:
                raise ValueError(f"operation {op!r} has no matching B")
        if len({mb for mb, _ in batches}) != len(batches):
            raise ValueError("a micro-batch appears in both directions")
        if len(batches) != self.microbatches:
            raise ValueError(f"schedule runs {len(batches)} micro-batches, expected {self.microbatches}")

    def __str__(self) -> str:
        return "\n".join(f"GPU {s}: " + " ".join(map(repr, ops)) for s, ops in enumerate(self.stages))
