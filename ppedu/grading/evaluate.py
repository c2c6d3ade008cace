r"""The evaluator's second half: a notebook's functions, called on inputs the caller chooses, where what the
question forbids has no code. The notebook runs as nbgrader runs it — every code cell in order, a cell that raises
noted and the next one run — in a fresh interpreter (:mod:`ppedu.grading.harness`) in a sandbox of its own, with a
copy of ppedu (:func:`view`) that holds the modules the question allows and, for every other module, a stand-in
whose every name refuses to be used (:mod:`ppedu.grading.unavailable`). At each graded test cell asked about, the
functions the notebook defines at that point are called and their results come back over a pipe the caller owns,
as data. The first half, the notebook in its kernel, is :mod:`ppedu.grading.execute`; both halves serve the
autograder and the student's own check alike.

>>> ops = view(Library(("ppedu.ops",)))
>>> "class Op" in (ops / "ops.py").read_text(), "def simulate" in (ops / "simulate.py").read_text()
(True, False)
>>> cells = [Cell("from ppedu import simulate\ndef f(x):\n    return 2 * x"), Cell("", test="q")]
>>> run = run_functions(cells, Library(("ppedu.ops",)), {"q": {"f": [(1,), (2,)]}}, "ps1", "alice", {}, 60,
...                     use_sandbox=False)
>>> run.results, run.stopped
({'q': {'f': [[[1], 2], [[2], 4]]}}, None)
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

from ppedu.grading.answers import conform, text

#: Every copy has these, real (and what they import at their top level): what the notebook's own set-up calls
#: (``my_values``, ``check``) and what turns a result into data; none of them computes an answer.
ALWAYS = ("ppedu.grading", "ppedu.grading.answers", "ppedu.grading.assignments", "ppedu.grading.unavailable")
#: Bytes of results read back at most; an interpreter that sends more is stopped.
MAX_RESULTS = 16_000_000
HARNESS = Path(__file__).with_name("harness.py")
#: Seconds a cell or call past its time limit has to stop before its interpreter is stopped.
GRACE = 10


class Ungradeable(RuntimeError):
    """A submission that cannot be graded, for a reason that is its own (over the whole notebook's output cap or
    its wall-clock budget, say): that student is reported "ungradeable" with the reason, and the class goes on."""


@dataclass(frozen=True)
class Library:
    """What a function question's run may import: ``ppedu`` modules (with what they import; every other module
    of ppedu is a stand-in without code), whether torch is there at all, and packages of the environment shown
    empty; ``withheld`` are ppedu modules left stand-ins even where an allowed one imports them (ps5's executor runs
    where ``ppedu.simulate`` has no code: its order must be the student's own loop's)."""

    ppedu: tuple[str, ...] = ()
    torch: bool = False
    absent: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()


@dataclass(frozen=True)
class Code:
    """How a question answered by functions is run: with ``library``, and, if the functions are not simply called,
    through ``driver`` (``module:function``, called as ``driver(function, *args)``), and ``service``: what the trusted
    side serves the driver while it runs (:mod:`ppedu.grading.service`). ``ranks`` above 1 runs the notebook in that
    many sandboxes at once, ranks whose only channel is the ``service`` (:func:`ppedu.grading.ranked.once`).
    ``call_timeout``: seconds one call of a function may take, where it is shorter than a cell's limit (a closed form
    answers at once: a slow one then costs a class seconds, not a cell's limit per call)."""

    library: Library = Library()
    driver: str | None = None
    service: str | None = None
    ranks: int = 1
    call_timeout: float | None = None


@dataclass(frozen=True)
class Cell:
    """A code cell as the harness runs it; ``test`` names the graded test cell it is (its grade_id)."""

    source: str
    test: str | None = None


