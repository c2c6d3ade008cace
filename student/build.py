"""Build the students' copy of the course (``make student-release``): what students clone or download.

It holds the chapters, the released assignments (``exercises/``), the ``ppedu`` library — which has
no answer keys, hidden tests or grading code: those live in ``grader/`` — and this folder's README,
Makefile and install script. It never holds ``solutions/``, ``grader/``, the course's nbgrader
configuration, the gradebook or anyone's work. tests/grading/test_student_release.py builds it and
checks all that.

The release is a git repository, updated in place: each build that changes something is one more
commit on ``main``, so students' clones (and nbgitpuller on the hub) take it with ``git pull``.

    python student/build.py [OUT]      # default: build/student
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the course's own ppedu, installed or not (make runs this with any python3)
from ppedu.grading.assignments import TIMED  # noqa: E402
from ppedu.grading.questiondata import FILE as QUESTION_DATA  # noqa: E402
from ppedu.update import ATTRIBUTES  # noqa: E402
#: What the course's repository gives students as it is.
SHIPPED = ("ppedu", "notebooks", "exercises", "pyproject.toml", "environment.yml")
#: The students' own README and Makefile, from this folder.
TEMPLATES = ("README.md", "Makefile", "lab.mk", "install.py")
#: Never copied: caches, and anything a run of the notebooks leaves (a widget's saved answers, a gradebook).
IGNORED = ("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "*.db", "*.gif")
#: Not in exercises/: a timed exam reaches students only when it starts (nbgrader release_assignment).
UNRELEASED = TIMED
#: Only the library's own data files are JSON, and an assignment's question data (made by the instructors' side,
#: docs/instructor.md § 4); elsewhere a .json file is what a notebook's run left behind (a widget exam's answers).
LEFT_BEHIND = ("*.json",)
#: Marks a folder this script made, so a rebuild may replace it and nothing else.
MARK = ".ppedu-student-release"
#: Who the release's commits are by, where git knows no one.
COMMITTER = ("-c", "user.name=ppedu student release", "-c", "user.email=release@ppedu.invalid")


def build(out: Path) -> str | None:
    """Write the release into ``out`` (the files of an earlier release there replaced, its git history kept) and
    commit it; the new commit, or ``None`` if nothing changed since the last release."""
    if out.exists() and any(out.iterdir()) and not (out / MARK).exists():
        raise ValueError(f"{out} is not empty and not an earlier student release: give an empty or new folder")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.name != ".git":
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            ignored = IGNORED if name == "ppedu" else IGNORED + LEFT_BEHIND + (UNRELEASED if name == "exercises" else ())
            shutil.copytree(source, out / name, ignore=_ignoring(ignored))
        else:
            shutil.copy2(source, out / name)
    for name in TEMPLATES:
        shutil.copy2(HERE / name, out / name)
    shutil.copy2(HERE / "gitignore", out / ".gitignore")  # what an install makes here stays out of updates
    (out / ".gitattributes").write_text(ATTRIBUTES)  # git merges notebooks cell by cell where its config says how
    (out / MARK).write_text("made by `make student-release` from the instructors' repository\n")
    return commit(out)


def _ignoring(patterns: tuple[str, ...]):  # noqa: ANN202 (shutil's ignore callable)
    """What ``copytree`` leaves out: ``patterns``, except an assignment's question data."""
    left_out = shutil.ignore_patterns(*patterns)
    return lambda folder, names: {n for n in left_out(folder, names) if n != QUESTION_DATA}


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout.strip()


def commit(out: Path) -> str | None:
    """Commit the release's files on ``main`` (a new repository the first time); the new commit, or ``None`` when
    nothing changed since the last release."""
    if not (out / ".git").exists():
        _git(out, "init", "--quiet", "--initial-branch=main")
    _git(out, "add", "--all")
    if not _git(out, "status", "--porcelain"):
        return None
    try:
        source = f" from the course at {_git(ROOT, 'rev-parse', '--short', 'HEAD')}"
    except (subprocess.CalledProcessError, OSError):
        source = ""  # the course is not a git clone
    known = subprocess.run(["git", "-C", str(out), "config", "user.email"], capture_output=True).returncode == 0
    _git(out, *(() if known else COMMITTER), "commit", "--quiet", "-m", f"Release{source}")
    return _git(out, "rev-parse", "--short", "HEAD")


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python student/build.py [OUT]", file=sys.stderr)
        return 2
    out = Path(argv[0]) if argv else ROOT / "build" / "student"
    try:
        new = build(out)
    except ValueError as error:
        print(f"student release: {error}", file=sys.stderr)
        return 2
    last = _git(out, "log", "-1", "--format=%h %s")
    print(f"student release in {out}: " + (f"commit {last}" if new else f"nothing changed since commit {last}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
