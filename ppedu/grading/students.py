"""Who the student is, and the values of their own copy of an assignment.

nbgrader has no per-student randomisation, so each assignment derives its numbers (p, m, v, …)
from the student's id with a hash: the same id always gets the same values, on the student's
machine while they work and in the autograder, and neighbours get different ones.
"""

from __future__ import annotations

import getpass
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: Set by ppedu's nbgrader preprocessor for the kernel that autogrades a submission; a student
#: (or a JupyterHub admin) may set it too.
ENV = "PPEDU_STUDENT_ID"


def student_id(environ: Mapping[str, str] | None = None) -> str:
    """The student's id: ``PPEDU_STUDENT_ID`` if set, else JupyterHub's user, else the login name —
    the id ``nbgrader submit`` files the work under.

    >>> student_id({"PPEDU_STUDENT_ID": "alice", "JUPYTERHUB_USER": "bob"})
    'alice'
    >>> student_id({"JUPYTERHUB_USER": "bob"})
    'bob'
    """
    env = os.environ if environ is None else environ
    return env.get(ENV) or env.get("JUPYTERHUB_USER") or getpass.getuser()


def graded_student_id() -> str:
    """The id as the autograder gave it to this process at start: read from the process's initial
    environment, so a notebook that changes ``os.environ`` cannot take on someone else's values."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        initial = _initial_environment()
        if ENV not in initial:
            raise RuntimeError(f"autograding without ppedu's nbgrader_config.py: {ENV} was not set for this kernel")
        return initial[ENV]
    return student_id()


def pick(assignment: str, student: str, name: str, choices: Sequence[T]) -> T:
    """One of ``choices``, fixed by a hash of (assignment, student, name): stable across machines
    and Python versions, unlike ``random`` seeded by ``hash()``.

    >>> pick("ps1", "alice", "p", range(3, 9)) == pick("ps1", "alice", "p", range(3, 9))
    True
    """
    digest = hashlib.sha256(f"{assignment}\0{student}\0{name}".encode()).digest()
    return choices[int.from_bytes(digest[:8], "big") % len(choices)]


def _initial_environment() -> dict[str, str]:
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:  # not Linux: fall back on the live environment
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
