"""The course on screen: the widgets in the dark theme, in a narrow window, at their largest, and live on a slide.

Each test writes a small notebook of its own beside the chapters, runs it in JupyterLab and measures the page:
contrast ratios from computed colours, sizes from layout boxes.
"""

from __future__ import annotations


import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ppedu import Costs, schedules, simulate
from ppedu.lecture import DECK_STYLE
from ppedu.svg import describe
from ppedu.widgets import explorer as explorer_module
from ppedu.widgets import player as player_module

from .conftest import SCREENSHOTS
from .test_slides import deck

WIDGETS = [
    "from ppedu import Costs, schedules, simulate\n"
    "from ppedu.widgets import ScheduleBuilder, ScheduleExplorer, SlotCountingExercise, TimelinePlayer",
    'ScheduleExplorer(schedule="interleaved", p=4, m=8, v=2)',
    "ScheduleBuilder(p=2, m=2)",
    'SlotCountingExercise("gpipe", p=2, m=1, mode="mark")',
    "SlotCountingExercise(schedules.gpipe(3, 2), hide=0.3)",
    "TimelinePlayer(simulate(schedules.zero_bubble_h1(3, 3), Costs(1, 1, 1))).seek(9)",
]
BIG = 'ScheduleExplorer(schedule="interleaved", p=8, m=32, v=4)'

# In the page: each text in the widgets' diagrams, feedback and messages, with its contrast ratio (WCAG 2.1) against
# what lies behind it: the block under a label, else the nearest opaque backgrounds of its ancestors.
CONTRAST_JS = """
root => {
  const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, bottom) => top.slice(0, 3).map((c, i) => c * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const lum = c => { const l = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
  const ratio = el => {
    const layers = [];
    for (let e = el.parentElement; e; e = e.parentElement) {
      const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg && bg[3] > 0) layers.push(bg);
      if (bg && bg[3] === 1) break;
    }
    let back = [255, 255, 255, 1];
    for (const layer of layers.reverse()) back = over(layer, back);
    const style = getComputedStyle(el);
    // A block's label lies on its halo, a stroke of the block's own colour (a hatched block's pattern background).
    if (el.classList.contains('ppedu-label')) back = over(parse(style.stroke), back);
    const fore = over(parse(el instanceof SVGElement ? style.fill : style.color), back);
    const [a, b] = [lum(fore), lum(back)].sort((x, y) => y - x);
    return (a + 0.05) / (b + 0.05);
  };
  return [...root.querySelectorAll('.ppedu-diagram svg text, .ppedu-feedback li, .ppedu-message span')]
    .filter(e => e.textContent.trim()).map(e => [e.textContent.trim(), ratio(e)]);
}
"""


def _notebook(server, name: str, *sources: str, slides: bool = False) -> str:
    cells = [new_markdown_cell(f"# {name}")]
    for source in sources:
        cells.append(new_code_cell(source))
        if slides:  # each widget on a slide of its own
            cells[-1].metadata["slideshow"] = {"slide_type": "slide"}
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    if slides:  # styled for presenting as every chapter is
        metadata["@deathbeds/jupyterlab-fonts"] = DECK_STYLE
    nbformat.write(new_notebook(cells=cells, metadata=metadata), server.root / "notebooks" / f"{name}.ipynb")
    return f"notebooks/{name}.ipynb"


def _texts_contrast(lab, root) -> list[tuple[str, float]]:
    """Every piece of text in ``root``'s diagrams, feedback and messages, with its contrast ratio."""
    return [tuple(pair) for pair in root.evaluate(CONTRAST_JS)]


