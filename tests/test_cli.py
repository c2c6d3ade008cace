"""The ``ppedu`` command line, run as a user runs it."""

import json
import subprocess
import sys

import pytest

from ppedu.schedules import SCHEDULES


def ppedu(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ppedu", *args], capture_output=True, text=True, timeout=120)


def test_default_output_is_the_grid_and_the_metrics():
    out = ppedu("simulate", "gpipe", "-p", "4", "-m", "4")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[3].startswith("GPU 0 | F0  F1  F2  F3")
    assert "idle slots                 24" in out.stdout


def test_json_carries_every_key_and_event():
    out = ppedu("simulate", "interleaved", "-p", "4", "-m", "8", "-v", "2", "--json")
    data = json.loads(out.stdout)
    assert set(data) == {"schedule", "stages", "microbatches", "virtual", "costs", "makespan", "total_slots",
                         "busy_slots", "idle_slots", "bubble_ratio", "utilization", "peak_activations", "idle_causes",
                         "events"}
    assert (data["idle_slots"], data["total_slots"], data["virtual"]) == (24, 152, 2)
    assert sum(data["idle_causes"]["totals"].values()) == 24 and len(data["idle_causes"]["per_stage"]) == 4
    assert len(data["events"]) == 4 * 8 * 2 * 2
    assert set(data["events"][0]) == {"stage", "kind", "microbatch", "chunk", "start", "end"}


def test_json_events_carry_direction_for_dualpipe():
    data = json.loads(ppedu("simulate", "dualpipe", "-p", "4", "-m", "8", "--w", "1", "--json").stdout)
    assert {e["direction"] for e in data["events"]} == {0, 1}
    assert data["costs"] == {"f": 1.0, "b": 1.0, "w": 1.0, "comm": 0.0, "fb": None}
    faster = json.loads(ppedu("simulate", "dualpipe", "-p", "4", "-m", "8", "--w", "1", "--fb", "2", "--json").stdout)
    assert faster["makespan"] < data["makespan"]


def test_per_stage_costs_from_the_command_line():
    data = json.loads(ppedu("simulate", "1f1b", "-p", "2", "-m", "4", "--f", "1,3", "--json").stdout)
    assert data["costs"]["f"] == [1.0, 3.0] and data["makespan"] > 16


def test_png_output(tmp_path):
    path = tmp_path / "x.png"
    out = ppedu("simulate", "zb-h1", "-p", "4", "-m", "8", "--w", "1", "--png", str(path))
    assert out.returncode == 0 and path.stat().st_size > 1000


@pytest.mark.parametrize(
    "args, words",
    [
        (["gpipe", "-p", "0", "-m", "4"], "p (stages) must be a whole number ≥ 1"),
        (["1f1b", "-p", "4", "-m", "0"], "m (micro-batches) must be a whole number ≥ 1"),
        (["interleaved", "-p", "4", "-m", "8", "-v", "0"], "v (chunks per stage) must be a whole number ≥ 1"),
        (["interleaved", "-p", "4", "-m", "6", "-v", "2", "--group", "7"], "group (micro-batches per chunk in turn)"),
        (["dualpipe", "-p", "3", "-m", "8"], "even number of stages"),
        (["dualpipe", "-p", "4", "-m", "4"], "m ≥ 2p"),
        (["gpipe", "-p", "4", "-m", "4", "--b", "-1"], "costs must be non-negative"),
        (["gpipe", "-p", "4", "-m", "4", "--comm", "-2"], "costs must be non-negative"),
        (["gpipe", "-p", "4", "-m", "4", "--f", "1,2"], "per-stage cost f has 2 values for 4 stages"),
        (["ring", "-p", "4", "-m", "4"], "invalid choice: 'ring'"),
        (["gpipe", "-p", "four", "-m", "4"], "invalid int value: 'four'"),
        (["gpipe", "-p", "4", "-m", "4", "--f", "fast"], "not a number"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_rule(args, words):
    out = ppedu("simulate", *args)
    assert out.returncode == 2
    assert words in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("ppedu")
    assert out.stdout == ""


def test_compare_runs_the_same_model_through_every_schedule_that_fits():
    data = json.loads(ppedu("compare", "-p", "4", "-m", "8", "-v", "2", "--w", "1", "--json").stdout)
    by_name = {row["schedule"]: row for row in data}
    assert set(by_name) == set(SCHEDULES)
    # Interleaving halves each chunk's cost, so the whole model costs the same: the bubble shrinks.
    assert by_name["interleaved"]["makespan"] < by_name["1f1b"]["makespan"]
    assert by_name["zb-h1"]["makespan"] < by_name["1f1b"]["makespan"]
    odd = json.loads(ppedu("compare", "-p", "3", "-m", "5", "--json").stdout)
    refused = {"dualpipe", "dualpipe-v", "chimera"}  # they need an even p, or m ≥ 2p
    assert [row["schedule"] for row in odd] == [name for name in SCHEDULES if name not in refused]
    # Megatron's interleaving takes m = 6 on 4 GPUs: groups of 4, then the 2 left over.
    flexible = json.loads(ppedu("simulate", "interleaved", "-p", "4", "-m", "6", "-v", "2", "--json").stdout)
    assert flexible["makespan"] > 0 and len(flexible["events"]) == 2 * 6 * 8


def test_compare_table_and_unknown_names():
    out = ppedu("compare", "gpipe", "1f1b", "-p", "4", "-m", "8")
    assert out.stdout.splitlines()[2].split()[:2] == ["1f1b", "22"]
    bad = ppedu("compare", "ring", "-p", "4", "-m", "8")
    assert bad.returncode == 2 and "unknown schedule 'ring'" in bad.stderr


def test_a_grid_too_wide_for_a_terminal_is_not_drawn():
    out = ppedu("simulate", "1f1b", "-p", "8", "-m", "300")
    assert out.returncode == 0 and "not drawn" in out.stdout and "idle slots" in out.stdout


def test_per_link_and_per_chunk_costs_from_the_command_line():
    chain = json.loads(ppedu("simulate", "gpipe", "-p", "3", "-m", "2", "--comm", "1,4", "--json").stdout)
    assert chain["makespan"] == (2 + 3 - 1) * 2 + 2 * (1 + 4)
    matrix = json.loads(ppedu("simulate", "gpipe", "-p", "2", "-m", "1", "--comm", "0,1;3,0", "--json").stdout)
    assert matrix["makespan"] == 2 + 2 + 1 + 3
    chunks = json.loads(ppedu("simulate", "interleaved", "-p", "2", "-m", "2", "-v", "2", "--f", "1,1,3,1",
                              "--per-chunk", "--json").stdout)
    assert {e["end"] - e["start"] for e in chunks["events"] if e["kind"] == "F" and e["chunk"] == 2} == {3}
    bad = ppedu("simulate", "interleaved", "-p", "4", "-m", "8", "-v", "2", "--comm", "1,1,1")
    assert bad.returncode == 2 and "give a p × p matrix" in bad.stderr


def test_compare_leaves_out_the_schedules_per_link_costs_do_not_fit():
    rows = json.loads(ppedu("compare", "-p", "4", "-m", "8", "-v", "2", "--comm", "1,1,1", "--json").stdout)
    assert "interleaved" not in {r["schedule"] for r in rows} and "1f1b" in {r["schedule"] for r in rows}
    named = ppedu("compare", "interleaved", "-p", "4", "-m", "8", "-v", "2", "--comm", "1,1,1")
    assert named.returncode == 2 and "give a p × p matrix" in named.stderr


def test_a_reader_that_stops_early_ends_the_output_quietly():
    # `ppedu simulate … | head`: the pipe closes under ppedu; no BrokenPipeError traceback, the shell's 141
    command = [sys.executable, "-m", "ppedu", "simulate", "gpipe", "-p", "8", "-m", "64", "--json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        run.stdout.read(10)
        run.stdout.close()
        err = run.stderr.read().decode()
    assert run.returncode == 141 and "Traceback" not in err and "BrokenPipe" not in err


def test_search_csv_keeps_to_one_direction_and_always_writes_its_file(tmp_path):
    # DualPipe wins this search when both directions may run; a CSV can only name one direction's chunks.
    both = json.loads(ppedu("search", "-p", "4", "-m", "8", "--w", "1", "--fb", "1", "--seconds", "0.1",
                            "--json").stdout)
    assert both["best_named"]["schedule"] == "dualpipe"
    out = ppedu("search", "-p", "4", "-m", "8", "--w", "1", "--fb", "1", "--seconds", "0.1", "--csv",
                str(tmp_path / "best.csv"))
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "best.csv").read_text().splitlines()
    assert len(rows) == 4 and "schedule within the limit: dualpipe " not in out.stdout
