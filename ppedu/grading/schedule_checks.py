"""Grading a schedule a student wrote: partial credit per property, each checked on several sizes.

The properties, in order: every operation exactly once and on its chunk's GPU; dependencies
respected (the simulator runs it to the end without a deadlock); the makespan of the schedule it
should be; its peak activations per GPU. A property earns its points only if it holds on every
size tried, and the report says on which size it first fails and how, not what the answer is.

>>> from ppedu import schedules
>>> report = grade_schedule(lambda p, m: [list(s) for s in schedules.gpipe(p, m).stages], "1f1b",
...                         ((2, 2), (4, 4)), points=4)
>>> report.score
3.0
>>> print(report)
1f1b: 3/4 points
  ✓ every operation exactly once, on its chunk's GPU
  ✓ dependencies respected: the schedule runs to the end
  ✓ makespan equals 1f1b's
  ✗ peak activations (p=2, m=2): GPU 1 holds 2 micro-batches' activations at once, more than 1f1b's 1
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr
from dataclasses import dataclass
from io import StringIO

from ppedu.costs import Costs
from ppedu.ops import Op, Schedule
from ppedu.schedules import build
from ppedu.simulate import Timeline, simulate

PROPERTIES = ("every operation exactly once, on its chunk's GPU", "dependencies respected: the schedule runs to the end",
              "makespan", "peak activations")
#: A backward twice as long as a forward, so an order that only works under unit costs shows.
COSTS = Costs(f=1, b=2)


@dataclass(frozen=True)
class Report:
    """Points earned per property, with the first failure of each."""

    name: str
    points: float
    results: tuple[tuple[str, bool, str], ...]  # (property, passed, why not)

    @property
    def score(self) -> float:
        # rounded: nbgrader rejects a cell worth more than its points, even by a rounding error
        return min(self.points, round(self.points / len(self.results) * sum(ok for _, ok, _ in self.results), 6))

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.score:g}/{self.points:g} points"]
        lines += [f"  {'✓' if ok else '✗'} {prop}" + ("" if ok else f" {why}") for prop, ok, why in self.results]
        return "\n".join(lines)


def _size(args: Sequence[int]) -> str:
    return "(" + ", ".join(f"{k}={a}" for k, a in zip("pmv", args)) + ")"


def to_schedule(result: object, name: str, args: Sequence[int]) -> Schedule:
    """The student's per-GPU op lists as a :class:`Schedule`, or ``ValueError`` saying what is off."""
    p, m, v = (*args, 1)[:3]
    if isinstance(result, Schedule):
        result = result.stages
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence) or len(result) != p:
        got = f"{len(result)} entries" if isinstance(result, Sequence) else f"a {type(result).__name__}"
        raise ValueError(f"should return one list of operations per GPU ({p} lists), got {got}")
    stages = []
    for s, ops in enumerate(result):
        if not isinstance(ops, Sequence) or isinstance(ops, (str, bytes)):
            raise ValueError(f"GPU {s}'s entry is a {type(ops).__name__}, not a list of operations")
        stage = []
        for op in ops:
            fields = tuple(op) if isinstance(op, (tuple, list)) else ()
            if len(fields) not in (3, 4) or fields[0] not in ("F", "B") or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in fields[1:]):
                raise ValueError(f"GPU {s} has {op!r}; an operation is Op(kind, microbatch, chunk) with kind 'F' or 'B'")
            stage.append(Op(str(fields[0]), int(fields[1]), int(fields[2])))  # type: ignore[arg-type]
        stages.append(tuple(stage))
    return Schedule(tuple(stages), name, (tuple(c % p for c in range(p * v)),), m, v)


def grade_schedule(make: Callable[..., object], reference: str, sizes: Sequence[Sequence[int]],
                   points: float) -> Report:
    """Check ``make(*size)`` against ppedu's schedule ``reference`` on every size."""
    failures: dict[str, str] = {}
    for args in sizes:
        where = _size(args)
        ref = simulate(build(reference, *args), COSTS)
        try:
            with warnings.catch_warnings(), redirect_stderr(StringIO()):  # stderr would cost every point
                warnings.simplefilter("ignore")
                result = make(*args)
        except NotImplementedError:
            failures = dict.fromkeys(PROPERTIES, "— the function is still the stub")
            break
        except Exception as error:
            failures = dict.fromkeys(PROPERTIES, f"{where}: your function raised {type(error).__name__}: {error}")
            break
        try:
            schedule = to_schedule(result, reference, args)
            schedule.validate()
        except ValueError as error:
            failures = {prop: failures.get(prop, f"{where}: {error}") for prop in PROPERTIES}
            break
        try:
            timeline: Timeline | None = simulate(schedule, COSTS)
        except ValueError as error:
            for prop in PROPERTIES[1:]:
                failures.setdefault(prop, f"{where}: {error}")
            continue
        assert timeline is not None
        if timeline.makespan != ref.makespan:
            failures.setdefault("makespan", f"{where}: {timeline.makespan:g} time units (f=1, b=2), not {reference}'s")
        peak, want = timeline.peak_activations, ref.peak_activations
        if peak != want:
            s = next(i for i, (a, b) in enumerate(zip(peak, want)) if a != b)
            more = "more" if peak[s] > want[s] else "fewer"
            failures.setdefault("peak activations", f"{where}: GPU {s} holds {peak[s]} micro-batches' activations at "
                                f"once, {more} than {reference}'s {want[s]}")
    results = []
    for prop in PROPERTIES:
        label = f"{prop} equals {reference}'s" if prop == "makespan" else prop
        results.append((label, prop not in failures, failures.get(prop, "")))
    return Report(reference, float(points), tuple(results))
