"""A chapter as a lecture: the slide metadata its deck reads, the deck's style, and the speaker notes,
kept for the lecturer outside the chapter that students open.

jupyterlab-slideshow's deck (JupyterLab's *Start Deck*) and nbconvert's static slides read each cell's
``slideshow.slide_type``. The deck never shows a cell typed ``"-"`` or ``"skip"``, and steps through a cell
with no type without showing anything new. So :func:`slide_types` gives every cell a type the deck shows,
derived from the chapter itself:

- the first cell and each heading start a slide;
- a code cell shares its slide with no other code cell: a second one starts a slide, together with the
  paragraphs that lead up to it (what the lecturer says before running it); after more than
  :data:`LONG_TEXT` characters of text, which would leave its output no room, it starts a slide of its own;
- a cell tagged ``aside`` (a digression for readers) is skipped; one tagged ``new-slide`` starts a slide (an output
  that needs the whole slide, such as a tall table, or the long commentary after it);
- every other cell is a fragment of the slide above it: each press of → (or a presenter's clicker) shows
  the next one — the code, then its output's commentary — so the room predicts before it sees.

Every break is a ``slide``, none a ``subslide``: the deck's → moves from slide to slide and would pass a
slide's subslides by.

Speaker notes are the lecturer's: a chapter holds none. A notes cell someone puts into a chapter is moved
into ``docs/speaker-notes/<chapter>.md``, after the cell it followed; the live deck's presenter view (press N, the
course's JupyterLab extension) shows the current slide's, the lecturer's static decks (``make slides``) show them in
reveal.js's speaker view (press S), the students' static decks never, and the file reads as the lecturer's copy.

Run after editing a chapter (``make lecture``)::

    python -m ppedu.lecture notebooks/*.ipynb          # writes the metadata and moves notes out
    python -m ppedu.lecture --check notebooks/*.ipynb  # exit 1, naming the chapters, if any would change
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The deck's type, in hundredths of the screen's height (of the slide's, in a static deck): prose at 2.4 (26 px at
#: 1080p; JupyterLab's own is 14 px), code, text outputs and tables at 2.25 (24 px; JupyterLab sets tables at 13 px).
TEXT_VH, CODE_VH = 2.4, 2.25
#: The least any text on a slide may measure at 1080p, in px: what reads from the back row of a lecture hall.
SLIDE_TEXT_PX = 24
#: How much larger a slide at 1080p shows widgets, HTML and SVG (diagrams' labels, ipywidgets' controls: 13 px, 24 px),
#: and pictures (matplotlib figures, whose text ppedu.plot writes at 16.7 px: 25 px); at 720p two thirds of that, as
#: everything else on the slide.
DRAWN_ZOOM, PICTURE_ZOOM = 1.85, 1.5
#: The notebook's style while the deck presents it (its ``@deathbeds/jupyterlab-fonts`` metadata, which
#: jupyterlab-slideshow applies): a slide laid out for 1920×1080 that scales with the screen's height, so the same
#: slide fits 1280×720. Text and code in sizes that read from the back of a lecture hall (:data:`TEXT_VH`); a line of
#: code or of a text output too long for the screen wraps rather than run off it (lines short enough, a spacetime
#: grid's rows, stay whole); tables in the code's size, their rows as close as a table of numbers reads; a widget's
#: control as wide as its name (ipywidgets cuts a name longer than 80 px); widgets, HTML (diagrams) and pictures larger
#: by :data:`DRAWN_ZOOM` and :data:`PICTURE_ZOOM` (two thirds of that on a screen under 900 px high). (One selector a
#: rule: jupyterlab-fonts splits a selector at every comma, even inside ``:is()``.)
_DRAWN = ("[data-mime-type='text/html']", "[data-mime-type='image/svg+xml']", ":has(> .jupyter-widgets)")
_PICTURE = "[data-mime-type='image/png']"


def _zoom(k: float) -> dict[str, dict[str, str]]:
    return {**{f"& .jp-OutputArea-output{drawn}": {"zoom": f"{k * DRAWN_ZOOM:.4g}"} for drawn in _DRAWN},
            f"& .jp-OutputArea-output{_PICTURE}": {"zoom": f"{k * PICTURE_ZOOM:.4g}"}}


DECK_STYLE: dict[str, Any] = {"styles": {"": {"body[data-jp-deck-mode='presenting'] &": {
    "--jp-content-font-size1": f"{TEXT_VH}vh", "--jp-code-font-size": f"{CODE_VH}vh",
    "& .jp-OutputArea-output pre": {"white-space": "pre-wrap", "overflow-wrap": "anywhere"},
    "& .jp-InputArea-editor .cm-content": {"white-space": "pre-wrap", "overflow-wrap": "anywhere", "flex-shrink": "1"},
    "& .jp-RenderedMarkdown table": {"font-size": f"{CODE_VH}vh"},
    **{f"& .jp-RenderedHTMLCommon {cell}": {"padding": "0.1em 0.4em", "line-height": "1.2"} for cell in ("td", "th")},
    "& .jupyter-widgets .widget-inline-hbox > .widget-label": {
        "width": "auto", "min-width": "var(--jp-widgets-inline-label-width)"},
    # a widget's own text output (an ``interact``'s table) in a widget's sizes, as large again as the widget is
    "& .jp-OutputArea-output:has(> .jupyter-widgets)": {
        "--jp-content-font-size1": "13px", "--jp-code-font-size": "13px"},
    "& .jupyter-widgets .jp-RenderedMarkdown table": {"font-size": "13px"},
    **_zoom(1.0),
    "@media (max-height: 900px)": _zoom(1 / 1.5),
}}}}
#: A static deck's slide as reveal.js lays it out, 16:9 (``make slides``, :mod:`ppedu.slides`). reveal.js scales it to
#: the screen less a 4 % margin: STATIC_SCALE (1.5) times at 1920×1080 and 1 at 1280×720, the sizes of the live deck, so
#: a widget's still picture reads as the widget does.
SLIDE = (1228, 691)
STATIC_SCALE = 1.5
FONTS_KEY = "@deathbeds/jupyterlab-fonts"
#: Where each chapter's speaker notes live, relative to the course's root.
NOTES_FOLDER = Path("docs") / "speaker-notes"
ASIDE = "aside"
NEW_SLIDE = "new-slide"
#: The most text (characters of Markdown, about six lines across a slide) a slide shows above a code cell.
LONG_TEXT = 600
_HEADING = re.compile(r"\s*#{1,6}\s")
_ANCHOR = re.compile(r"^\*\*At\*\* .*<!-- cell (\S+) -->\s*$")


def slide_types(cells: Sequence[Any]) -> list[str]:
    """Each cell's slide type by the rules above.

    >>> from nbformat.v4 import new_code_cell as code, new_markdown_cell as text
    >>> slide_types([text("# Title"), code("import ppedu"), text("## A section"), text("Lead-in."), code("a"),
    ...              text("Then:"), code("b"), text("### Detail"), code("c"), text("Far off.", metadata={"tags": ["aside"]}),
    ...              text("## Long " + "words " * 100), code("d")])
    ['slide', 'fragment', 'slide', 'fragment', 'fragment', 'slide', 'fragment', 'slide', 'fragment', 'skip', 'slide', 'slide']
    >>> tall = {"tags": ["new-slide"]}
    >>> slide_types([text("## A table"), code("table", metadata=tall), text("Read it by columns.", metadata=tall)])
    ['slide', 'slide', 'slide']
    """
    types: list[str] = []
    code_shown, lead, text = False, None, 0  # a code cell on this slide yet; where the paragraphs before the next
    for i, cell in enumerate(cells):        # begin; the characters of text on the slide so far
        kind, tags = "fragment", cell.metadata.get("tags", ())
        if i == 0 or (cell.cell_type == "markdown" and (_HEADING.match(cell.source) or NEW_SLIDE in tags)):
            kind, code_shown, lead, text = "slide", False, None, len(cell.source)
        elif ASIDE in tags:
            kind = "skip"
        elif cell.cell_type == "code":
            if code_shown and lead is not None:  # the paragraphs since the last code cell open its slide
                types[lead], text = "slide", sum(len(c.source) for c in cells[lead:i])
            elif code_shown:
                kind = "slide"
            if text > LONG_TEXT or NEW_SLIDE in tags:  # and if they are long, the code has a slide of its own
                kind = "slide"
            code_shown, lead, text = True, None, 0
        else:
            text += len(cell.source)
            if lead is None and code_shown:
                lead = i
        types.append(kind)
    return types


#: A lecture plan's timing rule (docs/lecture-plans.md): 90 minutes; the sections first, each block of the plan at least
#: a minute for every press of the deck it covers (a slide, or the next cell on one: read it, let the room predict);
#: then the self-check, in pairs; then the room's questions and the next chapter's teaser.
SESSION_MIN, SELF_CHECK_MIN, QUESTIONS_MIN, MIN_PER_PRESS = 90, 15, 5, 1.0


def presses(nb: Any, sections: Sequence[str]) -> list[int]:
    """How many presses of → the deck takes through each of ``sections`` (headings of ``nb``): from its heading to the
    next heading named (the first in the chapter from the deck's start, the last to its end). A cell the deck skips
    takes none.

    >>> from nbformat.v4 import new_code_cell as code, new_markdown_cell as text, new_notebook
    >>> nb = lecture(new_notebook(cells=[text("# T"), code("1"), text("## A"), code("2"), text("### A.1"), code("3"),
    ...                                  text("## B"), code("4")]))[0]
    >>> presses(nb, ["A", "B"])
    [6, 2]
    """
    at: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if _HEADING.match(line):
                    at.setdefault(line.lstrip("#").strip(), i)
    if missing := [name for name in sections if name not in at]:
        raise ValueError(f"no section {missing[0]!r} in the chapter")
    starts = sorted(at[name] for name in sections)
    ends = {a: b for a, b in zip(starts, [*starts[1:], len(nb.cells)])}
    shown = [cell.metadata.get("slideshow", {}).get("slide_type") in ("slide", "fragment") for cell in nb.cells]
    return [sum(shown[0 if at[name] == starts[0] else at[name]:ends[at[name]]]) for name in sections]


@dataclass(frozen=True)
class Note:
    """What the lecturer says after the cell ``after`` (a cell id of the chapter)."""

    after: str
    text: str


def notes_path(notebook: str | Path) -> Path:
    """The lecturer's file of ``notebook``'s speaker notes: ``docs/speaker-notes/<name>.md`` in its course."""
    notebook = Path(notebook).resolve()
    return notebook.parent.parent / NOTES_FOLDER / f"{notebook.stem}.md"


def read_notes(path: str | Path) -> list[Note]:
    """The notes of a speaker-notes file, in order (none if there is no file)."""
    path = Path(path)
    if not path.exists():
        return []
    notes: list[Note] = []
    anchor: str | None = None
    lines: list[str] = []
    for line in [*path.read_text(encoding="utf-8").splitlines(), "## end"]:
        found = _ANCHOR.match(line)
        if found or line.startswith("#"):
            if anchor is not None:
                notes.append(Note(anchor, "\n".join(lines).strip()))
            anchor, lines = (found[1] if found else None), []
        elif anchor is not None:
            lines.append(line)
    return notes


def render_notes(nb: Any, notes: Sequence[Note], name: str) -> str:
    """The speaker-notes file: the chapter's headings in order, each note under the cell it follows."""
    by_cell = _by_cell(notes)
    title = _first_line(nb.cells[0].source).lstrip("#").strip() if nb.cells else name
    out = [f"# Speaker notes · {title}", "",
           f"For the lecturer only: the chapter students open (`notebooks/{name}.ipynb`) holds none. Each note is for "
           "the cell it names, under its section, and shows while that cell's slide is on screen: in the live deck's "
           "presenter view (press N), and in the speaker view (press S) of the lecturer's static decks "
           "(`make slides`: build/slides-lecturer; the students' decks in build/slides have none). "
           f"A notes cell put into the chapter is moved here by `python -m ppedu.lecture notebooks/{name}.ipynb`.", ""]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and _HEADING.match(cell.source):
            out += [f"## {_first_line(cell.source).lstrip('#').strip()}", ""]
        for note in by_cell.get(cell.get("id", ""), ()):
            out += [f"**At** {_quote(cell)} <!-- cell {cell.id} -->", "", note.text, ""]
    return "\n".join(out).rstrip() + "\n"


def lecture(nb: Any, notes: Sequence[Note] = ()) -> tuple[Any, list[Note]]:
    """The chapter as the deck reads it, and its speaker notes: ``notes`` (those of the lecturer's file) with the
    notes cells of ``nb`` moved out, each after the cell above it. ``nb`` is changed in place.

    Raises ``ValueError`` if a note follows a cell the chapter no longer has (say where it goes now)."""
    moved: list[Note] = list(notes)
    kept: list[Any] = []
    for cell in nb.cells:
        if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
            if not kept:
                raise ValueError("a chapter cannot open with speaker notes: put them after its title cell")
            moved.append(Note(kept[-1].id, cell.source.strip()))
        else:
            kept.append(cell)
    ids = {cell.id for cell in kept}
    if lost := [note for note in moved if note.after not in ids]:
        raise ValueError(f"a speaker note follows cell {lost[0].after!r}, which the chapter no longer has: "
                         f"put it after another cell in its notes file ({lost[0].text[:40]!r}…)")
    nb.cells = kept
    for cell, kind in zip(kept, slide_types(kept)):
        cell.metadata["slideshow"] = {"slide_type": kind}
    nb.metadata.pop("rise", None)  # RISE is not the course's deck (see the Makefile)
    nb.metadata[FONTS_KEY] = DECK_STYLE
    order = {cell.id: i for i, cell in enumerate(kept)}
    return nb, sorted(moved, key=lambda note: order[note.after])


def with_notes(nb: Any, notes: Sequence[Note]) -> Any:
    """``nb`` with each note put back as a ``notes`` cell after its cell: what a deck with a speaker view reads."""
    import nbformat

    by_cell = _by_cell(notes)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        for note in by_cell.get(cell.get("id", ""), ()):
            cells.append(nbformat.v4.new_markdown_cell(note.text, metadata={"slideshow": {"slide_type": "notes"}}))
    nb.cells = cells
    return nb


def update(notebook: str | Path, write: bool = True) -> list[Path]:
    """Apply :func:`lecture` to ``notebook`` and its speaker-notes file; the files that changed (or would)."""
    import nbformat

    path, notes_file = Path(notebook), notes_path(notebook)
    before = path.read_text(encoding="utf-8")
    nb, notes = lecture(nbformat.reads(before, as_version=4), read_notes(notes_file))
    wanted = {path: nbformat.writes(nb) + "\n"}
    if notes or notes_file.exists():
        wanted[notes_file] = render_notes(nb, notes, path.stem)
    changed = [p for p, text in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if write:
        for p in changed:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(wanted[p], encoding="utf-8")
    return changed


def _by_cell(notes: Sequence[Note]) -> dict[str, list[Note]]:
    """The notes grouped by the cell they follow, each group in order."""
    grouped: dict[str, list[Note]] = {}
    for note in notes:
        grouped.setdefault(note.after, []).append(note)
    return grouped


def _first_line(source: str) -> str:
    return next((line for line in source.splitlines() if line.strip()), "")


def _quote(cell: Any) -> str:
    line = _first_line(cell.source).strip()
    if cell.cell_type == "code":
        return f"`{line.replace('`', '')}`"
    line = line.lstrip("#").strip()
    return f"“{line[:60]}{'…' if len(line) > 60 else ''}”"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ppedu.lecture", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if any file would change")
    args = parser.parse_args(argv)
    changed = []
    for notebook in args.notebooks:
        try:
            changed += update(notebook, write=not args.check)
        except (ValueError, OSError) as problem:
            print(f"ppedu.lecture: {notebook}: {problem}")
            return 2
    for path in changed:
        print(f"{'would change' if args.check else 'wrote'} {os.path.relpath(path)}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
