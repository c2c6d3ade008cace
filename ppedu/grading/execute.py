"""nbgrader's Execute, made safe for notebooks nobody trusts: the kernel runs in a bubblewrap sandbox
(:mod:`ppedu.grading.sandbox`) over a private copy of the notebook's folder; each cell keeps at most
:attr:`SandboxedExecute.max_output` bytes of output, whatever its type; a cell that runs over its
time limit is interrupted and noted, and if it ignores the interrupt the kernel is stopped; a kernel
that dies (``os._exit``, out of memory) leaves the cells after it unrun, noted, instead of failing
the whole notebook; a kernel that cannot start at all is an error, never a notebook of zeros.

After each test cell of a ppedu assignment the grader asks the kernel itself, on a request of its
own, for that question's answers as data (:func:`ppedu.grading.assignments.answers`): nothing the
notebook prints is read as an answer.

What happened is recorded in ``resources["ppedu"]`` — the trusted side's own record, which a
notebook cannot write: ``timed_out`` (indices of cells stopped at the time limit), ``died`` (the
index of the cell the kernel died in, or ``None``), ``why`` (how it died), ``timeout`` (seconds per
cell), ``answers`` (grade_id → the answers read after that cell, as data).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.utils import ensure_async
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

from ppedu.grading.assignments import ASSIGNMENTS, load
from ppedu.grading.sandbox import SandboxedKernelManager, prepared, unavailable
from ppedu.grading.students import student_id

#: What the kernel evaluates to hand over a question's answers (see ppedu.grading.assignments.answers).
ASK = "__import__('ppedu.grading.assignments', fromlist=['answers']).answers({!r}, {!r}, globals())"


class SandboxedExecute(Execute):
    """Execute every cell in a sandboxed kernel; never fails on what a notebook does."""

    sandbox = Bool(True, help="Run the kernel in a bubblewrap sandbox (False: the grader's own rights, as "
                   "nbgrader does; only for notebooks you trust).").tag(config=True)
    max_output = Integer(100_000, help="bytes of output kept per cell, of every type; the rest is cut").tag(config=True)
    max_answers = Integer(1_000_000, help="bytes of a question's answers read from the kernel").tag(config=True)
    interrupt_grace = Integer(10, help="seconds a cell stopped at its time limit has to answer the interrupt "
                              "before the kernel is stopped").tag(config=True)
    iopub_timeout = Integer(30, help="seconds a cell's last outputs may take to arrive after it finished "
                            "(megabytes of output take a while)").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any], km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        self._facts: dict[str, Any] = {"timed_out": [], "died": None, "why": "", "timeout": self.timeout, "answers": {}}
        resources["ppedu"] = self._facts
        self._stopped_cell: Any = None
        self._used: dict[int, int] = {}
        self._ran = False
        info = resources.get("nbgrader", {})
        self._assignment = info.get("assignment") if info.get("assignment") in ASSIGNMENTS else None
        env = {"PPEDU_STUDENT_ID": info.get("student") or student_id(),
               "NBGRADER_EXECUTION": os.environ.get("NBGRADER_EXECUTION", "")}
        self._box, self._env = None, env
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

    def _run(self, nb: NotebookNode, resources: dict[str, Any], km: Any) -> tuple[NotebookNode, dict[str, Any]]:
        try:
            return super().preprocess(nb, resources, km)
        except Exception as error:
            if self._ran:
                raise
            # not the notebook's doing: the grading machine's (the class's grades would all be 0)
            raise RuntimeError(f"the sandboxed kernel did not start: {type(error).__name__}: {error}"[:500]) from None

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

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any], index: int) -> tuple[NotebookNode, dict[str, Any]]:
        self._ran = True
        if self._facts["died"] is not None:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [NotebookNode(output_type="error", ename="KernelDied", evalue="", traceback=[
                    f"Not run: the kernel stopped at cell {self._facts['died'] + 1} ({self._facts['why']})."])]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except (DeadKernelError, CellTimeoutError) as error:
            if self._stopped_cell is cell:
                why = "it ran over its time limit and did not stop when interrupted"
            elif isinstance(error, CellTimeoutError):
                why = "its output did not stop coming"
            else:
                why = "the code exited or crashed"
            self._facts.update(died=index, why=why)
            cell.outputs.append(NotebookNode(output_type="error", ename="KernelDied", evalue="", traceback=[
                f"The kernel stopped here ({why}); the cells after this one did not run."]))
            run_sync(self._stop_kernel)()
        if self._stopped_cell is cell:
            self._facts["timed_out"].append(index)
            self._stopped_cell = None
        if self._facts["died"] is None and self._assignment and cell.cell_type == "code":
            question = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("grade") and question in load(self._assignment).QUESTIONS:
                try:
                    self._facts["answers"][question] = run_sync(self._ask)(question)
                except TimeoutError:
                    self._facts.update(died=index, why="reading its answers did not end")
                    run_sync(self._stop_kernel)()
        return cell, resources

    async def _stop_kernel(self) -> None:
        if self.km is not None and await ensure_async(self.km.is_alive()):
            await ensure_async(self.km.shutdown_kernel(now=True))

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
        if result.get("status") != "ok":
            return {"__raised__": str(result.get("ename", "Error"))[:60], "message": str(result.get("evalue", ""))[:300]}
        text = result.get("data", {}).get("text/plain", "")
        if not isinstance(text, str) or len(text) > self.max_answers:
            return {"__raised__": "TooLarge", "message": f"the answers are over {self.max_answers // 1000} kB"}
        try:
            return json.loads(ast.literal_eval(text) or "null")
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
        size = _size(out)
        used = self._used.get(cell_index, 0)
        self._used[cell_index] = used + size
        if used + size <= self.max_output:
            return out
        outs.pop()
        room = self.max_output - used
        if out.output_type == "stream" and room > 0:
            out.text = out.text[:room]
            outs.append(out)
        if used <= self.max_output:
            outs.append(NotebookNode(output_type="stream", name="stdout", text=f"\n{self._cut}\n"))
        return None

    def _update_display_id(self, display_id: str, msg: dict[str, Any]) -> None:
        """An update of a shown output counts against its cell's output like a new one."""
        for cell_index, indices in self._display_id_map.get(display_id, {}).items():
            outputs = self.nb.cells[cell_index].outputs
            old = sum(_size(outputs[i]) for i in indices)
            new = len(indices) * _size(msg.get("content", {}))
            if self._used.get(cell_index, 0) - old + new > self.max_output:
                msg["content"]["data"], new = {"text/plain": self._cut}, 0
            self._used[cell_index] = self._used.get(cell_index, 0) - old + new
        super()._update_display_id(display_id, msg)

    @property
    def _cut(self) -> str:
        return f"[… output cut: a cell keeps at most {self.max_output // 1000} kB]"


def _size(output: dict[str, Any]) -> int:
    """About how many bytes an output (or a message's content) holds."""
    return len(str(output.get("text", ""))) + sum(len(str(v)) for v in output.get("data", {}).values())