def defining(cells: Sequence[Cell], errors: Sequence[tuple[int, str]], names: Sequence[str]) -> list[list[Any]]:
    """Of ``errors``, those of cells that define (or import) one of ``names``: the ones that can explain why it is
    missing.

    >>> defining([Cell("x = simulate()\\nimport math")], [(0, "NotAvailable: …")], ["math"])
    [[0, 'NotAvailable: …']]
    """
    pattern = re.compile(r"\b(?:def|class)\s+({0})\b|^\s*({0})\s*=|\bimport\b.*\b({0})\b".format(
        "|".join(map(re.escape, names))), re.M)
    return [[i, e] for i, e in errors if names and i < len(cells) and pattern.search(cells[i].source)]


@dataclass(frozen=True)
class FunctionRun:
    """What one run gave: per test cell asked about, each function's ``[[args, result], …]`` (as
    :func:`ppedu.grading.answers.calls` gives them; for a name that is not a function, what it holds, or ``None``);
    the cells that raised (index, error); and why the run stopped early."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: tuple[tuple[int, str], ...] = ()
    stopped: str | None = None

    def account(self, cells: Sequence[Cell], question: str, functions: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
        """What went wrong for ``question`` (its ``functions`` and their inputs), for
        :func:`ppedu.grading.questions.explain`: the errors of the cells before its test that should have defined
        a function it lacks or a name one of them missed, and why the run stopped, if it stopped short of it."""
        got = self.results.get(question, {})
        at = next((i for i, c in enumerate(cells) if c.test == question), len(cells))
        complete = all(isinstance(got.get(name), list) and len(got[name]) == len(cases) or
                       name in got and not isinstance(got[name], list) for name, cases in functions.items())
        missing = [name for name in functions if not isinstance(got.get(name), list)]
        unknown = sorted({m.group(1) for entries in got.values() if isinstance(entries, list) for entry in entries
                          if isinstance(entry[1], dict) and entry[1].get("__raised__") == "NameError"
                          for m in [re.search(r"name '(\w+)' is not defined", str(entry[1].get("message")))] if m})
        return {"errors": defining(cells[:at], self.errors, missing + unknown),
                "stopped": None if complete else self.stopped}


Calls = Mapping[str, Mapping[str, Sequence[Sequence[Any]]]]


def split(requests: Calls, secret: Calls) -> tuple[dict[str, dict[str, list[Any]]], dict[str, dict[str, list[Any]]]]:
    """``requests`` (grade_id → function → inputs) as two: the calls on inputs not in ``secret`` (the same shape), and
    those on inputs in it. The second are made in a run of their own, after the first (:class:`~ppedu.grading.execute.
    Evaluate`): the student's code that answers the first, whose errors and values its feedback repeats, never held an
    input of the second.

    >>> split({"q": {"f": [(1,), (2,)]}}, {"q": {"f": [(2,)]}})
    ({'q': {'f': [(1,)]}}, {'q': {'f': [(2,)]}})
    """
    shown: dict[str, dict[str, list[Any]]] = {}
    hidden: dict[str, dict[str, list[Any]]] = {}
    for test, functions in requests.items():
        for name, cases in functions.items():
            secrets = {json.dumps(list(a)) for a in secret.get(test, {}).get(name, ())}
            shown.setdefault(test, {})[name] = [a for a in cases if json.dumps(list(a)) not in secrets]
            if theirs := [a for a in cases if json.dumps(list(a)) in secrets]:
                hidden.setdefault(test, {})[name] = theirs
    return shown, hidden


def joined(functions: Mapping[str, Sequence[Sequence[Any]]], parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One question's results (as :attr:`FunctionRun.results` holds them) from the runs that made its ``functions``'
    calls between them, in the order of the calls; a name that is not a function is what the first run found.

    >>> joined({"f": [(1,), (2,)]}, [{"f": [[[1], 2]]}, {"f": [[[2], 4]]}])
    {'f': [[[1], 2], [[2], 4]]}
    """
    out: dict[str, Any] = {}
    for name, cases in functions.items():
        got = [part[name] for part in parts if name in part]
        if got and not isinstance(got[0], list):
            out[name] = got[0]
            continue
        entries = [entry for g in got if isinstance(g, list) for entry in g]
        ordered = []
        for args in cases:
            match = next((e for e in entries if e[0] == json.loads(json.dumps(list(args)))), None)
            if match is not None:
                entries.remove(match)
                ordered.append(match)
        if got:
            out[name] = ordered
    return out


