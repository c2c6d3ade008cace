"""A written answer graded by hand, as an instructor does it: ps1 is autograded in the sandbox, which leaves question
2b's written answer to a person; logged in to JupyterLab, the instructor opens the submission in nbgrader's formgrader
in Chromium (offline: MathJax's CDN out of reach), reads the answer, types a score, and the gradebook's total (what
goes on the transcript) includes it."""

import json
import os
import subprocess
from pathlib import Path

from nbgrader.api import Gradebook

from .test_exam import BIN, _nbgrader

STUDENT, WRITTEN = "alice", "q2b_answer"


def test_an_instructor_scores_a_written_answer_in_the_formgrader(lab, course, tmp_path):
    _nbgrader(course, tmp_path, "generate_assignment", "ps1", "--force")
    graded_cells = [c["metadata"]["nbgrader"] for c in json.loads((course / "solutions" / "ps1" / "ps1.ipynb").read_text())["cells"]
                    if c["metadata"].get("nbgrader", {}).get("grade")]
    points = sum(c["points"] for c in graded_cells)
    by_hand = sum(c["points"] for c in graded_cells if c["solution"])  # written answers: the sandbox leaves them
    submitted = course / "submitted" / STUDENT / "ps1"
    submitted.mkdir(parents=True)
    (submitted / "ps1.ipynb").write_text((course / "solutions" / "ps1" / "ps1.ipynb").read_text())
    graded = subprocess.run([str(Path(BIN) / "ppedu"), "grade", "ps1", "--student", STUDENT, "--jobs", "1"], cwd=course,
                            env={**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]},
                            capture_output=True, text=True, timeout=600)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook("ps1", "ps1", STUDENT)
        written = gradebook.find_grade(WRITTEN, "ps1", "ps1", STUDENT)
        assert (notebook.score, notebook.max_score, written.manual_score) == (points - by_hand, points, None)
        page_id = notebook.id

    # Logged in to JupyterLab first, as an instructor is, then the submission's page in the formgrader.
    lab.page.goto(f"{lab.server.url}lab?reset&token={lab.server.token}")
    lab.page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.wait_for()
    errors = []
    lab.page.on("pageerror", lambda error: errors.append(str(error)))
    lab.page.goto(f"{lab.server.url}formgrader/submissions/{page_id}/")
    assert "Model answer" in lab.page.get_by_role("main").inner_text()  # the instructor reads what was written
    score = lab.page.locator(f"input.score.needs_manual_grade#{WRITTEN}")  # marked once the grades have loaded
    score.wait_for()
    score.fill("1")
    score.press("Tab")  # the formgrader saves a score when it changes
    for _ in range(120):
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            total = gradebook.find_submission("ps1", STUDENT).score
            manual = gradebook.find_grade(WRITTEN, "ps1", "ps1", STUDENT).manual_score
        if manual is not None:
            break
        lab.page.wait_for_timeout(250)
    assert (manual, total) == (1, points - by_hand + 1)
    # Offline (as here) MathJax's CDN is out of reach; nbgrader's page script must still run to its end (its keyboard
    # shortcuts and tooltips), with grader/templates/formgrade/mathjax.html.j2 standing in.
    assert errors == []
    lab.shoot(lab.page.get_by_role("main"), "formgrader-written-answer")
