"""Per-student question data, made on the instructors' side: the grids, tables and numbers a question shows, written
as plain data into the assignment's release, never the code that made them (that stays here, with the keys).

A key module whose questions show data (``grader/keys/<assignment>.py``) defines ``shown(variant) -> dict``: what
variant ``variant`` of the assignment shows, as JSON (numbers, text, lists; a grid as
:meth:`ppedu.picture.Picture.to_json`), the same every time; its student module (``ppedu.grading.assignments``)
defines ``VARIANTS``, the pool's size, and puts each student's ``variant`` in their values. Then

    python -m grader.questiondata [ASSIGNMENT …]     # solutions/<assignment>/questions.json (all such, by default)
    nbgrader generate_assignment ASSIGNMENT --force  # copies it into exercises/<assignment>/, the release

``nbgrader release_assignment`` and ``fetch_assignment`` carry it to the hub's students, ``make student-release`` to
the laptops' (and ``ppedu update`` to their clones), ``nbgrader autograde`` copies the source's over whatever a
submission holds under that name, and the judge reads the released file through :func:`variant`, which refuses to
grade against a release its generator no longer makes. A student added after the release has a variant already:
it is a hash of their id into the pool.

>>> pool("final")["variants"][0] == pool("final")["variants"][0]
True
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from grader import keys
from ppedu.grading.assignments import ASSIGNMENTS, Values, load
from ppedu.grading.questiondata import FILE

#: The course directory: the grader lives in it, beside ``solutions/`` and ``exercises/``.
ROOT = Path(__file__).resolve().parents[1]


class StaleRelease(RuntimeError):
    """The released question data is not what the generator makes now: grading against either would be wrong."""


def with_data() -> list[str]:
    """The assignments whose questions show data of their own."""
    return [a for a in ASSIGNMENTS if hasattr(keys.load(a), "shown")]


def pool(assignment: str) -> dict[str, Any]:
    """The file's content: every variant ``assignment``'s generator makes."""
    shown = keys.load(assignment).shown
    return {"assignment": assignment, "variants": [shown(k) for k in range(load(assignment).VARIANTS)]}


def text(assignment: str) -> str:
    return json.dumps(pool(assignment), ensure_ascii=False, separators=(",", ":")) + "\n"


def write(assignment: str, root: Path | None = None) -> Path:
    """Write ``assignment``'s pool into its source folder (``solutions/<assignment>/questions.json``)."""
    path = (root or ROOT) / "solutions" / assignment / FILE
    path.write_text(text(assignment), encoding="utf-8")
    return path


@lru_cache(maxsize=None)
def _released(assignment: str, root: Path) -> tuple[dict[str, Any], ...] | None:
    path = root / "exercises" / assignment / FILE
    if not path.exists():
        return None
    return tuple(json.loads(path.read_text(encoding="utf-8"))["variants"])


def variant(values: Values, root: Path = ROOT) -> int:
    """The variant whose data ``values``' student was shown; where the assignment is released here, checked against
    the released file, so that the judge grades the very grid the student read."""
    k, released = values["variant"], _released(values.assignment, root)
    if released is not None and released[k] != json.loads(json.dumps(keys.load(values.assignment).shown(k))):
        raise StaleRelease(f"exercises/{values.assignment}/{FILE} is not what grader/keys/{values.assignment}.py "
                           "makes: "
                           f"run python -m grader.questiondata {values.assignment}, then nbgrader generate_assignment")
    return k


def main(argv: list[str]) -> int:
    names = argv or with_data()
    unknown = [a for a in names if a not in with_data()]
    if unknown:
        print(f"questiondata: {', '.join(unknown)} shows no data of its own (those that do: {', '.join(with_data())})",
              file=sys.stderr)
        return 2
    for name in names:
        print(f"{name}: {write(name).relative_to(ROOT)} ({load(name).VARIANTS} variants); now run "
              f"nbgrader generate_assignment {name} --force")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