def test_the_widgets_read_in_the_dark_theme_and_their_cells_clear(lab, server):
    panel = lab.open(_notebook(server, "screen-widgets", *WIDGETS))
    lab.run_all(panel)
    assert lab.errors(panel) == []
    page = lab.page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    explorer = panel.locator(".ppedu-explorer").first
    lab.shoot(explorer, "screen-light-explorer")

    # Every control has a name a screen reader reads out: each slider handle, the schedule drop-down, the time slider.
    for name in explorer_module.NAMES.values():
        explorer.get_by_role("slider", name=name, exact=True).wait_for()
    assert explorer.get_by_role("slider").count() == len(explorer_module.NAMES)
    schedule = explorer.get_by_role("combobox", name="schedule", exact=True)
    panel.locator(".ppedu-player").get_by_role("slider", name=player_module.NAME, exact=True).wait_for()

    # No two drawings share an SVG id (a pattern on a hidden slide would paint another slide's cells).
    ids = page.evaluate("() => [...document.querySelectorAll('svg [id]')].map(e => e.id)")
    assert ids and len(ids) == len(set(ids))

    # The builder: place two operations, take them off again; the cells read empty.
    builder = panel.locator(".ppedu-builder").first
    for op, cell in (("F0", "0-0"), ("B1", "1-3")):
        builder.locator("select").select_option(op)
        builder.locator(f".ppedu-cell-{cell}").click()
        page.wait_for_function("c => c.innerText.trim() !== ''", arg=builder.locator(f".ppedu-cell-{cell}").element_handle())
    assert builder.locator(".ppedu-cell-1-3").inner_text().strip() == "B1"
    for cell in ("0-0", "1-3"):
        builder.locator(f".ppedu-cell-{cell}").click()
    page.wait_for_function("b => b.innerText.includes('0 of 8 operations placed')", arg=builder.element_handle())
    cells = builder.locator(".ppedu-cell").all_inner_texts()
    assert [t for t in cells if t.strip().replace("\u00a0", "")] == []

    # Mark mode: mark a cell, unmark it; no cross stays behind.
    marking = panel.locator(".ppedu-slot-exercise").first
    cell = marking.locator(".ppedu-cell-1-0")
    cell.click()
    page.wait_for_function("c => c.innerText.includes('✗')", arg=cell.element_handle())
    cell.click()
    page.wait_for_function("c => !c.innerText.includes('✗')", arg=cell.element_handle())

    # An impossible setting (DualPipe with an odd m) keeps the explorer's height, says why and offers the nearest m.
    # (Interleaving takes any m now, as Megatron-LM and torch do.)
    schedule.select_option("dualpipe")
    explorer.locator(".ppedu-diagram svg[aria-label*='of dualpipe']").wait_for()
    height = explorer.bounding_box()["height"]
    lab.slider(explorer, "m").press("ArrowRight")
    explorer.locator(".ppedu-fix", has_text="use m = 8").wait_for()
    assert "even m" in explorer.locator(".ppedu-message").inner_text()
    assert abs(explorer.bounding_box()["height"] - height) <= 1
    lab.shoot(explorer, "screen-light-explorer-invalid")
    explorer.locator(".ppedu-fix").click()
    explorer.locator(".ppedu-fix").wait_for(state="hidden")
    assert abs(explorer.bounding_box()["height"] - height) <= 1
    schedule.select_option("interleaved")
    explorer.locator(".ppedu-diagram svg[aria-label*='of interleaved']").wait_for()

    # A wrong count gives feedback to be read too; Enter in a field checks, as in any form.
    counting = panel.locator(".ppedu-slot-exercise").nth(1)
    counting.locator("input").first.fill("1")
    counting.locator("input").first.press("Enter")
    counting.locator(".ppedu-feedback [role=alert]", has_text="total slots").wait_for()

    # The player's button has a name, and playing moves the diagram on (announced by its caption).
    player = panel.locator(".ppedu-player").first
    assert player.locator(".ppedu-caption [aria-live]").inner_text().startswith("t9:")
    player.get_by_role("button", name="▶ play").click()
    page.wait_for_function("c => c.innerText.startsWith('t11:')", arg=player.locator(".ppedu-caption").element_handle())
    player.get_by_role("button", name="▶ play").wait_for()  # back to "play" at the end

    light = _texts_contrast(lab, panel)
    lab.command("Use Theme: JupyterLab Dark")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(500)
    dark = _texts_contrast(lab, panel)
    lab.shoot(explorer, "screen-dark-explorer")
    lab.shoot(panel.locator(".ppedu-player").first, "screen-dark-player")
    lab.shoot(counting, "screen-dark-counting")
    lab.command("Use Theme: JupyterLab Light")
    assert len(dark) > 50 and len(light) == len(dark)  # block labels count once per GPU and look
    worst = min(dark, key=lambda t: t[1])
    assert worst[1] >= 4.5, f"dark theme: {worst[0]!r} has contrast {worst[1]:.2f}:1"
    worst = min(light, key=lambda t: t[1])
    assert worst[1] >= 4.5, f"light theme: {worst[0]!r} has contrast {worst[1]:.2f}:1"


