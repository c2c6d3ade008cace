"""Who the student is, and the values of their own copy of an assignment.

nbgrader has no per-student randomisation, so each assignment derives its numbers (p, m, v, …)
from the student's id with a hash: the same id always gets the same values, on the student's
machine while they work and in the autograder, and neighbours get different ones.
"""

from __future__ import annotations

import getpass
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: A student (or a JupyterHub admin) may set it; the autograder sets it inside the sandbox of the
#: kernel that runs a submission, so that the notebook shows that student's values. Who is graded
#: is decided outside the kernel, from the submission's folder.
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


def pick(assignment: str, student: str, name: str, choices: Sequence[T]) -> T:
    """One of ``choices``, fixed by a hash of (assignment, student, name): stable across machines
    and Python versions, unlike ``random`` seeded by ``hash()``.

    >>> pick("ps1", "alice", "p", range(3, 9)) == pick("ps1", "alice", "p", range(3, 9))
    True
    """
    digest = hashlib.sha256(f"{assignment}\0{student}\0{name}".encode()).digest()
    return choices[int.from_bytes(digest[:8], "big") % len(choices)]


def variant(assignment: str, student: str, count: int) -> int:
    """Which of the ``count`` variants of ``assignment``'s question data (:mod:`ppedu.grading.questiondata`) is
    ``student``'s: a hash of their id, so a student who joins after the release has one as well.

    >>> variant("final", "alice", 48) == variant("final", "alice", 48) < 48
    True
    """
    return pick(assignment, student, "variant", range(count))


#: ``pick(name, choices)`` for one student and assignment, as :func:`draw` hands it to a values maker.
Picker = Callable[[str, Sequence[Any]], Any]


def draw(assignment: str, student: str, make: Callable[[Picker], dict[str, Any]],
         sound: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The values ``make`` picks for ``student``, picked again (each name salted anew) until ``sound`` holds of
    them: values on which a common mistake would come out right (busy slots counted as idle ones, where the
    two are equal) are never anyone's.

    >>> v = draw("demo", "alice", lambda pick: {"p": pick("p", range(2, 5)), "m": pick("m", range(1, 5))},
    ...          lambda v: v["m"] != v["p"] - 1)
    >>> v["m"] != v["p"] - 1
    True
    """
    for attempt in range(1000):
        salt = f"#{attempt}" if attempt else ""
        values = make(lambda name, choices: pick(assignment, student, name + salt, choices))
        if sound(values):
            return values
    raise RuntimeError(f"no sound values of {assignment} for {student!r}")  # the choices allow none: a bug
