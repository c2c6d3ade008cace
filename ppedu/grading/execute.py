"""The evaluator, for the autograder and the student's own check alike: a notebook run as nbgrader runs it (every
cell in order, an error noted and the next cell run) in a fresh bubblewrap sandbox (:mod:`ppedu.grading.sandbox`)
over a private copy of its folder, its answers handed back as data.

* :class:`SandboxedExecute` is nbgrader's Execute, made safe for notebooks nobody trusts: every byte a cell outputs
  counts against :attr:`~SandboxedExecute.max_output` (its error's value and traceback, metadata and display updates
  included), all cells' outputs together against :attr:`~SandboxedExecute.max_outputs`, and the whole run against a
  wall-clock :attr:`~SandboxedExecute.budget`; past either of the last two the submission is :class:`Ungradeable`,
  with the reason. A cell over its own time limit is interrupted and noted (the kernel is stopped if it ignores the
  interrupt); a kernel that dies leaves the cells after it unrun, noted; a kernel that cannot start at all is an
  error, never a notebook of zeros. After each test cell of a ppedu assignment it asks the kernel, on a request of
  its own, for that question's answers as data (:func:`ppedu.grading.assignments.answers`): nothing the notebook
  prints is read as an answer.
* :class:`Evaluate` then runs the assignment's questions answered by functions, each group in a fresh sandboxed
  interpreter where what the question forbids has no code (:func:`ppedu.grading.evaluate.run_functions`): the same
  cells in the same order, the functions called at their test cell on the inputs :meth:`Evaluate.calls` chooses.

What happened is in ``resources["ppedu"]``, the evaluation as plain data, which no notebook can write:
``timed_out`` (cells stopped at the time limit), ``died`` (the cell the kernel died in, or ``None``), ``why``,
``timeout`` (seconds per cell), ``answers`` (grade_id → the answers read after that test cell), ``functions``
(grade_id → each function's results) and ``function_runs`` (grade_id → the cells that raised before it and why its
run stopped early).
"""

from __future__ import annotations

import ast
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.utils import ensure_async
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

from ppedu.grading.answers import conform, text
from ppedu.grading.assignments import ASSIGNMENTS, load, my_values
from ppedu.grading.evaluate import Cell, Code, Ungradeable, joined, run_functions, split
from ppedu.grading.questiondata import owners_data
from ppedu.grading.ranked import once
from ppedu.grading.sandbox import SandboxedKernelManager, prepared, unavailable
from ppedu.grading.students import student_id

#: What the kernel evaluates to hand over a question's answers (see ppedu.grading.assignments.answers).
ASK = "__import__('ppedu.grading.assignments', fromlist=['answers']).answers({!r}, {!r}, globals())"


def graded_at(nb: NotebookNode) -> dict[int, str]:
    """The graded code cells of ``nb`` by index, each with its grade_id: of cells that share one (a copied cell keeps
    its grade_id, nbgrader #1083), the last, the one nbgrader's DeduplicateIds keeps.

    >>> from nbformat.v4 import new_code_cell, new_notebook
    >>> test = lambda: new_code_cell("check()", metadata={"nbgrader": {"grade": True, "grade_id": "q"}})
    >>> graded_at(new_notebook(cells=[test(), new_code_cell("x = 1"), test()]))
    {2: 'q'}
    """
    last: dict[str, int] = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and isinstance(meta, dict) and meta.get("grade") and isinstance(
                meta.get("grade_id"), str):
            last[meta["grade_id"]] = index
    return {index: question for question, index in sorted(last.items(), key=lambda item: item[1])}


def unicode(node: Any) -> Any:
    """``node`` (an output, metadata) with every text valid Unicode: a lone surrogate a kernel sent (which no notebook
    file, gradebook or feedback page can hold) becomes U+FFFD.

    >>> unicode({"text": ["ok", "bad " + chr(0xD800)]})
    {'text': ['ok', 'bad �']}
    """
    if isinstance(node, str):
        return text(node, len(node))
    if isinstance(node, list):
        return [unicode(x) for x in node]
    if isinstance(node, dict):
        return type(node)((unicode(k), unicode(x)) for k, x in node.items())
    return node


