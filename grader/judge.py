"""The judge: an nbgrader preprocessor, after the evaluation (:class:`grader.execute.Evaluate`), that decides every
test cell's score and message in the grading process, from the evaluation's data only — the answers read out of the
kernel after each test cell, and what each function gave when the notebook was run where its question's forbidden
modules have no code. It never sees an object a student built, and it runs in a process that ran none of their code.

Each question is judged first by its visible test (:func:`ppedu.grading.verdict.visible_verdict`, the one the
student's own check runs on the same data), then against its key, computed here for the student named by the
submission's folder (nbgrader's ``resources``, not the notebook): the lower of the two stands, so a check the student
saw fail never scores here. Each test cell's outputs are replaced by the verdict: a line of stdout when right,
nbgrader's partial-credit value when partly right, an error whose only line is the message when wrong. Nothing the
kernel printed or raised in a test cell counts.
"""

from __future__ import annotations

import ast
import traceback
from pathlib import Path
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from grader import keys
from grader.intake import notes_for_instructor
from ppedu.grading.answers import Wrong, text
from ppedu.grading.assignments import load, my_values
from ppedu.grading.harness import TIMED_OUT
from ppedu.grading.questions import explain
from ppedu.grading.verdict import visible_verdict

#: What, in a student's cells, reaches into the process it runs in (the harness that measures it) instead of
#: computing an answer. A cell may use one honestly (``gc.collect()`` frees memory): each use is listed for the
#: instructor to read, never scored.
REACHING = ("gc", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes", "inspect", "importlib",
            "builtins", "sys._getframe", "sys.settrace", "sys.setprofile", "sys.modules", "__code__", "__globals__",
            "__closure__", "__builtins__", "f_back", "f_locals", "f_globals", "ppedu.grading", "saved_tensors_hooks",
            "os.write", "os.dup2", "os.fdopen", "/proc/self")