def _module_files() -> dict[str, Path]:
    """Every module of the installed ppedu by name (a package by its ``__init__.py``)."""
    from ppedu.grading import sandbox

    own = sandbox.installed_ppedu()
    found = {}
    for path in own.rglob("*.py"):
        parts = path.relative_to(own.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, known: Mapping[str, Path], lazy: bool) -> set[str]:
    """The ppedu modules ``path`` imports (submodules named in ``from … import`` too): at its top level, or, if
    ``lazy``, anywhere in its text; never imports only type checkers read (``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for block in ast.walk(tree):
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
            block.body = []
    for node in ast.walk(tree) if lazy else tree.body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known}
    return {name for name in found if name in known}


def closure(modules: Sequence[str], lazy: bool = True) -> set[str]:
    """``modules`` and every ppedu module they import (only at their top level unless ``lazy``), transitively (a
    package not asked for keeps its stand-in ``__init__``: its submodules still import)."""
    known = _module_files()
    todo, seen = list(modules), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in known:
            continue
        seen.add(name)
        todo += _imports(known[name], known, lazy)
    return seen


_STAND_IN = "from ppedu.grading.unavailable import module as _module\n__getattr__ = _module({!r})\n"


@functools.cache
def view(library: Library) -> Path:
    """A copy of the ppedu package in which ``library``'s modules (and :data:`ALWAYS`) are real and every other
    module is a stand-in without code; made once per process, in a private folder, removed when the process ends."""
    from ppedu.grading import sandbox

    own = sandbox.installed_ppedu()
    root = Path(tempfile.mkdtemp(prefix="ppedu-library-")) / "ppedu"  # 0700: readable through the sandbox's bind only
    # removed when this process ends; multiprocessing's finalizers run in forked workers too, atexit's do not
    Finalize(None, shutil.rmtree, args=(root.parent,), kwargs={"ignore_errors": True}, exitpriority=1)
    # what the notebook's own set-up imports, at its top level (``check``'s lazy imports do nothing while autograding)
    real = (closure(ALWAYS, lazy=False) | closure(library.ppedu)) - set(library.withheld)
    for name, source in _module_files().items():
        target = root / source.relative_to(own)
        target.parent.mkdir(parents=True, exist_ok=True)
        if name in real:
            shutil.copyfile(source, target)
            for data in source.parent.iterdir():  # the package's data files (MNIST's subset)
                if data.is_dir() and data.name != "__pycache__" and not (data / "__init__.py").exists():
                    shutil.copytree(data, target.parent / data.name, dirs_exist_ok=True)
        else:
            target.write_text(_STAND_IN.format(name))
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def _absent(library: Library) -> tuple[str, ...]:
    """The environment's packages this interpreter must not see, as folders."""
    names = (*library.absent, *(() if library.torch else ("torch",)))
    folders = []
    for name in names:
        spec = importlib.util.find_spec(name.split(".")[0])
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations)), *name.split(".")[1:])
        if folder.is_dir():
            folders.append(str(folder.resolve()))
    return tuple(folders)


def _search_path(library: str) -> list[str]:
    """Where the interpreter finds ``library`` (the folder holding its ppedu), then the standard library and
    the environment's packages (no ``.pth`` file is read: an editable install's would point at the real ppedu)."""
    roots = tuple(os.path.realpath(p) + os.sep for p in (sys.base_prefix, sys.prefix))
    return [library, *(p for p in sys.path if os.path.isabs(p) and os.path.realpath(p).startswith(roots))]


