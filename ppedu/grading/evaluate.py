r"""Running one answer cell's functions where the student's notebook cannot reach: a fresh interpreter
in a sandbox of its own, holding only that cell's code (after the imports of the release's setup
cell that exist there), called on inputs the caller chooses, with its results sent back as data over
a pipe the caller owns. The implementations a question forbids are not patched away in memory: they
are absent from the interpreter's file system, which holds only the :class:`Library` the question
allows (a view of ppedu cut down to the modules named and what they import).

>>> ops = view(Library(("ppedu.ops",)))
>>> (ops / "ops.py").exists(), (ops / "schedules").exists(), (ops / "simulate.py").exists()
(True, False, False)
>>> evaluate(Code("answer", Library(("ppedu.ops",))), "def f(x):\n    return 2 * x", {"f": [(1,), (2,)]}, {}, 60,
...          use_sandbox=False).results
{'f': [[[1], 2], [[2], 4]]}
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
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

#: Every interpreter has these: what turns a result into data.
ALWAYS = ("ppedu.grading.answers",)
#: Bytes of results read back at most; an interpreter that sends more is stopped.
MAX_RESULTS = 16_000_000
HARNESS = Path(__file__).with_name("harness.py")


class Ungradeable(RuntimeError):
    """A submission that cannot be graded, for a reason that is its own (over the whole notebook's output cap or
    its wall-clock budget, say): that student is reported "ungradeable" with the reason, and the class goes on."""


@dataclass(frozen=True)
class Library:
    """What an answer's interpreter may import: ``ppedu`` modules (with what they import; the rest of
    ppedu is absent), whether torch is there at all, and packages of the environment shown empty."""

    ppedu: tuple[str, ...] = ()
    torch: bool = False
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Code:
    """Where a function question's answer is (the answer cell's grade_id), what its interpreter has,
    what runs before the cell (``setup``: imports the notebook's setup cell makes too) and, if the function
    is not simply called, the ``module:function`` that calls it (``driver(function, *args)``)."""

    cell: str
    library: Library = Library()
    setup: str = ""
    driver: str | None = None


@dataclass(frozen=True)
class Evaluation:
    """What one interpreter gave: each function's ``[[args, result], …]`` (as
    :func:`ppedu.grading.answers.calls` gives them; for a name that is not a function, what it holds, or
    ``None``), what went wrong loading the cell, and why it stopped early."""

    results: dict[str, Any] = field(default_factory=dict)
    load_errors: tuple[str, ...] = ()
    stopped: str | None = None


def _module_file(name: str) -> Path | None:
    """The file of ppedu's module ``name`` (a package's ``__init__.py``), found without importing it."""
    from ppedu.grading import sandbox

    top, *parts = name.split(".")
    if top != "ppedu":
        return None
    path = sandbox.installed_ppedu().joinpath(*parts)
    return next((f for f in (path.with_suffix(".py"), path / "__init__.py") if parts or f.name == "__init__.py"
                 if f.is_file()), None)


def _imports(path: Path) -> set[str]:
    """The ppedu modules ``path`` imports anywhere in its text (submodules named in ``from … import``),
    but for imports only type checkers read (``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for block in ast.walk(tree):
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
            block.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if _module_file(f"{node.module}.{a.name}")}
    return {name for name in found if name.split(".")[0] == "ppedu"}


def closure(modules: Sequence[str]) -> set[str]:
    """``modules`` and every ppedu module they import, transitively."""
    todo, seen = list(modules), set()
    while todo:
        name = todo.pop()
        if name in seen or (path := _module_file(name)) is None:
            continue
        seen.add(name)
        todo += _imports(path)
    return seen


