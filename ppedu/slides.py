"""Lecture mode: static reveal.js decks of the chapters that open with no internet, and slide tags.

nbconvert's slides load reveal.js, require.js, jQuery and MathJax from CDNs by default. Here they
come from a local ``node_modules`` (installed once from the npm registry by :func:`install_assets`,
``make slides`` does it), referenced by relative paths, so a copy of the deck folder presents
anywhere, offline.

Run: ``python -m ppedu.slides --out build/slides notebooks/*.ipynb`` (``--execute`` runs each
notebook first, so its figures appear). Those decks are the students': they carry no speaker notes (checked: no note's
text is in them); ``--lecturer build/slides-lecturer`` writes the lecturer's beside them, with the notes in reveal.js's
speaker view (press S).
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from html import unescape
from typing import Any

import nbformat

from ppedu.lecture import (CODE_VH, DRAWN_ZOOM, PICTURE_ZOOM, SLIDE, SLIDE_TEXT_PX, STATIC_SCALE, TEXT_VH, notes_path,
                           read_notes, with_notes)

#: npm packages a deck needs, pinned to what nbconvert's reveal template was written for.
PACKAGES = {"reveal.js": "4.0.2", "requirejs": "2.1.22", "jquery": "2.2.4", "mathjax": "2.7.7"}
# nbconvert imports mermaid in every page; this module stands in for it, inline: a page opened from a file may not
# import a module from another file (Chromium refuses file:// module scripts), but it may import a data: URL.
_MERMAID_STUB = "data:text/javascript,export%20default%20%7B%20initialize()%20%7B%7D%20%7D%3B"
# The live deck's type (ppedu.lecture) in the slide's pixels, so a static slide holds what a live one does: prose,
# code and tables as high a share of the slide; a line too long for the slide wraps (a spacetime grid's rows, short
# enough, stay whole); headings as the chapter writes them (the theme shouts them in capitals) and no larger than a
# live slide's, paragraphs spaced as closely as JupyterLab spaces them; no prompts (the live deck shows none either);
# a widget's still picture, and a drawing output as SVG, in the sizes of what they stand for (a diagram as much larger
# than a picture as on a live slide, DRAWN_ZOOM against PICTURE_ZOOM).
# reveal.js shows a slide STATIC_SCALE times as large at 1080p: no text there under SLIDE_TEXT_PX.
_TEXT, _CODE = (f"{max(share * SLIDE[1] / 100, SLIDE_TEXT_PX / STATIC_SCALE + 0.05):.2f}px"
                for share in (TEXT_VH, CODE_VH))
_STYLE = f"""<style>
.reveal {{ font-size: {_TEXT}; --jp-content-font-size1: {_TEXT}; --jp-code-font-size: {_CODE}; }}
.reveal pre, .reveal div.highlight > pre, .reveal div.jp-OutputArea-output > pre {{
  box-sizing: border-box; width: 100%; font-size: {_CODE}; white-space: pre-wrap; overflow-wrap: anywhere; }}
.reveal table {{ font-size: {_CODE}; }}
.reveal .jp-RenderedHTMLCommon :is(h1, h2, h3) {{ text-transform: none; margin: 0 0 0.4em; }}
.reveal h1 {{ font-size: 2em; }} .reveal h2 {{ font-size: 1.6em; }} .reveal h3 {{ font-size: 1.3em; }}
.reveal .slides > section, .reveal .slides > section > section {{ padding: 0; }}
.reveal p, .reveal ul, .reveal ol {{ margin: 0.5em 0; }}
.reveal .jp-InputPrompt, .reveal .jp-OutputPrompt {{ display: none; }}
.reveal .ppedu-static, .reveal .ppedu-static table {{ font-size: {_CODE}; margin: 0; }}
.reveal .ppedu-static svg {{ zoom: {DRAWN_ZOOM / PICTURE_ZOOM:.4g}; }}
.reveal .jp-OutputArea-output[data-mime-type='image/svg+xml'] img {{ zoom: {DRAWN_ZOOM / PICTURE_ZOOM:.4g}; }}
.reveal .ppedu-static :is(th, td) {{ padding: 0.1em 0.5em 0.1em 0; }}
</style>"""

_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_URLS = {
    "reveal_url_prefix": "node_modules/reveal.js",
    "require_js_url": "node_modules/requirejs/require.js",
    "jquery_url": "node_modules/jquery/dist/jquery.min.js",
    "mathjax_url": "node_modules/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
}


def install_assets(folder: str | Path, packages: Sequence[str] = tuple(PACKAGES)) -> Path:
    """Install the decks' JavaScript into ``folder/node_modules`` from the npm registry (once:
    packages already there are kept). Raises ``ValueError`` if npm is missing or fails."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [f"{name}@{PACKAGES[name]}" for name in packages if not (folder / "node_modules" / name / "package.json").exists()]
    if not wanted:
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise ValueError("building offline slides needs npm (to install reveal.js locally); install Node.js and npm")
    done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-save", "--no-audit", "--no-fund", *wanted],
                          capture_output=True, text=True)
    if done.returncode:
        raise ValueError(f"npm could not install {' '.join(wanted)}: {done.stderr.strip().splitlines()[-1:]}")
    return folder


