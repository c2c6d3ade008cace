"""nbgrader's Execute, made safe for notebooks nobody trusts: the kernel runs in a bubblewrap sandbox
(:mod:`ppedu.grading.sandbox`) over a private copy of the notebook's folder; each cell keeps at most
:attr:`SandboxedExecute.max_output` bytes of output; a cell that runs over its time limit is
interrupted and noted; a kernel that dies (``os._exit``, out of memory) leaves the cells after it
unrun, noted, instead of failing the whole notebook.

What happened is recorded in ``resources["ppedu"]`` — the trusted side's own record, which a
notebook cannot write: ``timed_out`` (indices of cells stopped at the time limit), ``died`` (the
index of the cell the kernel died in, or ``None``), ``timeout`` (seconds per cell).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jupyter_core.utils import run_sync
from nbclient.exceptions import DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Dict, Integer

from ppedu.grading.assignments import MIME
from ppedu.grading.sandbox import SandboxedKernelManager, prepared, unavailable
from ppedu.grading.students import student_id

WHY_HIDDEN = "not available while autograding: the answer is your own code"


class SandboxedExecute(Execute):
    """Execute every cell in a sandboxed kernel; never fails on what a notebook does."""

    sandbox = Bool(True, help="Run the kernel in a bubblewrap sandbox (False: the grader's own rights, as "
                   "nbgrader does; only for notebooks you trust).").tag(config=True)
    hide = Dict({}, help="assignment -> {module: [functions] or None}: implementations a notebook of that "
                "assignment cannot call in the sandbox (an empty list: every function; None: the module).").tag(config=True)
    max_output = Integer(100_000, help="bytes of output kept per cell; the rest is cut").tag(config=True)
    max_answers = Integer(16_000_000, help="bytes of handed-in answers kept per cell").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any], km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        self._facts: dict[str, Any] = {"timed_out": [], "died": None, "timeout": self.timeout}
        resources["ppedu"] = self._facts
        self._stopped_cell: Any = None
        self._used: dict[int, int] = {}
        info = resources.get("nbgrader", {})
        env = {"PPEDU_STUDENT_ID": info.get("student") or student_id(),
               "NBGRADER_EXECUTION": os.environ.get("NBGRADER_EXECUTION", "")}
        self._box, self._env = None, env
        if not self.sandbox:
            return super().preprocess(nb, resources, km)
        if reason := unavailable():
            raise RuntimeError(f"no sandbox to run this notebook in: {reason}")
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        with prepared(folder, self.hide.get(info.get("assignment"), {}), WHY_HIDDEN, env) as self._box:
            try:
                return super().preprocess(nb, resources, km)
            finally:
                self._box = None

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
        if self._facts["died"] is not None:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [NotebookNode(output_type="error", ename="KernelDied", evalue="", traceback=[
                    f"Not run: the kernel stopped at cell {self._facts['died'] + 1} (the code exited or crashed)."])]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._facts["died"] = index
            cell.outputs.append(NotebookNode(output_type="error", ename="KernelDied", evalue="",
                                             traceback=["The kernel stopped here (the code exited or crashed); "
                                                        "the cells after this one did not run."]))
        if self._stopped_cell is cell:
            self._facts["timed_out"].append(index)
            self._stopped_cell = None
        return cell, resources

    async def _async_handle_timeout(self, timeout: int, cell: NotebookNode | None = None) -> None | dict[str, Any]:
        self._stopped_cell = cell
        reply = await super()._async_handle_timeout(timeout, cell)
        if reply is not None:
            reply["content"].update(ename="CellTimeoutError", evalue=f"this cell ran over its time limit ({timeout} s) "
                                    "and was stopped", traceback=[f"This cell ran over its time limit ({timeout} s) "
                                                                  "and was stopped."])
        return reply

    def output(self, outs: list[NotebookNode], msg: dict[str, Any], display_id: str | None, cell_index: int) -> NotebookNode | None:
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or not outs or outs[-1] is not out:
            return out
        answers = out.get("data", {}).get(MIME)
        if isinstance(answers, str) and len(answers) <= self.max_answers:
            return out
        size = len(str(out.get("text", ""))) + sum(len(str(v)) for v in out.get("data", {}).values())
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
            outs.append(NotebookNode(output_type="stream", name="stdout",
                                     text=f"\n[… output cut: a cell keeps at most {self.max_output // 1000} kB]\n"))
        return None
