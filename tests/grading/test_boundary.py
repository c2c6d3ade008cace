"""The grading boundary end to end: every way a student's bytes reach a grade goes through the intake (collect
from the exchange, zip_collect from downloaded archives, autograding what an instructor put in submitted/ by
hand), and grading fails loudly, never quietly with zeros, where no kernel can run."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from conftest import BIN, ROOT, autograded_cells, graded_cells

ENV = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]}
SOLVED = ROOT / "solutions" / "ps1" / "ps1.ipynb"
#: ps1's autograded points (what a solved notebook earns before its written answers are graded), and all its points.
PS1_AUTO = sum(points for _, points in autograded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb"))
PS1_TOTAL = sum(points for _, points in graded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb"))


def nbgrader(*args, cwd, env=ENV, check=True):
    run = subprocess.run(["nbgrader", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert not check or run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


def ppedu(*args, cwd, env=ENV):
    return subprocess.run([sys.executable, "-m", "ppedu", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def score(course, assignment, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        return gb.find_submission(assignment, student).score


def test_collect_follows_no_link_a_student_put_in_the_exchange(course, tmp_path):
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)
    env = {**ENV, "PPEDU_EXCHANGE": str(exchange)}
    nbgrader("release_assignment", "ps1", "--force", cwd=course, env=env)
    inbound = exchange / "ppedu" / "inbound"
    stamp = "2026-12-01 10:00:00.000000 UTC"
    linked = inbound / f"linker+ps1+{stamp}+abc"  # an inbound folder whose notebook is the instructor's solution
    linked.mkdir()
    (linked / "ps1.ipynb").symlink_to(course / "solutions" / "ps1" / "ps1.ipynb")
    (linked / "timestamp.txt").symlink_to("/dev/zero")
    (linked / "book.db").symlink_to(course / "gradebook.db")
    (inbound / f"folder_linker+ps1+{stamp}+abd").symlink_to(course / "solutions" / "ps1")  # the folder itself
    honest = inbound / f"honest+ps1+{stamp}+abe"
    honest.mkdir()
    shutil.copy(SOLVED, honest / "ps1.ipynb")
    (honest / "timestamp.txt").write_text(stamp)
    nbgrader("collect", "ps1", "--update", cwd=course, env=env)
    for student in ("linker", "folder_linker", "honest"):
        folder = course / "submitted" / student / "ps1"
        assert folder.is_dir() and not folder.is_symlink()
        assert not any(p.is_symlink() for p in folder.rglob("*")), student
    assert not (course / "submitted" / "linker" / "ps1" / "ps1.ipynb").exists()
    run = ppedu("grade", "ps1", "--student", "linker", "--student", "folder_linker", "--student", "honest", cwd=course)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (score(course, "ps1", "linker"), score(course, "ps1", "folder_linker"), score(course, "ps1", "honest")) == (0, 0, PS1_AUTO)


def test_a_folder_put_in_submitted_by_hand_is_taken_in_too(course):
    """A hand-in cloned from a student's repository or unpacked from a tar file keeps its links: autograding
    (plain nbgrader autograde here) still reads only what the intake took in."""
    folder = course / "submitted" / "cloned" / "ps1"
    folder.mkdir(parents=True)
    (folder / "ps1.ipynb").symlink_to(course / "solutions" / "ps1" / "ps1.ipynb")
    (folder / "keys.py").symlink_to(course / "grader" / "keys" / "ps1.py")
    nbgrader("autograde", "ps1", "--student", "cloned", "--force", cwd=course)
    assert score(course, "ps1", "cloned") == 0
    graded = nbformat.read(course / "autograded" / "cloned" / "ps1" / "ps1.ipynb", as_version=4)
    assert "keys.py (a symbolic link)" in graded.cells[0].source  # the feedback names what was left out
    assert not (course / "autograded" / "cloned" / "ps1" / "keys.py").exists()


def test_zip_collect_takes_plain_files_out_of_archives(course):
    archive = course / "downloaded" / "ps1" / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "ps1_zipper_attempt_2026-12-01-10-00-00_ps1.zip", "w") as zipped:
        zipped.write(SOLVED, "ps1.ipynb")
        link = zipfile.ZipInfo("answers.json")
        link.external_attr = 0o120777 << 16
        zipped.writestr(link, str(course / "gradebook.db"))
    regexp = r"ps1_(?P<student_id>[^_]+)_attempt_(?P<timestamp>[0-9\-]+)_\w+\.zip"  # a platform's archive names
    nbgrader("zip_collect", "ps1", "--force", f"--FileNameCollectorPlugin.named_regexp={regexp}", cwd=course)
    folder = course / "submitted" / "zipper" / "ps1"
    assert (folder / "ps1.ipynb").read_bytes() == SOLVED.read_bytes()
    assert not (folder / "answers.json").exists()
    assert (folder / "timestamp.txt").read_text().startswith("2026-12-01 10:00:00")  # the platform's time, from the name
    run = ppedu("grade", "ps1", "--student", "zipper", cwd=course)
    assert run.returncode == 0 and f"zipper: {PS1_AUTO:g}/{PS1_TOTAL:g}" in run.stdout, run.stdout + run.stderr


def test_grading_in_a_copy_of_the_repository_grades_with_that_copys_ppedu(tmp_path):
    """The course graded where it was not installed from (a clone, a copy on the grading server): the kernel and the
    answer cells import the grading process's own ppedu, so the solutions still earn every point."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "build", "tests", "benchmarks", "docs",
                                                             "notebooks", "submitted", "autograded", "feedback",
                                                             "intake", "gradebook.db", "__pycache__"))
    nbgrader("generate_assignment", "ps1", "--force", cwd=copy)
    (copy / "submitted" / "me" / "ps1").mkdir(parents=True)
    shutil.copy(SOLVED, copy / "submitted" / "me" / "ps1" / "ps1.ipynb")
    nbgrader("autograde", "ps1", cwd=copy)
    assert score(copy, "ps1", "me") == PS1_AUTO


