"""A new release brought into a real clone of the student release, as a laptop student with no git identity does
(`ppedu update`) and as the hub's nbgitpuller link does (nbgitpuller's own code, with the git settings the hub gives
its users): they answer in a chapter and keep notes in it, the instructor releases a change to the same notebook,
and git's merge keeps every cell of theirs, brings every cell of the release's, leaves no notebook unreadable and
says what it kept."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgitpuller.pull import GitPuller

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


def test_a_plain_git_pull_after_an_update_merges_cells_and_so_does_an_older_clones_first_update(laptop):
    """A clone of a release from before `.gitattributes` shipped: git takes attributes from the working tree, where
    the release's arrive only with the merge, so `ppedu update` gives the clone the rule itself."""
    release, clone, env = laptop
    for folder in (release, clone):
        subprocess.run(["git", "-C", folder, "-c", "user.name=i", "-c", "user.email=i@x", "rm", "-q", ".gitattributes"],
                       check=True)
        subprocess.run(["git", "-C", folder, "-c", "user.name=i", "-c", "user.email=i@x", "commit", "-qm", "old"],
                       check=True)
    subprocess.run(["git", "-C", clone, "fetch", "-q"], check=True)
    subprocess.run(["git", "-C", clone, "reset", "-q", "--hard", "origin/main"], check=True)
    subprocess.run([sys.executable, ROOT / "student" / "build.py", release], check=True, capture_output=True)
    for n in (1, 2):
        _edit(clone / CHAPTER, lambda cells: cells.append(_cell(f"Mine {n}.", f"mine{n}")))
        _release(release, lambda cells: cells.append(_cell(f"New {n}.", f"new{n}")))
        pull = (sys.executable, "-m", "ppedu", "update") if n == 1 else (
            "git", "-c", "user.name=s", "-c", "user.email=s@x", "pull", "-q", "--no-rebase", "--no-edit")
        if n == 2:
            _run("git", "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qam", "mine", cwd=clone, env=env)
        done = _run(*pull, cwd=clone, env=env)
        assert done.returncode == 0, done.stderr
    assert [c.source for c in _valid(clone / CHAPTER)[-4:]] == ["Mine 1.", "New 1.", "Mine 2.", "New 2."]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The release, the git settings hub/deploy.py writes for the hub's users (the driver run by this environment's
    python, as the hub's by its shared environment's), and a student's clone made by the first click of the
    nbgitpuller link; ``pull(config)`` is a later click, with another git config where given."""
    release = tmp_path / "release"
    subprocess.run([sys.executable, ROOT / "student" / "build.py", release], check=True, capture_output=True,
                   timeout=120)
    spec = importlib.util.spec_from_file_location("deploy", ROOT / "hub" / "deploy.py")
    deploy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(deploy)
    configs = {python: tmp_path / f"gitconfig-{n}" for n, python in enumerate((sys.executable, "/gone/bin/python"))}
    for python, config in configs.items():
        deploy.gitconfig(config, release, Path(python))
    configs[None] = Path(os.devnull)  # a hub whose git config predates the driver
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for name in [name for name in os.environ if name.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))]:
        monkeypatch.delenv(name)
    clone = tmp_path / "ppedu-course"

    def pull(python=sys.executable):
        monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(configs[python]))
        return "".join(GitPuller(f"file://{release}", str(clone), branch="main").pull())

    pull()
    return release, clone, pull


def test_on_the_hub_a_pull_keeps_every_cell_both_added(hub):
    release, clone, pull = hub
    _edit(clone / CHAPTER, lambda cells: (cells[0]["source"].append("\n\nMy notes."),
                                          cells.append(_cell("My own cell.", "mine"))))
    middle = len(json.loads((release / CHAPTER).read_text())["cells"]) // 2
    _release(release, lambda cells: (cells[middle]["source"].append("\n\nRevised in the second release."),
                                     cells.append(_cell("A new exercise.", "new"))))
    said = pull()
    cells = _valid(clone / CHAPTER)
    assert "My notes." in cells[0].source and "Revised in the second release." in cells[middle].source
    assert [c.source for c in cells[-2:]] == ["My own cell.", "A new exercise."], said  # both, the student's first
    assert not (clone / BESIDE).exists()


def test_on_the_hub_where_both_changed_a_cell_the_students_stays_and_the_releases_notebook_is_saved_beside(hub):
    release, clone, pull = hub
    _edit(clone / CHAPTER, lambda cells: (cells[1].__setitem__("source", ["My answer."]),
                                          cells.append(_cell("My own cell.", "mine"))))
    _release(release, lambda cells: (cells[1].__setitem__("source", ["The revised question."]),
                                     cells.append(_cell("A new exercise.", "new"))))
    said = pull()
    assert (f"In {CHAPTER} you and the release changed the same 1 cell(s): yours are kept; the release's version of "
            f"the notebook is {BESIDE}") in said  # in nbgitpuller's log
    cells = _valid(clone / CHAPTER)
    assert cells[1].source == "My answer." and [c.source for c in cells[-2:]] == ["My own cell.", "A new exercise."]
    assert _valid(clone / BESIDE)[1].source == "The revised question."


@pytest.mark.parametrize("python", ["/gone/bin/python", None], ids=["driver-cannot-run", "no-driver"])
def test_on_the_hub_without_the_driver_a_pull_merges_lines_as_before_and_keeps_the_students_work(hub, python):
    """Where the driver's python is gone, or the git config defines no driver: git's own line merge, nbgitpuller's
    `-Xours` (the student's lines win), never a failed pull; a cell both added at the end keeps the student's."""
    release, clone, pull = hub
    _edit(clone / CHAPTER, lambda cells: (cells[0]["source"].append("\n\nMy notes."),
                                          cells.append(_cell("My own cell.", "mine"))))
    _release(release, lambda cells: cells.append(_cell("A new exercise.", "new")))
    pull(python)
    cells = _valid(clone / CHAPTER)
    assert "My notes." in cells[0].source and cells[-1].source == "My own cell."
    assert "A new exercise." not in [c.source for c in cells]  # what the driver is for
