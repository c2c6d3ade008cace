"""Lecture mode: a chapter presented as slides with jupyterlab-slideshow's deck, started from the command palette.

The deck is JupyterLab's own notebook shown slide by slide (not a separate page), so its widgets are the live ones.
"""

import re
from contextlib import contextmanager

import nbformat
import pytest

from .conftest import ROOT, SCREENSHOTS

# In the page: the on-screen size (px) of each visible paragraph or list item of the slide's text, zoom included.
TEXT_SIZES_JS = """
() => [...document.querySelectorAll('.jp-deck-mod-onscreen .jp-RenderedMarkdown :is(p, li)')]
  .filter(e => e.getBoundingClientRect().height > 0 && e.textContent.trim())
  .map(e => parseFloat(getComputedStyle(e).fontSize) * (e.currentCSSZoom ?? 1))
"""
CHAPTER = next(iter(sorted((ROOT / "notebooks").glob("0*.ipynb"))), None)


def first_heading(notebook) -> str:
    source = nbformat.read(notebook, as_version=4).cells[0].source
    return next(line.lstrip("#").strip() for line in source.splitlines() if line.startswith("#"))


@contextmanager
def deck(lab):
    """The deck started on the current notebook, and always stopped after: the extension keeps "active" in the
    user's settings, so a deck left running would greet every later test (and lecturer) in presentation mode."""
    lab.command("Start Deck")
    lab.page.locator(".jp-deck-mod-onscreen").first.wait_for()
    try:
        yield
    finally:
        lab.command("Stop Deck")
        lab.page.locator(".jp-deck-mod-onscreen").first.wait_for(state="detached")


@pytest.mark.skipif(CHAPTER is None, reason="no chapter notebooks in notebooks/ yet")
def test_a_chapter_opens_as_slides_on_its_first_slide(lab):
    panel = lab.open(f"notebooks/{CHAPTER.name}")
    lab.page.wait_for_timeout(1000)
    assert lab.page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0  # not opened as already modified
    lab.page.set_viewport_size({"width": 1920, "height": 1080})
    with deck(lab):
        shown = [c for c in panel.locator(".jp-Cell").all() if c.is_visible()]
        assert shown and re.sub(r"\s+", " ", shown[0].inner_text()).find(first_heading(CHAPTER)) >= 0
        assert len(shown) < panel.locator(".jp-Cell").count()  # one slide, not the whole notebook
        assert not panel.locator(".jp-Notebook-footer").is_visible()  # no "Click to add a cell" bar on a slide
        # Legible from the back of a lecture hall: the slide's body text at least 24 px on a 1080p screen.
        sizes = lab.page.evaluate(TEXT_SIZES_JS)
        assert sizes and min(sizes) >= 24, f"slide text {min(sizes):.0f} px at 1920×1080"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        lab.page.screenshot(path=str(SCREENSHOTS / f"{CHAPTER.stem}-slides.png"))
    assert lab.page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0  # the deck wrote nothing into it
