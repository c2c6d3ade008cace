"""Checking a student's timed placement of operations on a spacetime grid.

A placement says, for each operation, on which GPU and in which time step it starts (steps
count from 0 here and are shown as t1, t2, … as on the grid). Each operation lasts a whole
number of steps (one, unless ``durations`` says otherwise). The model is the course's: ``p``
GPUs, ``m`` micro-batches, ``p·v`` chunks with chunk ``c`` on GPU ``c mod p``; a forward needs
the previous chunk's forward, a backward the next chunk's backward (the last chunk's backward
its own forward), a weight-gradient pass W its own backward. Every problem gets one message.

>>> placed = [(0, 0, "F0"), (1, 1, "F0"), (1, 2, "B0"), (0, 2, "B0")]
>>> for v in violations(placed, p=2, m=1):
...     print(v)
GPU 0, t3: B0 starts before its input B0 from GPU 1 is ready (GPU 1 finishes it at the end of t3).
>>> check_placement([(0, 0, "F0"), (1, 1, "F0"), (1, 2, "B0"), (0, 3, "B0")], p=2, m=1).correct
True
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ppedu.feedback import Feedback
from ppedu.ops import Kind, Op
from ppedu.validate import require_counts

Placed = Mapping[tuple[int, int], Op | str] | Iterable[tuple[int, int, Op | str]]


@dataclass(frozen=True)
class Violation:
    """One problem with a placement: what rule it breaks (``kind``), where, and a message."""

    kind: str  # "unknown", "off-grid", "wrong-gpu", "duplicate", "clash", "dependency", "missing"
    stage: int
    step: int
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PlacementTask:
    """What is to be placed: ``p`` GPUs, ``m`` micro-batches, ``v`` chunks per GPU, W split off or not."""

    p: int
    m: int
    v: int = 1
    split_w: bool = False

    def __post_init__(self) -> None:
        require_counts(p=self.p, m=self.m, v=self.v)

    @property
    def chunks(self) -> int:
        return self.p * self.v

    def home(self, chunk: int) -> int:
        return chunk % self.p

    def ops(self) -> tuple[Op, ...]:
        """Every operation the placement must contain, forwards first."""
        kinds: tuple[Kind, ...] = ("F", "B", "W") if self.split_w else ("F", "B")
        return tuple(Op(k, mb, c) for k in kinds for mb in range(self.m) for c in range(self.chunks))

    def name(self, op: Op) -> str:
        """The op's label as the grid shows it: the chunk only where a GPU holds several."""
        return op.label(chunk=self.v > 1)

    def parse(self, op: Op | str, stage: int) -> Op | str:
        """``op`` as an :class:`Op`, reading labels like ``F2`` or ``B1c5``, or a message why not."""
        if isinstance(op, str):
            parsed = Op.parse(op, chunk=stage if self.v == 1 else None)
            if parsed is None and Op.parse(op, chunk=stage) is not None:
                return f"{op!r} needs its chunk: each GPU holds {self.v} chunks (write e.g. {op.strip()}c{stage})"
            if parsed is None:
                return f"{op!r} is not an operation (write F, B{', W' if self.split_w else ''} and a micro-batch, e.g. F2)"
            op = parsed
        if not isinstance(op, Op):
            return f"{op!r} is not an operation"
        if op.kind == "W" and not self.split_w:
            return f"{op!r}: this pipeline does not split W off the backward"
        if op.kind not in ("F", "B", "W"):
            return f"{op!r} has kind {op.kind!r}; the kinds are F and B" + (" and W" if self.split_w else "")
        if not 0 <= op.microbatch < self.m:
            return f"{self.name(op)} names micro-batch {op.microbatch}, but there are {self.m} (0 to {self.m - 1})"
        if not 0 <= op.chunk < self.chunks or op.direction:
            return f"{self.name(op)} names chunk {op.chunk}, but the model has chunks 0 to {self.chunks - 1}"
        return op


def _items(placed: Placed) -> list[tuple[int, int, Op | str]]:
    if isinstance(placed, Mapping):
        return [(s, t, op) for (s, t), op in placed.items()]
    return [tuple(item) for item in placed]  # type: ignore[misc]


