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
