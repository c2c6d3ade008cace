"""The evaluator's runs across ranks (ps8): a notebook's functions called in several sandboxes at once, each a rank of
a process group whose only channel to the others is the grader's relay (:mod:`ppedu.grading.relay`).

:func:`run_once` is :func:`ppedu.grading.evaluate.run_functions`'s single run, ``ranks`` times over: the same cells, in
the same order, in ``ranks`` fresh sandboxes (each its own user, network namespace, ``/tmp`` and processes: nothing
to share), each told its rank (``$PPEDU_RANK``, which its driver may read; the relay knows a rank by its socket, never
by what it says) and handed its own end of a socket to the relay, which a thread of this process serves. At each
test cell every sandbox makes the same calls; a call's result is every rank's (``[args, [rank 0's, rank 1's, …],
observed]``), beside what the relay observed of that call — the data the judge decides on, which no process that
ran student code wrote.

A rank whose interpreter ends (exits, is stopped at a time limit) ends the run of every rank: the questions after it
are asked of fresh sandboxes, as :func:`~ppedu.grading.evaluate.run_functions` does for one.
"""

from __future__ import annotations

import functools
import importlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ppedu.grading.evaluate import (GRACE, HARNESS, FunctionRun, Library, _absent, _collect, _read, _stop,
                                    harness_request, view)
from ppedu.grading.service import ENV

#: Where a rank's sandbox reads its rank.
RANK = "PPEDU_RANK"


def once(ranks: int) -> Callable[..., tuple[FunctionRun, int | None]] | None:
    """What :func:`~ppedu.grading.evaluate.run_functions` runs each time for a question of ``ranks`` ranks: ``None``
    (its own single interpreter) for one, :func:`run_once` on ``ranks`` sandboxes for more.

    >>> once(1) is None, once(4).keywords
    (True, {'ranks': 4})
    """
    return None if ranks <= 1 else functools.partial(run_once, ranks=ranks)


def run_once(cells: Sequence[Any], library: Library, requests: Mapping[str, Mapping[str, Sequence[Sequence[Any]]]],
             assignment: str, student: str, values: Mapping[str, Any], timeout: float, driver: str | None,
             cell_timeout: float, limits: Any, use_sandbox: bool, service: str | None, *,
             ranks: int, data: Mapping[str, Any] | None = None,
             folder: Any = None, call_timeout: float | None = None) -> tuple[FunctionRun, int | None]:
    """One run of ``cells`` on ``ranks`` sandboxes at once, the relay ``service`` (``module:function``, made for the
    calls' arguments) between them; what it gave and the cell it stopped at (see the module's docstring)."""
    from ppedu.grading import sandbox
    from ppedu.grading.relay import serve

    if service is None:
        raise ValueError("a run across ranks needs a relay between them")
    copy = view(library)
    asked, request = harness_request(cells, requests, assignment, student, values, driver, cell_timeout,
                                     sandbox.LIBRARY if use_sandbox else str(copy.parent), data, folder is not None,
                                     call_timeout)
    module, _, attribute = service.partition(":")
    relay = getattr(importlib.import_module(module), attribute)([args for _, _, args in asked])
    ranks = max(1, min(ranks, relay.ranks))  # no sandbox for a rank no call of this run has
    pairs = [socket.socketpair() for _ in range(ranks)]
    stop = serve(relay, [mine for mine, _ in pairs])
    outcomes: list[tuple[list[Any], str | None, int | None]] = [([], None, None)] * ranks
    try:
        with ExitStack() as stack:
            processes = []
            for rank, (_, theirs) in enumerate(pairs):
                env = {"NBGRADER_EXECUTION": "autograde", "MPLBACKEND": "Agg", "PPEDU_STUDENT_ID": student,
                       ENV: str(theirs.fileno()), RANK: str(rank)}
                box = stack.enter_context(sandbox.prepared(folder, library=copy, absent=_absent(library), env=env,
                                                           limits=limits or sandbox.Limits()))
                processes.append(_start(box, env, theirs.fileno(), request.encode(), use_sandbox, folder))
            for _, theirs in pairs:
                theirs.close()  # each sandbox holds its own copy

            def watch(rank: int) -> None:
                process, read = processes[rank]
                try:
                    records, stopped = _read(read, max(timeout, 0), cell_timeout + GRACE)
                finally:
                    os.close(read)
                    _stop(process)
                outcomes[rank] = (records, stopped, process.returncode)
                if stopped is not None or {"done": True} not in records:  # one rank's end is every rank's
                    for other, _ in processes:
                        _stop(other)

            threads = [threading.Thread(target=watch, args=(r,), daemon=True) for r in range(ranks)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        stop()
    return _merged(outcomes, asked, relay)


def _start(box: Any, env: dict[str, str], fd: int, request: bytes, use_sandbox: bool,
           folder: Any = None) -> tuple[Any, int]:
    read, write = os.pipe()
    argv = [sys.executable, "-I", "-S", "-c", HARNESS.read_text(), str(write)]
    try:
        process = subprocess.Popen(box.wrap(argv) if use_sandbox else argv, stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write, fd),
                                   start_new_session=True, cwd=None if use_sandbox else folder,
                                   env=None if use_sandbox else {**os.environ, **env})
    finally:
        os.close(write)
    assert process.stdin is not None
    try:
        process.stdin.write(request)
        process.stdin.close()
    except BrokenPipeError:
        pass
    return process, read


def _merged(outcomes: Sequence[tuple[list[Any], str | None, int | None]], asked: Sequence[tuple[str, str, Any]],
            relay: Any) -> tuple[FunctionRun, int | None]:
    """Every rank's records as one run: each call's results side by side, with what the relay observed of it."""
    runs = [_collect(records, stopped, asked) for records, stopped, _ in outcomes]
    results: dict[str, dict[str, Any]] = {}
    for k, (test, name, args) in enumerate(asked):
        got = [run.results.get(test, {}).get(name) for run in runs]
        if not isinstance(got[0], list):  # not a function (in rank 0's run): what the name holds
            results.setdefault(test, {})[name] = got[0]
            continue
        j = sum(1 for t, n, _ in asked[:k] if (t, n) == (test, name))
        answers = [g[j][1] if isinstance(g, list) and j < len(g) else None for g in got]
        if all(a is None for a in answers):
            continue
        results.setdefault(test, {}).setdefault(name, []).append([args, answers, relay.observed(k)])
    errors = tuple(dict.fromkeys(e for run in runs for e in run.errors))[:5]
    stopped = next((f"(rank {r}) {run.stopped}" for r, run in enumerate(runs) if run.stopped), None)
    ats = [next((rec["at"] for rec in reversed(records) if isinstance(rec, dict) and rec.keys() == {"at"}
                 and isinstance(rec["at"], int)), None) for records, _, _ in outcomes]
    at = min((a for a in ats if a is not None), default=None)
    return FunctionRun(results, errors, stopped), at
