"""counting — the slot-counting exam, answered in :class:`~ppedu.widgets.SlotCountingExercise` itself, on grids that
reach the student as pictures only (``questions.json``, made on the instructors' side;
:mod:`ppedu.grading.questiondata`):
the counts of a grid covered from its last forward typed into one exercise (``count``), the idle cells of another,
covered ones included, clicked in a second (``mark``), and a grid no chapter draws read for a critical path
(``path``) and its idle cells' causes (``causes``); two answers are written and graded by hand. The answers are saved
beside the notebook (``counting.json``) and graded from there by the instructors' judge, so there is no visible test
beyond "something is saved". Nothing here draws, simulates or counts a grid.

>>> values("alice")["variant"] in range(VARIANTS)
True
"""

from __future__ import annotations

from typing import Any

from ppedu.grading.questions import Question
from ppedu.grading.students import variant

#: Where the exercises save, beside the notebook.
ANSWERS = "counting.json"
#: No key and no form check here: the answers are in the widgets' file, not in variables.
QUESTIONS: dict[str, Question] = {}
#: The question data's pool: each student reads one of these variants' grids.
VARIANTS = 48


def values(student: str) -> dict[str, Any]:
    return {"variant": variant("counting", student, VARIANTS)}
