"""`ppedu update` on a real clone of the student release, as a laptop student with no git identity: they answer in
a chapter and keep notes in it, the instructor releases a change to the same notebook, and the update keeps every
cell of theirs, brings every cell of the release's, leaves no notebook unreadable and says what it kept."""

import json
import os
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT

CHAPTER = "notebooks/02-gpipe.ipynb"
BESIDE = "notebooks/02-gpipe.release.ipynb"


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


def _cell(text, key):
    return {"cell_type": "markdown", "id": key, "metadata": {}, "source": [text]}


def _release(release, change):
    _edit(release / CHAPTER, change)
    subprocess.run(["git", "-C", release, "-c", "user.name=i", "-c", "user.email=i@x", "commit", "-qam", "second"],
                   check=True)


def _valid(path):
    nbformat.validate(nbformat.read(path, as_version=4))  # raises where Jupyter could not open it as it is
    return nbformat.read(path, as_version=4).cells


def test_an_update_keeps_the_students_cells_and_brings_every_cell_of_the_release(laptop):
    release, clone, env = laptop
    # The student: notes in the first cell, a cell of their own at the end, an install's leftovers, a hand-in.
    _edit(clone / CHAPTER, lambda cells: (cells[0]["source"].append("\n\nMy notes."),
                                          cells.append(_cell("My own cell.", "mine"))))
    (clone / ".venv").mkdir()
    (clone / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (clone / "ps1+alice.zip").write_bytes(b"PK")
    # The instructor: a change further down the same notebook, and a new cell at its end too, released.
    middle = len(json.loads((release / CHAPTER).read_text())["cells"]) // 2
    _release(release, lambda cells: (cells[middle]["source"].append("\n\nRevised in the second release."),
                                     cells.append(_cell("A new exercise.", "new"))))
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0, done.stderr
    assert ("Kept your changes in (merged with the release's; where both changed a line or a cell, yours): "
            f"{CHAPTER}") in done.stdout
    cells = _valid(clone / CHAPTER)
    assert "My notes." in cells[0].source and "Revised in the second release." in cells[middle].source
    assert [c.source for c in cells[-2:]] == ["My own cell.", "A new exercise."]  # both, the student's first
    assert not (clone / BESIDE).exists() and "release's version" not in done.stdout
    status = _run("git", "status", "--porcelain", cwd=clone, env=env).stdout
    assert status == "", status  # the install's folder and the hand-in are ignored, the student's work committed
    again = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert again.returncode == 0 and "Already the newest release" in again.stdout


def test_where_both_changed_a_cell_the_students_stays_and_the_releases_notebook_is_saved_beside(laptop):
    release, clone, env = laptop
    _edit(clone / CHAPTER, lambda cells: cells[1].__setitem__("source", ["My answer."]))
    _release(release, lambda cells: (cells[1].__setitem__("source", ["The revised question."]),
                                     cells.append(_cell("A new exercise.", "new"))))
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0, done.stderr
    assert (f"In {CHAPTER} you and the release changed the same 1 cell(s): yours are kept; the release's version of "
            f"the notebook is {BESIDE}") in done.stdout
    cells = _valid(clone / CHAPTER)
    assert cells[1].source == "My answer." and cells[-1].source == "A new exercise."
    assert _valid(clone / BESIDE)[1].source == "The revised question."


def _conflict_markers(cells):
    """What the README's old advice (`git pull --no-rebase`) left and the student committed: no JSON at all."""
    return "<<<<<<< HEAD\n" + json.dumps(cells, indent=1) + "\n=======\n>>>>>>> origin/main\n"


def _hand_edited(cells):
    """A notebook edited in a text editor: JSON, but a code cell without the outputs every code cell has. nbdime
    merges it; the merge is no valid notebook."""
    del next(c for c in cells if c["cell_type"] == "code")["outputs"]
    cells[0]["source"].append("\n\nMy notes.")


@pytest.mark.parametrize("broken", [_conflict_markers, _hand_edited])
def test_a_notebook_that_cannot_be_merged_stays_as_the_student_left_it(laptop, broken):
    release, clone, env = laptop
    nb = json.loads((clone / CHAPTER).read_text())
    if broken is _conflict_markers:
        text = _conflict_markers(nb["cells"])
    else:
        broken(nb["cells"])
        text = json.dumps(nb, indent=1) + "\n"
    (clone / CHAPTER).write_text(text)
    _run("git", "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qam", "mine", cwd=clone, env=env)
    _release(release, lambda cells: cells.append(_cell("A new exercise.", "new")))
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0, done.stderr
    assert (f"Kept {CHAPTER} as you left it (it cannot be merged as a notebook); the release's version is "
            f"{BESIDE}") in done.stdout
    assert (clone / CHAPTER).read_text() == text  # not a character of theirs changed
    assert _valid(clone / BESIDE)[-1].source == "A new exercise."


def test_a_deleted_notebook_comes_back_and_a_folder_that_is_no_clone_is_refused(laptop, tmp_path):
    _, clone, env = laptop
    (clone / "notebooks" / "03-1f1b.ipynb").unlink()
    done = _run(sys.executable, "-m", "ppedu", "update", cwd=clone, env=env)
    assert done.returncode == 0 and (clone / "notebooks" / "03-1f1b.ipynb").is_file(), done.stderr
    assert "Brought back, as the release has them: notebooks/03-1f1b.ipynb" in done.stdout
    refused = _run(sys.executable, "-m", "ppedu", "update", "--folder", tmp_path / "home", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "is not a clone of the course's release" in refused.stderr
    assert "Traceback" not in refused.stderr
