"""Lecture mode: static reveal.js decks of the chapters that open with no internet, and slide tags.

nbconvert's slides load reveal.js, require.js, jQuery and MathJax from CDNs by default. Here they
come from a local ``node_modules`` (installed once from the npm registry by :func:`install_assets`,
``make slides`` does it), referenced by relative paths, so a copy of the deck folder presents
anywhere, offline.

Run: ``python -m ppedu.slides --out build/slides notebooks/*.ipynb`` (``--execute`` runs each
notebook first, so its figures appear).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

#: npm packages a deck needs, pinned to what nbconvert's reveal template was written for.
PACKAGES = {"reveal.js": "4.0.2", "requirejs": "2.1.22", "jquery": "2.2.4", "mathjax": "2.7.7"}
_MERMAID_STUB = "mermaid-offline.mjs"  # nbconvert imports mermaid in every page; this stands in for it
#: The slide as reveal.js lays it out, 16:9, scaled to fit the screen.
SLIDE = (1280, 720)
# A spacetime grid is a wide text table: wrapped, its rows interleave, so let it scroll instead.
_STYLE = "<style>.reveal .jp-OutputArea-output pre { white-space: pre; overflow-x: auto; font-size: 0.75em; }</style>"

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
    (folder / _MERMAID_STUB).write_text("// Offline decks draw no mermaid diagrams.\n"
                                        "export default { initialize() {} };\n")
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


def build_deck(notebook: str | Path, out: str | Path, execute: bool = False) -> Path:
    """Write ``out/<name>.slides.html``, a reveal.js deck of ``notebook`` that uses the assets
    :func:`install_assets` put into ``out``. ``execute`` runs the notebook first, in ``out`` (the
    notebook file itself is never written)."""
    import nbformat
    from nbconvert import SlidesExporter
    from nbconvert.preprocessors import ExecutePreprocessor
    from traitlets.config import Config

    from ppedu.lecture import notes_path, read_notes, with_notes

    notebook, out = Path(notebook), Path(out)
    nb = nbformat.read(notebook, as_version=4)
    out.mkdir(parents=True, exist_ok=True)
    if execute:
        # Run in the deck's folder: files a notebook writes (a GIF it then shows) land beside the deck.
        ExecutePreprocessor(timeout=600, store_widget_state=False).preprocess(nb, {"metadata": {"path": str(out)}})
    nb.metadata.pop("widgets", None)  # widget state would make the deck fetch a widget renderer from a CDN
    for cell in nb.cells:  # so a widget shows its still picture (ppedu's widgets add one), not a blank
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if len(data) > 1:
                data.pop("application/vnd.jupyter.widget-view+json", None)
    with_notes(nb, read_notes(notes_path(notebook)))  # after running: a notes cell has nothing to run
    exporter = SlidesExporter(config=Config({"SlidesExporter": dict(_URLS, reveal_width=str(SLIDE[0]), reveal_height=str(SLIDE[1]))}))
    exporter.mermaid_js_url = f"./{_MERMAID_STUB}"  # a path, not a bare name; not a config option in nbconvert 7
    html, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    path = out / f"{notebook.stem}.slides.html"
    path.write_text(html.replace("</head>", _STYLE + "</head>", 1), encoding="utf-8")
    return path


def remote_references(html: str) -> list[str]:
    """Every script, style sheet or module the page loads from the network (should be none)."""
    found = re.findall(r"""(?:src|href)\s*=\s*["'](https?://[^"']+)""", html)
    found += re.findall(r"""(?:import\s[^'"]*from\s*|require\(\s*\[?\s*)["'](https?://[^"']+)""", html)
    found += re.findall(r"""^\s*["'](https?://[^"']+\.js)["'],?\s*$""", html, flags=re.MULTILINE)
    return sorted(set(found))


def missing_assets(deck: str | Path) -> list[str]:
    """The local files a deck refers to that are not beside it."""
    deck = Path(deck)
    html = deck.read_text(encoding="utf-8")
    wanted = [url.split("?")[0] for url in (*_URLS.values(), _MERMAID_STUB)]
    wanted = [url if url.endswith((".js", ".mjs")) else f"{url}/dist/reveal.js" for url in wanted]
    return [url for url in wanted if url.split("/")[0] in html and not (deck.parent / url).exists()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ppedu.slides", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("build/slides"))
    parser.add_argument("--execute", action="store_true", help="run each notebook first so its outputs show")
    args = parser.parse_args(argv)
    try:
        install_assets(args.out)
        for notebook in args.notebooks:
            deck = build_deck(notebook, args.out, execute=args.execute)
            if remote := remote_references(deck.read_text(encoding="utf-8")):
                raise ValueError(f"{deck} still loads {remote[0]} from the network")
            print(deck)
    except (ValueError, OSError) as problem:
        print(f"ppedu.slides: {problem}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
