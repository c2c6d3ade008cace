"""`make student-release`: the folder students clone holds the chapters, the released assignments and the library,
and nothing of the instructors' — no solution, no hidden test, no answer key, no grading code, no gradebook — and
`make lab` works in it."""

import ast
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, assignments, cells

from ppedu.grading.assignments import TIMED
from ppedu.grading.questiondata import FILE as QUESTION_DATA

VENV = Path(sys.executable).parent.parent
INSTRUCTORS_ONLY = {"solutions", "grader", "tests", "benchmarks", "submitted", "autograded", "feedback",
                    "nbgrader_config.py", "gradebook.db", "student", "hub"}
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "AUTOGRADED ANSWER")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "ppedu-student"
    subprocess.run(["make", "--no-print-directory", "student-release", f"STUDENT_RELEASE={out}"], cwd=ROOT,
                   check=True, capture_output=True, timeout=120)
    return out


def untimed():
    return [a for a in assignments() if a not in TIMED]


def _files(root):
    return [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]


def _text(path):
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""  # MNIST's gzipped images


#: Lines that say nothing about an answer.
TRIVIAL = re.compile(r"(else|try|finally|pass|break|continue|return|import \w+|[()\[\]{}]+):?")
#: The library's own implementations of what some questions ask students to write (ps1's closed form, ps3's
#: schedules, ps5's executor, ps8's ring, buckets and ZeRO-1): public, taught in the chapters, and no answer, since
#: those questions run the student's code where ppedu's version is not importable. Elsewhere in the library a run of
#: solution lines leaks.
LIBRARY_ANSWERS = ("ppedu/formulas.py", "ppedu/schedules/", "ppedu/mnist/executor.py", "ppedu/ranks/")
RUN = 3


def _solution_blocks():
    """Every ``### BEGIN SOLUTION`` block in solutions/, as its non-trivial lines (whitespace trimmed)."""
    blocks = []
    for path in ROOT.glob("solutions/*/*.ipynb"):
        for cell in cells(path):
            block = None
            for line in cell.source.splitlines():
                if "### BEGIN SOLUTION" in line:
                    block = []
                elif "### END SOLUTION" in line:
                    blocks.append(block)
                    block = None
                elif block is not None and line.strip() and not TRIVIAL.fullmatch(line.strip()):
                    block.append(line.strip())
    return [b for b in blocks if b]


def _lines(path, text):
    if path.suffix == ".ipynb":
        return [line.strip() for c in nbformat.read(path, as_version=4).cells for line in c.source.splitlines()]
    return [line.strip() for line in text.splitlines()]


def test_the_release_has_what_students_need(release):
    for name in ("README.md", "Makefile", "lab.mk", "install.py", "pyproject.toml", "environment.yml", "ppedu/__init__.py",
                 "ppedu/grading/__init__.py", "ppedu/widgets/exercise.py"):
        assert (release / name).is_file(), name
    chapters = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert chapters and sorted(p.name for p in (release / "notebooks").glob("*.ipynb")) == chapters
    for name in untimed():
        assert (release / "exercises" / name / f"{name}.ipynb").read_bytes() == \
            (ROOT / "exercises" / name / f"{name}.ipynb").read_bytes()
        data = ROOT / "exercises" / name / QUESTION_DATA  # the question data its notebook reads, as released
        assert not data.exists() or (release / "exercises" / name / QUESTION_DATA).read_bytes() == data.read_bytes()
    for name in TIMED:  # released through the exchange when the exam starts
        assert (ROOT / "exercises" / name).is_dir() and not (release / "exercises" / name).exists()
    assert "students' copy" in (release / "README.md").read_text()
    # git merges every notebook cell by cell where a git config defines the driver (the hub's; `ppedu update`'s)
    assert (release / ".gitattributes").read_text() == "*.ipynb merge=ppedu-notebook\n"


