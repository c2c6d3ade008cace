"""The evaluator's harness (:mod:`ppedu.grading.evaluate`): run in a fresh interpreter (``python -I -S``), in a
sandbox, as ``harness.py FD``. It runs a notebook's code cells in order, as a kernel would (an IPython shell: its
syntax, magics and display; a cell that raises is noted and the next one runs), and at each graded test cell it was
asked about calls that question's functions on the inputs it was given, instead of running the test cell.

Reads its request (JSON) on standard input: the import path, the assignment and the student's values (what
``my_values`` gives), the cells (``{"source": …, "test": grade_id or null}``), the calls to make at each test
(``{grade_id: [[name, args], …]}``), an optional driver (``module:function``, called as ``driver(function, *args)``)
and the time limits of one cell and of one call.
Writes one JSON line per step on file descriptor FD: ``{"at": i}`` before cell ``i`` runs (so that a cell that
ignores its time limit shows), ``{"cell": i, "error": "…"}`` for a cell that raised (at most a few), per call ``{"test": grade_id, "call": [name, args], "result": data}`` (``"absent"`` in place of
``"result"`` when the name is not a function: what it holds, or ``null``), as soon as it is made, and
``{"done": true}`` at the end. Nothing it writes decides a grade by itself: the grader reads it as data.
"""

import json
import os
import signal
import sys
from typing import Any

#: Cell errors reported at most (the first ones explain the rest).
MAX_ERRORS = 5


#: What writes the records, taken before any of the notebook's code runs: a cell that patches ``json`` or ``os``
#: (its own business in its own kernel) does not change what reaches the grader.
_QUOTE, _WRITE, _FLOAT = json.encoder.encode_basestring_ascii, os.write, float.__repr__


def _encode(value: Any) -> str:
    """``value`` (plain data: what :func:`ppedu.grading.answers.plain` gives) as JSON, by the harness's own code."""
    kind = type(value)
    if value is None or kind is bool:
        return "null" if value is None else ("true" if value else "false")
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        number = float.__float__(value)
        return _FLOAT(number) if number == number and abs(number) != float("inf") else (
            "NaN" if number != number else ("Infinity" if number > 0 else "-Infinity"))
    if kind is str:
        return _QUOTE(value)
    if kind in (list, tuple):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    if kind is dict:
        return "{" + ",".join(_QUOTE(str(k)) + ":" + _encode(v) for k, v in dict.items(value)) + "}"
    return _QUOTE(f"<{kind.__name__}>")


def send(channel: int, record: object) -> None:
    data = (_encode(record) + "\n").encode()
    while data:
        data = data[_WRITE(channel, data):]


class CellTimeout(Exception):
    """A cell, or a call, ran over its time limit (what the kernel's executor would interrupt)."""


#: What a cell stopped at its time limit reports (the grader shows it as it is: it holds nothing the cell chose).
TIMED_OUT = "CellTimeout: it ran over its time limit and was stopped"


def _alarm(signum: int, frame: object) -> None:
    raise CellTimeout(TIMED_OUT.partition(": ")[2])


def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        """A kernel's shell without a front end: ``%matplotlib inline`` (or ``%gui``) is accepted as a kernel accepts
        it, with no event loop to run (nothing here is shown)."""

        def enable_gui(self, gui: str | None = None) -> None:
            pass

    return Shell


def main(channel: int) -> None:
    request = json.loads(sys.stdin.buffer.read())
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # nothing more to read for the code that runs next
    # the copy of the notebook's folder (a module of the student's own beside it), as in the kernel; but last, so that
    # no file of theirs stands in for a module the library or the standard library has
    sys.path[:] = [*request["path"], *([os.getcwd()] if request.get("here") else [])]
    from traitlets.config import Config

    from ppedu.grading.answers import calls
    from ppedu.grading.assignments import give

    give(request["assignment"], request["student"], request["values"], request.get("data"))
    driver = None
    if request["driver"]:
        import importlib

        module, _, name = request["driver"].partition(":")
        driver = getattr(importlib.import_module(module), name)
    run = None if driver is None else (lambda function, args: driver(function, *args))
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "NoColor"
    shell = _shell().instance(config=config)
    signal.signal(signal.SIGALRM, _alarm)
    errors, todo = 0, set(request["calls"])
    for index, cell in enumerate(request["cells"]):
        if not todo:
            break
        test = cell.get("test")
        send(channel, {"at": index})
        if test in todo:
            todo.discard(test)
            for name, args in request["calls"][test]:
                signal.setitimer(signal.ITIMER_REAL, request.get("call_timeout") or request["cell_timeout"])
                try:
                    result = calls(shell.user_ns, name, [args], run)
                    if not isinstance(result, list):  # not a function: what the name holds instead (None: nothing)
                        send(channel, {"test": test, "call": [name, args], "absent": result})
                        continue
                    send(channel, {"test": test, "call": [name, args], "result": result[0][1]})
                except BaseException as error:  # noqa: B036 (its result could not even be sent)
                    send(channel, {"test": test, "call": [name, args],
                                   "result": {"__raised__": type(error).__name__[:60], "message": str(error)[:300]}})
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            continue
        signal.setitimer(signal.ITIMER_REAL, request["cell_timeout"])
        try:
            outcome = shell.run_cell(cell["source"], store_history=False)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        failure = outcome.error_before_exec or outcome.error_in_exec
        if failure is not None and errors < MAX_ERRORS:
            errors += 1
            send(channel, {"cell": index, "error": f"{type(failure).__name__}: {failure}"[:300]})
    send(channel, {"done": True})


if __name__ == "__main__":
    main(int(sys.argv[1]))
