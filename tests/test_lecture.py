"""A chapter as a lecture: its slide metadata is exactly what ppedu.lecture writes, which is what jupyterlab-slideshow's
deck reads; its speaker notes are the lecturer's, in docs/speaker-notes/, never in a chapter."""

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ppedu import lecture

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHAPTERS = [p for p in NOTEBOOKS if p.stem[0].isdigit()]
#: The slide types jupyterlab-slideshow's deck shows ("-" and a missing type are not among them: see ppedu.lecture).
SHOWN = {"slide", "fragment"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_is_as_the_lecture_tool_writes_it(notebook):
    assert lecture.update(notebook, write=False) == [], f"run `python -m ppedu.lecture {notebook.relative_to(ROOT)}`"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_deck_shows_every_cell_but_asides_and_opens_on_a_slide(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    kinds = [c.metadata.slideshow.slide_type for c in cells]
    assert kinds[0] == "slide" and kinds.count("slide") >= 5
    for cell, kind in zip(cells, kinds):
        assert kind in SHOWN or (kind == "skip" and lecture.ASIDE in cell.metadata.get("tags", ())), cell.id


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_section_has_speaker_notes_in_the_lecturers_file_only(notebook):
    nb = nbformat.read(notebook, as_version=4)
    assert not [c for c in nb.cells if "notes" in c.source.lower() and c.metadata.get("jupyter", {}).get("source_hidden")]
    noted = {note.after for note in lecture.read_notes(lecture.notes_path(notebook))}
    section, unnoted = None, set()
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.match(r"#+ ", cell.source):
            if section is not None:
                unnoted.add(section)
            section = cell.source.splitlines()[0]
        if cell.id in noted:
            section = None
    assert unnoted | ({section} - {None}) == set(), f"{notebook.stem}: sections without speaker notes"


@pytest.fixture
def course(tmp_path):
    """A course of one chapter whose author wrote a notes cell into it (and an aside)."""
    (tmp_path / "notebooks").mkdir()
    cells = [new_markdown_cell("# Title\n\nGoals.", id="t"), new_code_cell("import ppedu", id="c1"),
             new_markdown_cell("Ask who has seen a pipeline.", id="n1", metadata={"slideshow": {"slide_type": "notes"}}),
             new_markdown_cell("## Counting\n\nCount the slots.", id="s2"), new_code_cell("grid", id="c2"),
             new_markdown_cell("Then the ratio:", id="m3", metadata={"slideshow": {"slide_type": "-"}}),
             new_code_cell("ratio", id="c3"),
             new_markdown_cell("An aside.", id="a", metadata={"tags": ["aside"]})]
    path = tmp_path / "notebooks" / "01-x.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    return path


def test_the_tool_writes_slide_types_and_moves_notes_out_once(course):
    notes = course.parent.parent / "docs" / "speaker-notes" / "01-x.md"
    assert lecture.update(course) == [course, notes]
    nb = nbformat.read(course, as_version=4)
    assert [(c.id, c.metadata.slideshow.slide_type) for c in nb.cells] == [
        ("t", "slide"), ("c1", "fragment"), ("s2", "slide"), ("c2", "fragment"), ("m3", "slide"), ("c3", "fragment"),
        ("a", "skip")]
    assert nb.metadata["@deathbeds/jupyterlab-fonts"] == lecture.DECK_STYLE
    assert lecture.read_notes(notes) == [lecture.Note("c1", "Ask who has seen a pipeline.")]
    assert "## Title" in notes.read_text() and "**At** `import ppedu`" in notes.read_text()
    assert lecture.update(course) == [] and lecture.main(["--check", str(course)]) == 0


def test_a_lecturers_edit_of_the_notes_is_kept_and_the_deck_gets_them_back(course):
    lecture.update(course)
    notes = lecture.notes_path(course)
    notes.write_text(notes.read_text().replace("Ask who has seen a pipeline.", "Ask who has seen a pipeline.\n\nThen wait."))
    assert lecture.update(course) == []  # the tool's own format, edited: nothing to rewrite
    nb = lecture.with_notes(nbformat.read(course, as_version=4), lecture.read_notes(notes))
    note = nb.cells[2]
    assert note.metadata.slideshow.slide_type == "notes" and note.source == "Ask who has seen a pipeline.\n\nThen wait."


def test_a_chapter_edited_by_hand_is_named_by_the_check_and_fixed_by_the_tool(course, capsys):
    lecture.update(course)
    nb = nbformat.read(course, as_version=4)
    nb.cells[3].metadata["slideshow"] = {"slide_type": "-"}  # what hid every code cell from the deck
    nb.cells.insert(4, new_markdown_cell("Point at GPU 0.", id="n2", metadata={"slideshow": {"slide_type": "notes"}}))
    nbformat.write(nb, course)
    assert lecture.main(["--check", str(course)]) == 1 and "would change" in capsys.readouterr().out
    assert lecture.main([str(course)]) == 0 and lecture.update(course, write=False) == []
    assert [n.after for n in lecture.read_notes(lecture.notes_path(course))] == ["c1", "c2"]


def test_a_note_whose_cell_is_gone_is_refused_with_the_rule(course, capsys):
    lecture.update(course)
    nb = nbformat.read(course, as_version=4)
    del nb.cells[1]  # the import cell the first note follows
    nbformat.write(nb, course)
    assert lecture.main([str(course)]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no longer has" in out and "'c1'" in out


def test_the_courses_chapters_hold_no_notes_cells_and_their_notes_files_exist():
    for chapter in CHAPTERS:
        kinds = {c.metadata.slideshow.slide_type for c in nbformat.read(chapter, as_version=4).cells}
        assert "notes" not in kinds and lecture.notes_path(chapter).exists(), chapter.stem
    assert sorted(p.stem for p in (ROOT / lecture.NOTES_FOLDER).glob("*.md")) == [p.stem for p in CHAPTERS]


def test_the_make_target_runs_the_tool_on_every_notebook():
    assert re.search(r"^lecture:.*\n\t.*-m ppedu.lecture notebooks/\*\.ipynb", (ROOT / "Makefile").read_text(), re.M)
    assert shutil.which("make")


PLAN_BLOCK = re.compile(r"^- \*\*\[(\d+)–(\d+)\] (?:§ (.+?)|Questions)\*\*(?: —.*|)$", re.M)


def plan_blocks() -> dict[str, list[tuple[int, int, str | None]]]:
    """Each chapter's timed blocks in docs/lecture-plans.md: (from, to, the section shown; None for the questions)."""
    text = (ROOT / "docs" / "lecture-plans.md").read_text(encoding="utf-8")
    parts = re.split(r"^## Chapter (\d+b?) ", text, flags=re.M)
    return {f"{int(n.rstrip('b')):02d}{'b' * n.endswith('b')}": [(int(a), int(b), s or None) for a, b, s in PLAN_BLOCK.findall(body)]
            for n, body in zip(parts[1::2], parts[2::2])}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_lecture_plan_fits_its_deck_by_the_plans_timing_rule(chapter):
    blocks = plan_blocks()[chapter.stem.split("-")[0]]
    sections = [b[2] for b in blocks if b[2]]
    presses = dict(zip(sections, lecture.presses(nbformat.read(chapter, as_version=4), sections)))
    assert [b[0] for b in blocks] == [0] + [b[1] for b in blocks[:-1]], "blocks must follow one another from 0"
    *taught, check, questions = blocks
    assert check[2] == "Self-check" and check[1] - check[0] == lecture.SELF_CHECK_MIN, "the self-check: 15 minutes"
    assert questions[2] is None and questions[1] - questions[0] == lecture.QUESTIONS_MIN, "5 minutes for questions last"
    assert questions[1] == lecture.SESSION_MIN
    short = [f"{name}: {b - a} min for {presses[name]} presses" for a, b, name in taught + [check]
             if b - a < presses[name] * lecture.MIN_PER_PRESS]
    assert short == [], f"{chapter.stem}: blocks shorter than a minute a press"


def test_the_timing_rule_sees_a_block_too_short_for_its_deck():
    nb = nbformat.read(CHAPTERS[0], as_version=4)
    first = plan_blocks()[CHAPTERS[0].stem.split("-")[0]][0]
    assert lecture.presses(nb, [first[2]])[0] > 1  # so a one-minute block would be too short
    with pytest.raises(ValueError, match="no section 'Nowhere'"):
        lecture.presses(nb, ["Nowhere"])


#: The widgets a lecturer drives live on a slide: each such slide has a speaker note saying how.
LIVE = re.compile(r"\b(ScheduleExplorer|SlotCountingExercise|ScheduleBuilder|TimelinePlayer|CollectiveExplorer|StepPicker|"
                  r"interact)\(")


def slides_of(nb) -> dict[str, list]:
    """Each cell's slide (the cells from the one that opens it to the next that opens one), by cell id."""
    slides, current = {}, []
    for i, cell in enumerate(nb.cells):
        if i == 0 or cell.metadata.slideshow.slide_type == "slide":
            current = []
        current.append(cell)
        slides[cell.id] = current
    return slides


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_speaker_note_sits_on_the_slide_it_speaks_of_and_each_live_widget_has_one(notebook):
    """A note shows in the presenter view while its cell's slide is on screen: what it names in `code` that the chapter
    shows must be on that slide (a note one slide off names what the room no longer, or not yet, sees)."""
    nb = nbformat.read(notebook, as_version=4)
    slides, chapter = slides_of(nb), " ".join(c.source for c in nb.cells)
    notes = lecture.read_notes(lecture.notes_path(notebook))
    misplaced = []
    for note in notes:
        shown = " ".join(c.source for c in slides[note.after])
        misplaced += [f"{note.after}: `{term}`" for term in re.findall(r"`([^`\n]+)`", note.text)
                      if term in chapter and term not in shown]
    assert misplaced == [], f"{notebook.stem}: notes that name what is on another slide"
    noted = {id(slides[note.after]) for note in notes}
    bare = [c.id for c in nb.cells if c.cell_type == "code" and LIVE.search(c.source) and id(slides[c.id]) not in noted]
    assert bare == [], f"{notebook.stem}: slides with a live widget and no speaker note"


def test_the_note_check_sees_a_note_one_slide_off():
    nb = nbformat.read(ROOT / "notebooks" / "06-dualpipe.ipynb", as_version=4)
    slides = slides_of(nb)
    grid = next(c for c in nb.cells if "render_grid(t)" in c.source)  # the grid whose `'` and `·` a note explains
    claims = next(c for c in nb.cells if 'textbook_claims("4.5")' in c.source)
    assert "·" in " ".join(c.source for c in slides[grid.id]) and "·" not in " ".join(c.source for c in slides[claims.id])


# Two views of one schedule agree, or say why not. DualPipe's overlapped F&B pairs are booked one of two ways: as one
# unit (the shared model, ppedu.costs.EQUAL; fb set) or each op on its own (fb unset), and the two give different
# steps and bubbles for the same order. Every notebook is run with a record of each overlapped schedule simulated in
# each cell; where a schedule is shown under both bookings somewhere in the course, every cell that shows its steps or
# bubble must say, on its slide, which booking it shows.
SAYS = {True: ("booked as one unit", "booked: f + b + w", "shared model", "shared cost model", "equal", "fb="),
        False: ("unbooked", "each op on its own", "fb unset")}
RECORD = """
import importlib as _il, json as _json, sys as _sys
from IPython import get_ipython as _ip
_simulate = _il.import_module("ppedu.simulate")
_plain, _cell, _log = _simulate.simulate, [""], []
def _recorded(schedule, *args, **kwargs):
    t = _plain(schedule, *args, **kwargs)
    if schedule.overlapped:
        _log.append([_cell[0], [schedule.name, t.p, schedule.microbatches, schedule.virtual], t.makespan,
                     t.bubble_ratio, t.costs.fb is not None])
    return t
def _figure_title(plot):
    def titled(timeline, *args, **kwargs):
        figure = plot(timeline, *args, **kwargs)
        _log.append([_cell[0], "title", figure.axes[0].get_title()])
        return figure
    return titled
import ppedu, ppedu.plot, ppedu.widgets.explorer, ppedu.design, ppedu.sheet, ppedu.errata, ppedu.practice, ppedu.lesson
for _m in list(_sys.modules.values()):
    if getattr(_m, "__name__", "").startswith("ppedu") and getattr(_m, "simulate", None) is _plain:
        _m.simulate = _recorded
ppedu.plot.plot_timeline = _figure_title(ppedu.plot.plot_timeline)
_ip().events.register("pre_run_cell", lambda info: _cell.__setitem__(0, info.raw_cell))
_ip().events.register("post_run_cell", lambda result: open(_LOG, "w").write(_json.dumps(_log)))
"""
NOTEBOOKS_RUN = [p for p in NOTEBOOKS if "dualpipe" in p.read_text() or re.search(
    r"errata|design\.|sheet\.|practice\.|layouts\(", p.read_text())]


@pytest.fixture(scope="module")
def shown_schedules(tmp_path_factory) -> list[tuple[str, list[str], tuple, float, float, bool]]:
    """Each (notebook, text of the cell's slide, schedule, makespan, bubble, booked) a cell computes, the slide's text
    its sources, text outputs and figure titles."""
    from nbclient import NotebookClient

    out, views = tmp_path_factory.mktemp("views"), []
    for notebook in NOTEBOOKS_RUN:
        nb = nbformat.read(notebook, as_version=4)
        log = out / f"{notebook.stem}.json"
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"_LOG = {str(log)!r}\n" + RECORD))
        env = {"PPEDU_FAST": "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
        del nb.cells[0]
        records = json.loads(log.read_text())
        titles = {}
        for record in records:
            if record[1] == "title":
                titles.setdefault(record[0], []).append(record[2])
        slides = slides_of(nb)
        for source, key, makespan, bubble, booked in (r for r in records if r[1] != "title"):
            cell = next((c for c in nb.cells if c.source == source), None)
            if cell is None or cell.cell_type != "code":
                continue
            texts = [c.source for c in slides[cell.id]] + [t for c in slides[cell.id] for t in _texts(c)]
            texts += [t for c in slides[cell.id] for t in titles.get(c.source, [])]
            mine = _texts(cell) + titles.get(source, [])
            views.append((notebook.stem, cell.id, texts, mine, tuple(key), makespan, bubble, booked))
    return views


def _texts(cell) -> list[str]:
    return [o.get("text", "") if o.output_type == "stream" else str(o.get("data", {}).get("text/plain", "")) +
            str(o.get("data", {}).get("text/html", "")) for o in getattr(cell, "outputs", [])]


def _shows(texts: list[str], name: str, makespan: float, bubble: float) -> bool:
    """Whether a cell's outputs show a schedule's steps or its bubble (as a number or a percentage): on a line (or a
    table's row) that names the schedule, or in an output that names it first (a widget's still picture)."""
    named = re.compile(name.replace("-", "[- ]?"), re.IGNORECASE)
    numbers = [re.compile(rf"(?<![\d.]){re.escape(n)}(?!\.?\d)") for n in
               {f"{makespan:g}", f"{bubble:.1%}", f"{bubble:.2%}", f"{bubble:.3g}", f"{bubble:.4f}"}]
    return any((named.search(text[:400]) or named.search(part)) and any(n.search(part) for n in numbers)
               for text in texts for part in re.split(r"\n|</tr>", text))


def test_every_view_of_a_schedule_shown_both_ways_says_how_it_books_the_pairs(shown_schedules):
    both = {key for *_, key, _, _, booked in shown_schedules if booked} & \
           {key for *_, key, _, _, booked in shown_schedules if not booked}
    silent = sorted({f"{nb} cell {cell}: {key[0]} p={key[1]} m={key[2]} {'booked' if booked else 'unbooked'}"
                     for nb, cell, texts, mine, key, makespan, bubble, booked in shown_schedules
                     if key in both and _shows(mine, key[0], makespan, bubble)
                     and not any(w in t.lower() for t in texts for w in SAYS[booked])})
    assert both, "the course shows DualPipe under both bookings: the check has pairs to look at"
    assert silent == [], "views of a schedule shown both ways that do not say how they book its F&B pairs:\n" + "\n".join(silent)


def test_the_booking_check_sees_a_view_that_does_not_say():
    texts = ["simulate(schedules.dualpipe(8, 20), Costs(f=1, b=1, w=1)).makespan", "63"]
    assert _shows(["dualpipe p=8, m=20: 63 steps"], "dualpipe", 63.0, 0.047619) and not any(w in t.lower() for t in texts for w in SAYS[False])
    assert any(w in "F&B pairs booked as one unit of f + b + w = 3".lower() for w in SAYS[True])


EXTENSION = ROOT / "labextension"
BUILT = ROOT / "ppedu" / "labextension"


def test_the_presenter_view_reads_the_notes_as_the_lecture_tool_writes_them():
    source = (EXTENSION / "src" / "notes.ts").read_text(encoding="utf-8")
    assert f"export const ANCHOR = /{lecture._ANCHOR.pattern}/;" in source  # one format, read alike in both


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed: the extension cannot be rebuilt")
def test_the_prebuilt_lecture_extension_is_what_its_source_builds(tmp_path):
    """`make labextension` from labextension/ (npm's packages as its lock file pins them) gives ppedu/labextension
    file for file: the course ships no JavaScript that its TypeScript does not make."""
    import subprocess
    import sys

    cache = ROOT / "build" / "labextension-npm"
    lock = (EXTENSION / "package-lock.json").read_text()
    if not (cache / "package-lock.json").exists() or (cache / "package-lock.json").read_text() != lock:
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(EXTENSION / name, cache / name)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=cache, check=True, capture_output=True)
    work = tmp_path / "labextension"
    shutil.copytree(EXTENSION, work, ignore=shutil.ignore_patterns("node_modules", "lib"))
    # A copy, not a link: the build names modules by their paths, as `make labextension` sees them.
    shutil.copytree(cache / "node_modules", work / "node_modules", symlinks=True)
    import jupyterlab

    staging = Path(jupyterlab.__file__).parent / "staging"
    subprocess.run([str(work / "node_modules" / ".bin" / "tsc")], cwd=work, check=True, capture_output=True)
    subprocess.run([str(work / "node_modules" / ".bin" / "build-labextension"), "--core-path", str(staging), "."],
                   cwd=work, check=True, capture_output=True)
    built = {p.relative_to(tmp_path / "ppedu" / "labextension"): p for p in (tmp_path / "ppedu" / "labextension").rglob("*")
             if p.is_file()}
    shipped = {p.relative_to(BUILT): p for p in BUILT.rglob("*") if p.is_file()}
    assert sorted(map(_stable, built)) == sorted(map(_stable, shipped)), "run `make labextension`"
    # The code itself is byte for byte the same (its chunk is named by its content's hash); webpack numbers the
    # container's entry module by where the folder is, so its entry file is compared with that number taken out.
    for name in built:
        shipped_file = next(shipped[s] for s in shipped if _stable(s) == _stable(name))
        assert _stable_text(built[name]) == _stable_text(shipped_file), f"{name}: run `make labextension`"
    assert sys.executable  # the extension is built against this environment's JupyterLab


def _stable(path: Path) -> str:
    return re.sub(r"remoteEntry\.[0-9a-f]+\.js", "remoteEntry.js", str(path))


def _stable_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.name == "package.json":
        return _stable(text)
    return re.sub(r"var e=\{\d+\(e|r\(\d+\);\(_JUPYTERLAB", "ENTRY", text) if path.name.startswith("remoteEntry") else text