def violations(placed: Placed, p: int, m: int, v: int = 1, split_w: bool = False, steps: int | None = None,
               durations: Mapping[str, int] | None = None) -> list[Violation]:
    """Every rule the operations placed so far break, in grid order (GPU, then time step).

    ``placed`` maps ``(stage, step)`` to an op (or its label), or lists ``(stage, step, op)``
    triples; ``steps``, if given, is the width of the grid. Missing operations are not
    violations here (the student may not be done): :func:`check_placement` reports them.
    """
    model = PlacementTask(p, m, v, split_w)
    length = {"F": 1, "B": 1, "W": 1, **(durations or {})}
    found: list[Violation] = []
    where: dict[Op, tuple[int, int]] = {}
    occupant: dict[tuple[int, int], Op] = {}
    for stage, step, raw in sorted(_items(placed), key=lambda item: (item[0], item[1])):
        at = f"GPU {stage}, t{step + 1}"
        if not (isinstance(stage, int) and 0 <= stage < p and isinstance(step, int) and step >= 0):
            found.append(Violation("off-grid", stage, step, f"{at}: there is no such cell (GPUs 0 to {p - 1}, steps from t1)"))
            continue
        op = model.parse(raw, stage)
        if isinstance(op, str):
            found.append(Violation("unknown", stage, step, f"{at}: {op}."))
            continue
        name = model.name(op)
        end = step + length[op.kind]
        if steps is not None and end > steps:
            found.append(Violation("off-grid", stage, step, f"{at}: {name} runs past the last step t{steps}."))
        if model.home(op.chunk) != stage:
            found.append(Violation("wrong-gpu", stage, step, f"{at}: {name} belongs on GPU {model.home(op.chunk)}, "
                                   f"which holds chunk {op.chunk} of the model."))
            continue
        if op in where:
            found.append(Violation("duplicate", stage, step, f"{at}: {name} is already placed at t{where[op][1] + 1}; "
                                   "each operation runs once."))
            continue
        clash = next((occupant[stage, t] for t in range(step, end) if (stage, t) in occupant), None)
        if clash is not None:
            found.append(Violation("clash", stage, step, f"{at}: {name} overlaps {model.name(clash)}; "
                                   "a GPU runs one operation at a time."))
            continue
        where[op] = (stage, step)
        occupant.update({(stage, t): op for t in range(step, end)})
    for op, (stage, step) in sorted(where.items(), key=lambda item: item[1]):
        dep = op.needs(model.chunks)
        if dep is None or dep not in where:
            continue
        dep_stage, dep_step = where[dep]
        dep_end = dep_step + length[dep.kind]
        if step < dep_end:
            source = "" if dep_stage == stage else f" from GPU {dep_stage}"
            found.append(Violation("dependency", stage, step, f"GPU {stage}, t{step + 1}: {model.name(op)} starts before its "
                                   f"input {model.name(dep)}{source} is ready (GPU {dep_stage} finishes it at the end "
                                   f"of t{dep_end})."))
    return sorted(found, key=lambda x: (x.stage, x.step))


def missing(placed: Placed, p: int, m: int, v: int = 1, split_w: bool = False) -> dict[int, list[Op]]:
    """Per GPU, the operations not yet placed (correctly on that GPU)."""
    model = PlacementTask(p, m, v, split_w)
    done = {op for stage, _, raw in _items(placed)
            if isinstance(stage, int) and 0 <= stage < p and isinstance(op := model.parse(raw, stage), Op)
            and model.home(op.chunk) == stage}
    out: defaultdict[int, list[Op]] = defaultdict(list)
    for op in model.ops():
        if op not in done:
            out[model.home(op.chunk)].append(op)
    return dict(sorted(out.items()))


def check_placement(placed: Placed, p: int, m: int, v: int = 1, split_w: bool = False, steps: int | None = None,
                    durations: Mapping[str, int] | None = None) -> Feedback:
    """The verdict on a finished placement: one message per violation, and one per GPU that
    still lacks operations. Correct when every operation is placed and nothing is broken.

    >>> print(check_placement({(0, 0): "F0", (1, 0): "F0"}, p=2, m=1))
    GPU 0 still needs B0.
    GPU 1, t1: F0 starts before its input F0 from GPU 0 is ready (GPU 0 finishes it at the end of t1).
    GPU 1 still needs B0.
    """
    model = PlacementTask(p, m, v, split_w)
    found = violations(placed, p, m, v, split_w, steps, durations)
    lacking = missing(placed, p, m, v, split_w)
    rows = [(x.stage, 0, x.step, x.message) for x in found]
    rows += [(stage, 1, 0, f"GPU {stage} still needs {', '.join(model.name(op) for op in ops)}.")
             for stage, ops in lacking.items()]
    messages = tuple(message for *_, message in sorted(rows, key=lambda r: (r[0], r[1], r[2])))
    if not messages:
        return Feedback(True, ("correct: every operation is placed and every dependency holds.",))
    return Feedback(False, messages)
