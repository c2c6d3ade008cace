"""Lecture mode as a lecturer drives it, on a real chapter (6) presented live in JupyterLab at 1920×1080: a presenter's
clicker (PageDown, PageUp) and the keyboard (→, Space, ←) step the deck by one step whatever was touched last (a
widget's slider, or a click on empty slide space) and change nothing else; N opens the presenter view with the
current slide's speaker note, and keys pressed there step the deck too; Escape leaves the deck; and a JupyterLab
reopened after the browser closed mid-lecture opens on the notebook, not on a deck without menus.
"""

from __future__ import annotations

import nbformat
import pytest

from ppedu import lecture

from .conftest import ROOT, SCREENSHOTS
from .test_slides import deck

CHAPTER = ROOT / "notebooks" / "06-dualpipe.ipynb"
EXPLORER = 'ScheduleExplorer("dualpipe"'
#: The keys a lecturer steps with, and which way each goes.
KEYS = {"ArrowRight": 1, "Space": 1, "PageDown": 1, "PageUp": -1, "ArrowLeft": -1}
# In the page: the deck's state and everything else a key might change: the active cell, the explorer's controls (its
# readouts, drop-downs), how far anything is scrolled sideways, where the slide's first cell sits across the screen.
STATE_JS = """
panel => {
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
  const explorer = panel.querySelector('.ppedu-explorer');
  const shown = cells.find(c => c.classList.contains('jp-deck-mod-onscreen'));
  return {
    active: cells.findIndex(c => c.classList.contains('jp-mod-active')),
    controls: [...explorer.querySelectorAll('.widget-readout, select')].map(e => e.value ?? e.textContent),
    sideways: [...panel.querySelectorAll('*')].filter(e => e.scrollLeft > 0).length,
    left: Math.round(shown.getBoundingClientRect().left),
    presenting: document.body.dataset.jpDeckMode === 'presenting',
  };
}
"""


def state(panel) -> dict:
    return panel.evaluate(STATE_JS)


def settle(lab, panel, active: int) -> dict:
    """The state once the deck has stopped moving (the step a key asked for is done), or after 3 s."""
    for _ in range(30):
        now = state(panel)
        if now["active"] != active:
            break
        lab.page.wait_for_timeout(100)
    lab.page.wait_for_timeout(300)
    return state(panel)


def touch(lab, panel, how: str) -> None:
    """Use a widget (the explorer's m slider, moved up and back by keyboard, as a lecturer sets it), or click on empty
    slide space (the margin left of the slide's cells)."""
    if how == "widget":
        handle = lab.slider(panel, "m")
        before = handle.get_attribute("aria-valuenow")
        handle.press("ArrowUp")
        lab.page.wait_for_function("([h, b]) => h.getAttribute('aria-valuenow') !== b", arg=[handle.element_handle(), before])
        handle.press("ArrowDown")
        lab.page.wait_for_function("([h, b]) => h.getAttribute('aria-valuenow') === b", arg=[handle.element_handle(), before])
    else:
        lab.page.mouse.click(20, 540)


@pytest.mark.skipif(not CHAPTER.exists(), reason="chapter 6 is not in this course")
def test_a_clicker_and_the_keyboard_step_the_deck_whatever_was_touched_last_and_nothing_else(lab):
    panel = lab.open(f"notebooks/{CHAPTER.name}")
    lab.run_all(panel)
    lab.page.set_viewport_size({"width": 1920, "height": 1080})
    cells = panel.locator(".jp-Cell")
    explorer = next(i for i in range(cells.count()) if EXPLORER in cells.nth(i).locator(".jp-InputArea").inner_text())
    cells.nth(explorer).click()  # the deck opens on the selected cell's slide: the explorer's own
    results = []
    with deck(lab):
        lab.page.wait_for_timeout(1000)
        home = settle(lab, panel, -1)
        assert home["active"] == explorer and home["presenting"], home
        for key, way in KEYS.items():
            for how in ("widget", "click"):
                touch(lab, panel, how)
                before = state(panel)
                lab.page.keyboard.press(key)
                after = settle(lab, panel, before["active"])
                results.append(f"{key} after a {how}: {after['active'] - before['active']:+d}")
                assert after["active"] == explorer + way, f"{key} after a {how} went from {before} to {after}"
                assert after["controls"] == home["controls"], f"{key} after a {how} moved a control"
                assert after["sideways"] == 0, f"{key} after a {how} scrolled something sideways"
                lab.page.keyboard.press("PageUp" if way > 0 else "PageDown")  # back to the explorer's slide
                back = settle(lab, panel, after["active"])
                assert back["active"] == explorer and back["left"] == home["left"], f"the slide moved: {home} {back}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        lab.page.screenshot(path=str(SCREENSHOTS / "deck-keys-06-explorer.png"))
        print("\n".join(results))

        # The presenter view: the explorer slide's note, in a second window whose keys drive the deck too.
        with lab.page.context.expect_page() as opened:
            lab.page.keyboard.press("n")
        view = opened.value
        view.wait_for_load_state()
        cell = next(c.id for c in nbformat.read(CHAPTER, as_version=4).cells if EXPLORER in c.source)
        wanted = next(n.text for n in lecture.read_notes(lecture.notes_path(CHAPTER)) if n.after == cell)
        view.wait_for_function("w => document.querySelector('#notes').textContent.includes(w)", arg=wanted[:40])
        view.screenshot(path=str(SCREENSHOTS / "deck-presenter-view-06.png"))
        view.keyboard.press("PageDown")
        assert settle(lab, panel, explorer)["active"] == explorer + 1
        view.wait_for_function("w => !document.querySelector('#notes').textContent.includes(w)", arg=wanted[:40])
        view.close()
        lab.page.bring_to_front()

        lab.page.keyboard.press("Escape")  # leaves the deck; deck() would stop it otherwise, and fail to find it
        lab.page.wait_for_function("() => document.body.dataset.jpDeckMode !== 'presenting'")
        lab.command("Start Deck")  # for deck() to stop


@pytest.mark.skipif(not CHAPTER.exists(), reason="chapter 6 is not in this course")
def test_a_jupyterlab_reopened_after_the_browser_closed_mid_lecture_opens_on_the_notebook(lab, browser, server):
    panel = lab.open(f"notebooks/{CHAPTER.name}")
    panel.locator(".jp-Cell").first.click()
    lab.command("Start Deck")
    lab.page.locator(".jp-deck-mod-onscreen").first.wait_for()
    assert not lab.page.locator("#jp-menu-panel").is_visible()  # a deck shows no menus
    lab.page.context.close()  # the browser closed mid-lecture
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    try:
        page = context.new_page()
        page.goto(f"{server.url}lab/tree/notebooks/{CHAPTER.name}?token={server.token}")  # the workspace restored
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=60_000)
        page.wait_for_timeout(5000)  # as long as a deck resuming on its own takes
        assert page.evaluate("document.body.dataset.jpDeckMode") != "presenting"
        assert page.locator("#jp-menu-panel").is_visible()
    finally:
        context.close()
