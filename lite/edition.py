"""The notebooks of the browser edition: chapters 1–6 (with 4b and 6b), the formula sheet, the practice set, and the
counting exam as practice, each rewritten for Python in the browser (Pyodide, without numpy, matplotlib or PyTorch).

What changes, cell by cell, and nothing else:
- ``%matplotlib inline`` goes (there is no matplotlib); ``ppedu.plot``'s two figures come from ``ppedu.svgplot``,
  the same calls drawn as SVG;
- a cell that needs what the browser lacks (an import of PyTorch, matplotlib, numpy, the animation, PyTorch's own
  orders), or a name such a cell made, becomes a note saying what it needs and why, with its code to read;
- the counting exam loses its grading: its exercises check the answers there and then, on fresh grids each run.
Outputs are cleared (they were made by CPython), and each notebook opens with a line saying which edition it is.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

CHAPTERS = ("01-bubble-problem", "02-gpipe", "03-1f1b", "04-interleaved", "04b-interleaving-costs", "05-zero-bubble",
            "06-dualpipe", "06b-dualpipe-bubble", "formula-sheet", "practice")
COUNTING = Path("exercises") / "counting" / "counting.ipynb"
#: What the browser lacks: per module, why (a module listed covers its submodules).
MISSING = {
    "torch": "PyTorch (it has no build for the browser)",
    "numpy": "numpy (its browser build is served only from Pyodide's CDN, which this offline edition never calls)",
    "matplotlib": "matplotlib (its browser build is served only from Pyodide's CDN, which this offline edition never "
                  "calls)",
    "ppedu.animate": "matplotlib, to draw the animation",
    "ppedu.mnist": "PyTorch, to train the MNIST model",
    "ppedu.widgets.lab": "PyTorch, to train the MNIST model",
}
#: Names of a module that the browser lacks although the module itself imports.
MISSING_NAMES = {
    "ppedu.reference": ({"torch_orders", "torch_overlapped", "pytorch_actions", "to_torch_actions"},
                        "PyTorch, to read PyTorch's own schedule orders"),
    "ppedu.plot": ({"outline_pairs", "DisplayFigure"}, "matplotlib, to outline the overlapped pairs on its figure"),
}
#: ppedu.plot's figures that ppedu.svgplot draws as SVG.
AS_SVG = {"plot_timeline", "plot_memory"}
KERNEL = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
BANNER = ("*Browser edition: this notebook runs in your browser, with nothing installed (Python is Pyodide). "
          "Figures are drawn as SVG; what needs PyTorch, numpy or matplotlib says so where it would run. "
          "The full course (`make lab`) has everything.*")
PRACTICE_INTRO = """# The slot-counting exam, as practice

In the course this is a graded exam; here nothing is graded or saved. Each run of the notebook draws new grids.
Type your counts into the first exercise and press **Check**; click the idle cells of the second, then **Check**;
trace a critical path and sort the idle cells by cause in the last two, then **Check**. The exercises tell you what
is right and, where not, what you most likely counted or read instead."""


def browser_notebooks(root: Path, out: Path) -> list[Path]:
    """Write the edition's notebooks into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CHAPTERS:
        notebook = json.loads((root / "notebooks" / f"{name}.ipynb").read_text())
        written.append(_write(rewrite(notebook), out / f"{name}.ipynb"))
    exam = json.loads((root / COUNTING).read_text())
    written.append(_write(rewrite(as_practice(exam)), out / "counting-practice.ipynb"))
    return written


def _write(notebook: dict, path: Path) -> Path:
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return path


def rewrite(notebook: dict) -> dict:
    """The notebook for the browser: cells rewritten or replaced by notes, outputs cleared, the Pyodide kernel."""
    missing: dict[str, str] = {}  # a name no cell can have here → why
    cells = [_markdown(BANNER, "ppedu-lite-banner")]
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            cells.append(cell)
            continue
        source, why = _rewrite_code("".join(cell["source"]), missing)
        if why is None:
            cells.append({**cell, "source": source, "outputs": [], "execution_count": None})
        else:
            original = "".join(cell["source"]).rstrip()
            note = (f"> **Not in the browser edition.** This cell needs {why}. In the full edition (`make lab`) it "
                    f"runs:\n\n```python\n{original}\n```")
            cells.append(_markdown(note, f"{cell.get('id', 'cell')}-absent"))
    metadata = {**notebook.get("metadata", {}), "kernelspec": KERNEL}
    metadata["language_info"] = {"name": "python"}
    return {**notebook, "cells": cells, "metadata": metadata}


