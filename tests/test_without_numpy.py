"""The core without numpy, matplotlib and torch, as the browser edition (Pyodide) runs it: ppedu and its widgets
import, the core's doctests pass, and every schedule, the simulator, the grids, idle causes, the text and SVG
renderers and the four widgets give exactly what they give with numpy.

The blocked runs are subprocesses of this interpreter in which importing numpy, matplotlib or torch fails.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ppedu.arrays import as_list

HERE = Path(__file__).resolve().parent
BLOCKED = ("numpy", "matplotlib", "torch")
#: The modules that need what the browser lacks, and so are left out of the browser edition.
NEEDS_BLOCKED = {"ppedu.animate", "ppedu.plot", "ppedu.widgets.lab", "ppedu.mnist.data", "ppedu.mnist.distributed",
                 "ppedu.mnist.executor", "ppedu.mnist.make_subset", "ppedu.mnist.measure", "ppedu.mnist.models",
                 "ppedu.mnist.plot", "ppedu.mnist.processes", "ppedu.mnist.training", "ppedu.ranks.plot"}
#: Modules that import without numpy but whose examples show numpy or PyTorch at work (numpy scalars as answers,
#: PyTorch's own orders, the grading sandbox's kernels): not the browser's.
EXAMPLES_NEED_MORE = {"ppedu.grading.answers", "ppedu.reference", "ppedu.grading.sandbox", "ppedu.grading.evaluate",
                      "ppedu.grading.execute", "ppedu.grading.harness", "ppedu.grading.stages", "ppedu.mnist",
                      "ppedu.mnist.cli", "ppedu.grading.cli", "ppedu.batch_size", "ppedu.grading.relay",
                      "ppedu.ranks.launch", "ppedu.ranks.timing", "ppedu.ranks.traffic", "ppedu.ranks.workload",
                      "ppedu.grading.assignments.ps8"}
BLOCK = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in BLOCKED)


def run_blocked(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, timeout=600,
                          cwd=HERE)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_core_imports_and_its_doctests_pass_without_numpy_matplotlib_and_torch():
    report = json.loads(run_blocked(f"""
import doctest, importlib, json, pkgutil, ppedu
failed_imports, results = [], {{}}
for info in pkgutil.walk_packages(ppedu.__path__, "ppedu."):
    if info.name.endswith("__main__"):
        continue
    try:
        module = importlib.import_module(info.name)
    except ImportError:
        failed_imports.append(info.name)
        continue
    if info.name not in {sorted(EXAMPLES_NEED_MORE)!r}:
        results[info.name] = doctest.testmod(module, optionflags=doctest.ELLIPSIS)._asdict()
print(json.dumps({{"failed_imports": failed_imports, "results": results}}))
""").splitlines()[-1])
    assert set(report["failed_imports"]) == NEEDS_BLOCKED
    ran = {name: r for name, r in report["results"].items() if r["attempted"]}
    assert {n: r["failed"] for n, r in ran.items() if r["failed"]} == {}
    # The core is there and was exercised: its modules' examples ran.
    for core in ("ppedu.ops", "ppedu.simulate", "ppedu.grid", "ppedu.idle", "ppedu.svg", "ppedu.text", "ppedu.slots",
                 "ppedu.widgets.explorer", "ppedu.widgets.exercise", "ppedu.widgets.builder", "ppedu.arrays"):
        assert ran.get(core, {}).get("attempted", 0) > 0, f"no example of {core} ran"


def fingerprint() -> dict[str, object]:
    """What the core computes and draws for a spread of schedules, costs and widgets, as plain JSON."""
    from ppedu import Costs, schedules, simulate
    from ppedu.grid import grid
    from ppedu.schedules import SCHEDULES, VIRTUAL, build
    from ppedu.slots import check_marking, check_slot_answers
    from ppedu.svg import render_grid_svg, render_svg
    from ppedu.text import render_comparison, render_grid, render_metrics
    from ppedu.widgets import ScheduleBuilder, ScheduleExplorer, SlotCountingExercise, TimelinePlayer

    def plain(svg: str) -> str:
        return re.sub(r"ppedu-d\d+-", "ppedu-d-", svg)  # each drawing numbers its own patterns

    out: dict[str, object] = {}
    costs = [Costs(), Costs(f=1, b=2, w=1, comm=0.1), Costs(f=(1, 1, 2, 1), b=(1, 1, 2, 1), w=0.5, comm=0.25)]
    for name in SCHEDULES:
        for k, cost in enumerate(costs):
            v = 2 if name in VIRTUAL else 1
            try:
                t = simulate(build(name, 4, 8, v), cost)
            except ValueError as error:
                out[f"{name}/{k}"] = str(error)
                continue
            g = grid(t, 0.25 if k else None)
            out[f"{name}/{k}"] = {
                "start": as_list(t.start), "end": as_list(t.end), "waited": as_list(t.waited),
                "busy": t.busy_per_stage, "makespan": t.makespan, "bubble": t.bubble_ratio,
                "peaks": t.peak_activations, "memory": [[as_list(x), as_list(y)] for x, y in t._memory],
                "weighted": t.peak_activation_memory([1.5 * (c + 1) for c in range(t.schedule.chunks)]),
                "causes": [[x.stage, x.start, x.end, x.cause] for x in t.idle_causes()],
                "grid": [as_list(g.cells), as_list(g.labels()), as_list(g.starts()), as_list(g.idle_mask)],
                "text": render_grid(g) + render_metrics(t), "svg": plain(render_svg(t, causes=True)),
                "grid_svg": plain(render_grid_svg(g)), "hand_overs": t.schedule.hand_overs,
            }
    t = simulate(schedules.gpipe(3, 2))
    out["comparison"] = render_comparison([t, simulate(schedules.one_f_one_b(3, 2))])
    out["slots"] = [str(check_slot_answers(grid(t), *answer)) for answer in [(18, 6, "1/3"), (18, 12, 0.5), (12, 6, 2)]]
    out["marking"] = str(check_marking(t, {(0, 2), (1, 0), (2, 5)}))
    explorer = ScheduleExplorer("interleaved", p=8, m=32, v=4, comm=0.05)
    out["explorer"] = [explorer.metrics(), plain(explorer.diagram.value), explorer.table.value]
    explorer.set(schedule="dualpipe", m=7)
    out["explorer_refused"] = [explorer.error, explorer.nearest_m]
    exercise = SlotCountingExercise(schedules.one_f_one_b(4, 4), hide=0.3)
    out["exercise"] = [plain(exercise.picture.value), str(exercise.check(total=44, idle=20, ratio="20/44"))]
    marking = SlotCountingExercise("gpipe", p=2, m=2, mode="mark")
    for cell in [(0, 2), (1, 0), (1, 1)]:
        marking.toggle(*cell)
    out["marking_widget"] = str(marking.check_marking())
    builder = ScheduleBuilder(p=2, m=2)
    builder.place(0, 0, "F0")
    builder.place(1, 0, "F0")
    out["builder"] = [str(v) for v in builder.violations()] + [str(builder.check())]
    player = TimelinePlayer(simulate(schedules.one_f_one_b(3, 3))).seek(5)
    out["player"] = [plain(player.diagram.value), player.caption.value, player.running()]
    return json.loads(json.dumps(out))


def test_every_result_is_the_same_without_numpy():
    with_numpy = fingerprint()
    without = json.loads(run_blocked("import json, test_without_numpy as t\nprint(json.dumps(t.fingerprint()))"))
    assert without.keys() == with_numpy.keys()
    for key in with_numpy:
        assert without[key] == with_numpy[key], f"{key} differs without numpy"