def size(output: Any) -> int:
    """Every byte of an output (or a message's content) as it would be saved: all its fields."""
    try:
        return len(json.dumps(output, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return 1 << 40


class SandboxedExecute(Execute):
    """Execute every cell in a sandboxed kernel; never fails on what a notebook does, but for its own excess."""

    sandbox = Bool(True, help="Run the kernel in a bubblewrap sandbox (False: the grader's own rights, as "
                   "nbgrader does; only for notebooks you trust).").tag(config=True)
    max_output = Integer(100_000, help="bytes of output kept per cell, every field of every output counted; "
                         "the rest is cut").tag(config=True)
    max_outputs = Integer(2_000_000, help="bytes of output of all cells together; past it the submission is "
                          "ungradeable").tag(config=True)
    budget = Integer(0, help="seconds the whole submission may take, its cells and its function runs together (0: "
                     "five times a cell's time limit); past it the submission is ungradeable").tag(config=True)
    max_answers = Integer(1_000_000, help="bytes of a question's answers read from the kernel").tag(config=True)
    interrupt_grace = Integer(10, help="seconds a cell stopped at its time limit has to answer the interrupt "
                              "before the kernel is stopped").tag(config=True)
    iopub_timeout = Integer(30, help="seconds a cell's last outputs may take to arrive after it finished "
                            "(megabytes of output take a while)").tag(config=True)
    #: When grading each (assignment, student) began (``time.monotonic()``), set by the grader: its budget counts from
    #: there, so the grader's own steps before the notebook runs (taking it in, rebuilding it) are part of it.
    clock: dict[tuple[str, str], float] = {}

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any], km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        self._facts: dict[str, Any] = {"timed_out": [], "died": None, "why": "", "timeout": self.timeout, "answers": {},
                                       "functions": {}, "function_runs": {}}
        resources["ppedu"] = self._facts
        self._stopped_cell: Any = None
        self._used: dict[int, int] = {}
        self._ran = False
        self._budget = self.budget or 5 * (self.timeout or 120)
        info = resources.get("nbgrader", {})
        self._deadline = self.clock.get((info.get("assignment"), info.get("student")), time.monotonic()) + self._budget
        self._assignment = info.get("assignment") if info.get("assignment") in ASSIGNMENTS else None
        self._student = info.get("student") or student_id()
        env = {"PPEDU_STUDENT_ID": self._student,
               "NBGRADER_EXECUTION": os.environ.get("NBGRADER_EXECUTION", "")}
        self._box, self._env, self._tests = None, env, graded_at(nb)
        if not self.sandbox:
            return self._run(nb, resources, km)
        if reason := unavailable():
            raise RuntimeError(f"no sandbox to run this notebook in: {reason}")
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        with prepared(folder, env=env) as self._box:
            try:
                return self._run(nb, resources, km)
            finally:
                self._box = None

    def left(self) -> float:
        """Seconds of the submission's budget still left."""
        return self._deadline - time.monotonic()

    def _over_budget(self) -> Ungradeable:
        return Ungradeable(f"it ran over the time a submission may take ({self._budget} s, all its cells together, "
                           "with taking it in)")

    def _run(self, nb: NotebookNode, resources: dict[str, Any], km: Any) -> tuple[NotebookNode, dict[str, Any]]:
        try:
            nb, resources = super().preprocess(nb, resources, km)
        except Ungradeable:
            raise
        except Exception as error:
            if self._ran:
                raise
            # not the notebook's doing: the grading machine's (the class's grades would all be 0)
            raise RuntimeError(f"the sandboxed kernel did not start: {type(error).__name__}: {error}"[:500]) from None
        if size(nb.metadata) > self.max_output:  # the kernel's own description of itself, or widgets' state
            raise Ungradeable(f"its kernel wrote over {self.max_output // 1000} kB into the notebook's metadata")
        nb.metadata = unicode(nb.metadata)
        return nb, resources

    def reset_execution_trackers(self) -> None:
        super().reset_execution_trackers()
        # no front end is mimicked: an Output widget would take the cell's outputs past every cap, into this process
        self.comm_open_handlers: dict[str, Any] = {}
        self.store_widget_state = False

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        # the student's id goes to this kernel only, never into the grading process's environment
        kwargs.setdefault("env", {**os.environ, **self._env})
        await super().async_start_new_kernel(**kwargs)

    start_new_kernel = run_sync(async_start_new_kernel)  # nbclient's own wraps its own, not this one

    def create_kernel_manager(self) -> Any:
        if getattr(self, "_box", None) is None:
            return super().create_kernel_manager()
        name: str = self.kernel_name or self.nb.metadata.get("kernelspec", {}).get("name", "python3")
        self.km = SandboxedKernelManager(sandbox=self._box, kernel_name=name, config=self.config)
        return self.km

    def _get_timeout(self, cell: NotebookNode | None) -> int | None:
        own = super()._get_timeout(cell)
        left = max(1, int(self.left()) + 1)
        return left if own is None else min(own, left)

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any], index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if not self._ran and self._assignment:
            run_sync(self._give)()
        self._ran = True
        if self._facts["died"] is not None:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [NotebookNode(output_type="error", ename="KernelDied", evalue="", traceback=[
                    f"Not run: the kernel stopped at cell {self._facts['died'] + 1} ({self._facts['why']})."])]
            return cell, resources
        if cell.cell_type == "code" and self.left() <= 0:
            run_sync(self._stop_kernel)()
            raise self._over_budget()
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except Ungradeable:
            raise
        except Exception as error:  # the kernel died, hung, or sent what is not a Jupyter message
            if self.left() <= 0:
                run_sync(self._stop_kernel)()
                raise self._over_budget() from None
            if self._stopped_cell is cell:
                why = "it ran over its time limit and did not stop when interrupted"
            elif isinstance(error, CellTimeoutError):
                why = "its output did not stop coming"
            elif isinstance(error, DeadKernelError):
                why = "the code exited or crashed"
            else:  # a kernel whose messaging the notebook changed (its JSON, its session) can be read no further
                why = f"its kernel's messages could not be read ({type(error).__name__})"
            self._facts.update(died=index, why=why)
            cell.outputs.append(NotebookNode(output_type="error", ename="KernelDied", evalue="", traceback=[
                f"The kernel stopped here ({why}); the cells after this one did not run."]))
            run_sync(self._stop_kernel)()
        if self._stopped_cell is cell:
            if self.left() <= 0:
                run_sync(self._stop_kernel)()
                raise self._over_budget()
            self._facts["timed_out"].append(index)
            self._stopped_cell = None
        self._cap(cell, index)
        if sum(self._used.values()) > self.max_outputs:
            run_sync(self._stop_kernel)()
            raise Ungradeable(f"its cells' outputs passed the {self.max_outputs // 1_000_000} MB a notebook may "
                              "produce")
        if self._facts["died"] is None and self._assignment and cell.cell_type == "code":
            question = self._tests.get(index)
            if question in load(self._assignment).QUESTIONS:
                try:
                    self._facts["answers"][question] = run_sync(self._ask)(question)
                except TimeoutError:
                    self._facts.update(died=index, why="reading its answers did not end")
                    run_sync(self._stop_kernel)()
        return cell, resources

    def _cap(self, cell: NotebookNode, index: int) -> None:
        """The cell's outputs as they came to be (by whatever path), cut to :attr:`max_output` bytes, all fields; what
        is kept is what counts towards :attr:`max_outputs`."""
        if cell.cell_type != "code":
            return
        kept, used = [], 0
        for output in cell.get("outputs", []):
            used += size(output)
            if used > self.max_output:
                kept.append(NotebookNode(output_type="stream", name="stdout", text=f"\n{self._cut}\n"))
                break
            kept.append(output)
        cell.outputs = unicode(kept)
        self._used[index] = size(kept)

    async def _stop_kernel(self) -> None:
        if self.km is not None and await ensure_async(self.km.is_alive()):
            await ensure_async(self.km.shutdown_kernel(now=True))

    async def _give(self) -> None:
        """Hand the kernel, before the notebook's first cell, the values of the student whose submission it is
        (computed here): ``my_values`` gives them whatever the notebook later sets its environment to, so an answer
        computed with another student's values is not computed there."""
        assert self.kc is not None and self._assignment is not None
        try:
            numbers = json.dumps(dict(my_values(self._assignment, self._student)))
            code = (f"__import__('ppedu.grading.assignments', fromlist=['give']).give({self._assignment!r}, "
                    f"{self._student!r}, __import__('json').loads({numbers!r}))")
            await self.async_wait_for_reply(self.kc.execute(code, silent=True, store_history=False))
        except Exception:  # values that are not data, a kernel that does not answer: the environment's id then
            pass

    async def _ask(self, question: str) -> Any:
        """``question``'s answers, asked of the kernel on a request of the grader's own (``None``: no answer)."""
        assert self.kc is not None
        msg_id = self.kc.execute("", silent=True, store_history=False,
                                 user_expressions={"answers": ASK.format(self._assignment, question)})
        try:
            reply = await self.async_wait_for_reply(msg_id)
        except Exception:  # no answer in time: the kernel is stuck in something of the student's
            raise TimeoutError from None
        result = (reply or {}).get("content", {}).get("user_expressions", {}).get("answers", {})
        if not isinstance(result, dict) or result.get("status") != "ok":
            failed = result if isinstance(result, dict) else {}
            return conform({"__raised__": str(failed.get("ename", "Error"))[:60],
                            "message": str(failed.get("evalue", ""))[:300]})
        text = result.get("data", {}).get("text/plain", "")
        if not isinstance(text, str) or len(text) > self.max_answers:
            return {"__raised__": "TooLarge", "message": f"the answers are over {self.max_answers // 1000} kB"}
        try:  # whatever the kernel sent, held to the answers' schema here
            return conform(json.loads(ast.literal_eval(text) or "null"))
        except (ValueError, SyntaxError, RecursionError, TypeError, MemoryError):
            return {"__raised__": "Unreadable", "message": "the answers could not be read as data"}

    async def _async_handle_timeout(self, timeout: int, cell: NotebookNode | None = None) -> None | dict[str, Any]:
        self._stopped_cell = cell
        assert self.km is not None and self.kc is not None
        await self.km.interrupt_kernel()
        try:  # the interrupted cell's own reply, if the interrupt stops it
            await ensure_async(self.kc.shell_channel.get_msg(timeout=self.interrupt_grace))
        except Empty:
            raise DeadKernelError("the cell ignored the interrupt") from None
        message = f"This cell ran over its time limit ({timeout} s) and was stopped."
        return {"content": {"status": "error", "ename": "CellTimeoutError", "evalue": message, "traceback": [message]}}

    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None, cell_index: int) -> NotebookNode | None:
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or not outs or outs[-1] is not out:
            return out
        used = self._used.get(cell_index, 0)
        if used + size(out) <= self.max_output:
            self._used[cell_index] = used + size(out)
            return out
        outs.pop()
        if not outs or outs[-1].get("text") != f"\n{self._cut}\n":
            outs.append(NotebookNode(output_type="stream", name="stdout", text=f"\n{self._cut}\n"))
        return None

    def _update_display_id(self, display_id: str, msg: dict[str, Any]) -> None:
        """An update of a shown output counts against its cell's output like a new one."""
        for cell_index, indices in self._display_id_map.get(display_id, {}).items():
            outputs = self.nb.cells[cell_index].outputs
            old = sum(size(outputs[i]) for i in indices if i < len(outputs))
            new = len(indices) * size(msg.get("content", {}))
            if self._used.get(cell_index, 0) - old + new > self.max_output:
                msg["content"] = {"data": {"text/plain": self._cut}, "metadata": {}}
                new = len(indices) * size(msg["content"])
            self._used[cell_index] = self._used.get(cell_index, 0) - old + new
        super()._update_display_id(display_id, msg)

    @property
    def _cut(self) -> str:
        return f"[… output cut: a cell keeps at most {self.max_output // 1000} kB]"


