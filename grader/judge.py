"""The judge: an nbgrader preprocessor, after Execute, that decides every test cell's score and
message in the grading process, from data only.

Each hidden test hands the student's answers in as a JSON text in its output
(:data:`ppedu.grading.assignments.MIME`); the judge parses it (never running anything of the
student's), recomputes the key for the student named by the submission's folder (nbgrader's
``resources``, not the notebook), and replaces the cell's outputs with its verdict: a line of
stdout when right, nbgrader's partial-credit value when partly right, an error whose only line is
the message when wrong. Nothing the kernel printed or raised in a test cell counts — not its
stderr, not a verdict it claims.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from grader import keys
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import MIME, my_values


def _handed_in(cell: NotebookNode, assignment: str, question: str) -> Any:
    """The answers this cell handed in for ``question``, or ``None``."""
    for output in cell.get("outputs", []):
        text = output.get("data", {}).get(MIME)
        if not isinstance(text, str):
            continue
        try:
            payload = json.loads(text)
        except ValueError:
            continue
        if isinstance(payload, dict) and payload.get("assignment") == assignment and payload.get("question") == question:
            return payload.get("answers")
    return None


def _no_answers(index: int, facts: dict[str, Any]) -> str:
    """Why a test cell handed nothing in, as the trusted record of the run says."""
    if index in facts.get("timed_out", ()):
        return (f"This test ran over its time limit ({facts.get('timeout')} s) and was stopped: does one of your "
                "functions loop forever, or take far longer than it should?")
    died = facts.get("died")
    if died is not None and died <= index:
        return (f"The notebook's kernel stopped at cell {died + 1} (the code exited or crashed, for instance with "
                "os._exit, sys.exit or by running out of memory), so this test never ran.")
    return "This test handed in no answers: did the notebook change how Python runs or displays things?"


class Judge(NbGraderPreprocessor):
    """Score every autograded test cell from the answers it handed in (see the module's text)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info, facts = resources["nbgrader"], resources.get("ppedu", {})
        assignment, student = info["assignment"], info["student"]
        try:
            judges = keys.load(assignment).KEYS
        except ValueError:  # not one of ppedu's assignments: nbgrader's own grading applies
            return nb, resources
        values = my_values(assignment, student)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not utils.is_grade(cell):
                continue
            question = cell.metadata.nbgrader["grade_id"]
            if question not in judges:
                continue
            points = float(cell.metadata.nbgrader.get("points", 0))
            answers = _handed_in(cell, assignment, question)
            if answers is None:
                score, message = 0.0, _no_answers(index, facts)
            else:
                score, message = self._verdict(judges[question], answers, values, points, question, student)
                if score < points and facts.get("timed_out") and min(facts["timed_out"]) < index:
                    message += (f"\n(Cell {min(facts['timed_out']) + 1} ran over its time limit "
                                f"({facts.get('timeout')} s) and was stopped: answers after it may be missing.)")
            cell.outputs = _outputs(score, points, message, question, cell.get("execution_count"))
        return nb, resources

    def _verdict(self, judge: Any, answers: Any, values: Any, points: float, question: str,
                 student: str) -> tuple[float, str]:
        try:
            if isinstance(answers, dict) and "__raised__" in answers:  # handing in itself broke
                raise Wrong(f"Your answers could not be handed in ({answers['__raised__']}: {answers.get('message', '')}).")
            result = judge.judge(answers if isinstance(answers, dict) else {}, values)
        except Wrong as wrong:
            return 0.0, str(wrong)
        except Exception:  # the judge's own fault: the student gets a sentence, the instructor the traceback
            self.log.error("judging %s of %s failed:\n%s", question, student, traceback.format_exc())
            return 0.0, "The autograder could not judge this answer; your instructor will look at it."
        if isinstance(result, str):
            return points, result
        return min(points, float(result.score)), str(result)


def _outputs(score: float, points: float, message: str, question: str, count: Any) -> list[NotebookNode]:
    """The cell's outputs as nbgrader reads them (utils.determine_grade): an error scores 0; a
    number as the cell's value is partial credit; anything else full marks."""
    if score <= 0 and points > 0:
        return [NotebookNode(output_type="error", ename="Wrong", evalue=message, traceback=message.splitlines())]
    text = message if "\n" in message else f"✓ {question}: {message}"
    outputs = [NotebookNode(output_type="stream", name="stdout", text=text + "\n")]
    if score < points:
        outputs.append(NotebookNode(output_type="execute_result", execution_count=count, metadata={},
                                    data={"text/plain": repr(round(score, 6))}))
    return outputs
