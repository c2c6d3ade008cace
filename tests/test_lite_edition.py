"""The browser edition's notebooks, as `make lite` writes them from the real chapters and the counting exam
(tests/browser/test_lite.py runs them in Chromium): nothing left in a code cell needs what the browser lacks,
what was taken out says why, and the counting exam is practice, not an exam."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lite"))
from edition import CHAPTERS, KERNEL, MISSING, browser_notebooks  # noqa: E402

ABSENT = ("torch", "numpy", "matplotlib", "ppedu.plot", "ppedu.animate", "ppedu.mnist", "ppedu.widgets.lab")


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("lite-notebooks")
    return {p.stem: json.loads(p.read_text()) for p in browser_notebooks(ROOT, out)}


def code_of(notebook: dict) -> list[str]:
    return [c["source"] for c in notebook["cells"] if c["cell_type"] == "code"]


def test_the_edition_has_chapters_1_to_6_the_sheet_the_practice_set_and_the_counting_practice(notebooks):
    assert sorted(notebooks) == sorted([*CHAPTERS, "counting-practice"])
    assert [n[:2] for n in CHAPTERS if n[0].isdigit()] == ["01", "02", "03", "04", "04", "05", "06", "06"]
    for notebook in notebooks.values():
        assert notebook["metadata"]["kernelspec"] == KERNEL
        assert all(c.get("outputs", []) == [] for c in notebook["cells"])


def test_no_code_cell_imports_or_uses_what_the_browser_lacks(notebooks):
    for name, notebook in notebooks.items():
        for source in code_of(notebook):
            assert "%matplotlib" not in source
            tree = ast.parse(TransformerManager().transform_cell(source))
            for node in ast.walk(tree):
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                for module in modules:
                    assert not module.startswith(ABSENT), f"{name} imports {module}"
                if isinstance(node, ast.ImportFrom) and node.module == "ppedu.reference":
                    assert {a.name for a in node.names} <= {"differences"}, f"{name} reads PyTorch's orders"


def test_what_was_taken_out_says_why_and_keeps_its_code(notebooks):
    original = {n: json.loads((ROOT / "notebooks" / f"{n}.ipynb").read_text()) for n in CHAPTERS}
    for name in CHAPTERS:
        notes = [c["source"] for c in notebooks[name]["cells"] if "Not in the browser edition" in c["source"]]
        kept, before = code_of(notebooks[name]), code_of(original[name])
        assert len(kept) + len(notes) == len(before), name  # every code cell is either kept or explained
        for note in notes:
            assert any(why.split(" (")[0] in note for why in MISSING.values()) and "```python" in note
    # The chapters that show matplotlib figures draw them as SVG here; the PyTorch-only cells are explained.
    assert "from ppedu.svgplot import plot_memory, plot_timeline" in code_of(notebooks["03-1f1b"])[0]
    assert any("PyTorch" in c["source"] for c in notebooks["02-gpipe"]["cells"] if c["cell_type"] == "markdown")


def test_the_counting_exam_becomes_practice_with_nothing_graded_or_saved(notebooks):
    practice = notebooks["counting-practice"]
    assert all("nbgrader" not in c.get("metadata", {}) for c in practice["cells"])
    code = "\n".join(code_of(practice))
    assert "answers=" not in code and "question=" not in code and ".saved()" not in code
    assert "CountingPractice.draw(randrange(10 ** 6))" in code and "my_data" not in code  # new grids on each run
    text = " ".join(c["source"] for c in practice["cells"] if c["cell_type"] == "markdown")
    assert "point" not in text.replace("graded exam", "")
    assert code.count("SlotCountingExercise(") == 4  # the four exercises, each with its Check button
