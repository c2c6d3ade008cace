"""Lecture mode without a kernel: a static deck built from a notebook loads nothing from the network, is laid out at
1280×720 and carries the chapter's speaker notes for reveal.js's speaker view."""

import shutil
from pathlib import Path

import nbformat
import pytest

from ppedu import lecture, slides

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# The bubble\nIdle share $(p-1)/(m+p-1)$."),
                nbformat.v4.new_code_cell("print(6 * 7)"),
                nbformat.v4.new_markdown_cell("### A detail"),
                nbformat.v4.new_markdown_cell("## GPipe")]
    nb.cells[2].metadata["slideshow"] = {"slide_type": "fragment"}
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot install reveal.js locally")
def test_a_deck_uses_a_local_reveal_js_and_no_cdn(notebook, tmp_path):
    # The npm packages are kept under build/ (ignored by git), so only the first run downloads them.
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    deck = slides.build_deck(notebook, out)
    html = deck.read_text()
    assert 'href="node_modules/reveal.js/dist/reveal.css"' in html and "node_modules/reveal.js/dist/reveal.js" in html
    assert slides.remote_references(html, out) == []
    assert "unpkg.com" not in html and "cdnjs" not in html
    assert [a for a in slides.missing_assets(deck) if "mathjax" not in a] == []  # MathJax left out to keep this quick
    assert "The bubble" in html and "A detail" in html
    assert "width: 1228" in html and "height: 691" in html  # 16:9, scaled by reveal.js to the screen
    assert "import mermaid from 'data:text/javascript," in html  # no file: a file:// page may not import one


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot install reveal.js locally")
def test_the_lecturers_deck_carries_the_notes_for_the_speaker_view_and_the_students_none(notebook, tmp_path):
    notes = notebook.parent.parent / "docs" / "speaker-notes" / f"{notebook.stem}.md"
    notes.parent.mkdir(parents=True)
    cell = nbformat.read(notebook, as_version=4).cells[1].id
    notes.write_text(f"# Speaker notes\n\n**At** `print(6 * 7)` <!-- cell {cell} -->\n\nAsk for 42 first.\n")
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    students = slides.build_deck(notebook, out, lecturer=tmp_path / "lecturer").read_text()
    html = (tmp_path / "lecturer" / f"{notebook.stem}.slides.html").read_text()
    assert '<aside class="notes">' in html and "Ask for 42 first." in html
    assert "plugin/notes/notes.js" in html and (tmp_path / "lecturer/node_modules/reveal.js/plugin/notes/notes.js").exists()
    assert '<aside class="notes">' not in students and "Ask for 42" not in students


def test_a_note_that_would_reach_the_students_deck_stops_the_build(notebook, monkeypatch):
    notes = notebook.parent.parent / "docs" / "speaker-notes" / f"{notebook.stem}.md"
    notes.parent.mkdir(parents=True)
    cell = nbformat.read(notebook, as_version=4).cells[1].id
    notes.write_text(f"# Speaker notes\n\n**At** `print(6 * 7)` <!-- cell {cell} -->\n\nAsk for 42 first.\n")
    # A build that put the notes in before writing the students' deck:
    monkeypatch.setattr(slides, "_stills", lambda nb: lecture.with_notes(nb, lecture.read_notes(notes)))
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    with pytest.raises(ValueError, match="shows a speaker note: 'Ask for 42 first.'"):
        slides.build_deck(notebook, out)


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: cannot install reveal.js locally")
def test_a_widget_in_a_deck_shows_its_still_picture(tmp_path):
    from ppedu.widgets import ScheduleExplorer

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("ScheduleExplorer()")
    cell.outputs = [nbformat.v4.new_output("display_data", data=ScheduleExplorer("gpipe", p=2, m=2)._repr_mimebundle_())]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "widget.ipynb")
    out = slides.install_assets(ROOT / "build" / "test-slides", packages=("reveal.js", "requirejs", "jquery"))
    html = slides.build_deck(tmp_path / "widget.ipynb", out).read_text()
    assert "ppedu-static" in html and "<svg" in html and "widget-view+json" not in html


def test_the_check_for_remote_references_can_fail(tmp_path):
    page = '<script src="https://unpkg.com/reveal.js@4.0.2/dist/reveal.js"></script>\n  "https://x.org/notes.js",\n'
    assert slides.remote_references(page) == ["https://unpkg.com/reveal.js@4.0.2/dist/reveal.js", "https://x.org/notes.js"]
    # A chapter's link to a web tool (chapter 11's Perfetto) is no load; a picture or a frame from the web is.
    linked = '<p>Open it in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a></p>'
    assert slides.remote_references(linked) == []
    assert slides.remote_references(linked + '<img alt="" src="https://x.org/a.png"><iframe src="https://x.org/f">') == [
        "https://x.org/a.png", "https://x.org/f"]
    # reveal.js's "simple" theme, nbconvert's default, imports two web fonts
    (tmp_path / "simple.css").write_text("@import url(https://fonts.googleapis.com/css?family=Lato:400,700);\n")
    assert slides.remote_references('<link rel="stylesheet" href="simple.css" id="theme">', tmp_path) == [
        "https://fonts.googleapis.com/css?family=Lato:400,700"]


def test_without_npm_the_reason_is_given(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(ValueError, match="needs npm"):
        slides.install_assets(tmp_path)
    assert slides.main(["--out", str(tmp_path), str(tmp_path / "none.ipynb")]) == 2


