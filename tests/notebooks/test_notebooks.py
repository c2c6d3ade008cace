"""The chapter notebooks: committed clean, presentable as slides, shaped like lessons, and every one
runs top to bottom headless (in a temporary copy, so nothing is written back)."""

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from ppedu.rounding import UNROUNDED
from ppedu.slides import DECK_STYLE

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHAPTERS = ["01-bubble-problem", "02-gpipe", "03-1f1b", "04-interleaved", "04b-interleaving-costs", "05-zero-bubble",
            "06-dualpipe", "06b-dualpipe-bubble", "07-mnist-lab", "08-memory-and-recomputation",
            "09-3d-parallelism-and-history", "10-design-space", "11-lab-across-processes", "12-parallelism-at-scale"]
# The revision kit: notebooks beside the chapters, held to the same rules except a chapter's shape.
KIT = ["formula-sheet", "practice"]
SLIDE_TYPES = {"slide", "subslide", "fragment", "skip", "notes", "-"}
MAX_CODE_LINES = 12


def load(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_the_course_has_exactly_its_chapters_and_kit():
    assert sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb")) == CHAPTERS
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if not p.stem[0].isdigit()) == KIT


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_committed_valid_and_without_outputs(name):
    nb = load(name)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: a code cell has outputs"


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_every_cell_has_slide_metadata_and_the_deck_opens_on_a_slide(name):
    cells = load(name).cells
    for i, cell in enumerate(cells):
        kind = cell.metadata.get("slideshow", {}).get("slide_type")
        assert kind in SLIDE_TYPES, f"{name}, cell {i}: slide_type {kind!r}"
    assert cells[0].metadata.slideshow.slide_type == "slide"
    slides = sum(c.metadata.slideshow.slide_type == "slide" for c in cells)
    assert slides >= 5, f"{name}: only {slides} slides"
    assert load(name).metadata.get("@deathbeds/jupyterlab-fonts") == DECK_STYLE, f"{name}: run ppedu.slides.style_deck on it"


@pytest.mark.parametrize("name", CHAPTERS)
def test_opens_with_learning_goals_and_ends_with_a_self_check(name):
    cells = load(name).cells
    assert cells[0].cell_type == "markdown" and "**Learning goals**" in cells[0].source
    headings = [c.source for c in cells if c.cell_type == "markdown" and re.match(r"#+ ", c.source)]
    assert headings[-1].startswith("## Self-check")
    last_check = max(i for i, c in enumerate(cells) if c.source.startswith("## Self-check"))
    assert any(c.cell_type == "code" and "check" in c.source for c in cells[last_check:])


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_code_cells_read_like_sentences_of_the_lesson(name):
    for i, cell in enumerate(load(name).cells):
        if cell.cell_type == "code":
            lines = cell.source.splitlines()
            assert len(lines) <= MAX_CODE_LINES, f"{name}, cell {i}: {len(lines)} lines"
            assert not any(re.match(r"\s*(def|class) ", line) for line in lines), f"{name}, cell {i}: helper code"


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_the_first_code_cell_imports_ppedu(name):
    first = next(c for c in load(name).cells if c.cell_type == "code")
    assert re.search(r"^(import ppedu|from ppedu)", first.source, re.MULTILINE)


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_runs_top_to_bottom_headless(name, tmp_path, monkeypatch):
    monkeypatch.setenv("PPEDU_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # The lab's tiny ops run fastest on one thread; on a shared 2-core machine more threads only contend.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    original = (NOTEBOOKS / f"{name}.ipynb").read_bytes()
    copy = tmp_path / f"{name}.ipynb"
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", copy)
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o.get("text", "") for o in outputs]
    shown += [v for o in outputs for v in o.get("data", {}).values() if isinstance(v, str)]
    unrounded = sorted({m for text in shown for m in UNROUNDED.findall(text)})
    assert unrounded == [], f"{name}: unrounded numbers in the outputs: {unrounded[:5]}"
    if any("plot" in c.source for c in nb.cells if c.cell_type == "code"):  # a figure shows as a picture
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{name}: no figure was drawn as an image"
    assert (NOTEBOOKS / f"{name}.ipynb").read_bytes() == original  # nothing written back


# Percentages a chapter's prose may state: the source texts' own claims (quoted to be checked) and
# targets a question sets. Any other figure belongs in a code cell, computed by ppedu.
QUOTED = {"40.91 %", "36.36 %", "50 %", "5.8 %", "94.2 %", "10 %", "45 %"}


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_prose_types_no_computed_percentages(name):
    for i, cell in enumerate(load(name).cells):
        if cell.cell_type == "markdown":
            typed = {m.replace("\u00a0", " ") for m in re.findall(r"\d+(?:\.\d+)?\s?%", cell.source)}
            assert typed <= QUOTED, f"{name}, cell {i}: {sorted(typed - QUOTED)} typed in; compute it in a code cell"


# Where the source texts go wrong, the chapter that teaches the topic shows the claim beside ppedu's value.
ERRATA = [
    ("01-bubble-problem", "errata.textbook_claims()"),
    ("02-gpipe", "errata.backward_wave"),
    ("02-gpipe", "dL_dy @ W"),  # what travels backward is ∂L/∂a (4.2.2)
    ("03-1f1b", 'errata.textbook_claims("4.3")'),
    ("04-interleaved", "errata.vendor_claims()"),
    ("04b-interleaving-costs", "lesson.limits("),  # activations released early, parameters per GPU (4.2.5, 4.4.5)
    ("04b-interleaving-costs", 'errata.textbook_claims("4.4.2")'),  # a hand-over does not shrink with v
    ("06b-dualpipe-bubble", "errata.deepseek_table"),
    ("06-dualpipe", "sheet.as_m_grows("),  # bubble → 0 as m → ∞ is no DualPipe speciality (4.6.1)
    ("09-3d-parallelism-and-history", "vendor.node_readings("),  # a node is 8 GPUs, not one
    ("09-3d-parallelism-and-history", "errata.textbook_record()"),  # who did what first (4.2.5, 4.4.5, 4.7.2, 4.5.5)
    ("02-gpipe", 'errata.textbook_claims("4.2.2")'),  # summed micro-batch gradients: m times the step
    ("06-dualpipe", 'errata.textbook_claims("4.7")'),  # "thousands of nodes": 256
]


@pytest.mark.parametrize("name, call", ERRATA)
def test_each_erratum_is_shown_where_its_topic_is_taught(name, call):
    assert any(c.cell_type == "code" and call in c.source for c in load(name).cells)


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_slide_has_speaker_notes_that_students_do_not_see_in_the_notebook(name):
    # A "notes" cell is the speaker's: collapsed (source_hidden), JupyterLab folds it away from students.
    slide, noted = None, set()
    for cell in load(name).cells:
        kind = cell.metadata.slideshow.slide_type
        if kind in ("slide", "subslide"):
            slide = cell.id
        elif kind == "notes":
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{name}, {cell.id}: notes visible"
            noted.add(slide)
    slides = {c.id for c in load(name).cells if c.metadata.slideshow.slide_type in ("slide", "subslide")}
    assert slides - noted == set(), f"{name}: slides without speaker notes"


def test_every_schedule_ppedu_builds_runs_in_some_chapter_by_name():
    from ppedu.schedules import SCHEDULES

    code = "\n".join(c.source for name in CHAPTERS for c in load(name).cells if c.cell_type == "code")
    for name, build in SCHEDULES.items():
        assert f"{build.__name__}(" in code or f'"{name}"' in code, f"no chapter runs {name}"
