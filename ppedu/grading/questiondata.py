"""Each student's question data: what a graded question shows — a grid, a table, numbers — made on the instructors'
side and shipped beside the notebook as plain data, never with the code that turns it into the answer.

An assignment whose questions show such data ships ``questions.json`` in its folder: a pool of variants, made by the
course's grader when the assignment is generated (``python -m grader.questiondata``, docs/instructor.md § 4). Each
student's variant is fixed by a hash of their id (``my_values(assignment).variant``, one of the assignment module's
``VARIANTS``), so a student added after the
release has one too, and the autograder's judge reads the same entry for the submission's owner from the released
file. The question is not secret, only its answer: nothing here computes anything from the data.

>>> import json, tempfile
>>> from pathlib import Path
>>> folder = Path(tempfile.mkdtemp())
>>> from ppedu.grading.assignments import load
>>> pool = [{"n": k, "grid": {"rows": [["F0", "B0"]]}} for k in range(load("counting").VARIANTS)]
>>> _ = (folder / FILE).write_text(json.dumps({"assignment": "counting", "variants": pool}))
>>> data = my_data("counting", "alice", folder)
>>> data.n == data.variant, str(data.grid).splitlines()[0]
(True, 'GPU 0 | F0 B0')
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppedu.picture import NotAPicture, Picture

#: The file beside the notebook.
FILE = "questions.json"
#: More than any pool needs (a pool of 64 variants with three 30-step grids each is about 300 kB).
LIMIT = 4_000_000


class NoData(RuntimeError):
    """The assignment's question data cannot be read; the message says why and what to do, in one line."""


@dataclass(frozen=True, repr=False)
class QuestionData(Mapping[str, Any]):
    """One student's variant of an assignment's question data; read it as attributes (``data.grid``) or by name. An
    entry that is a grid reads as a :class:`~ppedu.picture.Picture`."""

    assignment: str
    student: str
    variant: int
    entries: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{self.assignment}'s question data has no {name!r} "
                                 f"(it has {', '.join(self.entries)})") from None

    def __getitem__(self, name: str) -> Any:
        value = self.entries[name]
        return Picture.from_json(value) if isinstance(value, dict) and "rows" in value else value

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k} = {v}" for k, v in self.entries.items() if not isinstance(v, (dict, list)))
        return f"{self.assignment}'s questions for student {self.student!r} (variant {self.variant})" + (
            f": {shown}" if shown else "")


def read(path: Path, assignment: str) -> list[dict[str, Any]]:
    """The pool of variants in ``path`` (a released ``questions.json``), checked to be ``assignment``'s: as many
    variants as its module's ``VARIANTS`` says."""
    from ppedu.grading.assignments import load

    hint = f"fetch {assignment} again (or ask your instructor): its folder should hold the released {FILE}"
    if path.is_symlink():
        raise NoData(f"{path.name} is a link, not the file released with {assignment}: {hint}")
    try:
        with path.open("rb") as file:
            raw = file.read(LIMIT + 1)
    except FileNotFoundError:
        raise NoData(f"no {FILE} beside the notebook: {hint}") from None
    except OSError as error:
        raise NoData(f"{FILE} cannot be read ({error.strerror}): {hint}") from None
    try:
        if len(raw) > LIMIT:
            raise ValueError
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise NoData(f"{FILE} is not the file released with {assignment} (not JSON of at most {LIMIT // 10**6} MB): "
                     f"{hint}") from None
    pool = data.get("variants") if isinstance(data, dict) else None
    size = getattr(load(assignment), "VARIANTS", None)
    if data.get("assignment") != assignment or not isinstance(pool, list) or len(pool) != size \
            or not all(isinstance(entry, dict) for entry in pool):
        raise NoData(f"{FILE} is not {assignment}'s (or not this release's): {hint}")
    return pool


def my_data(assignment: str, student: str | None = None, folder: Path | str = ".") -> QuestionData:
    """This student's variant of ``assignment``'s question data, from the ``questions.json`` in ``folder`` (the
    notebook's own, by default). The variant is ``my_values(assignment, student).variant``; where the grader handed
    this student's entries in (:func:`~ppedu.grading.assignments.give`), those."""
    from ppedu.grading.assignments import _given_data, my_values

    values = my_values(assignment, student)
    given = _given_data.get(assignment) if student is None else None
    entries = given if given is not None else read(Path(folder) / FILE, assignment)[values["variant"]]
    for name, value in entries.items():
        if isinstance(value, dict) and "rows" in value:
            try:
                Picture.from_json(value)
            except NotAPicture as problem:
                raise NoData(f"{FILE}'s {name} is not a grid ({problem}): fetch {assignment} again") from None
    return QuestionData(assignment, values.student, values["variant"], entries)


def owners_data(assignment: str, student: str, folder: Path | str = ".") -> dict[str, Any] | None:
    """``student``'s entries of ``assignment``'s question data in ``folder``, to hand to a run of their notebook's code
    that has no ``questions.json`` beside it (``None``: the assignment shows none, or it cannot be read)."""
    try:
        return dict(my_data(assignment, student, folder).entries)
    except (NoData, KeyError):
        return None
