"""Plain-text renderings: the ASCII spacetime grid (GPU 0 at the bottom) and a metrics table."""

from __future__ import annotations

from collections.abc import Sequence

from ppedu.grid import Grid, grid
from ppedu.simulate import Timeline


def render_grid(timeline: Timeline | Grid, dt: float | None = None) -> str:
    """One row per GPU, GPU 0 at the bottom, and a legend line under the time axis: ``.`` is an
    idle slot, ``·`` a step in which the operation to its left is still running.

    >>> from ppedu import Costs, schedules, simulate
    >>> print(render_grid(simulate(schedules.gpipe(2, 2), Costs(f=1, b=2))))
    GPU 1 | .  F0 F1 B0 ·  B1 ·  .  .
    GPU 0 | F0 F1 .  .  .  B0 ·  B1 ·
            t1 t2 t3 t4 t5 t6 t7 t8 t9
            . idle   · the operation to its left continues
    """
    g = timeline if isinstance(timeline, Grid) else grid(timeline, dt)
    labels, starts = g.labels(), g.starts()
    steps = g.shape[1]
    width = max([len(x) for row in labels for x in row] + [len(f"t{steps}")])
    rows = []
    for s in reversed(range(g.shape[0])):
        cells = [labels[s, t] if starts[s, t] else ("·" if labels[s, t] else ".") for t in range(steps)]
        rows.append(f"GPU {s:<{len(str(g.shape[0] - 1))}} | " + " ".join(c.ljust(width) for c in cells).rstrip())
    indent = " " * (rows[0].index("|") + 2)
    axis = " ".join(f"t{t + 1}".ljust(width) for t in range(steps)).rstrip()
    rows.append(indent + axis)
    second = " ' second direction" if any(e.op.direction for e in g.timeline.events) else ""
    rows.append(indent + ". idle   · the operation to its left continues" + ("  " + second if second else ""))
    return "\n".join(rows)


def render_metrics(timeline: Timeline) -> str:
    """The headline numbers of a simulated schedule as an aligned two-column table."""
    t = timeline
    rows = [
        ("schedule", f"{t.schedule.name} (p={t.p}, m={t.schedule.microbatches}, v={t.schedule.virtual})"),
        ("makespan", _num(t.makespan)),
        ("total slots", _num(t.total_slots)),
        ("busy slots", _num(t.busy_slots)),
        ("idle slots", _num(t.idle_slots)),
        ("bubble ratio (idle/total)", f"{t.bubble_ratio:.4f} ({t.bubble_ratio:.2%})"),
        ("bubble / ideal time", f"{t.bubble_over_ideal:.4f}"),
        ("utilization", f"{t.utilization:.2%}"),
        ("peak activations per GPU", " ".join(map(str, t.peak_activations))),
        ("idle by cause", " + ".join(f"{k} {_num(v)}" for k, v in t.idle_causes().totals().items() if v > 1e-12) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def render_comparison(timelines: list[Timeline]) -> str:
    """Several schedules' headline numbers as one table, a row per schedule; below it, how the rows with overlapped
    F&B pairs (DualPipe's) book them, which changes their numbers (:meth:`~ppedu.costs.Costs.pair_booking`)."""
    header = ("schedule", "makespan", "idle/total", "bubble/ideal", "peak activations, in stages (GPU 0…)")
    name = {id(t): t.schedule.name + (f" v={t.schedule.virtual}" if t.schedule.virtual > 1 else "")
            for t in timelines}
    rows = [header] + [
        (name[id(t)], _num(t.makespan), f"{t.bubble_ratio:.2%}", f"{t.bubble_over_ideal:.2%}",
         " ".join(f"{x:g}" for x in t.peak_stage_activations))
        for t in timelines
    ]
    bookings: dict[str, list[str]] = {}
    for t in timelines:
        if t.schedule.overlapped:
            bookings.setdefault(t.costs.pair_booking(), []).append(name[id(t)])
    return columns(rows) + "".join(f"\n{', '.join(names)}: {booking}" for booking, names in bookings.items())


def columns(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as left-aligned columns two spaces apart.

    >>> print(columns([("stage", "cost"), ("0", "12.5")]))
    stage  cost
    0      12.5
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"
