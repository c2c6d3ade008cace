"""The judge of the widget exam (``counting``): grades the answers a student's SlotCountingExercise saved in
the submission, in the grading process — the student's kernel only shows the exercises again.

:class:`ReadSavedAnswers` runs before nbgrader's Execute: it reads the answer file from the folder nbgrader
is grading, in the grading area the intake filled (the student is the one that folder is filed under), so nothing
the notebook does while it runs
changes what is graded, and judges it against that student's own grids: the whole grids their pictures were cut from
(:func:`grader.keys.counting.grid`), the covered cells included. :class:`WriteVerdicts` runs after
Execute and puts each verdict in place of its test cell's output: the messages, then the points as the
cell's value, which nbgrader reads as partial credit.

>>> from ppedu.answer_file import SlotAnswer
>>> judge("alice", {}).points
{'count': 0.0, 'mark': 0.0, 'path': 0.0, 'causes': 0.0}
>>> g = grids("alice")["count"]
>>> judge("alice", {"count": SlotAnswer(total=str(g.total_slots), idle="0", ratio="")}).points["count"]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.intake import AREA, intake_notes
from grader.keys.counting import grid
from grader.questiondata import variant
from ppedu import answer_file as saved
from ppedu.grading.assignments import counting, my_values
from ppedu.grid import Grid
from ppedu.slots import check_marking, check_slot_answers
from ppedu.reading import causes_share, check_causes, check_path, path_share

#: Each question's points; the notebook's test cells carry the same (tests/grading/test_exam.py).
POINTS = {"count": 3.0, "mark": 2.0, "path": 2.0, "causes": 2.0}
_KEY = "ppedu_exam"


@dataclass(frozen=True)
class Verdicts:
    """Per question (the test cell's grade_id): the points earned and the messages for the student."""

    points: dict[str, float]
    messages: dict[str, tuple[str, ...]]


def grids(student: str) -> dict[str, Grid]:
    """The whole grid of each question that ``student``'s pictures show (the variant the release gave them)."""
    k = variant(my_values("counting", student))
    return {question: grid(k, question) for question in POINTS}


def judge(student: str, answers: dict[str, saved.SlotAnswer]) -> Verdicts:
    """Grade ``answers`` (as :func:`ppedu.answer_file.read` gives them) on ``student``'s own grids."""
    points, messages = {}, {}
    for question, g in grids(student).items():
        answer = answers.get(question)
        if answer is None:
            points[question], messages[question] = 0.0, ("Nothing was saved for this exercise.",)
            continue
        if question == "count":
            feedback = check_slot_answers(g, total=answer.total, idle=answer.idle, ratio=answer.ratio)
            right = sum(m.endswith(": correct.") for m in feedback.messages)
            points[question] = POINTS[question] * right / 3
        elif question == "mark":
            feedback = check_marking(g, answer.marked)
            points[question] = _marking_points(g.idle_slots, answer.marked, g.idle_mask)
        elif question == "path":  # any critical path is right (equal costs give several)
            feedback = check_path(g, answer.marked)
            points[question] = round(POINTS[question] * path_share(g, answer.marked), 2)
        else:
            given = {(s, t): sort for s, t, sort in sorted(answer.causes)}
            feedback = check_causes(g, given)
            points[question] = round(POINTS[question] * causes_share(g, given), 2)
        messages[question] = feedback.messages
    return Verdicts(points, messages)


def _marking_points(idle: float, marked: frozenset[tuple[int, int]], mask: Any) -> float:
    """Each idle cell marked earns its share, each busy cell marked takes one back; never below 0."""
    p, steps = mask.shape
    inside = [(s, t) for s, t in marked if 0 <= s < p and 0 <= t < steps]
    hits = sum(bool(mask[s, t]) for s, t in inside)
    wrong = len(marked) - hits
    return round(POINTS["mark"] * max(0.0, (hits - wrong) / idle), 2)


class ReadSavedAnswers(NbGraderPreprocessor):
    """Before Execute: read and judge the saved answers of the submission being graded."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if resources["nbgrader"]["assignment"] != "counting":
            return nb, resources
        # The submission as the intake took it in, not nbgrader's autograded copy, which takes any file of the
        # same name from solutions/.
        who = resources["nbgrader"]["student"]
        course = CourseDirectory(config=self.config)
        folder = Path(course.format_path(AREA, who, "counting"))
        left_out = [note for note in intake_notes(Path(course.root), who, "counting")
                    if note.startswith(f"left out: {counting.ANSWERS} ")]
        try:
            if left_out:
                raise saved.Unreadable(f"{counting.ANSWERS} was {left_out[0].split('(', 1)[1].rstrip(')')}, which the "
                                       "autograder does not take: nothing was graded from it")
            answers = saved.read(folder / counting.ANSWERS)
        except saved.Unreadable as problem:
            verdicts = Verdicts(dict.fromkeys(POINTS, 0.0), dict.fromkeys(POINTS, (f"{problem}.",)))
        else:
            verdicts = judge(who, answers)
        resources[_KEY] = verdicts
        return nb, resources


class WriteVerdicts(NbGraderPreprocessor):
    """After Execute: each exam test cell's output becomes the judge's verdict, whatever the kernel printed."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        verdicts: Verdicts | None = resources.get(_KEY)
        if verdicts is None:
            return nb, resources
        for cell in nb.cells:
            question = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade") and question in POINTS:
                earned = verdicts.points[question]
                text = "\n".join(verdicts.messages[question]) + f"\n{earned:g} of {POINTS[question]:g} points\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text),
                                nbformat.v4.new_output("execute_result", data={"text/plain": repr(earned)},
                                                       execution_count=cell.get("execution_count"))]
        return nb, resources


__all__ = ["ReadSavedAnswers", "Verdicts", "WriteVerdicts", "judge"]
