"""Every chapter notebook as a student meets it, then as a lecturer presents it: opened in JupyterLab, run with
Run ▸ Run All Cells, looked at; then shown as jupyterlab-slideshow's deck and stepped through slide by slide.

Each chapter must run without an error output and show each of its widgets. A ScheduleExplorer must redraw when
a slider moves, and a SlotCountingExercise must answer a wrong and then a right attempt. The expected numbers and
messages come from ppedu in this process, built from the same call the notebook makes; a widget whose call
depends on the notebook's own variables is still checked for rendering, but not driven.

In the deck, at 1920×1080 and at 1280×720: every output of a code cell is on some slide; no slide scrolls or runs
off the screen, nothing on it is cut off or scrolls inside it (an output, a table, a widget, a diagram), no diagram
block is left without its label, and nothing covers the deck's arrows; at 1920×1080 every text on a slide is at least
24 px, no diagram's labels run into each other, every diagram spans at least half the slide's width (each chapter's
shares are printed), and every widget with a slider answers it there (moved with ↑ and ↓: on a slide ← and → step the
deck).
"""

import ast
import os
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from ppedu import Costs, practice, schedules, simulate
from ppedu.idle import SORTS
from ppedu.reading import check_causes, check_path
from ppedu.slots import check_marking, check_slot_answers
from ppedu.widgets import CollectiveExplorer, ScheduleBuilder, ScheduleExplorer, SlotCountingExercise, TimelinePlayer

