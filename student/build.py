"""Build the students' copy of the course (``make student-release``): what students clone or download.

It holds the chapters, the released assignments (``exercises/``), the ``ppedu`` library — which has
no answer keys, hidden tests or grading code: those live in ``grader/`` — and this folder's README
and Makefile. It never holds ``solutions/``, ``grader/``, the course's nbgrader configuration, the
gradebook or anyone's work. tests/grading/test_student_release.py builds it and checks all that.

    python student/build.py [OUT]      # default: build/student
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
#: What the course's repository gives students as it is.
SHIPPED = ("ppedu", "notebooks", "exercises", "pyproject.toml", "environment.yml")
#: The students' own README and Makefile, from this folder.
TEMPLATES = ("README.md", "Makefile", "lab.mk")
#: Never copied: caches, and anything a run of the notebooks leaves (a widget's saved answers, a gradebook).
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "*.json", "*.db",
                                 "*.gif")
#: Marks a folder this script made, so a rebuild may replace it and nothing else.
MARK = ".ppedu-student-release"


def build(out: Path) -> Path:
    """Write the release into ``out`` (replacing an earlier release there) and return it."""
    if out.exists() and any(out.iterdir()) and not (out / MARK).exists():
        raise ValueError(f"{out} is not empty and not an earlier student release: give an empty or new folder")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=IGNORED)
        else:
            shutil.copy2(source, out / name)
    for name in TEMPLATES:
        shutil.copy2(HERE / name, out / name)
    (out / MARK).write_text("made by `make student-release` from the instructors' repository\n")
    return out


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python student/build.py [OUT]", file=sys.stderr)
        return 2
    try:
        out = build(Path(argv[0]) if argv else ROOT / "build" / "student")
    except ValueError as error:
        print(f"student release: {error}", file=sys.stderr)
        return 2
    print(f"student release in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