def test_no_kernel_no_grades(course, tmp_path):
    """Where no kernel can start, ppedu grade says so and grades nobody, instead of "done" with everyone at 0."""
    spec = tmp_path / "kernels" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": ["/bin/false", "{connection_file}"],
                                                  "display_name": "broken", "language": "python"}))
    env = {**ENV, "JUPYTER_PATH": str(tmp_path / "kernels")}
    (course / "submitted" / "honest_nobody" / "ps1").mkdir(parents=True, exist_ok=True)
    shutil.copy(SOLVED, course / "submitted" / "honest_nobody" / "ps1" / "ps1.ipynb")
    run = ppedu("grade", "ps1", "--student", "honest_nobody", cwd=course, env=env)
    assert run.returncode == 2 and "no notebook can be graded here" in run.stderr and "done" not in run.stdout, (
        run.stdout + run.stderr)
    assert run.stderr.count("\n") == 1
    assert not (course / "autograded" / "honest_nobody").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to check the modes a class's machine is set up with")
def test_make_private_closes_the_course_folder(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path)
    shutil.copytree(ROOT / "student", tmp_path / "student")
    subprocess.run(["make", "-s", "private"], cwd=tmp_path, check=True, capture_output=True)
    assert Path(tmp_path).stat().st_mode & 0o777 == 0o700


