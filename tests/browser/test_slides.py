"""Lecture mode: a chapter presented as slides with jupyterlab-slideshow's deck, started from the command palette,
and as the static reveal.js deck `make slides` writes.

The live deck is JupyterLab's own notebook shown slide by slide (not a separate page), so its widgets are the live
ones; tests/browser/test_chapters.py steps through every chapter's.
"""

import re
import shutil
from contextlib import contextmanager

import nbformat
import pytest

from ppedu import lecture, slides

from .conftest import ROOT, SCREENSHOTS

# In the page: the on-screen size (px) of each visible paragraph or list item of the slide's text, zoom included.
TEXT_SIZES_JS = """
() => [...document.querySelectorAll('.jp-deck-mod-onscreen .jp-RenderedMarkdown :is(p, li)')]
  .filter(e => e.getBoundingClientRect().height > 0 && e.textContent.trim())
  .map(e => parseFloat(getComputedStyle(e).fontSize) * (e.currentCSSZoom ?? 1))
"""
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
CHAPTER = next(iter(CHAPTERS), None)
SIZES = ((1920, 1080), (1280, 720))


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


# The static decks (`make slides`): a chapter run, written as reveal.js slides, opened from its file with the network
# cut off. In the page: per slide, how far its content runs past the slide (reveal.js's own size, before scaling)
# and the smallest SVG text on it, on screen.
STATIC_JS = """
() => new Promise(done => require(["node_modules/reveal.js/dist/reveal.js"], Reveal => {
  const {width, height} = Reveal.getConfig(), out = [];
  for (const section of Reveal.getSlides()) {
    const sizes = [...section.querySelectorAll('svg text')].filter(t => t.textContent.trim())
      .map(t => parseFloat(getComputedStyle(t).fontSize) * Reveal.getScale());
    out.push([section.scrollHeight - height, section.scrollWidth - width, Math.min(99, ...sizes)]);
  }
  done([out, document.querySelectorAll('aside.notes').length]);
}))
"""


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot install reveal.js locally")
@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_a_chapter_as_a_static_deck_fits_both_screens_offline_with_its_notes(browser, notebook, monkeypatch):
    monkeypatch.setenv("PPEDU_FAST", "1")
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    deck = slides.build_deck(notebook, out, execute=True)
    notes = len(lecture.read_notes(lecture.notes_path(notebook)))
    for width, height in SIZES:
        page = browser.new_page(viewport={"width": width, "height": height})
        remote, failed = [], []
        page.route("http*://**/*", lambda route: (remote.append(route.request.url), route.abort()))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("pageerror", lambda error: failed.append(str(error)))
        page.goto(deck.as_uri())
        page.locator(".reveal.ready").wait_for()
        slides_seen, asides = page.evaluate(STATIC_JS)
        page.close()
        over = [(i, below, across) for i, (below, across, _) in enumerate(slides_seen) if below > 1 or across > 1]
        assert over == [], f"{notebook.stem} at {width}×{height}: slides running over (index, px below, px across)"
        assert remote == [] and [f for f in failed if "mathjax" not in f.lower()] == []
        assert asides == notes > 0
        if width == 1920:
            smallest = min(size for _, _, size in slides_seen)
            assert smallest >= 17.99, f"{notebook.stem}: a widget's still picture writes {smallest:.1f} px at 1080p"
