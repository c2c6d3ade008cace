"""Grading again keeps finished manual grades finished. nbgrader's autograder marks every answer that has a manual
score as needing manual grading again, on every run (so that a grader sees an answer that changed); after a fixed key
is re-run over the class, every written answer would wait in the formgrader's queue again. Here a manual grade that
was finished stays finished when the student's answers are the ones it was given for: the autograder keeps, beside
each submission in the grading area, a fingerprint of the answers it last graded.

:class:`RememberManualGrades` runs first (which manual grades were finished before this run), :class:`KeepManualGrades`
after nbgrader's SaveAutoGrades (puts back those whose answers did not change, and records the fingerprint).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution

from grader.intake import AREA

_KEY = "ppedu_finished_manual_grades"


def fingerprint(nb: NotebookNode) -> str:
    """What the student answered in a notebook: its answer cells, in order."""
    answers = [cell.source for cell in nb.cells if is_solution(cell)]
    return hashlib.sha256(json.dumps(answers).encode()).hexdigest()


def _record(resources: dict[str, Any], config: Any) -> Path:
    info = resources["nbgrader"]
    root = Path(CourseDirectory(config=config).root)
    return root / AREA / info["student"] / f"{info['assignment']}.answers.json"


def _grades(gradebook: Gradebook, nb: NotebookNode, info: dict[str, Any]) -> list[Any]:
    ids = [cell.metadata.nbgrader["grade_id"] for cell in nb.cells if is_grade(cell)]
    return [gradebook.find_grade(grade_id, info["notebook"], info["assignment"], info["student"]) for grade_id in ids]


class RememberManualGrades(NbGraderPreprocessor):
    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            resources[_KEY] = [g.name for g in _grades(gradebook, nb, info)
                               if g.manual_score is not None and not g.needs_manual_grade]
        return nb, resources


class KeepManualGrades(NbGraderPreprocessor):
    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info, path = resources["nbgrader"], _record(resources, self.config)
        try:
            graded = json.loads(path.read_text())
        except (OSError, ValueError):
            graded = {}
        now = fingerprint(nb)
        finished = set(resources.get(_KEY, ()))
        if finished and graded.get(info["notebook"]) == now:
            with Gradebook(info["db_url"]) as gradebook:
                for grade in _grades(gradebook, nb, info):
                    if grade.name in finished:
                        grade.needs_manual_grade = False
                gradebook.db.commit()
            self.log.info("%s: %d manual grade(s) kept: the answers are the ones they were given for",
                          info["student"], len(finished))
        path.write_text(json.dumps({**graded, info["notebook"]: now}))
        return nb, resources
