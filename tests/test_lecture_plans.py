"""The lecture plans name only sections their chapter has and widgets their chapter calls (or
say the widget is still to be inserted), so a plan cannot drift from the notebook it projects."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANS = (ROOT / "docs" / "lecture-plans.md").read_text(encoding="utf-8")
SECTION = r"§ (.+?)\*\*(?: —|$)"
WIDGETS = ("ScheduleExplorer", "ScheduleBuilder", "TimelinePlayer", "SlotCountingExercise", "StepPicker", "interact")


def plans() -> dict[int, str]:
    parts = re.split(r"^## Chapter (\d+) ", PLANS, flags=re.MULTILINE)
    return {int(n): text for n, text in zip(parts[1::2], parts[2::2])}


def chapter(n: int) -> nbformat.NotebookNode:
    (path,) = (ROOT / "notebooks").glob(f"{n:02d}-*.ipynb")
    return nbformat.read(path, as_version=4)


def test_every_chapter_has_a_plan_of_about_ninety_minutes():
    assert sorted(plans()) == list(range(1, 10))
    for n, text in plans().items():
        ends = [int(x) for x in re.findall(r"\[\d+–(\d+)\]", text)]
        assert ends and ends[-1] == 90, f"chapter {n} plan ends at {ends[-1:]} minutes"
        assert ends == sorted(ends), f"chapter {n}: blocks out of order"
        assert text.count("§") == len(re.findall(SECTION, text, flags=re.MULTILINE)), f"chapter {n}: a § unread"


@pytest.mark.parametrize("n", range(1, 10))
def test_sections_and_widgets_named_exist_in_the_chapter(n):
    nb = chapter(n)
    headings = {line.lstrip("#").strip() for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if re.match(r"#+ ", line)}
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for line in plans()[n].splitlines():
        if m := re.search(SECTION, line):
            assert m.group(1) in headings, f"chapter {n}: no section {m.group(1)!r}"
        for widget in WIDGETS:
            if f"`{widget}" in line and "insert" not in line:
                assert widget in code, f"chapter {n}: the plan drives {widget}, the chapter never calls it"