def test_the_release_has_nothing_of_the_instructors(release):
    found = [str(p.relative_to(release)) for p in _files(release)
             if INSTRUCTORS_ONLY & set(p.relative_to(release).parts) or p.suffix == ".db"
             or p.suffix == ".json" and p.relative_to(release).parts[0] != "ppedu"
             and p.relative_to(release).parts[::2] != ("exercises", QUESTION_DATA)]
    assert not found
    tracked = subprocess.run(["git", "-C", str(release), "ls-files"], capture_output=True, text=True, check=True)
    assert sorted(tracked.stdout.split()) == sorted(p.relative_to(release).as_posix() for p in _files(release))


def test_no_solution_or_hidden_test_in_any_file(release):
    blocks = _solution_blocks()
    every_line = {line for block in blocks for line in block}
    runs = {tuple(block[i:i + RUN]) for block in blocks for i in range(len(block) - RUN + 1)}
    assert len(every_line) > 50 and len(runs) > 20  # the scan below looks for something
    leaks = []
    for path in _files(release):
        name, text = path.relative_to(release).as_posix(), _text(path)
        leaks += [f"{name}: {m}" for m in MARKERS if m in text]
        lines = _lines(path, text)
        if not name.startswith("ppedu/"):
            leaks += [f"{name}: {line}" for line in sorted(set(lines) & every_line)]
        elif not name.startswith(LIBRARY_ANSWERS):
            found = {tuple(lines[i:i + RUN]) for i in range(len(lines))} & runs
            leaks += [f"{name}: {' / '.join(run)}" for run in sorted(found)]
    assert not leaks, "\n".join(leaks)


def test_no_speaker_notes_in_any_file(release):
    """The lecturer's notes (docs/speaker-notes/) reach no student: no notes cell in a chapter, no note's words in
    any file of the release."""
    from ppedu.lecture import NOTES_FOLDER, read_notes

    notes = [note.text for path in (ROOT / NOTES_FOLDER).glob("*.md") for note in read_notes(path)]
    assert len(notes) > 50  # the scan below looks for something
    found = []
    for path in _files(release):
        name, text = path.relative_to(release).as_posix(), _text(path)
        if path.suffix == ".ipynb":
            found += [f"{name}: a notes cell" for c in nbformat.read(path, as_version=4).cells
                      if c.metadata.get("slideshow", {}).get("slide_type") == "notes"]
            text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        found += [f"{name}: {note[:60]!r}" for note in notes if note in text]
    assert not found, "\n".join(found)