def build_deck(notebook: str | Path, out: str | Path, execute: bool = False, lecturer: str | Path | None = None,
               ran: Any = None) -> Path:
    """Write ``out/<name>.slides.html``, a reveal.js deck of ``notebook`` for students (no speaker notes) that uses the
    assets :func:`install_assets` put into ``out``; with ``lecturer``, the same deck with the speaker notes in
    reveal.js's speaker view (press S) into that folder too, from the same run. ``execute`` runs the notebook first, in
    ``out`` (the notebook file itself is never written); ``ran`` is a run of it made already (an nbformat node with
    its widgets' state, the files it wrote put into ``out``), used as it is.

    Raises ``ValueError`` if a note's text is found in the students' deck."""
    from nbconvert.preprocessors import ExecutePreprocessor

    notebook, out = Path(notebook), Path(out)
    nb = copy.deepcopy(ran) if ran is not None else nbformat.read(notebook, as_version=4)
    out.mkdir(parents=True, exist_ok=True)
    if execute and ran is None:
        # Run in the deck's folder: files a notebook writes (a GIF it then shows) land beside the deck.
        ExecutePreprocessor(timeout=600, store_widget_state=True).preprocess(nb, {"metadata": {"path": str(out)}})
    _stills(nb)
    notes = read_notes(notes_path(notebook))
    path = _write(nb, notebook.stem, out)
    if leaked := leaked_notes(path.read_text(encoding="utf-8"), notes):
        raise ValueError(f"{path} shows a speaker note: {leaked[0][:60]!r}")
    if lecturer is not None:
        for name in ("node_modules", *(f.name for f in out.iterdir() if f.suffix == ".gif")):
            _copy(out / name, Path(lecturer) / name)  # its assets, and pictures the run wrote
        _write(with_notes(nb, notes), notebook.stem, Path(lecturer))  # after running: a notes cell has nothing to run
    return path


def _write(nb: Any, name: str, out: Path) -> Path:
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    # reveal.js's "white" theme has its font beside it; nbconvert's default, "simple", fetches two from Google.
    exporter = SlidesExporter(config=Config({"SlidesExporter": dict(
        _URLS, reveal_theme="white", reveal_width=str(SLIDE[0]), reveal_height=str(SLIDE[1]))}))
    exporter.mermaid_js_url = _MERMAID_STUB  # not a config option in nbconvert 7
    html, _ = exporter.from_notebook_node(copy.deepcopy(nb), resources={"metadata": {"name": name}})
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.slides.html"
    path.write_text(html.replace("</head>", _STYLE + "</head>", 1), encoding="utf-8")
    return path


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    elif source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def leaked_notes(html: str, notes: Sequence[Any]) -> list[str]:
    """The speaker notes (:class:`ppedu.lecture.Note`) whose text a deck's HTML shows: each note's longest line, its
    words as the page would show them (Markdown marks and HTML tags aside), looked for in the page's text.

    >>> from ppedu.lecture import Note
    >>> leaked_notes("<p>Ask the <em>room</em> first.</p>", [Note("c1", "Ask the *room* first."), Note("c2", "Wait.")])
    ['Ask the *room* first.']
    """
    text = _words(re.sub(r"<[^>]+>", " ", html))
    return [note.text for note in notes
            if (line := _words(max(note.text.splitlines(), key=len, default=""))) and line in text]