def run_functions(cells: Sequence[Cell], library: Library, requests: Mapping[str, Mapping[str, Sequence[Sequence[Any]]]],
                  assignment: str, student: str, values: Mapping[str, Any], timeout: float, *,
                  driver: str | None = None, cell_timeout: float = 120, limits: Any = None,
                  use_sandbox: bool = True, service: str | None = None, runner: Any = None,
                  data: Mapping[str, Any] | None = None, folder: Path | None = None,
                  call_timeout: float | None = None) -> FunctionRun:
    """Run ``cells`` in order in a fresh interpreter with ``library``, in a copy of ``folder`` (the notebook's: its
    files as data, never a link; a module in it imports, after every other) (in a sandbox with ``limits``, unless
    ``use_sandbox`` is false, for a notebook one trusts), and at each test cell named in ``requests`` call each
    of its functions on each of its argument lists; all within ``timeout`` seconds. A function that ends its
    interpreter when called (exits, crashes, ignores its time limit) loses its own question only: the tests after it
    are asked of a fresh interpreter (a cell that does so ends the run, as it would end a kernel). ``runner`` makes one
    run (by default :func:`_run_once`, one interpreter; :func:`ppedu.grading.ranked.once` gives one of several).
    ``data``: the student's question data (their variant's entries), which ``my_data`` gives in the run;
    ``call_timeout``: each call's own time limit, if shorter than ``cell_timeout`` (:attr:`Code.call_timeout`)."""
    deadline = time.monotonic() + timeout
    where = {c.test: i for i, c in enumerate(cells) if c.test is not None}
    results: dict[str, dict[str, Any]] = {}
    errors: list[tuple[int, str]] = []
    todo, stopped = dict(requests), None
    while todo:
        once, at = (runner or _run_once)(cells, library, todo, assignment, student, values,
                                         deadline - time.monotonic(), driver, cell_timeout, limits, use_sandbox,
                                         service, data=data, folder=folder, call_timeout=call_timeout)
        results.update(once.results)
        errors += [e for e in once.errors if e not in errors]
        stopped = once.stopped or stopped
        if once.stopped is None or at is None or at not in where.values() or time.monotonic() >= deadline:
            break
        todo = {test: calls for test, calls in todo.items() if where.get(test, -1) > at}
    return FunctionRun(results, tuple(errors[:5]), stopped)


def _run_once(cells: Sequence[Cell], library: Library, requests: Mapping[str, Mapping[str, Sequence[Sequence[Any]]]],
              assignment: str, student: str, values: Mapping[str, Any], timeout: float, driver: str | None,
              cell_timeout: float, limits: Any, use_sandbox: bool,
              service: str | None = None, data: Mapping[str, Any] | None = None,
              folder: Path | None = None, call_timeout: float | None = None) -> tuple[FunctionRun, int | None]:
    """One interpreter's run (see :func:`run_functions`), and the cell it was at when it ended."""
    from ppedu.grading import sandbox
    from ppedu.grading.service import serving

    copy = view(library)
    asked, request = harness_request(cells, requests, assignment, student, values, driver, cell_timeout,
                                     sandbox.LIBRARY if use_sandbox else str(copy.parent), data, folder is not None,
                                     call_timeout)
    env = {"NBGRADER_EXECUTION": "autograde", "MPLBACKEND": "Agg", "PPEDU_STUDENT_ID": student}
    with serving(service, [args for _, _, args in asked]) as line, sandbox.prepared(
            folder, library=copy, absent=_absent(library), env={**env, **(line.env if line else {})},
            limits=limits or sandbox.Limits()) as box:
        read, write = os.pipe()
        argv = [sys.executable, "-I", "-S", "-c", HARNESS.read_text(), str(write)]
        command = box.wrap(argv) if use_sandbox else argv
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, pass_fds=(write, *([line.fd] if line else [])),
                                       start_new_session=True, cwd=None if use_sandbox else folder,
                                       env=None if use_sandbox else {**os.environ, **env, **(line.env if line else {})})
        finally:
            os.close(write)
        try:
            assert process.stdin is not None
            try:
                process.stdin.write(request.encode())
                process.stdin.close()
            except BrokenPipeError:
                pass
            records, stopped = _read(read, max(timeout, 0), cell_timeout + GRACE)
        finally:
            os.close(read)
            _stop(process)
    at = next((r["at"] for r in reversed(records) if isinstance(r, dict) and r.keys() == {"at"}
               and isinstance(r["at"], int)), None)
    run = _collect(records, stopped, asked)
    return (line.attach(run, asked) if line else run), at  # observed once the service has stopped


