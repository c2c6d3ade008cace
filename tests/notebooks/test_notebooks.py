"""The chapter notebooks: committed clean, presentable as slides, shaped like lessons, and every one
runs top to bottom headless (in a temporary copy, so nothing is written back)."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from notebook_run import COUNT_UNLABELLED

from ppedu.lecture import PICTURE_ZOOM, SLIDE_TEXT_PX
from ppedu.rounding import UNROUNDED

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHAPTERS = ["01-bubble-problem", "02-gpipe", "03-1f1b", "04-interleaved", "04b-interleaving-costs", "05-zero-bubble",
            "06-dualpipe", "06b-dualpipe-bubble", "07-mnist-lab", "08-memory-and-recomputation",
            "09-3d-parallelism-and-history", "10-design-space", "11-lab-across-processes",
            "12-collectives-and-tensor-parallelism", "13-experts-and-sharding", "14-training-at-scale",
            "15-lab-collectives-ddp-fsdp"]
# The revision kit: notebooks beside the chapters, held to the same rules except a chapter's shape.
KIT = ["formula-sheet", "practice"]
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


# Where a figure is read: a notebook column about 880 px wide (JupyterLab at 1280 px, the file browser open) shows a
# wider figure shrunk to fit; a 1080p slide shows pictures PICTURE_ZOOM times as large, on 1800 px, where no text may
# be under SLIDE_TEXT_PX.
NOTEBOOK_PX, SLIDE_PX, SLIDE_ZOOM = 880, 1800, PICTURE_ZOOM
# Chapters whose figures may leave blocks unlabelled, and why (their texts are still checked).
UNLABELLABLE = {"11-lab-across-processes": "a run across processes measures hundreds of sub-millisecond ops, most "
                                           "far narrower than a digit on a 12-inch axis"}


@pytest.mark.parametrize("name", CHAPTERS + KIT)
def test_runs_top_to_bottom_headless_and_its_figures_read_from_the_back_row(name, ran):
    original = (NOTEBOOKS / f"{name}.ipynb").read_bytes()
    nb, folder = ran(name)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o.get("text", "") for o in outputs]
    shown += [v for o in outputs for v in o.get("data", {}).values() if isinstance(v, str)]
    unrounded = sorted({m for text in shown for m in UNROUNDED.findall(text)})
    assert unrounded == [], f"{name}: unrounded numbers in the outputs: {unrounded[:5]}"
    if any("plot" in c.source for c in nb.cells if c.cell_type == "code"):  # a figure shows as a picture
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{name}: no figure was drawn as an image"
    assert (NOTEBOOKS / f"{name}.ipynb").read_bytes() == original  # nothing written back
    figures = [json.loads(line) for line in (folder / "figures.jsonl").read_text().splitlines()] \
        if (folder / "figures.jsonl").exists() else []
    assert len(figures) >= sum("image/png" in o.get("data", {}) for o in outputs)  # an animation draws frames too
    for i, figure in enumerate(figures, 1):
        if name in UNLABELLABLE:
            figure.pop("unlabelled")
        assert legibility(figure) == [], f"{name}, figure {i}"


def legibility(figure: dict) -> list[str]:
    """What a figure writes too small to read, in a notebook (11 px) or on a 1080p slide (SLIDE_TEXT_PX), each two of
    its texts that overlap, and its blocks without a label."""
    notebook = min(1.0, NOTEBOOK_PX / figure["width"])
    slide = SLIDE_ZOOM * min(1.0, SLIDE_PX / (SLIDE_ZOOM * figure["width"]))
    texts = figure["texts"]
    problems = [f"{t['text']!r} is {t['px'] * notebook:.1f} px in a notebook, {t['px'] * slide:.1f} px on a slide"
                for t in texts if t["px"] * notebook < 11 or t["px"] * slide < SLIDE_TEXT_PX]
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a["box"], b["box"]
            if min(ax1, bx1) - max(ax0, bx0) > 0.5 and min(ay1, by1) - max(ay0, by0) > 0.5:
                problems.append(f"{a['text']!r} overlaps {b['text']!r}")
    if figure.get("unlabelled"):
        problems.append(f"{figure['unlabelled']} blocks without a label")
    return problems


def test_the_legibility_check_can_fail():
    small = {"text": "7", "px": 8.0, "box": (0, 0, 5, 8)}
    wide = {"text": "GPU 1", "px": 16.7, "box": (3, 2, 40, 17)}
    assert len(legibility({"width": 600, "texts": [small, wide]})) == 2  # too small, and the two overlap
    assert legibility({"width": 2400, "texts": [wide]}) != []  # shrunk to half in a notebook column
    assert legibility({"width": 600, "texts": [wide]}) == []
    assert legibility({"width": 600, "texts": [wide], "unlabelled": 3}) == ["3 blocks without a label"]


def test_the_count_of_unlabelled_blocks_can_fail():
    from ppedu import Costs, schedules, simulate
    from ppedu.plot import plot_timeline

    namespace: dict = {}
    exec(COUNT_UNLABELLED, namespace)
    assert namespace["_unlabelled"](plot_timeline(simulate(schedules.interleaved_1f1b(8, 32, v=4)))) == 8 * 32 * 4 * 2
    assert namespace["_unlabelled"](plot_timeline(simulate(schedules.dualpipe(8, 20), Costs(1, 1, 1)))) == 0  # ch6's


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


def test_every_schedule_ppedu_builds_runs_in_some_chapter_by_name():
    from ppedu.schedules import SCHEDULES

    code = "\n".join(c.source for name in CHAPTERS for c in load(name).cells if c.cell_type == "code")
    for name, build in SCHEDULES.items():
        assert f"{build.__name__}(" in code or f'"{name}"' in code, f"no chapter runs {name}"
