"""Every chapter notebook as a student meets it: opened in JupyterLab, run with Run ▸ Run All Cells, looked at.

Each chapter must run without an error output and show each of its widgets. A ScheduleExplorer must redraw when
a slider moves, and a SlotCountingExercise must answer a wrong and then a right attempt. The expected numbers and
messages come from ppedu in this process, built from the same call the notebook makes; a widget whose call
depends on the notebook's own variables is still checked for rendering, but not driven.
"""

import ast
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from ppedu import Costs, schedules, simulate
from ppedu.slots import check_marking, check_slot_answers
from ppedu.widgets import ScheduleBuilder, ScheduleExplorer, SlotCountingExercise, TimelinePlayer

from .conftest import ROOT

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
ROOT_CLASS = {
    "ScheduleExplorer": "ppedu-explorer", "SlotCountingExercise": "ppedu-slot-exercise",
    "ScheduleBuilder": "ppedu-builder", "TimelinePlayer": "ppedu-player",
}
#: What each widget must show once rendered, beside its root node.
PARTS = {
    "ScheduleExplorer": (".ppedu-diagram svg", ".ppedu-metrics table", ".widget-slider"),
    "SlotCountingExercise": (".ppedu-diagram", ".widget-button", ".ppedu-feedback"),
    "ScheduleBuilder": (".ppedu-cell", ".widget-dropdown", ".ppedu-feedback"),
    "TimelinePlayer": (".ppedu-diagram svg", ".widget-slider", ".ppedu-play"),
}
NAMESPACE = {
    "schedules": schedules, "simulate": simulate, "Costs": Costs, "ScheduleExplorer": ScheduleExplorer,
    "SlotCountingExercise": SlotCountingExercise, "ScheduleBuilder": ScheduleBuilder, "TimelinePlayer": TimelinePlayer,
}
FEEDBACK_S = 20


def widget_calls(source: str) -> list[tuple[str, object | None]]:
    """Each ppedu widget a cell constructs and shows (as its last expression, or by `display`): its name, and
    the same widget built here (None when its arguments name the notebook's own variables)."""
    tree = ast.parse(TransformerManager().transform_cell(source))  # IPython syntax (%magics) as Python
    built = {
        node.targets[0].id: node.value for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    }
    shown = [tree.body[-1].value] if tree.body and isinstance(tree.body[-1], ast.Expr) else []
    shown += [a for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "display"
              for a in n.args]
    found = []
    for node in (built.get(n.id) if isinstance(n, ast.Name) else n for n in shown):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ROOT_CLASS:
            try:
                twin = eval(compile(ast.Expression(node), "<cell>", "eval"), dict(NAMESPACE))
            except NameError:
                twin = None
            found.append((node.func.id, twin))
    return found


def text(locator) -> str:
    return " ".join(locator.inner_text().split())


def wait_for_text(locator, wanted, timeout_s: float = FEEDBACK_S) -> str:
    """Poll a widget's text until `wanted(text)` holds; return the text (the last one seen, on a timeout)."""
    page, seen = locator.page, None
    for _ in range(int(timeout_s * 4)):
        seen = text(locator)
        if wanted(seen):
            break
        page.wait_for_timeout(250)
    return seen


@pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks in notebooks/ yet")
@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_runs_in_jupyterlab_and_its_widgets_work(lab, notebook: Path):
    code = [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    panel = lab.open(f"notebooks/{notebook.name}")
    lab.run_all(panel)
    assert lab.errors(panel) == []
    cells = panel.locator(".jp-CodeCell")
    assert cells.count() == len(code)

    views = panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.widget-view+json']")
    for i in range(views.count()):
        assert views.nth(i).locator(".jupyter-widgets").count(), f"widget output {i + 1} is empty"
    driven, shot = [], set()
    for cell, source in zip((cells.nth(i) for i in range(len(code))), (c.source for c in code)):
        for name, twin in widget_calls(source):
            root = cell.locator(f".{ROOT_CLASS[name]}").first
            root.wait_for(timeout=10_000)
            for part in PARTS[name]:
                assert root.locator(part).count(), f"{name} shows no {part}"
            if twin is not None and name in DRIVE:
                DRIVE[name](lab, panel, root, twin)
                driven.append(name)
            if name not in shot:
                lab.shoot(root, f"{notebook.stem}-{ROOT_CLASS[name]}")
                shot.add(name)
    figures = panel.locator(".jp-OutputArea-output.jp-RenderedImage img")
    if figures.count():
        lab.shoot(figures.first, f"{notebook.stem}-figure")
    lab.screenshot(panel, notebook.stem)
    print(f"{notebook.stem}: drove {driven or 'no widget'}")


def drive_explorer(lab, panel, root, explorer: ScheduleExplorer) -> None:
    """Move the m slider with the arrow key (as far as the next m the schedule admits) and watch it redraw."""
    diagram, metrics = root.locator(".ppedu-diagram").first, root.locator(".ppedu-metrics").first
    before_svg, before = diagram.inner_html(), text(metrics)
    # Later cells may have moved the controls: take the state the page shows.
    explorer.set(schedule=root.locator("select").first.input_value(), **{
        name: type(slider.value)(text(lab.widget(root, "slider", name).locator(".widget-readout")))
        for name, slider in explorer.sliders.items()
    })
    assert f"makespan {explorer.metrics()['makespan']:g}" in before
    m = explorer.values["m"]
    steps = next(k for k in range(1, 9) if explorer.set(m=m + k).timeline is not None)  # some schedules refuse some m
    handle = lab.slider(root, "m")
    for _ in range(steps):
        handle.press("ArrowRight")
    t = explorer.timeline
    wanted = f"makespan {t.makespan:g} idle slots {t.idle_slots:g} of {t.total_slots:g}"
    assert wanted in wait_for_text(metrics, lambda s: wanted in s), f"the metrics did not follow m → {m + steps}"
    assert diagram.inner_html() != before_svg, "the diagram did not redraw"
    assert text(metrics) != before


def drive_exercise(lab, panel, root, exercise: SlotCountingExercise) -> None:
    (drive_counting if exercise.mode == "count" else drive_marking)(lab, root, exercise)


def drive_counting(lab, root, exercise: SlotCountingExercise) -> None:
    """Type a typical mistake (the busy slots for the idle ones, or one too many), check; the right counts, check."""
    g = exercise.grid
    wrong = g.busy_slots if g.busy_slots != g.idle_slots else g.idle_slots + 1
    attempts = [
        (g.total_slots, wrong, f"{g.idle_slots}/{g.total_slots}"),
        (g.total_slots, g.idle_slots, f"{g.idle_slots}/{g.total_slots}"),
    ]
    for (total, idle, ratio), correct in zip(attempts, (False, True)):
        for name, value in (("total slots", total), ("idle slots", idle), ("bubble ratio", ratio)):
            lab.widget(root, "text", name).locator("input").fill(str(value))
        expected = check_slot_answers(g, total, idle, ratio)
        assert expected.correct is correct  # the premise, from ppedu itself
        previous = text(root.locator(".ppedu-feedback"))
        root.get_by_role("button", name="Check").click()
        shown = wait_for_text(root.locator(".ppedu-feedback"), lambda s: s and s != previous)
        assert shown == " ".join(" ".join(expected.messages).split()), f"feedback for {total, idle, ratio}"


def drive_marking(lab, root, exercise: SlotCountingExercise) -> None:
    """Mark one busy cell as idle, check; unmark it, mark every idle cell, check."""
    idle = {(int(s), int(t)) for s, t in zip(*exercise.grid.idle_mask.nonzero())}
    busy = next((s, t) for s in range(exercise.grid.shape[0]) for t in range(exercise.grid.shape[1]) if (s, t) not in idle)
    for marked, clicks, correct in (({busy}, [busy], False), (idle, [busy, *sorted(idle)], True)):
        for s, t in clicks:
            root.locator(f".ppedu-cell-{s}-{t}").click()
        expected = check_marking(exercise.grid, marked, exercise.hidden)
        assert expected.correct is correct
        previous = text(root.locator(".ppedu-feedback"))
        root.get_by_role("button", name="Check").click()
        shown = wait_for_text(root.locator(".ppedu-feedback"), lambda s: s and s != previous)
        assert shown == " ".join(" ".join(expected.messages).split()), f"feedback after marking {len(marked)} cells"


DRIVE = {"ScheduleExplorer": drive_explorer, "SlotCountingExercise": drive_exercise}
