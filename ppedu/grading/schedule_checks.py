"""Grading a schedule a student wrote: partial credit per property, each checked on several sizes.

The properties, in order: every operation exactly once and on its chunk's GPU; dependencies
respected (the simulator runs it to the end without a deadlock); the makespan of the schedule it
should be; its peak activations per GPU; and, where a question defines its order by rules (``exact``),
that order, operation for operation, which then weighs as much as the four others together (any valid order
has the first two, and a wrong one can share the right makespan and peak). A property earns its points only if it holds on every size tried,
and the report says on which size it first fails and how, not what the answer is. Without a reference
only the first two are checked: a student's own check, where the order it should be is the grader's.

The student's function runs in their notebook; what it returned arrives here as plain data
(:func:`ppedu.grading.answers.calls`): ``[[size, op lists], …]``.

>>> from ppedu import schedules
>>> from ppedu.grading.answers import calls
>>> results = calls({"f": lambda p, m: schedules.gpipe(p, m)}, "f", ((2, 2), (4, 4)))
>>> report = grade_schedule(results, "1f1b", ((2, 2), (4, 4)), points=4)
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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ppedu.costs import Costs
from ppedu.grading.answers import describe, kind, raised
from ppedu.ops import Op, Schedule
from ppedu.schedules import build
from ppedu.simulate import Timeline, simulate

PROPERTIES = ("every operation exactly once, on its chunk's GPU", "dependencies respected: the schedule runs to the end",
              "makespan", "peak activations")
ORDER = "the order the question's rules define, operation for operation"
#: A backward twice as long as a forward, so an order that only works under unit costs shows.
COSTS = Costs(f=1, b=2)


@dataclass(frozen=True)
class Report:
    """Points earned per property, with the first failure of each; a property's share is its weight (all 1 unless
    ``weights`` says otherwise)."""

    name: str
    points: float
    results: tuple[tuple[str, bool, str], ...]  # (property, passed, why not)
    weights: tuple[float, ...] = ()

    @property
    def score(self) -> float:
        weights = self.weights or (1.0,) * len(self.results)
        earned = sum(w for w, (_, ok, _) in zip(weights, self.results) if ok)
        # rounded: nbgrader rejects a cell worth more than its points, even by a rounding error
        return min(self.points, round(self.points * earned / sum(weights), 6))

    def __str__(self) -> str:
        return describe(self.name, self.score, self.points, self.results)


def _size(args: Sequence[int], names: str = "pmv") -> str:
    return "(" + ", ".join(f"{k}={a}" for k, a in zip(names, args)) + ")"


def to_schedule(result: object, name: str, args: Sequence[int], names: str = "pmv") -> Schedule:
    """The student's per-GPU op lists (plain data) as a :class:`Schedule`, or ``ValueError`` saying
    what is off; ``names`` are the function's arguments (``p``, ``m`` and ``v``, the chunks per GPU, if any)."""
    named = dict(zip(names, args))
    p, m, v = named["p"], named["m"], named.get("v", 1)
    if not isinstance(result, list) or len(result) != p:
        got = f"{len(result)} entries" if isinstance(result, list) else f"a {kind(result)}"
        raise ValueError(f"should return one list of operations per GPU ({p} lists), got {got}")
    stages = []
    for s, ops in enumerate(result):
        if not isinstance(ops, list):
            raise ValueError(f"GPU {s}'s entry is a {kind(ops)}, not a list of operations")
        stage = []
        for op in ops:
            fields = tuple(op) if isinstance(op, list) else ()
            if len(fields) not in (3, 4) or fields[0] not in ("F", "B") or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in fields[1:]):
                shown = "Op(" + ", ".join(map(repr, fields)) + ")" if fields else kind(op)
                raise ValueError(f"GPU {s} has {shown}; an operation is Op(kind, microbatch, chunk) with kind 'F' or 'B'")
            stage.append(Op(str(fields[0]), int(fields[1]), int(fields[2])))  # type: ignore[arg-type]
        stages.append(tuple(stage))
    return Schedule(tuple(stages), name, (tuple(c % p for c in range(p * v)),), m, v)


