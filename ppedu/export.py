"""A schedule or a simulated run in other tools' formats: PyTorch's schedule CSV, which its
pipeline runtime (and trainers built on it) loads, and a Chrome/Perfetto trace.

>>> from ppedu.schedules import zero_bubble_h1
>>> print(torch_csv(zero_bubble_h1(2, 2)), end="")
0F0,0F1,0I0,0W0,0I1,0W1
1F0,1I0,1F1,1I1,1W0,1W1
"""

from __future__ import annotations

import csv
import io
from typing import Any

from ppedu.idle import CAUSES
from ppedu.ops import Op, Schedule
from ppedu.simulate import Timeline


def torch_actions(schedule: Schedule) -> list[list[str]]:
    """Per rank, PyTorch's names for the schedule's actions (``_Action``'s text form): chunk
    number, then ``F``, ``B`` (a full backward), ``I`` (input gradient, its W split off) or ``W``,
    then the micro-batch.

    PyTorch names a chunk by its index alone, so a schedule whose micro-batches run in two
    directions over two copies of the model (DualPipe, Chimera) has no such form.
    """
    if len(schedule.placement) > 1:
        raise ValueError(f"{schedule.name} runs micro-batches in two directions over two copies of the parameters, "
                         "which PyTorch's pipeline runtime cannot express (it names a chunk by its index alone)")
    split = schedule.split_backwards

    def name(op: Op) -> str:
        kind = "I" if op.kind == "B" and op[1:] in split else op.kind
        return f"{op.chunk}{kind}{op.microbatch}"

    return [[name(op) for op in ops] for ops in schedule.stages]


def torch_csv(schedule: Schedule) -> str:
    """The schedule as PyTorch's compute-only CSV: one row per rank, one action per cell
    (``_PipelineScheduleRuntime._load_csv`` reads it)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(torch_actions(schedule))
    return out.getvalue()


#: One trace microsecond per simulated time unit, scaled so that short ops stay visible.
_SCALE = 1000.0
_COLOURS = {"F": "thread_state_running", "B": "good", "W": "cq_build_passed", "idle": "grey"}


def chrome_trace(timeline: Timeline) -> dict[str, Any]:
    """A simulated run as a Chrome trace (chrome://tracing, ui.perfetto.dev): one track per GPU,
    a slice per operation, a flow arrow for each hand-over between GPUs, and every idle interval
    as an ``idle`` slice named by its cause (:mod:`ppedu.idle`: fill, drain, hand-over, …).

    Times are the simulator's units × 1000 (``ts`` is in microseconds).
    """
    schedule = timeline.schedule
    by_op = {e.op: e for e in timeline.events}
    events: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
                                     "args": {"name": f"{schedule.name}: p={schedule.p}, m={schedule.microbatches}"}}]
    for s in range(schedule.p):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": s, "args": {"name": f"GPU {s}"}})
    for gap in timeline.idle_causes():
        events.append(_slice(f"idle: {gap.cause}", gap.stage, gap.start, gap.end, "idle", {"cause": CAUSES[gap.cause]}))
    flow = 0
    for e in timeline.events:
        events.append(_slice(repr(e.op), e.stage, e.start, e.end, e.op.kind,
                             {"microbatch": e.op.microbatch, "chunk": e.op.chunk, "direction": e.op.direction}))
        needs = e.op.needs(schedule.chunks)
        if needs is not None and schedule.hand_over(e.op):
            source = by_op[needs]
            flow += 1
            events.append({"ph": "s", "id": flow, "name": "hand-over", "cat": "hand-over", "pid": 0,
                           "tid": source.stage, "ts": source.end * _SCALE - 1e-3})
            events.append({"ph": "f", "bp": "e", "id": flow, "name": "hand-over", "cat": "hand-over", "pid": 0,
                           "tid": e.stage, "ts": e.start * _SCALE})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"schedule": schedule.name, "makespan": timeline.makespan,
                          "bubble_ratio": timeline.bubble_ratio, "idle": timeline.idle_causes().totals()}}


def _slice(name: str, tid: int, start: float, end: float, cat: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": tid, "ts": start * _SCALE,
            "dur": (end - start) * _SCALE, "cname": _COLOURS[cat], "args": args}