def test_a_slider_moved_on_a_slide_redraws_the_diagram(lab, server):
    """Lecture mode (jupyterlab-slideshow's deck, inside JupyterLab): the widgets on a slide are live."""
    panel = lab.open(_notebook(server, "screen-slides", *WIDGETS[:2], 'print("the last slide")', slides=True))
    lab.run_all(panel)
    cells = panel.locator(".jp-Cell")
    # The deck opens on the selected cell's slide, and Run All leaves the last cell selected (the lecture
    # plans say so): the lecturer selects the title first.
    assert "jp-mod-active" in cells.nth(cells.count() - 1).get_attribute("class")
    cells.first.click()
    page = lab.page
    with deck(lab):
        assert cells.first.is_visible()
        explorer = panel.locator(".ppedu-explorer").first
        for _ in range(4):
            if explorer.is_visible():
                break
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(400)
        assert explorer.is_visible() and not panel.locator("pre", has_text="the last slide").is_visible()
        page.set_viewport_size({"width": 1920, "height": 1080})
        page.wait_for_timeout(500)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "screen-slide-explorer.png"))
        # Move comm one step on the slide: the diagram redraws as the simulator says it must (costs per stage: each
        # of the two chunks takes half).
        wanted = describe(simulate(schedules.interleaved_1f1b(4, 8, v=2), Costs(f=0.5, b=0.5, comm=0.05)))
        lab.slider(explorer, "comm").press("ArrowUp")  # on a slide ← and → step the deck
        svg = explorer.locator(".ppedu-diagram svg").first
        page.wait_for_function("([root, w]) => root.querySelector('.ppedu-diagram svg').getAttribute('aria-label') === w",
                               arg=[explorer.element_handle(), wanted])
        assert svg.is_visible()


# In the page: the smallest on-screen size (px) of the text in an explorer's diagram, and how many glyphs its block
# labels place (one text per GPU and look places each glyph at its own x).
TEXT_SIZES_JS = """
root => {
  const svg = root.querySelector('.ppedu-diagram svg');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const sizes = [...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  const glyphs = [...svg.querySelectorAll('text.ppedu-label')].reduce((n, t) => n + t.getNumberOfChars(), 0);
  return [Math.min(...sizes), glyphs];
}
"""
# In the page: the block labels of root's diagram that lie outside root on screen, and how many blocks are unlabelled.
OUTSIDE_JS = """
root => { const box = root.getBoundingClientRect();
  const outside = [...root.querySelectorAll('.ppedu-diagram svg text.ppedu-label')].filter(t => { const r = t.getBoundingClientRect();
    return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1; });
  return [outside.length, root.querySelectorAll('.ppedu-unlabelled').length]; }
"""
# Elements inside root that scroll or clip their content (what a student would see as a scrollbar or a cut-off control).
OVERFLOWING_JS = """
root => [root, ...root.querySelectorAll('*')].filter(e => {
  const style = getComputedStyle(e);
  const clips = /(auto|scroll|hidden)/.test(style.overflowX + style.overflowY);
  return clips && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1);
}).map(e => e.className.baseVal ?? e.className)
"""


