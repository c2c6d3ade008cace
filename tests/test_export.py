"""Export: PyTorch's schedule CSV, loaded back through PyTorch's own loader, and Chrome traces."""

import json

import jsonschema
import pytest

from ppedu import Costs, simulate
from ppedu.export import chrome_trace, torch_csv
from ppedu.reference import to_torch_actions, torch_orders
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from test_cli import ppedu

ONE_DIRECTION = [n for n in SCHEDULES if n not in ("dualpipe", "chimera")]


def load_through_torch(path, p, chunks, m):
    """PyTorch's runtime reading a CSV as a trainer would (``_load_csv``): its reader, its schedule
    validation (every F before its B, each rank's stages) and its lowering to sends and receives.
    The runtime is made without processes: loading needs only the pipeline's shape."""
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    runtime = object.__new__(_PipelineScheduleRuntime)
    runtime.pp_group_size, runtime._num_stages, runtime._n_microbatches = p, chunks, m
    runtime._stages, runtime._defer_pp_recv, runtime.pipeline_order = [], False, {}
    runtime._load_csv(str(path))
    return runtime


@pytest.mark.parametrize("name", ONE_DIRECTION)
def test_every_one_direction_schedule_loads_into_pytorchs_runtime(name, tmp_path):
    s = build(name, 4, 8, 2 if name in VIRTUAL else 1)
    path = tmp_path / "schedule.csv"
    path.write_text(torch_csv(s))
    runtime = load_through_torch(path, 4, s.chunks, 8)
    assert runtime.pipeline_order == to_torch_actions(s)
    assert runtime.stage_index_to_group_rank == dict(enumerate(s.placement[0]))
    sends = [a for rank in runtime.pipeline_order_with_comms.values() for a in rank if "SEND" in str(a)]
    assert sends  # lowered with PyTorch's own hand-overs


def test_pytorchs_own_zbv_order_round_trips_through_the_csv(tmp_path):
    s = build("zb-v", 4, 8)
    assert tuple(map(tuple, s.stages)) == torch_orders("zb-v", 4, 8, 2)
    path = tmp_path / "zbv.csv"
    path.write_text(torch_csv(s))
    assert [str(a) for a in load_through_torch(path, 4, 8, 8).pipeline_order[1]][:4] == ["1F0", "1F1", "1F2", "1F3"]


def test_an_order_pytorch_would_refuse_is_refused_by_its_loader(tmp_path):
    # A backward listed before its forward: PyTorch's validation names it, so the check is real.
    s = build("1f1b", 2, 2)
    rows = torch_csv(s).splitlines()
    first = rows[1].split(",")
    rows[1] = ",".join([first[1], first[0], *first[2:]])
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(Exception):
        load_through_torch(path, 2, 2, 2)


def test_csv_and_trace_from_the_command_line(tmp_path):
    csv_path, trace_path = tmp_path / "s.csv", tmp_path / "s.json"
    out = ppedu("simulate", "zb-h1", "-p", "4", "-m", "8", "--w", "1", "--csv", str(csv_path), "--trace", str(trace_path))
    assert out.returncode == 0 and f"wrote {csv_path}" in out.stdout
    assert csv_path.read_text() == torch_csv(build("zb-h1", 4, 8))
    TRACE.validate(json.loads(trace_path.read_text()))
    refused = ppedu("simulate", "dualpipe", "-p", "4", "-m", "8", "--csv", str(tmp_path / "d.csv"))
    assert refused.returncode == 2 and "two directions" in refused.stderr and not (tmp_path / "d.csv").exists()


# The Chrome trace format's shape (Trace Event Format: metadata, complete slices, flow start/finish).
_NUMBER = {"type": "number", "minimum": 0}
TRACE = jsonschema.Draft202012Validator({
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit"],
    "properties": {"traceEvents": {"type": "array", "items": {"oneOf": [
        {"type": "object", "required": ["ph", "name", "pid", "tid", "args"],
         "properties": {"ph": {"const": "M"}, "name": {"enum": ["process_name", "thread_name"]},
                        "args": {"type": "object", "required": ["name"]}}},
        {"type": "object", "required": ["ph", "name", "cat", "pid", "tid", "ts", "dur", "args"],
         "properties": {"ph": {"const": "X"}, "ts": _NUMBER, "dur": _NUMBER, "name": {"type": "string"},
                        "cat": {"enum": ["F", "B", "W", "idle"]}}},
        {"type": "object", "required": ["ph", "id", "pid", "tid", "ts"],
         "properties": {"ph": {"enum": ["s", "f"]}, "id": {"type": "integer"}, "ts": _NUMBER}},
    ]}}, "displayTimeUnit": {"enum": ["ms", "ns"]}},
})


@pytest.mark.parametrize("name,p,m", [("1f1b", 4, 8), ("interleaved", 2, 4), ("dualpipe", 4, 8), ("zb-v", 2, 4)])
def test_trace_has_a_track_per_gpu_a_slice_per_op_and_an_arrow_per_hand_over(name, p, m):
    s = build(name, p, m, 2 if name in VIRTUAL else 1)
    t = simulate(s, Costs(f=1, b=1, w=1, comm=0.5))
    trace = chrome_trace(t)
    TRACE.validate(trace)
    events = trace["traceEvents"]
    assert sorted(e["args"]["name"] for e in events if e.get("name") == "thread_name") == [f"GPU {j}" for j in range(p)]
    slices = [e for e in events if e["ph"] == "X" and e["cat"] != "idle"]
    assert len(slices) == len(t.events)
    starts, ends = [e for e in events if e["ph"] == "s"], [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(ends) == s.hand_overs
    for a, b in zip(starts, ends):
        assert a["id"] == b["id"] and a["tid"] != b["tid"] and b["ts"] >= a["ts"]  # arrows go forward in time
    idle = [e for e in events if e["ph"] == "X" and e["cat"] == "idle"]
    assert sum(e["dur"] for e in idle) / 1000 == pytest.approx(t.idle_slots)  # every idle slot, with its cause
    assert {e["name"].removeprefix("idle: ") for e in idle} == {k for k, x in t.idle_causes().totals().items() if x > 0}
    assert "hand-over" in trace["otherData"]["idle"]  # comm = 0.5: arrows and waits for them


def test_trace_rejects_a_malformed_event():
    trace = chrome_trace(simulate(build("gpipe", 2, 2)))
    trace["traceEvents"].append({"ph": "X", "name": "F0c0", "pid": 0, "tid": 0, "ts": -1})
    with pytest.raises(jsonschema.ValidationError):
        TRACE.validate(trace)