@functools.cache
def view(library: Library) -> Path:
    """A copy of the ppedu package holding only ``library``'s modules (package ``__init__`` files not
    asked for are empty), made once per process and removed when it ends."""
    from ppedu.grading import sandbox

    own = sandbox.installed_ppedu()
    root = Path(tempfile.mkdtemp(prefix="ppedu-library-")) / "ppedu"
    # removed when this process ends; multiprocessing's finalizers run in forked workers too, atexit's do not
    Finalize(None, shutil.rmtree, args=(root.parent,), kwargs={"ignore_errors": True}, exitpriority=1)
    for name in sorted(closure((*ALWAYS, *library.ppedu))):
        source = _module_file(name)
        assert source is not None
        target = root / source.relative_to(own)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        for data in source.parent.iterdir():  # the package's data files (MNIST's subset)
            if data.is_dir() and data.name != "__pycache__" and not (data / "__init__.py").exists():
                shutil.copytree(data, target.parent / data.name, dirs_exist_ok=True)
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        if (own / folder.relative_to(root) / "__init__.py").is_file():  # a package there: empty, unless asked for
            (folder / "__init__.py").touch()
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    root.parent.chmod(0o755)
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


def evaluate(code: Code, source: str, calls: Mapping[str, Sequence[Sequence[Any]]], values: Mapping[str, Any],
             timeout: float, limits: Any = None, use_sandbox: bool = True) -> Evaluation:
    """Run the answer cell ``source`` (after ``code.setup``) in a fresh interpreter with ``code.library`` (in
    a sandbox with ``limits``, unless ``use_sandbox`` is false, for notebooks one trusts), and call each
    function named in ``calls`` on each of its argument lists."""
    from ppedu.grading import sandbox

    library = view(code.library)
    request = json.dumps({"setup": code.setup, "source": source, "values": dict(values), "driver": code.driver,
                          "calls": [[name, list(args)] for name, cases in calls.items() for args in cases],
                          "path": _search_path(sandbox.LIBRARY if use_sandbox else str(library.parent))})
    with sandbox.prepared(library=library, absent=_absent(code.library), limits=limits or sandbox.Limits()) as box:
        read, write = os.pipe()
        argv = [sys.executable, "-I", "-S", "-c", HARNESS.read_text(), str(write)]
        command = box.wrap(argv) if use_sandbox else argv
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, pass_fds=(write,), start_new_session=True)
        finally:
            os.close(write)
        try:
            assert process.stdin is not None
            try:
                process.stdin.write(request.encode())
                process.stdin.close()
            except BrokenPipeError:
                pass
            records, stopped = _read(read, timeout)
        finally:
            os.close(read)
            _stop(process)
    return _collect(records, stopped, calls, process.returncode)


def _read(fd: int, timeout: float) -> tuple[list[Any], str | None]:
    """The records sent on ``fd`` until it closes, ``timeout`` passes or :data:`MAX_RESULTS` is reached."""
    deadline, buffer, size = time.monotonic() + timeout, b"", 0
    records: list[Any] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return records, f"ran over its time limit ({timeout:g} s) and was stopped"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
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


def _collect(records: list[Any], stopped: str | None, calls: Mapping[str, Sequence[Sequence[Any]]],
             returncode: int | None) -> Evaluation:
    """The records as results, in the order the calls were asked for; a record that is not the next
    call's (something else wrote on the pipe) ends the reading."""
    asked = [(name, json.loads(json.dumps(list(args)))) for name, cases in calls.items() for args in cases]
    results: dict[str, list[list[Any]]] = {}
    load_errors: tuple[str, ...] = ()
    if records and isinstance(records[0], dict) and isinstance(records[0].get("loaded"), list):
        load_errors = tuple(str(e)[:300] for e in records[0]["loaded"][:5])
        records = records[1:]
    elif stopped is None:
        stopped = "stopped before its cell was loaded (it exited or crashed)"
    absent: dict[str, Any] = {}
    for (name, args), record in zip(asked, records):
        if not (isinstance(record, dict) and record.get("call") == [name, args] and ("result" in record or
                                                                                   "absent" in record)):
            stopped = stopped or "gave results that could not be read back (did it write on the grader's channel?)"
            break
        if "absent" in record:
            absent[name] = record["absent"]
        else:
            results.setdefault(name, []).append([args, record["result"]])
    else:
        if len(records) < len(asked) and stopped is None:
            stopped = "stopped before every call was made (it exited or crashed" + (
                f", status {returncode})" if returncode else ")")
    return Evaluation({**results, **absent}, load_errors, stopped)
