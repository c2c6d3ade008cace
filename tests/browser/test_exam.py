"""The widget exam end to end, as a class does it: the instructor releases `counting`; a student fetches it into a
folder of their own, opens it in JupyterLab, types the counts, clicks the idle cells, a critical path and the idle
cells' causes in Chromium, presses Validate and submits; the instructor collects and autogrades it in the sandbox;
the grade is what was clicked."""

import getpass
import json
import os
import re
import subprocess
import sys
from pathlib import Path


from grader.exam import grids
from ppedu.grading.assignments import counting
from ppedu.grading.students import student_id
from ppedu.idle import SORTS

from .test_assignment import type_into, validate

BIN = str(Path(sys.executable).parent)


def _nbgrader(course, exchange, *args, cwd=None):
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], "PPEDU_EXCHANGE": str(exchange)}
    done = subprocess.run(["nbgrader", *args, f"--Exchange.root={exchange}"], cwd=cwd or course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _wait_saved(lab, root, check, timeout_s=30):
    """Wait until the exercise's answer file satisfies ``check`` (each change is saved by the kernel)."""
    for _ in range(timeout_s * 4):
        try:
            if check(json.loads(root.read_text())):
                return
        except (OSError, ValueError):
            pass
        lab.page.wait_for_timeout(250)
    raise AssertionError(f"{root} never held the answer: {root.read_text() if root.exists() else 'no file'}")


def test_a_student_answers_the_exam_in_the_widgets_and_is_graded_on_it(lab, course, tmp_path):
    exchange = tmp_path / "exchange"
    exchange.mkdir(mode=0o777)
    home = course / "student-work"
    home.mkdir()
    _nbgrader(course, exchange, "generate_assignment", "counting", "--force")
    _nbgrader(course, exchange, "release_assignment", "counting")
    _nbgrader(course, exchange, "fetch_assignment", "counting", "--course", "ppedu", cwd=home)

    whole = grids(student_id())  # the student's grids, covered cells included: what a right answer reasons out
    count_grid, mark_grid = whole["count"], whole["mark"]
    panel = lab.open("student-work/counting/counting.ipynb")
    lab.run_all(panel)
    count, mark = panel.locator(".ppedu-slot-exercise").nth(0), panel.locator(".ppedu-slot-exercise").nth(1)
    typed = [str(int(count_grid.total_slots)), str(int(count_grid.idle_slots)),
             f"{int(count_grid.idle_slots)}/{int(count_grid.total_slots)}"]
    for field, value in zip(count.locator("input[type=text]").all(), typed, strict=True):
        field.fill(value)
    saved = home / "counting" / counting.ANSWERS
    _wait_saved(lab, saved, lambda a: [a["count"][k] for k in ("total", "idle", "ratio")] == typed)
    idle = sorted((int(s), int(t)) for s, t in zip(*mark_grid.idle_mask.nonzero()))
    for s, t in idle:
        mark.locator(f".ppedu-cell-{s}-{t}").click()
    _wait_saved(lab, saved, lambda a: sorted(map(tuple, a.get("mark", {}).get("marked", []))) == idle)
    # The read grid: a critical path clicked cell by cell, then each idle cell clicked once per step of its cause.
    read = whole["path"].timeline
    path = sorted({(e.stage, t) for e in read.critical_path() for t in range(int(e.start), int(e.end))})
    trace, sort = panel.locator(".ppedu-slot-exercise").nth(2), panel.locator(".ppedu-slot-exercise").nth(3)
    for s, t in path:
        trace.locator(f".ppedu-cell-{s}-{t}").click()
    _wait_saved(lab, saved, lambda a: sorted(map(tuple, a.get("path", {}).get("marked", []))) == path)
    causes = sorted((s, t, SORTS[c]) for s, row in enumerate(whole["path"].causes()) for t, c in enumerate(row) if c)
    for s, t, c in causes:
        for _ in range(("fill", "drain", "order").index(c) + 1):
            sort.locator(f".ppedu-cell-{s}-{t}").click()
    _wait_saved(lab, saved, lambda a: sorted(map(tuple, a.get("causes", {}).get("causes", []))) == causes)
    assert "Saved in counting.json" in count.locator(".ppedu-feedback").inner_text()

    # Two questions are answered in words, graded by hand: Validate wants them written too.
    markdown = panel.locator(".jp-MarkdownCell")
    written = [i for i in range(markdown.count()) if "YOUR ANSWER HERE" in markdown.nth(i).inner_text()]
    assert len(written) == 2
    for i, words in zip(written, ("Each GPU idles (p - 1)(f + b) filling and draining, the same with twice the m.",
                                  "GPU 0 holds its next forward behind B0; 1F1B's warm-up p - 1 - j removes it.")):
        type_into(lab, markdown.nth(i), words)
    verdict = validate(lab, panel)
    assert "The following cell failed" not in verdict and re.search(r"passes|Success", verdict), verdict
    # Validate ran the notebook again: the answers are still there.
    assert sorted(map(tuple, json.loads(saved.read_text())["mark"]["marked"])) == idle

    _nbgrader(course, exchange, "submit", "counting", "--course", "ppedu", cwd=home)
    _nbgrader(course, exchange, "collect", "counting")
    me = getpass.getuser()
    graded = subprocess.run([str(Path(BIN) / "ppedu"), "grade", "counting", "--student", me, "--jobs", "1"], cwd=course,
                            env={**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]},
                            capture_output=True, text=True, timeout=600)
    # 9 points from the widgets; the 6 of the written answers wait for the instructor
    assert graded.returncode == 0 and f"{me}: 9/15" in graded.stdout, graded.stdout + graded.stderr