def harness_request(cells: Sequence[Cell], requests: Mapping[str, Mapping[str, Sequence[Sequence[Any]]]],
                    assignment: str, student: str, values: Mapping[str, Any], driver: str | None, cell_timeout: float,
                    library: str, data: Mapping[str, Any] | None = None,
                    here: bool = False, call_timeout: float | None = None) -> tuple[list[tuple[str, str, Any]], str]:
    """The calls asked, in order (``(test, name, args)``, the arguments as JSON has them), and the harness's request
    (JSON) for a run importing the ppedu in ``library`` (and, if ``here``, modules in its working folder)."""
    asked = [(test, name, json.loads(json.dumps(list(args)))) for test, functions in requests.items()
             for name, cases in functions.items() for args in cases]
    return asked, json.dumps({
        "path": _search_path(library), "here": here, "assignment": assignment, "student": student, "values": dict(values),
        "data": None if data is None else dict(data),
        "driver": driver, "cells": [{"source": c.source, "test": c.test if c.test in requests else None} for c in cells],
        "cell_timeout": cell_timeout, "call_timeout": min(call_timeout or cell_timeout, cell_timeout),
        "calls": {test: [[name, args] for t, name, args in asked if t == test] for test in requests}})


def _read(fd: int, timeout: float, quiet: float) -> tuple[list[Any], str | None]:
    """The records sent on ``fd`` until it closes, ``timeout`` passes, nothing comes for ``quiet`` seconds (a cell
    or a call that ignored its time limit) or :data:`MAX_RESULTS` is reached."""
    deadline, buffer, size = time.monotonic() + timeout, b"", 0
    records: list[Any] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return records, f"ran over its time limit ({timeout:g} s) and was stopped"
        ready, _, _ = select.select([fd], [], [], min(left, quiet))
        if not ready:
            if left > quiet:
                return records, f"did not stop at a cell's time limit ({quiet - GRACE:g} s) and was stopped"
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return records, None
        size += len(chunk)
        if size > MAX_RESULTS:
            return records, f"sent more than {MAX_RESULTS // 1_000_000} MB of results and was stopped"
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            try:
                records.append(json.loads(line))
            except (ValueError, RecursionError):
                records.append(None)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
    process.wait()


def _collect(records: list[Any], stopped: str | None, asked: Sequence[tuple[str, str, Any]]) -> FunctionRun:
    """The records as results, in the order the calls were asked for; a record that is neither a cell's error nor
    the next call's (something else wrote on the pipe) ends the reading."""
    results: dict[str, dict[str, Any]] = {}
    errors: list[tuple[int, str]] = []
    calls = iter(asked)
    done = False
    for record in records:
        if isinstance(record, dict) and record.keys() == {"at"}:
            continue
        if isinstance(record, dict) and isinstance(record.get("cell"), int) and isinstance(record.get("error"), str):
            errors.append((record["cell"], text(record["error"], 300)))
            continue
        if record == {"done": True}:
            done = True
            break
        call = next(calls, None)
        if call is None or not (isinstance(record, dict) and record.get("test") == call[0]
                                and record.get("call") == list(call[1:]) and ("result" in record or "absent" in record)):
            stopped = stopped or "gave results that could not be read back (did it write on the grader's channel?)"
            break
        test, name, args = call
        functions = results.setdefault(test, {})
        if "absent" in record:  # whatever the process sent, held to the answers' schema here
            functions[name] = conform(record["absent"])
        elif isinstance(functions.setdefault(name, []), list):
            functions[name].append([args, conform(record["result"])])
    if not done and stopped is None:  # (not its exit status: a number the student's code chose)
        stopped = "stopped before every call was made (it exited or crashed)"
    return FunctionRun(results, tuple(errors[:5]), stopped)
