"""The whole design space side by side: every schedule ppedu builds, simulated at one ``p``, one
``m`` and one cost model (:data:`~ppedu.costs.EQUAL` unless told otherwise), in one table — both
bubbles, where the idle time comes from, the peak and balance of activations, weight copies,
hand-overs, the rule on ``p`` and ``m`` — with the search's best order and its lower bound beside
them, and the schedules no other beats on both time and memory.

Costs are per whole stage; a schedule that cuts each GPU's share into ``v`` chunks pays ``1/v`` of
them per chunk (the V-shaped ones two), so every row runs the same model.

>>> rows = design_space(4, 8, search_seconds=0)
>>> [(r.schedule, r.makespan) for r in rows][:3]
[('GPipe', 33.0), ('1F1B', 33.0), ('interleaved v=2', 28.5)]
>>> rows[-1].schedule, rows[-1].makespan  # no order of any placement beats it
('lower bound', 24.0)
"""

from __future__ import annotations

from dataclasses import dataclass

from ppedu.costs import EQUAL, Costs
from ppedu.lesson import Table, parameter_copies
from ppedu.memory import FREE_AT_W, MemoryModel
from ppedu.ops import Schedule
from ppedu.schedules import NAMES, RULES, SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.validate import require_counts

#: The V-shaped schedules: two chunks per GPU whatever ``v`` says.
V_SHAPED = frozenset({"zb-v", "dualpipe-v"})


@dataclass(frozen=True)
class Design:
    """One schedule (or the search's best order, or the lower bound) on the shared model."""

    schedule: str
    makespan: float | str
    idle_total: str
    bubble_ideal: str
    idle_causes: str
    peak_activations: float | str
    balance: str
    weight_copies: float | str
    hand_overs: int | str
    runs_when: str


def chunks_per_gpu(name: str, v: int) -> int:
    """The chunks per GPU the schedule ``name`` cuts the model into when asked for ``v``."""
    return 2 if name in V_SHAPED else v if name in VIRTUAL else 1


def run(name: str, p: int, m: int, costs: Costs = EQUAL, v: int = 2, memory: MemoryModel = FREE_AT_W) -> Timeline:
    """Schedule ``name`` at ``(p, m)`` on the model ``costs`` describes per whole stage.

    >>> run("zb-v", 4, 8).schedule.virtual
    2
    """
    k = chunks_per_gpu(name, v)
    schedule = build(name, p, m, k if name in VIRTUAL else 1)
    return simulate(schedule, costs.per_chunk(k), memory)


def inner_gaps(timeline: Timeline) -> tuple[float, ...]:
    """Per GPU, the idle time between its first operation and its last: what is left when the fill
    before a GPU starts and the drain after it stops are not counted (ZB-H2's zero).

    >>> inner_gaps(run("zb-h2", 4, 8))
    (0.0, 0.0, 0.0, 0.0)
    """
    return tuple(float(sum(b.start - a.end for a, b in zip(ops, ops[1:])))
                 for ops in (timeline.on_stage(j) for j in range(timeline.p)))


def causes(timeline: Timeline) -> str:
    """The idle time as the sum of its causes (:mod:`ppedu.idle`), largest first.

    >>> causes(run("1f1b", 4, 8))
    'fill 18 + drain 18'
    """
    totals = sorted(((t, c) for c, t in timeline.idle_causes().totals().items() if t > 1e-9), reverse=True)
    return " + ".join(f"{c} {t:.4g}" for t, c in totals) or "none"


def _row(label: str, t: Timeline, rule: str) -> Design:
    peaks = [round(x, 3) for x in t.peak_stage_activations]
    return Design(label, round(t.makespan, 3), f"{t.bubble_ratio:.2%}", f"{t.bubble_over_ideal:.2%}", causes(t),
                  max(peaks), f"{min(peaks):g} … {max(peaks):g}", parameter_copies(t.schedule), t.schedule.hand_overs,
                  rule)


def _runs(p: int, m: int, costs: Costs, v: int, memory: MemoryModel) -> dict[str, Timeline | ValueError]:
    """Every schedule ppedu builds, run at ``(p, m)`` (:func:`run`), or why it cannot run there."""
    runs: dict[str, Timeline | ValueError] = {}
    for name in SCHEDULES:
        try:
            runs[name] = run(name, p, m, costs, v, memory)
        except ValueError as e:
            runs[name] = e
    return runs


def label(schedule: Schedule) -> str:
    """The schedule's name as the course writes it, with its chunks per GPU where it chooses them."""
    return NAMES.get(schedule.name, schedule.name) + (f" v={schedule.virtual}" if schedule.name in VIRTUAL else "")


def design_space(p: int, m: int, costs: Costs = EQUAL, v: int = 2, memory: MemoryModel = FREE_AT_W,
                 search_seconds: float = 1.0, memory_limit: float | None = None) -> Table[Design]:
    """Every schedule ppedu builds at ``(p, m)`` on ``costs`` (per whole stage; ``v`` chunks per GPU for
    the interleaved ones), a row of dashes and the reason where one cannot run; then the search's best
    order within ``memory_limit`` (:func:`ppedu.search.search`, ``search_seconds`` of local search) and
    the lower bound no order can beat. Peaks are in whole stages' activations, the balance the lightest
    and the heaviest GPU's."""
    from ppedu.search import search

    require_counts(p=p, m=m, v=v)
    rows = [_row(label(t.schedule), t, RULES[name].text) if isinstance(t, Timeline)
            else Design(NAMES[name], *("—",) * 8, f"{RULES[name].text} ({t})")
            for name, t in _runs(p, m, costs, v, memory).items()]
    found = search(p, m, costs, memory_limit, memory=memory, seconds=search_seconds)
    rows.append(_row(f"search: {found.family}", found.timeline, "the fastest order found" + (
        f" within {memory_limit:g} stages' activations" if memory_limit is not None else "")))
    rows.append(Design("lower bound", found.lower_bound, "", "", "", "", "", "", "",
                       "no order of any placement is faster (ppedu.search.lower_bound)"))
    return Table(tuple(rows))


@dataclass(frozen=True)
class Point:
    """A schedule's time and memory on the shared model."""

    schedule: str
    makespan: float
    peak_activations: float
    weight_copies: float


def frontier(p: int, m: int, costs: Costs = EQUAL, v: int = 2, memory: MemoryModel = FREE_AT_W) -> Table[Point]:
    """The schedules no other beats on both makespan and peak activations (counting a second copy of the
    weights as a cost too), fastest first: the design space's frontier at ``(p, m)``.

    >>> [x.schedule for x in frontier(4, 8)]
    ['interleaved ZB v=2', 'ZB-V']
    """
    points = [Point(label(t.schedule), t.makespan, round(max(t.peak_stage_activations), 3),
                    parameter_copies(t.schedule))
              for t in _runs(p, m, costs, v, memory).values() if isinstance(t, Timeline)]

    def beaten(x: Point) -> bool:
        return any(y.makespan <= x.makespan and y.peak_activations <= x.peak_activations
                   and y.weight_copies <= x.weight_copies
                   and (y.makespan, y.peak_activations, y.weight_copies) != (x.makespan, x.peak_activations, x.weight_copies)
                   for y in points)

    return Table(tuple(sorted((x for x in points if not beaten(x)), key=lambda x: (x.makespan, x.peak_activations))))