def _words(text: str) -> str:
    return " ".join(re.sub(r"[*_`#>|\[\]]", " ", unescape(text)).split())


def _stills(nb: Any) -> None:
    """Each widget as a picture: its still (ppedu's widgets carry one), else what its output widgets show (an
    ``interact``'s table), else a line saying it is live in the notebook. The widget state goes: it would make the
    deck fetch a widget renderer from a CDN."""
    state = nb.metadata.pop("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})

    def shown(model_id: str) -> list[Any]:
        model = state.get(model_id, {})
        if model.get("model_name") == "OutputModel":
            return list(model.get("state", {}).get("outputs", []))
        return [o for child in model.get("state", {}).get("children", []) for o in shown(child.removeprefix("IPY_MODEL_"))]

    for cell in (c for c in nb.cells if c.cell_type == "code"):
        outputs = []
        for output in cell.outputs:
            view = output.get("data", {}).pop(_WIDGET_VIEW, None)
            if view is None or "text/html" in output["data"]:
                outputs.append(output)
            else:
                outputs += shown(view.get("model_id", "")) or [nbformat.v4.new_output(
                    "display_data", {"text/markdown": "*A live widget: run the notebook to use it.*"})]
        cell.outputs = outputs


def remote_references(html: str, folder: str | Path | None = None) -> list[str]:
    """Every script, style sheet, picture, frame, module or font the page loads from the network (should be none);
    with ``folder`` (the deck's), also what the local style sheets it links import (a reveal.js theme may fetch web
    fonts). A link to a web page (``<a href>``, a chapter pointing at a tool) is followed only if clicked: not loaded.

    >>> remote_references('<a href="https://ui.perfetto.dev">Perfetto</a> <img src="https://x.org/a.png">')
    ['https://x.org/a.png']
    """
    found = re.findall(r"""<(?:script|img|iframe|frame|embed|source|track|audio|video|input|link)\b[^>]*?\s"""
                       r"""(?:src|href|poster|srcset)\s*=\s*["'](https?://[^"'\s]+)""", html, flags=re.IGNORECASE)
    found += re.findall(r"""<object\b[^>]*?\sdata\s*=\s*["'](https?://[^"']+)""", html, flags=re.IGNORECASE)
    found += re.findall(r"""(?:import\s[^'"]*from\s*|require\(\s*\[?\s*)["'](https?://[^"']+)""", html)
    found += re.findall(r"""^\s*["'](https?://[^"']+\.js)["'],?\s*$""", html, flags=re.MULTILINE)
    found += re.findall(r"""url\(\s*["']?(https?://[^"')]+)""", html)
    sheets = re.findall(r"""<link[^>]+href\s*=\s*["']([^"':]+\.css)["']""", html)
    for path in (Path(folder) / sheet for sheet in sheets) if folder is not None else ():
        if path.is_file():
            found += remote_references(path.read_text(encoding="utf-8"))
    return sorted(set(found))


def missing_assets(deck: str | Path) -> list[str]:
    """The local files a deck refers to that are not beside it."""
    deck = Path(deck)
    html = deck.read_text(encoding="utf-8")
    wanted = [url.split("?")[0] for url in _URLS.values()]
    wanted = [url if url.endswith((".js", ".mjs")) else f"{url}/dist/reveal.js" for url in wanted]
    return [url for url in wanted if url.split("/")[0] in html and not (deck.parent / url).exists()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ppedu.slides", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build/slides"), help="the students' decks (no speaker notes)")
    parser.add_argument("--lecturer", type=Path, help="also the lecturer's decks, with the speaker notes, here")
    parser.add_argument("--execute", action="store_true", help="run each notebook first so its outputs show")
    args = parser.parse_args(argv)
    try:
        install_assets(args.out)
        for notebook in args.notebooks:
            deck = build_deck(notebook, args.out, execute=args.execute, lecturer=args.lecturer)
            for path in (deck, *([args.lecturer / deck.name] if args.lecturer else [])):
                if remote := remote_references(path.read_text(encoding="utf-8"), path.parent):
                    raise ValueError(f"{path} still loads {remote[0]} from the network")
                print(path)
    except (ValueError, OSError) as problem:
        print(f"ppedu.slides: {problem}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