def test_saved_answers_in_an_archive_go_through_the_same_rules(course, tmp_path, monkeypatch):
    """The counting exam's answers file arriving in a zip: plain, it is judged; a link in its place (to a classmate's
    answers) is left out, the student's feedback names it, and the exam scores 0 with the reason."""
    from grader.exam import POINTS
    from test_exam import _answer

    archive = course / "downloaded" / "counting" / "archive"
    shutil.rmtree(archive.parent, ignore_errors=True)
    archive.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    for student in ("honest_saver", "link_saver"):
        _answer("honest_saver")  # the link's target: the honest student's own right answers
        with zipfile.ZipFile(archive / f"counting+{student}.zip", "w") as zipped:
            zipped.write(ROOT / "exercises" / "counting" / "counting.ipynb", "counting.ipynb")
            if student == "honest_saver":
                zipped.write(tmp_path / "counting.json", "counting.json")
            else:
                link = zipfile.ZipInfo("counting.json")
                link.external_attr = 0o120777 << 16
                zipped.writestr(link, str(course / "submitted" / "honest_saver" / "counting" / "counting.json"))
    said = nbgrader("zip_collect", "counting", "--force", cwd=course).stderr
    assert "counting+link_saver.zip: left out counting.json (a link or not a regular file)" in said, said[-3000:]
    run = ppedu("grade", "counting", "--student", "honest_saver", "--student", "link_saver", cwd=course)
    assert run.returncode == 0, run.stdout + run.stderr
    assert score(course, "counting", "honest_saver") == sum(POINTS.values())
    assert score(course, "counting", "link_saver") == 0
    graded = nbformat.read(course / "autograded" / "link_saver" / "counting" / "counting.ipynb", as_version=4)
    assert "counting.json (a link or not a regular file)" in graded.cells[0].source
    verdicts = "".join(o.get("text", "") for c in graded.cells for o in c.get("outputs", []))
    assert "counting.json was a link or not a regular file, which the autograder does not take" in verdicts, verdicts


def test_zip_collect_takes_folders_single_files_and_the_newest_of_a_students_hand_ins(course):
    """A platform's download: a folder per student, a file per student, and students who handed in twice. Where the
    names give times, the newest hand-in is collected and the older named; where they do not, neither is."""
    archive = course / "downloaded" / "ps1" / "archive"
    shutil.rmtree(archive.parent, ignore_errors=True)
    (archive / "foldered").mkdir(parents=True)
    shutil.copy(SOLVED, archive / "foldered" / "ps1.ipynb")
    shutil.copy(SOLVED, archive / "single_ps1.ipynb")
    for name in ("twice@20261201T100000.zip", "twice@20261202T100000.zip", "both.zip", "both.tar.gz"):
        if name.endswith(".zip"):
            with zipfile.ZipFile(archive / name, "w") as zipped:
                zipped.writestr("ps1.ipynb", name)  # which one was collected shows in the notebook's bytes
        else:
            shutil.copy(archive / "both.zip", archive / name)
    regexp = r"(?P<student_id>[a-z]+)(@(?P<timestamp>\d{8}T\d{6}))?(_(?P<file_id>\w+))?(\.zip|\.ipynb|\.tar\.gz)?"
    run = nbgrader("zip_collect", "ps1", "--force", f"--FileNameCollectorPlugin.named_regexp={regexp}", cwd=course,
                   check=False)
    said = run.stdout + run.stderr
    assert run.returncode == 1, said[-3000:]
    submitted = course / "submitted"
    assert (submitted / "foldered" / "ps1" / "ps1.ipynb").read_bytes() == SOLVED.read_bytes()
    assert (submitted / "single" / "ps1" / "ps1.ipynb").read_bytes() == SOLVED.read_bytes()
    assert (submitted / "twice" / "ps1" / "ps1.ipynb").read_text() == "twice@20261202T100000.zip"
    assert (submitted / "twice" / "ps1" / "timestamp.txt").read_text().startswith("2026-12-02 10:00:00")
    assert not (submitted / "both").exists()
    assert "twice@20261201T100000.zip: not collected: an older hand-in of twice's" in said
    assert "both.tar.gz: not collected: both has 2 hand-ins" in said and "both.zip: not collected: both has" in said
    assert "3 hand-in(s) of ps1 left out" in said