class Evaluate(SandboxedExecute):
    """The whole evaluation of a submission: :class:`SandboxedExecute`, then its questions answered by functions,
    each group (one :class:`~ppedu.grading.evaluate.Code`) in one fresh sandboxed run of the same cells over a copy of
    the notebook's folder (a module of the student's own beside it imports, as in the kernel); the calls on inputs the
    student was not shown (:meth:`secret`) in a second fresh run, after the first, so that nothing the first run's
    feedback repeats (what a function raised or returned on an input the student was shown) can hold one of them."""

    def calls(self, question: str, form: Any, values: Any) -> Mapping[str, Sequence[Sequence[Any]]]:
        """The inputs ``question``'s functions are called on: here those the student's own check uses (the
        autograder's subclass adds inputs of its own)."""
        return dict(form.calls(values))

    def secret(self, question: str, values: Any) -> Mapping[str, Sequence[Sequence[Any]]]:
        """Of :meth:`calls`, the inputs the student was never shown, which no feedback names (here none)."""
        return {}

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any], km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        nb, resources = super().preprocess(nb, resources, km)
        if self._assignment is None:
            return nb, resources
        info = resources.get("nbgrader", {})
        student = info.get("student") or student_id()
        values = my_values(self._assignment, student)
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        data = owners_data(self._assignment, student, folder)
        forms = {q: f for q, f in load(self._assignment).QUESTIONS.items() if hasattr(f, "code")}
        groups: dict[Code, dict[str, Mapping[str, Sequence[Sequence[Any]]]]] = {}
        for question, form in forms.items():
            groups.setdefault(form.code, {})[question] = self.calls(question, form, values)
        for code, requests in groups.items():
            cells = [Cell(str(c.source), self._tests.get(i) if self._tests.get(i) in requests else None)
                     if c.cell_type == "code" else Cell("") for i, c in enumerate(nb.cells)]
            shown, hidden = split(requests, {q: self.secret(q, values) for q in requests})
            runs = []
            for part in (shown, hidden) if hidden else (shown,):
                if self.left() <= 0:
                    raise self._over_budget()
                runs.append(run_functions(
                    cells, code.library, part, self._assignment, student, dict(values), self.left(),
                    driver=code.driver, service=code.service, cell_timeout=self.timeout or 120, use_sandbox=self.sandbox,
                    runner=once(code.ranks), data=data, folder=folder, call_timeout=code.call_timeout))
                if runs[-1].stopped and self.left() <= 0:
                    raise self._over_budget()
            for question, functions in requests.items():
                self._facts["functions"][question] = joined(functions, [r.results.get(question, {}) for r in runs])
                # what went wrong, from the first run only: the second's errors could spell what it was given
                self._facts["function_runs"][question] = runs[0].account(cells, question, {n: c for n, c in shown[question].items() if c})
        return nb, resources
