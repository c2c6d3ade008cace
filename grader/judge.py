"""The judge: an nbgrader preprocessor, after Execute, that decides every test cell's score and
message in the grading process, from data only.

A question answered in variables is judged on the answers the grader itself asked the kernel for
right after the question's test cell ran (``resources["ppedu"]["answers"]``, see
:mod:`ppedu.grading.execute`). A question answered by functions never asks the kernel: its answer
cell runs on its own in a fresh sandboxed interpreter where what the question forbids is not
installed (:mod:`ppedu.grading.evaluate`), called on inputs the key chooses here (``calls(values)``,
the hidden ones included), and its results come back over the grader's own pipe. The key is
computed for the student named by the submission's folder (nbgrader's ``resources``, not the
notebook); each test cell's outputs are replaced by the verdict: a line of stdout when right,
nbgrader's partial-credit value when partly right, an error whose only line is the message when
wrong. Nothing the kernel printed or raised in a test cell counts.
"""

from __future__ import annotations

import ast
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer

from grader import keys
from grader.intake import notes_for_instructor
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import my_values
from ppedu.grading.evaluate import evaluate
from ppedu.grading.questions import explain


def _defines(source: str) -> set[str]:
    try:
        return {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    except (SyntaxError, ValueError, RecursionError):
        return set()


def answer_cell(nb: NotebookNode, cell: str, functions: Iterable[str]) -> str:
    """The text of answer cell ``cell``; if it does not define ``functions`` (the student deleted it and wrote
    the answer in a cell of their own), the last cell of the student's own that defines them all."""
    wanted = set(functions)
    released = next((c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell), "")
    if wanted <= _defines(released):
        return str(released)
    own = [c.source for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    return str(next((source for source in reversed(own) if wanted <= _defines(source)), released))


#: What, in an answer cell, reaches into the process it runs in (the harness that measures it) instead of
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


def run_functions(judge: Any, source: str, values: Any, timeout: float, use_sandbox: bool = True) -> tuple[Any, str]:
    """What the functions of answer cell ``source`` give on ``judge``'s inputs, run on its own (the data the
    judge reads), and what went wrong running it, as sentences for a lost question's message."""
    run = evaluate(judge.form.code, source, judge.calls(values), values, timeout, use_sandbox=use_sandbox)
    return run.results, explain(run)


def _no_answers(index: int, facts: dict[str, Any]) -> str:
    """Why a test cell has no answers, as the trusted record of the run says."""
    if index in facts.get("timed_out", ()):
        return (f"This test ran over its time limit ({facts.get('timeout')} s) and was stopped: does one of your "
                "cells loop forever, or take far longer than it should?")
    died = facts.get("died")
    if died is not None and died <= index:
        return (f"The notebook's kernel stopped at cell {died + 1} ({facts.get('why') or 'the code exited or crashed'}),"
                " so this test never ran.")
    return "No answers could be read after this test: did the notebook change how Python runs?"


class Judge(NbGraderPreprocessor):
    """Score every autograded test cell (see the module's text)."""

    timeout = Integer(120, help="seconds an answer cell run on its own may take, all its calls together").tag(config=True)
    sandbox = Bool(True, help="run answer cells on their own in a sandbox (False: only for notebooks you "
                   "trust)").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info, facts = resources["nbgrader"], resources.get("ppedu", {})
        assignment, student = info["assignment"], info["student"]
        try:
            judges = keys.load(assignment).KEYS
        except ValueError:  # not one of ppedu's assignments: nbgrader's own grading applies
            return nb, resources
        values = my_values(assignment, student)
        review: list[str] = []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not utils.is_grade(cell):
                continue
            question = cell.metadata.nbgrader["grade_id"]
            if question not in judges:
                continue
            judge, points = judges[question], float(cell.metadata.nbgrader.get("points", 0))
            if hasattr(judge, "calls"):  # answered by functions: their cell, on its own
                source = answer_cell(nb, judge.form.code.cell, judge.calls(values))
                if uses := reaching(source):
                    review.append(f"{question}: its answer cell uses {', '.join(uses)}; read it before trusting the score")
                data, why = run_functions(judge, source, values, self.timeout, self.sandbox)
                if tampering := [u for u in uses if u in getattr(judge, "tampering", ())]:
                    data = {**data, "__reaches__": tampering}
                score, message = self._verdict(judge, data, values, points, question, student)
                message += why if score < points else ""
            elif (answers := facts.get("answers", {}).get(question)) is None:
                score, message = 0.0, _no_answers(index, facts)
            else:
                score, message = self._verdict(judge, answers, values, points, question, student)
                if score < points and facts.get("timed_out") and min(facts["timed_out"]) < index:
                    message += (f"\n(Cell {min(facts['timed_out']) + 1} ran over its time limit "
                                f"({facts.get('timeout')} s) and was stopped: answers after it may be missing.)")
            cell.outputs = _outputs(score, points, message, question, cell.get("execution_count"))
        for line in review:
            self.log.warning("%s: %s", student, line)
        notes_for_instructor(Path(CourseDirectory(config=self.config).root), student, assignment, "review", review)
        return nb, resources

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
