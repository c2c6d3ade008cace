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

from ppedu import lecture, plot, slides, svg

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


# In the page: what a slide shows cut off, too small to read or unlabelled. ``roots`` are [where, element] pairs (the
# slide's cells, or a reveal.js section): every element in them that scrolls or clips its content (a slide is looked
# at, never scrolled: what a scroll box hides is off the screen), with ``least`` > 0 every text written smaller than
# ``least`` px on screen (zoom, scaling and an SVG's viewBox included; the smallest of each kind of element), and
# every diagram block drawn without its label, and every picture shown too small for its text to reach ``least`` px
# (a picture's text cannot be read from the page: the course's figures write theirs at ppedu.plot.TEXT_PT, 16.7 px,
# which tests/notebooks reads from each figure as it is drawn; its SVG drawings at ppedu.svg's 13 px), and every
# glyph of a diagram's labels that runs into another's. ``shown`` only: skip what is hidden (a fragment not yet reached).
MEASURE_JS = f"""
const PICTURE_TEXT_PX = {plot.TEXT_PT * 100 / 72:.3f}, SVG_TEXT_PX = {svg._FONT};
""" + """
function measure(roots, least, shown) {
  const problems = [], smallest = new Map();
  const named = e => { const c = String(e.className?.baseVal ?? e.className ?? '').trim();
    return e.tagName.toLowerCase() + (c ? '.' + c.split(/\\s+/).slice(0, 2).join('.') : ''); };
  const visible = e => e.checkVisibility({visibilityProperty: shown});
  const range = document.createRange();
  // How far what e shows (its text and elements, on screen) runs past its inner box, px across and down; a part that
  // clips itself away (a screen reader's copy of a formula) is not shown.
  const beyond = e => {
    const box = e.getBoundingClientRect(), scale = box.width / (e.offsetWidth || 1);
    const right = box.left + (e.clientLeft + e.clientWidth) * scale, bottom = box.top + (e.clientTop + e.clientHeight) * scale;
    const walk = document.createTreeWalker(e, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {acceptNode: n => {
      if (n.nodeType === Node.TEXT_NODE) return n.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
      const style = getComputedStyle(n);
      return !visible(n) || style.clip !== 'auto' || style.clipPath !== 'none' ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
    }});
    let across = 0, down = 0;
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (n.nodeType === Node.TEXT_NODE) range.selectNodeContents(n);
      const r = (n.nodeType === Node.TEXT_NODE ? range : n).getBoundingClientRect();
      if (r.width || r.height) [across, down] = [Math.max(across, r.right - right), Math.max(down, r.bottom - bottom)];
    }
    return [across, down].map(px => Math.round(px / scale));
  };
  for (const [where, root] of roots) {
    for (const e of [root, ...root.querySelectorAll('*')]) {
      if (e instanceof SVGElement || !visible(e)) continue;
      const style = getComputedStyle(e);
      if (!/(auto|scroll|hidden|clip)/.test(style.overflowX + style.overflowY) || style.clip !== 'auto') continue;
      if (e.scrollWidth - e.clientWidth <= 1 && e.scrollHeight - e.clientHeight <= 1) continue;
      const [across, down] = beyond(e);
      if (across > 1 || down > 1)
        problems.push(`${where}: ${named(e)} cuts off ${Math.max(across, 0)} px across and ${Math.max(down, 0)} px down`);
    }
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let t = walk.nextNode(); least && t; t = walk.nextNode()) {
      const e = t.parentElement, text = t.textContent.trim();
      // (a formula's copy for screen readers, clipped out of sight, is not shown)
      if (!text || !e || /^(title|style|script|desc|option)$/i.test(e.tagName) || !visible(e) || e.closest('mjx-assistive-mml')) continue;
      const svg = e.closest('svg'), box = svg?.viewBox.baseVal;
      const scale = box?.width ? svg.getBoundingClientRect().width / box.width : (e.currentCSSZoom ?? 1);
      const px = parseFloat(getComputedStyle(e).fontSize) * scale, key = `${where}: ${named(e)}`;
      if (px < least - 0.01 && !(smallest.get(key)?.[0] <= px)) smallest.set(key, [px, text.slice(0, 30)]);
    }
    for (const svg of least ? root.querySelectorAll('svg') : []) {  // glyphs that run into each other ("W3W7")
      const glyphs = [];
      for (const t of svg.querySelectorAll('text')) {
        if (!visible(t) || !t.getNumberOfChars()) continue;
        const ctm = t.getScreenCTM(), text = t.textContent;
        for (let i = 0; i < t.getNumberOfChars(); i++) {
          if (!text[i]?.trim()) continue;
          const e = t.getExtentOfChar(i), corners = [[e.x, e.y], [e.x + e.width, e.y], [e.x, e.y + e.height],
            [e.x + e.width, e.y + e.height]].map(([x, y]) => new DOMPoint(x, y).matrixTransform(ctm));
          const xs = corners.map(c => c.x), ys = corners.map(c => c.y);
          // a glyph's ink, not its line box: the middle 60 % of its height, less a pixel each side
          const h = Math.max(...ys) - Math.min(...ys), w = Math.max(...xs) - Math.min(...xs), turned = w > h;
          glyphs.push([text[i], turned ? Math.min(...xs) + 0.2 * w : Math.min(...xs) + 1,
                       turned ? Math.max(...xs) - 0.2 * w : Math.max(...xs) - 1,
                       turned ? Math.min(...ys) + 1 : Math.min(...ys) + 0.2 * h, turned ? Math.max(...ys) - 1 : Math.max(...ys) - 0.2 * h]);
        }
      }
      const touching = [];
      glyphs.sort((a, b) => a[1] - b[1]);
      for (let i = 0; i < glyphs.length; i++)
        for (let j = i + 1; j < glyphs.length && glyphs[j][1] < glyphs[i][2]; j++)
          if (Math.min(glyphs[i][4], glyphs[j][4]) - Math.max(glyphs[i][3], glyphs[j][3]) > 0) touching.push(`${glyphs[i][0]}${glyphs[j][0]}`);
      if (touching.length) problems.push(`${where}: ${touching.length} glyphs of a diagram's labels run into others ("${touching[0]}")`);
    }
    const unlabelled = root.querySelectorAll('.ppedu-unlabelled').length;
    if (unlabelled) problems.push(`${where}: ${unlabelled} diagram blocks without a label`);
    for (const img of least ? root.querySelectorAll('.jp-OutputArea-output img') : []) {
      const scale = img.getBoundingClientRect().width / img.naturalWidth;
      const text = img.src.startsWith('data:image/svg') ? SVG_TEXT_PX : PICTURE_TEXT_PX;  // a ppedu drawing's, or a figure's
      if (img.naturalWidth && scale < least / text) problems.push(`${where}: a picture shown at ${scale.toFixed(2)}×`);
    }
  }
  for (const [key, [px, text]] of smallest) problems.push(`${key} writes ${JSON.stringify(text)} at ${px.toFixed(1)} px`);
  return problems;
}
"""
#: On a 1080p screen every text of a slide (its prose, code, outputs, tables, widgets and diagrams) is at least this
#: large (px): legible from the back of a lecture hall.
SLIDE_TEXT_PX = lecture.SLIDE_TEXT_PX