def _markdown(text: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def _module_why(module: str) -> str | None:
    for name, why in MISSING.items():
        if module == name or module.startswith(name + "."):
            return why
    return None


def _rewrite_code(source: str, missing: dict[str, str]) -> tuple[str, str | None]:
    """The cell's code for the browser and ``None``, or its original and why it cannot run there. ``missing``
    gathers the names that cannot exist (imported from what is absent, or made by a cell that could not run)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith("%matplotlib")]
    tree = ast.parse(TransformerManager().transform_cell("\n".join(lines)))  # IPython's magics as Python
    edits: dict[int, tuple[int, str | None]] = {}  # first line → (last line, replacement or None to drop)
    for node in tree.body:
        if isinstance(node, ast.Import):
            gone = [a for a in node.names if _module_why(a.name)]
            for alias in gone:
                missing[(alias.asname or alias.name).split(".")[0]] = _module_why(alias.name)  # type: ignore[assignment]
            if gone:
                kept = [a for a in node.names if a not in gone]
                edits[node.lineno] = (node.end_lineno or node.lineno,
                                      "import " + ", ".join(ast.unparse(a) for a in kept) if kept else None)
        elif isinstance(node, ast.ImportFrom) and node.module:
            absent_names, why = MISSING_NAMES.get(node.module, (set(), ""))
            why = _module_why(node.module) or why
            gone = [a for a in node.names if _module_why(node.module) or a.name in absent_names]
            for alias in gone:
                missing[alias.asname or alias.name] = why
            kept = [a for a in node.names if a not in gone]
            module = node.module
            if module == "ppedu.plot":
                module = "ppedu.svgplot"  # the same figures, drawn as SVG
                for alias in [a for a in kept if a.name not in AS_SVG]:
                    missing[alias.asname or alias.name] = "matplotlib, whose figures this edition draws as SVG"
                    kept.remove(alias)
            if gone or module != node.module:
                names = ", ".join(ast.unparse(a) for a in kept)
                edits[node.lineno] = (node.end_lineno or node.lineno, f"from {module} import {names}" if kept else None)
    made = _made(tree)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if blocking := sorted((used - made) & set(missing)):
        why = " and ".join(dict.fromkeys(missing[name] for name in blocking))
        for name in made:  # what this cell makes cannot exist here either
            missing[name] = why
        return source, why
    out = []
    skip_to = 0
    for number, line in enumerate(lines, start=1):
        if number <= skip_to:
            continue
        if number in edits:
            skip_to, replacement = edits[number]
            if replacement is not None:
                out.append(line[: len(line) - len(line.lstrip())] + replacement)
            continue
        out.append(line)
    text = "\n".join(out).strip("\n")
    return text, None if text.strip() or not source.strip() else "nothing the browser has"


def _made(tree: ast.Module) -> set[str]:
    """The names a cell binds for the cells after it (not those local to a comprehension, lambda or function)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo.extend(ast.iter_child_nodes(node))
    return names


def as_practice(exam: dict) -> dict:
    """The counting exam without its grading: no nbgrader metadata or graded cells, the exercises checking answers
    themselves (no answers file), new grids on each run, and an introduction that says so."""
    cells = []
    for cell in exam["cells"]:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("grade"):
            continue  # what the autograder scores: nothing is scored here
        metadata = {k: v for k, v in cell.get("metadata", {}).items() if k not in ("nbgrader", "deletable", "editable")}
        cell = {**cell, "metadata": metadata}
        if cell["cell_type"] == "code":
            cell["source"] = _practice_code("".join(cell["source"]))
        else:  # nothing is scored: no "(3 points)", no sentence about points
            text = re.sub(r"\s*\(\d+ points?\)", "", "".join(cell["source"]))
            cell["source"] = re.sub(r"(?<=[.!?])\s+[^.!?]*\bpoints?\b[^.!?]*[.!?]", "", text)
        cells.append(cell)
    while cells and cells[-1]["cell_type"] == "markdown":  # a section left with no code (the one before submitting)
        cells.pop()
    if cells and cells[0]["cell_type"] == "markdown":
        cells[0] = _markdown(PRACTICE_INTRO, cells[0].get("id", "intro"))
    return {**exam, "cells": cells}


def _practice_code(source: str) -> str:
    """The exercise without ``answers=``/``question=`` (so it checks answers itself), and grids drawn afresh
    (:class:`ppedu.practice.CountingPractice`, simulated, so they can check) in place of the student's exam pictures,
    whose data lives in the course's release only."""
    tree = ast.parse(source)
    cuts: list[tuple[int, int, int, int, str]] = []  # (line, column) to (line, column) → text
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
        if name == "SlotCountingExercise":
            kept = [k for k in node.keywords if k.arg not in ("answers", "question")]
            if len(kept) < len(node.keywords):
                call = ast.Call(node.func, node.args, kept)
                cuts.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, ast.unparse(call)))  # type: ignore[arg-type]
        elif name == "my_data" and len(node.args) == 1:
            cuts.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset,  # type: ignore[arg-type]
                         "CountingPractice.draw(randrange(10 ** 6))"))
    lines = source.splitlines()
    if any(text.startswith("CountingPractice") for *_, text in cuts):
        lines = [line.replace("from ppedu.grading import my_data", "from ppedu.practice import CountingPractice")
                 for line in lines]
    for first, start, last, end, text in sorted(cuts, reverse=True):
        head, tail = lines[first - 1][:start], lines[last - 1][end:]
        lines[first - 1 : last] = [head + text + tail]
    if "randrange(" in "\n".join(lines) and "randrange(" not in source:
        lines.insert(0, "from random import randrange  # new grids on each run")
    return "\n".join(lines)