def reaching(source: str) -> list[str]:
    """The names of :data:`REACHING` that ``source`` uses (in imports, names, attributes or strings)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            used |= {a.name for a in node.names} | {getattr(node, "module", None) or ""}
        elif isinstance(node, (ast.Name, ast.Attribute)):
            used.add(ast.unparse(node))
            used.add(node.id if isinstance(node, ast.Name) else node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used |= {r for r in REACHING if r in node.value}
    return [r for r in REACHING if any(u == r or u.startswith(r + ".") or u.endswith("." + r) for u in used)]


class Judge(NbGraderPreprocessor):
    """Score every autograded test cell (see the module's text)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info, facts = resources["nbgrader"], resources.get("ppedu", {})
        assignment, student = info["assignment"], info["student"]
        try:
            judges = keys.load(assignment).KEYS
        except ValueError:  # not one of ppedu's assignments: nbgrader's own grading applies
            return nb, resources
        forms, values = load(assignment).QUESTIONS, my_values(assignment, student)
        facts = told(nb, facts, forms)
        own = "\n".join(str(c.source) for c in nb.cells if c.cell_type == "code" and not utils.is_grade(c)
                        and not c.get("metadata", {}).get("nbgrader", {}).get("locked"))
        uses = reaching(own)
        review = [f"its cells use {', '.join(uses)}; read them before trusting the score"] if uses else []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not utils.is_grade(cell):
                continue
            question = cell.metadata.nbgrader["grade_id"]
            if question not in judges or question not in forms:
                continue
            points = float(cell.metadata.nbgrader.get("points", 0))
            try:
                score, message = self._question(judges[question], forms[question], question, facts, values, index,
                                                points, student)
            except Exception:  # the judge's own fault, or data it cannot take: this question only, never the notebook
                self.log.error("judging %s of %s failed:\n%s", question, student, traceback.format_exc())
                score, message = 0.0, "The autograder could not judge this answer; your instructor will look at it."
            cell.outputs = _outputs(score, points, message, question, cell.get("execution_count"))
        for line in review:
            self.log.warning("%s: %s", student, line)
        notes_for_instructor(Path(CourseDirectory(config=self.config).root), student, assignment, "review", review)
        return nb, resources

    def _question(self, judge: Any, form: Any, question: str, facts: dict[str, Any], values: Any, index: int,
                  points: float, student: str) -> tuple[float, str]:
        shown, said = visible_verdict(form, question, facts, values, index, points)
        if hasattr(form, "code"):
            data = dict(facts.get("functions", {}).get(question, {}))
            score, message = self._verdict(judge, data, values, points, question, student)
            message += explain(facts.get("function_runs", {}).get(question, {})) if score < points else ""
        elif shown < points:
            score, message = shown, said
        else:
            score, message = self._verdict(judge, facts["answers"][question], values, points, question, student)
            if score < points and facts.get("timed_out") and min(facts["timed_out"]) < index:
                message += (f"\n(Cell {min(facts['timed_out']) + 1} ran over its time limit "
                            f"({facts.get('timeout')} s) and was stopped: answers after it may be missing.)")
        if shown < score or (shown == score < points):  # what the student's check said stands where it is lower
            score, message = shown, said
        return score, message

    def _verdict(self, judge: Any, answers: Any, values: Any, points: float, question: str,
                 student: str) -> tuple[float, str]:
        try:
            if isinstance(answers, dict) and "__raised__" in answers:  # reading the answers itself broke
                raise Wrong(f"Your answers could not be read ({answers['__raised__']}: {answers.get('message', '')}).")
            result = judge.judge(answers if isinstance(answers, dict) else {}, values)
        except Wrong as wrong:
            return 0.0, str(wrong)
        except Exception:  # the judge's own fault: the student gets a sentence, the instructor the traceback
            self.log.error("judging %s of %s failed:\n%s", question, student, traceback.format_exc())
            return 0.0, "The autograder could not judge this answer; your instructor will look at it."
        if isinstance(result, str):
            return points, result
        return min(points, float(result.score)), str(result)


def told(nb: NotebookNode, facts: dict[str, Any], forms: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's ``facts`` with what a cell raised in a function question's run said in the grader's words,
    unless the kernel raised the same in that cell: that run holds the autograder's own inputs, which the student was
    never shown, and an error's name or message (the student's code chooses both) could carry them out. The kernel never
    held them. A part of ppedu that is not available there is named from the cell's own imports; a cell stopped at its
    time limit says so in the harness's own words."""
    kernel = {i: text(f"{o.get('ename')}: {o.get('evalue')}", 300) for i, c in enumerate(nb.cells)
              if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"}
    runs = {}
    for question, run in facts.get("function_runs", {}).items():
        errors = []
        for index, error in run.get("errors", []):
            if kernel.get(index) != error and error != TIMED_OUT:
                source = str(nb.cells[index].source) if 0 <= index < len(nb.cells) else ""
                error = (f"NotAvailable: {_forbidden(source, forms.get(question))} is not available"
                         if str(error).startswith("NotAvailable:") else "an error")
            errors.append([index, error])
        runs[question] = {**run, "errors": errors}
    return {**facts, "function_runs": runs}


def _forbidden(source: str, form: Any) -> str:
    """The parts of ppedu a cell imports that ``form``'s run does not have, read from its source."""
    from ppedu.grading.evaluate import ALWAYS, closure

    library = getattr(getattr(form, "code", None), "library", None)
    allowed = closure(ALWAYS, lazy=False) | closure(library.ppedu if library else ())
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return "part of ppedu"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("ppedu.") and a.name not in allowed}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ppedu" and node.level == 0:
            assert node.module is not None
            names |= {f"{node.module}.{a.name}" for a in node.names
                      if node.module not in allowed and f"{node.module}.{a.name}" not in allowed}
    return ", ".join(sorted(names)[:3]) or "part of ppedu"


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
