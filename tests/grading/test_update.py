"""`ppedu update` on a real clone of the student release, as a laptop student with no git identity: they answer in
a chapter and keep notes in it, the instructor releases a change to the same notebook, and the update keeps every
cell of theirs, brings the release's change, leaves no notebook unreadable and says what it kept."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

from ppedu.update import readable

CHAPTER = "notebooks/02-gpipe.ipynb"


def _run(*argv, cwd, env):
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def laptop(tmp_path):
    """The release (as `make student-release` builds it) and a student's clone of it, made with no git identity."""
    release = tmp_path / "release"
    subprocess.run([sys.executable, ROOT / "student" / "build.py", release], check=True, capture_output=True,
                   timeout=120)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    env = {k: v for k, v in env.items() if not k.startswith("GIT_AUTHOR") and not k.startswith("GIT_COMMITTER")}
    clone = tmp_path / "course"
    assert _run("git", "clone", "--quiet", release, clone, cwd=tmp_path, env=env).returncode == 0
    return release, clone, env


def _edit(path, change):
    nb = json.loads(path.read_text())
    change(nb["cells"])
    path.write_text(json.dumps(nb, indent=1) + "\n")


def test_an_update_keeps_the_students_cells_and_brings_the_release(laptop):
    release, clone, env = laptop
    # The student: notes in the first cell, a cell of their own at the end, an install's leftovers, a hand-in.
    _edit(clone / CHAPTER, lambda cells: (cells[0]["source"].append("\n\nMy notes."),
                                          cells.append({"cell_type": "markdown", "id": "mine", "metadata": {},
                                                        "source": ["My own cell."]})))
    (clone / ".venv").mkdir()
    (clone / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (clone / "ps1+alice.zip").write_bytes(b"PK")
    # The instructor: a change further down the same notebook, released.
    middle = len(json.loads((release / CHAPTER).read_text())["cells"]) // 2
    _edit(release / CHAPTER, lambda cells: cells[middle]["source"].append("\n\nRevised in the second release."))
    subprocess.run(["git", "-C", release, "-c", "user.name=i", "-c", "user.email=i@x", "commit", "-qam", "second"],
                   check=True)
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0, done.stderr
    assert f"Kept your changes in (merged with the release's; where both changed a line, yours): {CHAPTER}" in done.stdout
    text = (clone / CHAPTER).read_text()
    assert readable(text) and "<<<<<<<" not in text
    cells = json.loads(text)["cells"]
    assert "My notes." in "".join(cells[0]["source"]) and cells[-1]["source"] == ["My own cell."]
    assert "Revised in the second release." in "".join(cells[middle]["source"])
    status = _run("git", "status", "--porcelain", cwd=clone, env=env).stdout
    assert status == "", status  # the install's folder and the hand-in are ignored, the student's work committed
    again = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert again.returncode == 0 and "Already the newest release" in again.stdout


def test_a_deleted_notebook_comes_back_and_a_folder_that_is_no_clone_is_refused(laptop, tmp_path):
    _, clone, env = laptop
    (clone / "notebooks" / "03-1f1b.ipynb").unlink()
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0 and (clone / "notebooks" / "03-1f1b.ipynb").is_file(), done.stderr
    assert "Brought back, as the release has them: notebooks/03-1f1b.ipynb" in done.stdout
    refused = _run(sys.executable, "-m", "ppedu", "update", "--folder", tmp_path / "home", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "is not a clone of the course's release" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_notebook_with_conflict_markers_is_not_readable():
    assert readable('{"cells": [], "metadata": {}}')
    assert not readable('{"cells": [\n<<<<<<< HEAD\n]}') and not readable("[]")