# The static decks (`make slides`): a chapter (and the formula sheet and the practice set, written and opened as
# `make slides` does, but not lectured from: a one-page sheet's table is taller than a slide) run, written as reveal.js
# slides, opened from its file with the network cut off. In the page: each slide shown in turn (with all its
# fragments), how far it runs past reveal.js's own size (before scaling) and what on it is cut off, too small or
# unlabelled (MEASURE_JS).
STATIC_JS = "least => {" + MEASURE_JS + """
return new Promise(done => require(["node_modules/reveal.js/dist/reveal.js"], Reveal => {
  const {width, height} = Reveal.getConfig(), out = [];
  Reveal.getSlides().forEach((section, i) => {
    const {h, v} = Reveal.getIndices(section);
    Reveal.slide(h, v, section.querySelectorAll('.fragment').length);
    const over = [section.scrollHeight - height, section.scrollWidth - width];
    if (over[0] > 1 || over[1] > 1) out.push(`slide ${i + 1} runs ${over[0]} px below and ${over[1]} px across`);
    out.push(...measure([[`slide ${i + 1}`, section]], least, false));
  });
  done([out, document.querySelectorAll('aside.notes').length]);
}));
}
"""
DECKS = [*CHAPTERS, *(ROOT / "notebooks" / f"{kit}.ipynb" for kit in ("formula-sheet", "practice"))]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot install reveal.js locally")
@pytest.mark.parametrize("notebook", DECKS, ids=[p.stem for p in DECKS])
def test_a_static_deck_fits_both_screens_legibly_offline_the_lecturers_with_its_notes(browser, notebook, ran):
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    run, folder = ran(notebook.stem)  # the chapter tests' run of it (tests/notebook_run.py), with what it wrote
    for written in folder.glob("*.gif"):
        shutil.copy(written, out / written.name)
    deck = slides.build_deck(notebook, out, lecturer=out / "lecturer", ran=run)
    notes = lecture.read_notes(lecture.notes_path(notebook))
    assert slides.leaked_notes(deck.read_text(encoding="utf-8"), notes) == []  # the students' deck: no note's text
    assert 'class="notes"' not in deck.read_text(encoding="utf-8")
    lecturers = out / "lecturer" / deck.name
    assert len(slides.leaked_notes(lecturers.read_text(encoding="utf-8"), notes)) == len(notes)  # the check can see one
    assert notes or notebook not in CHAPTERS  # every chapter has notes
    for shown, asides in ((deck, 0), (lecturers, len(notes))):
        check_static_deck(browser, notebook, shown, asides)


def check_static_deck(browser, notebook, deck, notes: int) -> None:
    """Open ``deck`` from its file with the network cut off, at each size: it loads nothing from the network and shows
    ``notes`` speaker notes; a chapter's deck runs off no slide, cuts nothing off and writes nothing too small."""
    assert slides.remote_references(deck.read_text(encoding="utf-8"), deck.parent) == []  # as `make slides` checks it
    for width, height in SIZES:
        page = browser.new_page(viewport={"width": width, "height": height})
        remote, failed = [], []
        page.route("http*://**/*", lambda route: (remote.append(route.request.url), route.abort()))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("pageerror", lambda error: failed.append(str(error)))
        page.goto(deck.as_uri())
        page.locator(".reveal.ready").wait_for()
        problems, asides = page.evaluate(STATIC_JS, SLIDE_TEXT_PX if width == 1920 else 0)
        page.close()
        chapter = notebook in CHAPTERS  # the revision kit's decks are written and open offline; they are no lecture
        assert problems == [] or not chapter, f"{notebook.stem} at {width}×{height}:\n" + "\n".join(problems)
        assert remote == [] and [f for f in failed if "mathjax" not in f.lower()] == []
        assert asides == notes