def _bodies(tree):
    """Each function's and class's body, names and docstrings aside, for those of more than one statement:
    the same code under another name is still the same code."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body[1:] if ast.get_docstring(node) else node.body
            if len(body) > 1:
                found.add("\n".join(ast.dump(statement) for statement in body))
    return found


def test_no_answer_key_or_grading_code(release):
    """Nothing of grader/ (the keys, the judge, the runner) is in the release, under its name or another."""
    assert (ROOT / "grader" / "keys" / "__init__.py").is_file(), "the answer keys belong in grader/keys/"
    instructors = set().union(*(_bodies(ast.parse(p.read_text())) for p in (ROOT / "grader").rglob("*.py")))
    assert len(instructors) > 20
    for path in release.rglob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        name = path.relative_to(release)
        assert not re.search(r"^\s*(from|import)\s+grader\b", text, re.M), f"{name} imports the grader"
        assert not any(isinstance(n, ast.Name) and n.id == "KEYS" for n in ast.walk(tree)), f"{name} has KEYS"
        assert not (_bodies(tree) & instructors), f"{name} holds code of grader/"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, deadline):
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, response.read().decode()
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_make_lab_starts_jupyterlab_on_the_release(release, tmp_path):
    """`make lab HOST=… PORT=… OPEN=no` in the release, with this test run's environment standing in for the
    `.venv` it would install (`-o` skips the install), and the release's own ppedu first on the path."""
    port, token = _free_port(), "release-test-token"
    env = {**os.environ, "PYTHONPATH": str(release), "JUPYTER_TOKEN": token,
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    command = ["make", "--no-print-directory", "-o", f"{VENV}/.installed", "lab", f"VENV={VENV}",
               "HOST=127.0.0.1", f"PORT={port}", "OPEN=no"]
    with (tmp_path / "lab.log").open("wb") as log:
        lab = subprocess.Popen(command, cwd=release, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        base = f"http://127.0.0.1:{port}"
        status, page = _get(f"{base}/lab?token={token}", deadline)
        assert status == 200 and "JupyterLab" in page
        status, _ = _get(f"{base}/lab/tree/notebooks/01-bubble-problem.ipynb?token={token}", deadline)
        assert status == 200
        status, listing = _get(f"{base}/api/contents/exercises?token={token}", deadline)
        assert status == 200 and all(f'"{name}"' in listing for name in untimed())
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)
    assert f"127.0.0.1:{port}" in (tmp_path / "lab.log").read_text()


def test_the_exercises_start_with_the_release_alone(release, tmp_path):
    """Each assignment's cells before its first answer or test run on the release's ppedu, outside the course: those
    released with it, and the timed exams as fetched when they start (the widget exam's exercises included)."""
    script = """
import os, sys, nbformat, ppedu
assert ppedu.__file__.startswith(sys.argv[1]), ppedu.__file__
for path in sys.argv[2:]:
    os.chdir(os.path.dirname(path))
    namespace = {"__name__": "__main__"}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("solution") or cell.metadata.get("nbgrader", {}).get("grade"):
            break
        if cell.cell_type == "code":
            exec(compile(cell.source, path, "exec"), namespace)
print("ok")
"""
    for exam in TIMED:
        shutil.copytree(ROOT / "exercises" / exam, tmp_path / exam)
    notebooks = [*(str(release / "exercises" / a / f"{a}.ipynb") for a in untimed()),
                 *(str(tmp_path / a / f"{a}.ipynb") for a in TIMED)]
    done = subprocess.run([sys.executable, "-c", script, str(release), *notebooks], cwd=release.parent,
                          env={**os.environ, "PYTHONPATH": str(release), "MPLBACKEND": "Agg"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_each_release_is_one_more_commit_that_students_pull(tmp_path):
    """`make student-release` updates the release's git repository in place: a commit per release that changed
    something, none for one that did not, and a student's clone (their own work committed) takes it with `git pull`."""
    course = tmp_path / "course"
    for name in ("student", "ppedu", "notebooks", "exercises"):
        shutil.copytree(ROOT / name, course / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "environment.yml", "Makefile"):
        shutil.copy(ROOT / name, course / name)
    out, clone, remote = course / "build" / "student", tmp_path / "alice", tmp_path / "ppedu-student.git"
    guide = (ROOT / "docs" / "instructor.md").read_text()

    def release():
        return subprocess.run(["make", "-s", "student-release", f"PYTHON={sys.executable}"],
                              cwd=course, capture_output=True, text=True, check=True).stdout

    def git(folder, *args):
        return subprocess.run(["git", "-C", str(folder), "-c", "user.name=A", "-c", "user.email=a@example.org", *args],
                              capture_output=True, text=True, check=True).stdout

    def publish(command):  # the guide's, to a repository of this test's own
        assert command in guide, command
        subprocess.run(command.replace("git@example.org:course/ppedu-student.git", str(remote)).split(), cwd=course,
                       check=True, capture_output=True)

    assert "commit" in release()
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    publish("git -C build/student remote add origin git@example.org:course/ppedu-student.git")
    publish("git -C build/student push -u origin main")
    git(tmp_path, "clone", "--quiet", str(remote), str(clone))
    mine = clone / "notebooks" / "01-bubble-problem.ipynb"
    mine.write_text(mine.read_text().replace("Learning goals", "Learning goals (my notes)", 1))
    git(clone, "commit", "--quiet", "-am", "my notes")
    assert "nothing changed" in release()
    changed = course / "notebooks" / "02-gpipe.ipynb"
    changed.write_text(changed.read_text().replace("Learning goals", "Learning goals, revised", 1))
    release()
    assert len(git(out, "log", "--format=%h").split()) == 2
    publish("git -C build/student push")
    git(clone, "pull", "--quiet", "--no-rebase", "--no-edit")
    assert "(my notes)" in mine.read_text() and "revised" in (clone / "notebooks" / "02-gpipe.ipynb").read_text()
