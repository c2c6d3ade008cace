"""An assignment as a student does it: open the released notebook in exercises/, type answers into the answer
cells, press nbgrader's Validate button in the notebook toolbar and read the verdict it shows.

The answers typed are the instructor's own (solutions/, markers taken out), so the test follows the assignment;
the last is left undone, so the verdict must name exactly that one. (Each Validate runs the whole notebook on the
server, so the test validates once.)
"""

import re
import time

import nbformat
import pytest

from .conftest import ROOT

ASSIGNMENT = "ps1"
STUDENT = ROOT / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
SOURCE = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
VALIDATE_S = 180


def solutions() -> dict[str, str]:
    """Each answer cell's grade id → the instructor's answer, without nbgrader's solution markers."""
    cells = nbformat.read(SOURCE, as_version=4).cells
    return {
        c.metadata.nbgrader.grade_id: "\n".join(
            line for line in c.source.splitlines() if not re.match(r"\s*### (BEGIN|END) SOLUTION", line)
        )
        for c in cells if c.metadata.get("nbgrader", {}).get("solution")
    }


def validate(lab, panel) -> str:
    """Press Validate (it saves the notebook first); the text of the results dialog."""
    button = panel.locator(".jp-Toolbar-item", has_text="Validate").locator("jp-button, button").first
    assert button.get_attribute("disabled") is None, "nbgrader's Validate button is disabled"
    button.click()
    dialog = lab.page.locator(".jp-Dialog", has_text="Validation Results")
    dialog.wait_for(timeout=VALIDATE_S * 1000)
    body = " ".join(dialog.locator(".jp-Dialog-body").inner_text().split())
    dialog.get_by_role("button", name=re.compile("ok", re.I)).click()
    dialog.wait_for(state="detached")
    return body


def type_into(lab, cell, source: str) -> None:
    """Replace a cell's text as a person would: click into it (a written answer: double-click to edit it),
    select all, type over it."""
    if "jp-MarkdownCell" in cell.get_attribute("class"):
        cell.dblclick()
    cell.locator(".cm-content").click()
    lab.page.keyboard.press("Control+A")
    lab.page.keyboard.press("Delete")
    lab.page.keyboard.insert_text(source)
    lab.page.keyboard.press("Escape")
    typed = cell.locator(".cm-content").inner_text()
    assert typed.split() == source.split(), f"the editor holds {typed!r}"


@pytest.mark.skipif(not (STUDENT.exists() and SOURCE.exists()), reason=f"no {ASSIGNMENT} in exercises/ and solutions/ yet")
def test_a_student_fills_an_answer_and_nbgrader_validates_it_in_jupyterlab(lab):
    nb = nbformat.read(STUDENT, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in code]
    tests = [c for c in code if c.metadata.get("nbgrader", {}).get("grade")]
    answers = solutions()
    panel = lab.open(f"exercises/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    cells = panel.locator(".jp-CodeCell")
    *given, left = [grade_id for grade_id in ids if grade_id in answers]
    for grade_id in given:
        type_into(lab, cells.nth(ids.index(grade_id)), answers[grade_id])
    written = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells if c.cell_type == "markdown"]
    for grade_id in set(written) & set(answers):  # the answers graded by hand: Validate wants them written too
        type_into(lab, panel.locator(".jp-MarkdownCell").nth(written.index(grade_id)), answers[grade_id])
    started = time.monotonic()
    verdict = validate(lab, panel)
    print(f"Validate took {time.monotonic() - started:.0f} s")
    # Every answer but the last given: exactly the last answer's test cell is reported, with the hint that its
    # variable is still missing; the tests of the answers typed pass.
    failed = verdict.split("The following cell failed: ")[1:]
    source = " ".join(tests[-1].source.split())
    assert len(failed) == 1 and failed[0].startswith(source), verdict
    assert "NotImplementedError" in verdict or "not defined" in verdict, verdict
    # The sentence that helps comes first, alone: no traceback through the checking code, before it or after.
    report = failed[0][len(source):].strip()
    assert report.startswith("✗ `") and len(re.findall(r"[.!?](?:\s|$)", report)) == 1, verdict
    assert "Traceback" not in verdict and "ppedu/grading" not in verdict, verdict
