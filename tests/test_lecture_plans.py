"""The lecture plans name only sections their chapter has, widgets their chapter calls (or say the widget is still
to be inserted) and assessments that exist; every plan has objectives, a board derivation, misconceptions and
concept checks, so a plan cannot drift from the notebook it projects or the assessments it promises."""

import re
from pathlib import Path

import nbformat
import pytest

from ppedu import practice
from ppedu.grading.assignments import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[1]
PLANS = (ROOT / "docs" / "lecture-plans.md").read_text(encoding="utf-8")
SECTION = r"§ (.+?)\*\*(?: —|$)"
WIDGETS = ("ScheduleExplorer", "ScheduleBuilder", "TimelinePlayer", "SlotCountingExercise", "StepPicker", "CollectiveExplorer",
           "interact")
CHAPTERS = sorted(p.stem.split("-")[0] for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
PARTS = ("**Objectives**", "**Board derivation.**", "**Misconceptions.**", "**Concept checks.**")


def plans() -> dict[str, str]:
    parts = re.split(r"^## Chapter (\d+b?) ", PLANS, flags=re.MULTILINE)
    return {f"{int(n[:-1] if n.endswith('b') else n):02d}" + ("b" if n.endswith("b") else ""): text
            for n, text in zip(parts[1::2], parts[2::2])}


def chapter(key: str) -> nbformat.NotebookNode:
    (path,) = (ROOT / "notebooks").glob(f"{key}-*.ipynb")
    return nbformat.read(path, as_version=4)


def questions(assignment: str) -> set[int]:
    """The question numbers an assignment's solution has (its `## N.` headings)."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return {int(n) for c in nb.cells if c.cell_type == "markdown" for n in re.findall(r"^## (\d+)\.", c.source, re.M)}


def test_every_chapter_has_a_plan_of_about_ninety_minutes():
    assert sorted(plans()) == CHAPTERS
    for n, text in plans().items():
        ends = [int(x) for x in re.findall(r"\[\d+–(\d+)\]", text)]
        assert ends and ends[-1] == 90, f"chapter {n} plan ends at {ends[-1:]} minutes"
        assert ends == sorted(ends), f"chapter {n}: blocks out of order"
        blocks = [line for line in text.splitlines() if re.match(r"- \*\*\[", line)]
        assert sum(line.count("§") for line in blocks) == len([line for line in blocks if re.search(SECTION, line)])


@pytest.mark.parametrize("key", CHAPTERS)
def test_sections_and_widgets_named_exist_in_the_chapter(key):
    nb = chapter(key)
    headings = {line.lstrip("#").strip() for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if re.match(r"#+ ", line)}
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for line in plans()[key].splitlines():
        named = re.findall(SECTION, line) if re.match(r"- \*\*\[", line) else [
            part for group in re.findall(r"\(§ (.+?)\)\.?$", line) for part in group.split(", § ")]
        for section in named:
            assert section in headings, f"chapter {key}: no section {section!r}"
        for widget in WIDGETS:
            if f"`{widget}" in line and "insert" not in line:
                assert widget in code, f"chapter {key}: the plan drives {widget}, the chapter never calls it"


@pytest.mark.parametrize("key", CHAPTERS)
def test_each_plan_maps_its_objectives_to_assessments_that_exist(key):
    text = plans()[key]
    assert all(part in text for part in PARTS), f"chapter {key}: a plan needs {', '.join(PARTS)}"
    objectives = text.split("**Objectives**")[1].split("**Board derivation.**")[0]
    lines = [line for line in objectives.splitlines() if line.startswith("- ")]
    assert len(lines) >= 3 and all("→" in line for line in lines), f"chapter {key}: each objective names its assessment"
    labels = {x.label for x in practice.practice_set()}
    for line in lines:
        for assignment, number in re.findall(r"\b(counting|ps\d|final) Q(\d+)", line):
            assert assignment in ASSIGNMENTS and int(number) in questions(assignment), f"{assignment} Q{number}"
        for label in re.findall(r"practice (P\d+)", line):
            assert label in labels, f"no practice question {label}"
    checks = text.split("**Concept checks.**")[1]
    assert len(re.findall(r"^\d+\. .+\(.+\)$", checks, re.M)) >= 2, f"chapter {key}: two concept checks with answers"


#: The course's concepts, each as the words that name it (lower case): an objective and the question said to test it
#: must share one. Only specific terms: "GPU", "schedule" or "micro-batch" would match any pair.
CONCEPTS = {
    "slots": ("slot", "grid"), "bubble": ("bubble", "idle"), "warm-up": ("warm-up", "warmup"),
    "memory": ("memory", "activations", "fits", " gb", "peak"), "recomputation": ("recomput",),
    "interleaving": ("interleav", "chunks per gpu"), "hand-over": ("hand-over", "link"),
    "zero bubble": ("zb-h1", "zb-h2", "zero bubble", "zero-bubble", "weight-gradient", " w "),
    "dualpipe": ("dualpipe", "deepseek"), "deadlock": ("deadlock", "blocking", "isend"),
    "gradients": ("gradient",), "definitions": ("idle ÷ total", "bubble ÷ ideal", "idle_share", "definition"),
    "collectives": ("all-reduce", "ring", "tree", "busbw", "α"), "tensor": ("tensor", "sequence parallel", "megatron"),
    "sharding": ("zero", "fsdp", "shard"), "experts": ("expert", "all-to-all", "moe"),
    "layout": ("layout", "t·p·d", "data-parallel"), "executor": ("executor", "run_pipeline", "mnist"),
    "orders": ("order",), "placement": ("placement", "non-contiguous", "chunk"), "proof": ("prove", "proof"),
}


#: The counting exam's widget questions, each graded by a cell of its own at the end of the notebook.
COUNTING = {1: "count", 2: "mark", 4: "path", 5: "causes"}


def section(assignment: str, number: int) -> tuple[str, set[str]]:
    """Question ``number`` of ``assignment``'s solution: its text (every cell from its ``## number.`` heading to the
    next question's) and the grade_ids of its graded cells."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    text, graded, inside = [], set(), False
    for c in nb.cells:
        if c.cell_type == "markdown" and (heading := re.match(r"^## (\d+)\.", c.source, re.M)):
            inside = int(heading.group(1)) == number
        if inside:
            text.append(c.source)
            meta = c.metadata.get("nbgrader", {})
            if meta.get("grade"):
                graded.add(meta["grade_id"])
    return "\n".join(text), graded


def concepts(text: str) -> set[str]:
    lowered = f" {text.lower()} "
    return {name for name, words in CONCEPTS.items() if any(w in lowered for w in words)}


@pytest.mark.parametrize("key", CHAPTERS)
def test_each_question_an_objective_names_is_graded_and_tests_that_objective(key):
    objectives = plans()[key].split("**Objectives**")[1].split("**Board derivation.**")[0]
    for line in (x for x in objectives.splitlines() if x.startswith("- ")):
        objective, _, named = line.partition("→")
        for assignment, number in re.findall(r"\b(counting|ps\d|final) Q(\d+)", named):
            text, graded = section(assignment, int(number))
            if assignment == "counting" and int(number) in COUNTING:  # answered in a widget, graded at the end
                graded.add(COUNTING[int(number)])
            assert graded, f"chapter {key}: {assignment} Q{number} has no graded cell"
            shared = concepts(objective) & concepts(text)
            assert shared, (f"chapter {key}: {assignment} Q{number} shares no concept with the objective "
                            f"{objective.strip()[2:60]!r} (it tests {sorted(concepts(text))})")