def test_the_explorer_fits_a_small_screen_and_reads_at_its_largest(lab, server):
    panel = lab.open(_notebook(server, "screen-narrow", WIDGETS[0], WIDGETS[1], BIG))
    lab.run_all(panel)
    assert lab.errors(panel) == []
    lab.page.set_viewport_size({"width": 1024, "height": 768})
    assert lab.page.locator("#jp-left-stack").bounding_box()["width"] > 200  # the file browser is open
    explorer, big = panel.locator(".ppedu-explorer").nth(0), panel.locator(".ppedu-explorer").nth(1)
    explorer.locator(".ppedu-diagram svg").wait_for()
    explorer.scroll_into_view_if_needed()
    lab.page.wait_for_function("e => Math.abs(Math.floor(e.clientWidth) - Number(e.dataset.drawn)) <= 1",
                               arg=explorer.locator(".ppedu-fitted").element_handle())
    lab.shoot(explorer, "screen-narrow-explorer")
    # The whole explorer: nothing in it scrolls or is cut off, and it ends inside its output area.
    assert explorer.evaluate(OVERFLOWING_JS) == []
    area = explorer.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea-output')]").first.bounding_box()
    box = explorer.bounding_box()
    assert box["x"] + box["width"] <= area["x"] + area["width"] + 1
    smallest, _ = explorer.evaluate(TEXT_SIZES_JS)
    assert smallest >= 10, f"diagram text shrinks to {smallest:.1f} px"

    # p = 8, m = 32, v = 4: every block labelled at full size, the diagram folded into bands as wide as the widget
    # (nothing scrolls, every label on screen inside it).
    timeline = simulate(schedules.interleaved_1f1b(8, 32, v=4), Costs(f=0.25, b=0.25))
    big.scroll_into_view_if_needed()
    lab.page.wait_for_function("e => Math.abs(Math.floor(e.clientWidth) - Number(e.dataset.drawn)) <= 1",
                               arg=big.locator(".ppedu-fitted").element_handle())
    smallest, glyphs = big.evaluate(TEXT_SIZES_JS)
    assert smallest >= 10 and glyphs >= len(timeline.events)
    assert big.evaluate(OVERFLOWING_JS) == [] and big.evaluate(OUTSIDE_JS) == [0, 0]
    assert big.locator(".ppedu-diagram svg").first.evaluate("s => s.querySelectorAll('text').length") > 0
    assert big.locator(".ppedu-diagram svg").first.evaluate("s => s.textContent.split('GPU 7').length - 1") >= 2  # bands
    lab.shoot(big, "screen-narrow-big")


MARK_GRID = "SlotCountingExercise(schedules.one_f_one_b(4, 4), mode='mark')"  # chapter 3's: 14 columns
# In the page: the grid's cells that take a Tab stop, and how the focused cell is drawn.
GRID_JS = """
root => {
  const cells = [...root.querySelectorAll('.ppedu-cell')];
  const style = getComputedStyle(document.activeElement);
  return {tabStops: cells.filter(c => c.tabIndex >= 0).length, focused: document.activeElement.getAttribute('aria-label'),
          pressed: document.activeElement.getAttribute('aria-pressed'), ring: parseFloat(style.outlineWidth),
          group: root.querySelector('[role=group]')?.getAttribute('aria-label') ?? ''};
}
"""


def test_the_mark_grid_is_one_tab_stop_walked_with_the_arrow_keys_and_fits_a_small_screen(lab, server):
    panel = lab.open(_notebook(server, "screen-grid", WIDGETS[0], MARK_GRID))
    lab.run_all(panel)
    grid = panel.locator(".ppedu-slot-exercise").first
    first = grid.locator(".ppedu-cell-3-0")  # GPU 3 is drawn on top: its t1 comes first in the page
    first.wait_for()
    lab.page.wait_for_function("c => c.getAttribute('aria-label') === 'GPU 3, t1: empty'", arg=first.element_handle())
    first.focus()
    state = grid.evaluate(GRID_JS)
    assert state["tabStops"] == 1 and "arrow keys" in state["group"] and state["ring"] >= 3
    for key, wanted in (("ArrowRight", "GPU 3, t2: empty"), ("ArrowRight", "GPU 3, t3: empty"),
                        ("ArrowDown", "GPU 2, t3: F0"), ("End", "GPU 2, t14: empty"), ("ArrowUp", "GPU 3, t14: empty")):
        lab.page.keyboard.press(key)
        assert grid.evaluate(GRID_JS)["focused"] == wanted
    lab.page.keyboard.press("Space")  # marks the focused cell, which reads as pressed
    lab.page.wait_for_function("() => document.activeElement.getAttribute('aria-pressed') === 'true'")
    assert grid.evaluate(GRID_JS)["tabStops"] == 1
    lab.page.keyboard.press("Space")
    lab.page.wait_for_function("() => document.activeElement.getAttribute('aria-pressed') === 'false'")

    # At 1024×768 with the file browser open all 14 columns show: the columns narrow, nothing is cut off.
    lab.page.set_viewport_size({"width": 1024, "height": 768})
    grid.scroll_into_view_if_needed()
    lab.page.wait_for_timeout(300)
    cells = grid.locator(".widget-gridbox").first
    assert cells.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # no scrollbar: every column shows
    last, area = grid.locator(".ppedu-cell-0-13").bounding_box(), grid.bounding_box()
    assert last["x"] + last["width"] <= area["x"] + area["width"] + 1
    lab.shoot(grid, "screen-narrow-mark-grid")
