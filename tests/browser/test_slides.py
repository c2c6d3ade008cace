"""Lecture mode: a chapter opened as slides with RISE (jupyterlab-rise) from JupyterLab's command palette."""

import re

import nbformat
import pytest

from .conftest import ROOT

CHAPTER = next(iter(sorted((ROOT / "notebooks").glob("0*.ipynb"))), None)


def first_heading(notebook) -> str:
    source = nbformat.read(notebook, as_version=4).cells[0].source
    return next(line.lstrip("#").strip() for line in source.splitlines() if line.startswith("#"))


@pytest.mark.skipif(CHAPTER is None, reason="no chapter notebooks in notebooks/ yet")
def test_a_chapter_opens_as_slides_on_its_first_slide(lab):
    lab.open(f"notebooks/{CHAPTER.name}")
    lab.command("Render as Reveal Slideshow")
    deck = lab.page.frame_locator("iframe[src*='rise/']").first
    slide = deck.locator(".reveal .slides > section.present").first
    slide.wait_for(timeout=60_000)
    heading = first_heading(CHAPTER)
    assert re.sub(r"\s+", " ", slide.inner_text()).find(heading) >= 0, slide.inner_text()[:500]
    assert deck.locator(".reveal .slides > section").count() > 1  # a deck, not one long page
    lab.shoot(lab.page.locator(".jp-MainAreaWidget:has(iframe[src*='rise/'])").first, f"{CHAPTER.stem}-slides")