def grade_schedule(results: object, reference: str | Callable[..., Schedule] | None, sizes: Sequence[Sequence[int]],
                   points: float, hidden: Collection[tuple[int, ...]] = (), *, names: str = "pmv",
                   label: str | None = None, exact: bool = False) -> Report:
    """Check what the student's function returned for every size in ``sizes`` (``results``, as
    :func:`~ppedu.grading.answers.calls` gives it) against ``reference``: ppedu's schedule of that name, or a
    function of the same arguments (``names``) that builds the order, called ``label`` in messages; ``None``
    checks the first two properties alone. The sizes in ``hidden`` are the autograder's own, never named."""
    label = label or f"{reference}'s"
    props = PROPERTIES[:2] if reference is None else (*PROPERTIES, ORDER) if exact else PROPERTIES
    failures: dict[str, str] = {}
    given = {tuple(args): result for args, result in results} if isinstance(results, list) else {}
    for args in sizes:
        secret = tuple(args) in hidden  # no number of it in a message, nor what the student's code said of it
        where = "(on a size the autograder chose, not shown)" if secret else _size(args, names)
        if not isinstance(results, list):
            why = "is not defined: write it in its cell and run that cell" if results is None else (
                f"is a {kind(results)}, not a function")
            failures = dict.fromkeys(props, f"— the function {why}")
            break
        if tuple(args) not in given:
            failures = dict.fromkeys(props, f"{where}: your function was not run on this size")
            break
        result = given[tuple(args)]
        if isinstance(result, dict) and result.get("__raised__") == "NotImplementedError":
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        if problem := raised(result):  # on a hidden size, the grader's words: what it raised is the student's choice
            failures = dict.fromkeys(props, f"{where}: your function {'raised an error' if secret else problem}")
            break
        try:
            schedule = to_schedule(result, str(label), args, names)
            schedule.validate()
        except ValueError as invalid:
            why = "it is not a valid order of every operation once" if secret else str(invalid)
            failures = {prop: failures.get(prop, f"{where}: {why}") for prop in props}
            break
        if exact and (wrong := _departs(schedule, ref_order := _build(reference, args), secret)):
            failures.setdefault(ORDER, f"{where}: {wrong}")
        try:
            timeline: Timeline | None = simulate(schedule, COSTS)
        except ValueError as error:
            for prop in props[1:]:
                failures.setdefault(prop, f"{where}: {'the order deadlocks' if secret else error}")
            continue
        if reference is None:
            continue
        assert timeline is not None
        ref = simulate(ref_order if exact else _build(reference, args), COSTS)
        if timeline.makespan != ref.makespan:
            failures.setdefault("makespan", f"{where}: " + (f"not {label} makespan" if secret else
                                                            f"{timeline.makespan:g} time units (f=1, b=2), not {label}"))
        peak, want = timeline.peak_activations, ref.peak_activations
        if peak != want and secret:
            failures.setdefault("peak activations", f"{where}: a GPU holds more or fewer micro-batches' activations "
                                f"at once than {label}")
        elif peak != want:
            s = next(i for i, (a, b) in enumerate(zip(peak, want)) if a != b)
            more = "more" if peak[s] > want[s] else "fewer"
            failures.setdefault("peak activations", f"{where}: GPU {s} holds {peak[s]} micro-batches' activations at "
                                f"once, {more} than {label} {want[s]}")
    rows = []
    for prop in props:
        said = f"{prop} equals {label}" if prop == "makespan" else prop
        rows.append((said, prop not in failures, failures.get(prop, "")))
    return Report(reference if isinstance(reference, str) else str(label), float(points), tuple(rows),
                  (1.0, 1.0, 1.0, 1.0, 4.0) if exact and reference is not None else ())


def _build(reference: str | Callable[..., Schedule] | None, args: Sequence[int]) -> Schedule:
    assert reference is not None
    return build(reference, *args) if isinstance(reference, str) else reference(*args)


def _departs(schedule: Schedule, reference: Schedule, secret: bool) -> str:
    """Where the student's order first leaves the reference's (what the reference runs there is not said)."""
    for s, (mine, theirs) in enumerate(zip(schedule.stages, reference.stages)):
        at = next((n for n, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        if at is not None:
            return "a GPU leaves the rules' order" if secret else (
                f"GPU {s}'s operation number {at + 1}, {mine[at]!r}, is not the one the rules run there")
    return ""