from .conftest import ROOT, SCREENSHOTS
from .test_slides import MEASURE_JS, SLIDE_TEXT_PX, deck

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
ROOT_CLASS = {
    "ScheduleExplorer": "ppedu-explorer", "SlotCountingExercise": "ppedu-slot-exercise",
    "ScheduleBuilder": "ppedu-builder", "TimelinePlayer": "ppedu-player", "CollectiveExplorer": "ppedu-collectives",
}
#: What each widget must show once rendered, beside its root node.
PARTS = {
    "ScheduleExplorer": (".ppedu-diagram svg", ".ppedu-metrics table", ".widget-slider"),
    "SlotCountingExercise": (".ppedu-diagram", ".widget-button", ".ppedu-feedback"),
    "ScheduleBuilder": (".ppedu-cell", ".widget-dropdown", ".ppedu-feedback"),
    "TimelinePlayer": (".ppedu-diagram svg", ".widget-slider", ".ppedu-play"),
    "CollectiveExplorer": (".ppedu-diagram svg", ".ppedu-metrics table", ".widget-slider"),
}
NAMESPACE = {
    "schedules": schedules, "simulate": simulate, "Costs": Costs, "ScheduleExplorer": ScheduleExplorer,
    "SlotCountingExercise": SlotCountingExercise, "ScheduleBuilder": ScheduleBuilder, "TimelinePlayer": TimelinePlayer,
    "CollectiveExplorer": CollectiveExplorer,
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

    # A widget's output carries no mime type (the widget manager's panel): each must hold the widget.
    views = panel.locator(".jp-OutputArea-output:not([data-mime-type])")
    assert views.count() >= sum(len(widget_calls(c.source)) for c in code)
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
    present(lab, panel, notebook.stem)


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
    {"count": drive_counting, "mark": drive_marking, "path": drive_path, "causes": drive_causes}[exercise.mode](
        lab, root, exercise)


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


def _check_shows(lab, root, expected, what: str) -> None:
    previous = text(root.locator(".ppedu-feedback"))
    root.get_by_role("button", name="Check").click()
    shown = wait_for_text(root.locator(".ppedu-feedback"), lambda s: s and s != previous)
    assert shown == " ".join(" ".join(expected.messages).split()), f"feedback after {what}"


def drive_path(lab, root, exercise: SlotCountingExercise) -> None:
    """Click the critical path ppedu finds, but one idle cell too, check; unclick that one, check: correct."""
    path = sorted({(e.stage, t) for e in exercise.timeline.critical_path()
                   for t in range(round(e.start / exercise.grid.dt), round(e.end / exercise.grid.dt))})
    idle = next((int(s), int(t)) for s, t in zip(*exercise.grid.idle_mask.nonzero()))
    for cells, clicks, correct in ((set(path) | {idle}, [*path, idle], False), (set(path), [idle], True)):
        for s, t in clicks:
            root.locator(f".ppedu-cell-{s}-{t}").click()
        expected = check_path(exercise.grid, cells)
        assert expected.correct is correct
        _check_shows(lab, root, expected, f"tracing {len(cells)} cells")


def drive_causes(lab, root, exercise: SlotCountingExercise) -> None:
    """Click one idle cell of each cause as often as its cause takes, one of them once too often, check."""
    causes = exercise.grid.causes()
    sorts = ["fill", "drain", "order"]
    first = {}
    for s, row in enumerate(causes):
        for t, cause in enumerate(row):
            first.setdefault(SORTS.get(cause), (s, t))
    given = {}
    for n, sort in enumerate(sorts):
        if sort in first:
            wrong = n == 0  # the first a click too far: fill taken for drain
            given[first[sort]] = sorts[n + wrong]
            for _ in range(n + 1 + wrong):
                root.locator(f".ppedu-cell-{first[sort][0]}-{first[sort][1]}").click()
    expected = check_causes(exercise.grid, given)
    assert not expected.correct and "not drain: the pipeline is still filling" in expected.messages[0]
    _check_shows(lab, root, expected, f"sorting {len(given)} cells")


def drive_collectives(lab, panel, root, explorer: CollectiveExplorer) -> None:
    """Move the size slider one notch with the arrow key; the table must follow what ppedu computes there."""
    metrics = root.locator(".ppedu-metrics").first
    sizes = [v for _, v in explorer.size.options]
    explorer.set(size=sizes[min(sizes.index(explorer.values["size"]) + 1, len(sizes) - 1)])
    lab.slider(root, "size").press("ArrowRight")
    wanted = f"{explorer.costs()['ring'].busbw / 1e9:.3g} GB/s"
    assert wanted in wait_for_text(metrics, lambda s: wanted in s), "the table did not follow the size slider"


DRIVE = {"ScheduleExplorer": drive_explorer, "SlotCountingExercise": drive_exercise, "CollectiveExplorer": drive_collectives}


SIZES = ((1920, 1080), (1280, 720))
# In the page: what the deck shows now. The cells on screen and among them the ones shown (a fragment not yet
# reached is on screen, but transparent); how far the slide runs past the screen (px, down and across).
DECK_JS = """
panel => {
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const is = (c, name) => c.classList.contains(name);
  const on = cells.flatMap((c, i) => is(c, 'jp-deck-mod-onscreen') ? [i] : []);
  const shown = on.filter(i => is(cells[i], 'jp-deck-mod-visible'));
  const boxes = on.map(i => cells[i].getBoundingClientRect());
  const notebook = panel.querySelector('.jp-Notebook');
  const below = Math.max(notebook.scrollHeight - notebook.clientHeight, ...boxes.map(b => b.bottom - innerHeight), 0);
  const across = Math.max(notebook.scrollWidth - notebook.clientWidth, ...boxes.map(b => b.right - innerWidth), 0);
  return {active: cells.findIndex(c => is(c, 'jp-mod-active')), on, shown, below, across};
}
"""
# In the page: wait until the deck has moved on from the cell ``before`` (false if it has not within a second: the
# deck's end) and two frames more, so the slide is laid out and painted.
NEXT_JS = """
(panel, before) => new Promise(done => {
  const start = performance.now();
  const active = () => [...panel.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex(c => c.classList.contains('jp-mod-active'));
  const check = () => {
    if (active() !== before) requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
    else if (performance.now() - start > 1000) done(false);
    else requestAnimationFrame(check);
  };
  check();
})
"""
# In the page: whether every diagram on the shown cells that is drawn for its box's width (ppedu.widgets' Fitted) has
# been drawn for the width its box has now (the kernel redraws it once the page reports a new width).
FITTED_JS = """
([panel, shown]) => {
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  return shown.every(i => [...cells[i].querySelectorAll('.ppedu-fitted')].every(
    e => !e.checkVisibility() || Math.abs(Math.floor(e.clientWidth) - Number(e.dataset.drawn)) <= 1));
}
"""
# In the page: what the shown cells of the slide show cut off, too small (``least`` px, 0: not checked) or unlabelled
# (MEASURE_JS), and each button of the deck's remote (its arrows) where anything but the slide lies under or over it
# (a pop-up beneath the arrows hides them just as well).
#: The least share of a slide's width a diagram takes (the counting grid that used half the slide, labels running
#: together, now takes all of it).
MIN_SHARE = 0.5
DIAGRAMS_JS = f"const MIN_SHARE = {MIN_SHARE};" + """
const DIAGRAMS = '.jp-OutputArea-output > svg, .jp-OutputArea-output > div > svg, .ppedu-diagram svg, .jp-OutputArea-output img';
"""
COVERED_JS = """
const coveredArrows = panel => {
  const remote = document.querySelector('.jp-Deck-Remote'), buttons = [...remote?.querySelectorAll('button') ?? []];
  return [buttons.length, buttons.flatMap(button => {
    const box = button.getBoundingClientRect();
    const over = document.elementsFromPoint(box.x + box.width / 2, box.y + box.height / 2)
      // the slide's own boxes and JupyterLab's around it aside, anything seen above or below the button
      .find(e => !remote.contains(e) && !e.contains(remote) && !panel.contains(e) && !e.contains(panel)
                 && e.checkVisibility({opacityProperty: true, visibilityProperty: true}));
    return box.width && over ? [`${over.tagName.toLowerCase()} ${String(over.className?.baseVal ?? over.className)}`] : [];
  })];
};
"""
# In the page: whether nothing lies under or over the deck's arrows (a side bar shown under the pointer hides once the
# pointer has left it, later on a loaded machine: the check waits for that, and then reports what stays).
ARROWS_CLEAR_JS = "panel => {" + COVERED_JS + "return coveredArrows(panel)[1].length === 0; }"
SLIDE_JS = "(panel, [shown, least]) => {" + MEASURE_JS + COVERED_JS + DIAGRAMS_JS + """
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const out = measure(shown.map(i => [`cell ${i + 1}`, cells[i]]), least, true);
  const [count, covered] = coveredArrows(panel);
  if (covered.length) out.push(`the deck's arrows: ${covered.length} of ${count} buttons lie under or over ${covered[0]}`);
  // A diagram (a widget's or an output's drawing) uses the slide's width: at least half of it (a figure's width is its
  // own, set by its time axis: its share is reported, not held to this).
  const across = panel.querySelector('.jp-Notebook').getBoundingClientRect().width;
  for (const i of shown) for (const d of cells[i].querySelectorAll(DIAGRAMS)) {
    if (d.tagName === 'IMG' && !d.src.startsWith('data:image/svg')) continue;
    const share = d.getBoundingClientRect().width / across;
    if (least && d.checkVisibility() && share < MIN_SHARE) out.push(`cell ${i + 1}: a diagram spans ${(100 * share).toFixed(0)} % of the slide`);
  }
  return out;
}
"""
# In the page: each diagram's share of the slide's width, on the slide's shown cells (reported for each chapter).
SHARES_JS = "(panel, shown) => {" + DIAGRAMS_JS + """
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const across = panel.querySelector('.jp-Notebook').getBoundingClientRect().width;
  return shown.flatMap(i => [...cells[i].querySelectorAll(DIAGRAMS)].filter(d => d.checkVisibility())
    .map(d => d.getBoundingClientRect().width / across));
}
"""
# In the page: a widget's text and drawings, without its controls (what a moved slider must change).
WIDGET_TEXT_JS = """
root => { const copy = root.cloneNode(true);
  copy.querySelectorAll('.widget-slider, .widget-readout, select').forEach(e => e.remove());
  return copy.innerHTML; }
"""


def present(lab, panel, name: str) -> None:
    """Step through the chapter's deck at each size; collect what no slide may do."""
    cells = panel.locator(".jp-Cell")
    with_output = {i for i in range(cells.count())
                   if cells.nth(i).locator(".jp-OutputArea-output").count() and "jp-CodeCell" in cells.nth(i).get_attribute("class")}
    problems, seen, driven, shot, shares = [], set(), set(), set(), []
    for width, height in SIZES:
        lab.page.set_viewport_size({"width": width, "height": height})
        cells.first.click()
        with deck(lab):
            panel.evaluate(NEXT_JS, -1)
            for step in range(400):
                state = panel.evaluate(DECK_JS)
                seen |= set(state["shown"])
                where = f"{name} at {width}×{height}, slide of cell {state['on'][0] + 1}"
                if state["below"] > 1 or state["across"] > 1:
                    problems.append(f"{where} runs {state['below']:.0f} px below and {state['across']:.0f} px across the screen")
                if width == 1920:
                    driven |= drive_sliders(lab, panel, state["shown"], driven, where, problems)
                lab.page.mouse.move(width // 2, height // 3)  # off JupyterLab's side bars, which show under a pointer
                try:
                    lab.page.wait_for_function(FITTED_JS, arg=[panel.element_handle(), state["shown"]], timeout=15_000)
                except Exception:
                    problems.append(f"{where}: a diagram was not redrawn for the width of its box")
                try:
                    lab.page.wait_for_function(ARROWS_CLEAR_JS, arg=panel.element_handle(), timeout=10_000)
                except Exception:
                    pass  # SLIDE_JS names what covers them
                problems += [f"{where if problem.startswith('cell') else f'{name} at {width}×{height}'}: {problem}"
                             for problem in panel.evaluate(SLIDE_JS, [state["shown"], SLIDE_TEXT_PX if width == 1920 else 0])]
                if width == 1920:
                    shares += panel.evaluate(SHARES_JS, state["shown"])
                shoot(lab, panel, name, width, step, state, shot)
                panel.locator(".jp-Cell.jp-mod-active").first.focus()
                lab.page.keyboard.press("Space")
                if not panel.evaluate(NEXT_JS, state["active"]):
                    break
    if shares:
        print(f"{name}: diagrams span {min(shares):.0%} to {max(shares):.0%} of a 1080p slide's width")
    assert with_output <= seen, f"{name}: the outputs of cells {sorted(i + 1 for i in with_output - seen)} are on no slide"
    assert not problems, "\n".join(dict.fromkeys(problems))


def shoot(lab, panel, name, width, step, state, shot) -> None:
    """At 1920×1080, the first slide that shows a widget and each slide that shows a new figure, as
    build/screenshots/deck-<chapter>-widget.png and -figure-<k>.png (every step at both sizes with
    PPEDU_DECK_SHOTS=all). ``shot`` remembers the cells already seen."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if os.environ.get("PPEDU_DECK_SHOTS") == "all":
        lab.page.screenshot(path=str(SCREENSHOTS / f"deck-{name}-{width}-{step:02d}.png"))
    if width != 1920:
        return
    cells = panel.locator(".jp-Cell")
    new = [i for i in state["shown"] if i not in shot]
    shot.update(new)
    names = [f"figure-{sum(isinstance(k, str) and k.startswith('figure') for k in shot) + 1}"
             for i in new if cells.nth(i).locator(".jp-RenderedImage img").count()][:1]
    if "widget" not in shot and any(cells.nth(i).locator(".jupyter-widgets.widget-box").count() for i in new):
        names.append("widget")
    for what in names:
        lab.page.wait_for_timeout(300)
        lab.page.screenshot(path=str(SCREENSHOTS / f"deck-{name}-{what}.png"))
        shot.add(what)


def drive_sliders(lab, panel, shown, driven, where, problems) -> set[int]:
    """Move the first slider of every widget newly on the slide; its drawing or text must change."""
    done = set()
    for i in shown:
        if i in driven:
            continue
        cell = panel.locator(".jp-Cell").nth(i)
        for root in cell.locator(".jp-OutputArea-output > .jupyter-widgets, .jp-OutputArea-output > .widget-interact").all():
            handle = root.locator(".widget-slider .noUi-target:not([disabled]) .noUi-handle").first
            if not handle.count() or not handle.is_visible():
                continue
            before = root.evaluate(WIDGET_TEXT_JS)
            handle.focus()
            at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
            handle.press("ArrowDown" if at_end else "ArrowUp")  # on a slide ← and → step the deck
            try:
                lab.page.wait_for_function("([r, b, js]) => eval(js)(r) !== b", arg=[root.element_handle(), before, WIDGET_TEXT_JS],
                                           timeout=15_000)
            except Exception:
                problems.append(f"{where}: a widget did not answer its slider")
            done.add(i)
    return done


def test_the_practice_sets_answers_stay_folded_until_the_student_opens_them(lab):
    panel = lab.open("notebooks/practice.ipynb")
    lab.run_all(panel)
    assert lab.errors(panel) == []
    keys = panel.locator(".jp-OutputArea-output details")
    assert keys.count() == 3  # the practice set's key, the grid's, and the chapters' self-check answers
    label = practice.practice_set()[0].label
    for key in keys.all():
        assert not key.evaluate("e => e.open") and "Show the answers" in text(key) and label not in text(key)
    keys.first.locator("summary").click()
    assert keys.first.evaluate("e => e.open") and label in text(keys.first)
