"""A widget exam's answers, saved in a small JSON file beside the notebook, so that nbgrader's submit carries
them and the autograder grades them: one entry per question, ``{"count": {"total": "56", "idle": "24",
"ratio": "24/56"}, "mark": {"marked": [[0, 4], [1, 0]]}, "causes": {"causes": [[0, 1, "fill"]]}}``; a
file saved before an entry had ``causes`` still reads (without them).

The file is the student's to write, so reading it trusts nothing: a link, a file over :data:`LIMIT` bytes,
text that is not JSON or an entry of the wrong shape is refused with one line saying why.

>>> import tempfile; folder = Path(tempfile.mkdtemp())
>>> save(folder / "exam.json", "count", SlotAnswer(total="56", idle="24"))
>>> read(folder / "exam.json")["count"]
SlotAnswer(total='56', idle='24', ratio='', marked=frozenset(), causes=frozenset())
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: More than any honest answer needs (a 64-step grid fully marked is about 10 kB).
LIMIT = 64_000
_TEXTS = ("total", "idle", "ratio")
#: The sorts an idle cell can be given (:data:`ppedu.idle.SORTS`' values).
_SORTS = ("fill", "drain", "order")


class Unreadable(ValueError):
    """The answer file cannot be graded; the message says why, in one line."""


@dataclass(frozen=True)
class SlotAnswer:
    """What a :class:`~ppedu.widgets.SlotCountingExercise` holds: the counts as typed, the cells marked (idle, or on
    the critical path), and the idle cells sorted by cause as ``(GPU, time step, sort)``."""

    total: str = ""
    idle: str = ""
    ratio: str = ""
    marked: frozenset[tuple[int, int]] = field(default_factory=frozenset)
    causes: frozenset[tuple[int, int, str]] = field(default_factory=frozenset)

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "idle": self.idle, "ratio": self.ratio, "marked": sorted(map(list, self.marked)),
                "causes": sorted(map(list, self.causes))}

    @classmethod
    def from_json(cls, entry: object) -> SlotAnswer:
        if not isinstance(entry, dict):
            raise Unreadable("an answer is not a JSON object")
        texts = {name: entry.get(name, "") for name in _TEXTS}
        if not all(isinstance(text, str) and len(text) <= 100 for text in texts.values()):
            raise Unreadable("a typed answer is not text of at most 100 characters")
        cells = entry.get("marked", [])
        if not (isinstance(cells, list) and all(isinstance(c, list) and len(c) == 2 and
                                                all(type(i) is int for i in c) for c in cells)):
            raise Unreadable("the marked cells are not a list of [GPU, time step] pairs")
        sorted_ = entry.get("causes", [])
        if not (isinstance(sorted_, list) and all(isinstance(c, list) and len(c) == 3 and type(c[0]) is int and
                                                  type(c[1]) is int and c[2] in _SORTS for c in sorted_)):
            raise Unreadable(f"the idle causes are not a list of [GPU, time step, one of {', '.join(_SORTS)}]")
        return cls(**texts, marked=frozenset((s, t) for s, t in cells),
                   causes=frozenset((s, t, sort) for s, t, sort in sorted_))


def read(path: Path) -> dict[str, SlotAnswer]:
    """Every question's saved answer in ``path`` (none when there is no file)."""
    if path.is_symlink():
        raise Unreadable(f"{path.name} is a link, not the file the exercise saved")
    try:
        with path.open("rb") as file:
            raw = file.read(LIMIT + 1)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise Unreadable(f"{path.name} cannot be read ({error.strerror})") from None
    if len(raw) > LIMIT:
        raise Unreadable(f"{path.name} is larger than {LIMIT // 1000} kB: it is not what the exercise saved")
    try:
        entries = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Unreadable(f"{path.name} is not the JSON the exercise saves (was it edited by hand?)") from None
    if not isinstance(entries, dict):
        raise Unreadable(f"{path.name} does not hold one answer per question")
    return {str(question): SlotAnswer.from_json(entry) for question, entry in entries.items()}


def save(path: Path, question: str, answer: SlotAnswer) -> None:
    """Record ``question``'s answer in ``path``, keeping the other questions' (a file that cannot be read
    is replaced); written to a temporary file first, so the file is never half-written."""
    try:
        entries = {q: a.to_json() for q, a in read(path).items()}
    except Unreadable:
        entries = {}
    entries[question] = answer.to_json()
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(descriptor, "w") as file:
        json.dump(entries, file, indent=1)
    os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep it from the instructor who collects it
    os.replace(temporary, path)
