"""Taking a submission in: the only way a student's bytes reach the trusted side.

A submission folder is copied into the grading area without following a single link: regular files
only, each opened relative to its folder with ``O_NOFOLLOW`` and checked again once open, within
:class:`Limits` (bytes per file and in all, files, depth) and with names that are plain text. Links,
hard links, pipes, sockets, devices, hidden and oversize files are dropped, each named in a note
for the student. A notebook is then rewritten from what can be read of it: a file that does not
parse, is cut short, has invalid ids or text that is not Unicode becomes a valid notebook holding
every cell that could still be read (its answers, never its outputs); one that is missing or was
dropped becomes the release, so the student is graded as blank with a note saying why.

Every path from a student's bytes to a grade goes through :func:`take_in`: nbgrader's ``collect``
(:class:`Collect`, from the exchange's inbound folder) copies with :func:`copy_in` into ``submitted/``, and
``zip_collect`` unpacks archives with the same rules (:mod:`grader.archives`); autograding (``ppedu grade``,
``nbgrader autograde`` and the formgrader's button, which all use nbgrader's Autograde) reads submissions only
from the grading area :data:`AREA`, which :func:`guard_autograde` fills from ``submitted/`` first. The area is the
grader's alone (:func:`private_folder`): it also keeps, beside each submission, what collecting and taking it in
left out, for the student's feedback and the instructor.

>>> import tempfile; folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "ps1.ipynb").write_text("{}"); (folder / "link").symlink_to("/etc/hostname")
>>> copy_in(folder, folder.parent / (folder.name + "-in"))
['link (a symbolic link)']
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.preprocessors import NbGraderPreprocessor

#: The grading area, beside submitted/ in the course directory: what autograding reads.
AREA = "intake"
#: Folders nbgrader and editors leave behind: not the student's work, not worth a note.
IGNORED = (".ipynb_checkpoints", "__pycache__")


@dataclass(frozen=True)
class Limits:
    """What a submission may hold: bytes per file (a notebook may be larger: only what can be read of it
    is kept), bytes in all, files in all, folders deep; and of a notebook: cells, characters per cell and in all, bytes
    of pasted pictures, and what reading it may take (memory, seconds of CPU time: :func:`read_cells`)."""

    file_bytes: int = 16 * 2**20
    notebook_bytes: int = 64 * 2**20
    total_bytes: int = 96 * 2**20
    files: int = 500
    depth: int = 8
    cells: int = 2_000
    cell_chars: int = 200_000
    chars: int = 4_000_000
    picture_bytes: int = 8 * 2**20
    read_memory: int = 2**30
    read_seconds: int = 30


def _kind(mode: int) -> str:
    return {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket",
            stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}.get(stat.S_IFMT(mode), "not a regular file")


def private_folder(path: Path, strict: bool = True) -> Path:
    """``path`` as a folder only this user can open: made (mode 0700) where it is missing; where it is there, it must
    be a folder of this user's own, not a link, and is closed to everyone else. One that is not (``strict``:
    ``PermissionError``; else it is left as it is: a folder someone else made, which nbgrader may still use)."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        if not strict:
            return path
        raise PermissionError(f"{path} must be a folder of the grader's own, not a link or another user's: move it "
                              "away and run the command again")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700, follow_symlinks=False)
    return path


def close_working_folders(coursedir: Any) -> None:
    """nbgrader's working folders (submissions, graded copies, feedback) made, or closed, so that only the grader can
    open them, whatever the course folder's own mode (``make private`` closes that too)."""
    for name in (coursedir.submitted_directory, coursedir.autograded_directory, coursedir.feedback_directory):
        private_folder(Path(coursedir.root) / name, strict=False)


def plain_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 (os.fsdecode's surrogates)
        return False
    return name.isprintable() and name not in (".", "..") and len(name) <= 255


def copy_in(source: Path, target: Path, limits: Limits = Limits()) -> list[str]:
    """Copy the folder ``source`` to ``target`` (made afresh), regular files only, never following a link;
    returns what was left out and why, one line each (``source`` itself a link or no folder: everything)."""
    if target.exists() or target.is_symlink():
        shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
    target.mkdir(parents=True, mode=0o700)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        what = _kind(os.lstat(source).st_mode) if os.path.lexists(source) else "missing"
        return [f"the submission folder itself ({what}): nothing was taken from it"]
    # every entry looked at counts, taken or not: a folder of a million links or files is not read to its end
    budget = {"files": limits.files, "bytes": limits.total_bytes, "entries": 2 * limits.files}
    dropped: list[str] = []
    try:
        _copy_folder(fd, target, "", limits, budget, dropped, 0)
    finally:
        os.close(fd)
    return dropped


KEPT_FIRST = ("timestamp.txt", "submission_secret.txt")


def _copy_folder(fd: int, target: Path, shown: str, limits: Limits, budget: dict[str, int], dropped: list[str],
                 depth: int) -> None:
    # the answers, the submission's time and its secret (nbgrader's feedback is released by it) first, whatever else
    # a folder holds
    names = sorted(os.listdir(fd), key=lambda n: (not n.endswith((".ipynb", ".json")) and n not in KEPT_FIRST, n))
    for at, name in enumerate(names):
        where = f"{shown}{name}" if plain_name(name) else f"{shown}{name!r}"
        if name in IGNORED:
            continue
        budget["entries"] -= 1
        if budget["entries"] < 0 or budget["files"] <= 0:
            dropped.append(f"{shown or './'} ({len(names) - at} more entries, not read: more than {limits.files} files "
                           "in the submission)")
            budget["entries"] = -1  # and nothing more of any folder
            return
        if not plain_name(name) or name.startswith("."):
            dropped.append(f"{where} (a hidden file or a name that is not plain text)")
            continue
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            if depth + 1 >= limits.depth:
                dropped.append(f"{where}/ (folders nested more than {limits.depth} deep)")
                continue
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                dropped.append(f"{where} (it changed while it was being read)")
                continue
            try:
                (target / name).mkdir(mode=0o700)
                _copy_folder(sub, target / name, f"{where}/", limits, budget, dropped, depth + 1)
            finally:
                os.close(sub)
        elif not stat.S_ISREG(info.st_mode):
            dropped.append(f"{where} ({_kind(info.st_mode)})")
        else:
            if why := _copy_file(fd, name, target / name, limits, budget):
                dropped.append(f"{where} ({why})")


def _copy_file(fd: int, name: str, target: Path, limits: Limits, budget: dict[str, int]) -> str | None:
    """Copy one regular file; why it was left out, or ``None``."""
    largest = limits.notebook_bytes if name.endswith(".ipynb") else limits.file_bytes
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return "it could not be opened as a plain file"
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since it was listed
            return _kind(info.st_mode)
        if info.st_nlink > 1:
            return "a hard link to another file"
        if info.st_size > largest and not name.endswith(".ipynb"):
            return f"larger than {largest // 2**20} MB"
        if budget["files"] <= 0:
            return f"more than {limits.files} files in the submission"
        if info.st_size > budget["bytes"]:
            return "the submission's files together are too large"
        data = os.read(src, largest) if info.st_size else b""
        while len(data) < min(info.st_size, largest):
            chunk = os.read(src, largest - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(src)
    budget["files"] -= 1
    budget["bytes"] -= len(data)
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(out, "wb") as file:
        file.write(data)
    return None


# ---- notebooks ---------------------------------------------------------------------------------------------

READER = Path(__file__).with_name("reading.py")


def read_cells(raw: bytes, released: list[str], limits: Limits = Limits()) -> dict[str, Any]:
    """What :mod:`grader.reading` reads of a notebook file, in a process of its own under ``limits``' memory and time
    (``{"cells": …, "notes": …}`` or ``{"not_notebook": …}``); ``{"unread": why}`` where it could not be read
    there."""
    header = {"limits": {"cells": limits.cells, "cell_chars": limits.cell_chars, "chars": limits.chars,
                         "picture_bytes": limits.picture_bytes, "memory": limits.read_memory,
                         "seconds": limits.read_seconds}, "released": released}
    try:
        run = subprocess.run([sys.executable, "-I", "-S", "-c", READER.read_text()], capture_output=True,
                             input=json.dumps(header).encode() + b"\n" + raw, timeout=2 * limits.read_seconds + 10,
                             env={"LANG": "C.UTF-8"})
        read = json.loads(run.stdout) if run.returncode == 0 else None
    except (subprocess.TimeoutExpired, ValueError, RecursionError):
        read = None
    if not isinstance(read, dict):
        return {"unread": f"reading it took more than the grader gives a notebook ({limits.read_seconds} s of time, "
                          f"{limits.read_memory // 2**20} MB of memory)"}
    return read


def new_cell(kind: str, source: str) -> NotebookNode:
    """A cell of nbformat 4 (``"code"``, ``"markdown"`` or ``"raw"``) with a fresh id, made without validating it on its
    own (nbformat's makers check each cell against the whole schema: thousands of cells would take seconds).

    >>> new_cell("code", "x = 1").outputs, new_cell("markdown", "*hi*").cell_type
    ([], 'markdown')
    """
    cell = {"cell_type": kind, "id": uuid.uuid4().hex[:12], "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return nbformat.from_dict(cell)


def repair(raw: bytes, release: NotebookNode | None, limits: Limits = Limits()) -> tuple[NotebookNode, list[str]]:
    """A valid notebook holding every cell that can be read from ``raw`` within ``limits`` (:func:`read_cells`; the
    release's metadata, new cell ids, no outputs, text cells' pasted pictures), and notes on what had to be done; if
    nothing can be read, ``release`` itself."""
    released = [gid for c in (release.cells if release is not None else [])
                if isinstance(gid := c.get("metadata", {}).get("nbgrader", {}).get("grade_id"), str)]
    read = read_cells(raw, released, limits)
    notes = [str(n) for n in read.get("notes", [])]
    if "cells" not in read:
        why = (f"it is not a notebook file (it begins {read['not_notebook']!r})" if "not_notebook" in read else
               f"it could not be read: {read.get('unread')}")
        if release is None:
            raise ValueError(f"{why} and there is no release to grade instead")
        return nbformat.from_dict(release), notes + [f"{why}: graded as the released notebook"]
    made = []
    for cell in read["cells"]:
        kind, source = cell["type"], cell["source"]
        new = new_cell(kind, source)
        if cell.get("nbgrader") is not None:
            new.metadata["nbgrader"] = cell["nbgrader"]
        if kind == "markdown" and cell.get("pictures"):
            new.attachments = cell["pictures"]
        new.id = f"cell-{len(made)}-{uuid.uuid4().hex[:8]}"
        made.append(new)
    if not made:
        if release is None:
            raise ValueError("no cell could be read and there is no release to grade instead")
        return nbformat.from_dict(release), notes + ["nothing could be read from it: graded as the released notebook"]
    notebook = nbformat.v4.new_notebook(cells=made)
    if release is not None:
        notebook.metadata = nbformat.from_dict(release.metadata)
    return notebook, notes


@dataclass(frozen=True)
class Intake:
    """What taking a submission in left out or repaired, one line each, for the student's feedback."""

    notes: tuple[str, ...]

    def text(self) -> str:
        return ("**What the autograder took from your submission.** It grades only plain files, never following "
                "a link, and repairs a notebook it cannot read as it is:\n\n" + "\n".join(f"* {n}" for n in self.notes))


def take_in(source: Path, target: Path, release: Path, limits: Limits = Limits()) -> Intake:
    """``source`` (a submission folder) copied into ``target`` (:func:`copy_in`), each of the release folder's
    notebooks rewritten there from what can be read of the student's (:func:`repair`), or as released."""
    notes = [f"left out: {line}" for line in copy_in(source, target, limits)]
    for released in sorted(release.glob("*.ipynb")) if release.is_dir() else []:
        template = nbformat.read(released, as_version=4)
        mine = target / released.name
        if mine.is_dir():  # a folder in the notebook's place: not the student's notebook
            shutil.rmtree(mine)
        if not mine.is_file():
            notebook, why = nbformat.from_dict(template), [f"{released.name} was not in the submission as a plain "
                                                             "file: graded as the released notebook"]
        else:
            notebook, why = repair(mine.read_bytes(), template)
            why = [f"{released.name}: {line}" for line in why]
        nbformat.write(notebook, mine)
        notes += why
    return Intake(tuple(notes))


# ---- nbgrader's ways in ------------------------------------------------------------------------------------

def notes_path(root: Path, student: str, assignment: str, kind: str = "intake") -> Path:
    """Where the grading area keeps a submission's notes of one ``kind`` (beside its folder, not in it): what
    collecting it (``collected``) and taking it in (``intake``) left out, for the student too; the judge's ``review``
    list, for the instructor only; and its autograding status (:mod:`grader.status`)."""
    return root / AREA / student / f"{assignment}.{kind}.json"


def keep(root: Path, student: str, assignment: str, kind: str, data: Any) -> None:
    """Keep ``data`` (JSON) of one ``kind`` on a submission in the grading area (made private first)."""
    if not plain_name(student) or student.startswith("."):
        raise ValueError(f"{student!r} is not a student id")
    path = notes_path(root, student, assignment, kind)
    private_folder(root / AREA)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(json.dumps(data))


def notes_for_instructor(root: Path, student: str, assignment: str, kind: str, notes: list[str]) -> None:
    """Keep ``notes`` of one ``kind`` on a submission in the grading area."""
    keep(root, student, assignment, kind, notes)


def fill_area(coursedir: Any) -> None:
    """Take every submission nbgrader's Autograde is about to read (its student and assignment patterns)
    from ``submitted/`` into the grading area."""
    root = Path(coursedir.root)
    submitted = root / coursedir.submitted_directory
    area = private_folder(root / AREA)
    close_working_folders(coursedir)
    if not submitted.is_dir() or submitted.is_symlink():
        return
    for student in sorted(os.listdir(submitted)):
        if not fnmatch.fnmatchcase(student, coursedir.student_id or "*") or not plain_name(student):
            continue
        folder = submitted / student
        linked = folder.is_symlink()  # a student's folder that is a link: nothing in it is theirs, all is blank
        if not linked and not folder.is_dir():
            continue
        for assignment in sorted(os.listdir(root / coursedir.source_directory if linked else folder)):
            if not fnmatch.fnmatchcase(assignment, coursedir.assignment_id) or not plain_name(assignment):
                continue
            release = Path(coursedir.format_path(coursedir.release_directory, ".", assignment))
            source = folder / assignment if not linked else folder  # copy_in refuses a link
            start = time.monotonic()
            intake = take_in(source, area / student / assignment, release)
            TAKING_IN[student, assignment] = time.monotonic() - start
            collected = intake_notes(root, student, assignment, "collected")  # left out of its archive or folder
            notes_for_instructor(root, student, assignment, "intake", [*collected, *intake.notes])


#: Seconds taking each (student, assignment) in took, since the grading area was filled: part of its budget.
TAKING_IN: dict[tuple[str, str], float] = {}


def guard_autograde() -> None:
    """Make nbgrader's Autograde read submissions only from the grading area, filled first by
    :func:`fill_area` (nbgrader has no setting for where its autograder reads from); start each submission's clock
    (:attr:`ppedu.grading.execute.SandboxedExecute.clock`) when taking it in began, so that everything done for it on
    the grader's side counts in its budget; and leave no earlier time on a submission without one of its own."""
    from nbgrader.converters.autograde import Autograde

    from ppedu.grading.execute import SandboxedExecute

    if getattr(Autograde, "_ppedu_intake", False):
        return
    init_notebooks, init_assignment = Autograde.init_notebooks, Autograde.init_assignment

    def init_from_the_area(self: Any) -> None:
        fill_area(self.coursedir)
        init_notebooks(self)

    def init_with_its_clock(self: Any, assignment_id: str, student_id: str) -> None:
        taking_in = TAKING_IN.pop((student_id, assignment_id), 0.0)
        SandboxedExecute.clock[assignment_id, student_id] = time.monotonic() - taking_in
        init_assignment(self, assignment_id, student_id)
        untimed(self, assignment_id, student_id)

    Autograde.init_notebooks = init_from_the_area  # type: ignore[method-assign]
    Autograde.init_assignment = init_with_its_clock  # type: ignore[method-assign]
    # its first pass (sanitizing) reads the submission, its second its own output
    Autograde._input_directory = property(  # type: ignore[assignment]
        lambda self: AREA if self._sanitizing else self.coursedir.autograded_directory)
    Autograde._ppedu_intake = True  # type: ignore[attr-defined]


def untimed(autograde: Any, assignment: str, student: str) -> None:
    """nbgrader's Autograde records a submission's time only where it has one (timestamp.txt): a hand-in without a
    usable time would keep the time of an earlier hand-in (on time, say) in the gradebook. It has none."""
    from nbgrader.api import Gradebook

    coursedir = autograde.coursedir
    if coursedir.get_existing_timestamp(autograde._format_source(assignment, student)) is not None:
        return
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        submission = gb.find_submission(assignment, student)
        if submission.timestamp is not None:
            submission.timestamp = None
            gb.db.commit()


def intake_notes(root: Path, student: str, assignment: str, kind: str = "intake") -> list[str]:
    """What the intake (or, for ``kind="review"``, the judge) said of a submission (nothing if it has not been
    taken in)."""
    try:
        notes = json.loads(notes_path(root, student, assignment, kind).read_text())
    except (OSError, ValueError):
        return []
    return [str(n) for n in notes] if isinstance(notes, list) else []


class IntakeNotes(NbGraderPreprocessor):
    """Sanitizing step: the intake's notes on a submission, as a text cell at the top of the graded notebook
    (so the feedback says which files were left out and what was repaired)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info = resources["nbgrader"]
        notes = intake_notes(Path(CourseDirectory(config=self.config).root), info["student"], info["assignment"])
        for note in notes:
            self.log.warning("%s: %s", info["student"], note)
        if notes:
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(Intake(tuple(notes)).text()))
        return nb, resources


class Collect(ExchangeCollect):
    """nbgrader's collect, copying each submission from the exchange with :func:`copy_in`: as the instructor,
    it must never follow what a student put in their inbound folder.

    On a machine where each student is a Unix user (a JupyterHub with system users), an inbound folder is the work
    of the user who owns it: nbgrader only warns when a folder's name claims another student, and collects it as
    theirs (a classmate's newer "submission" would replace their work). Here such a folder, and one whose name holds
    no time, is refused: never newer than anything, never copied (a folder of root's or of the collecting user's own
    was put there by hand, and is taken). ``c.ExchangeCollect.check_owner = False`` where one account writes every
    student's folders (containers on Kubernetes)."""

    _refused: dict[str, str] = {}

    def _path_to_record(self, path: str) -> dict[str, Any]:
        name = os.path.basename(path)
        parts = name.rsplit("+", 3)
        why = None
        try:
            record = super()._path_to_record(path)
        except (ValueError, OverflowError):
            record, why = {"username": parts[0], "filename": name}, "its name holds no time"
        if why is None and (not plain_name(record["username"]) or record["username"].startswith(".")):
            why = "its name holds no student id"  # `..+ps1+…` would be collected into the course folder itself
        if why is None and self.check_owner and (owner := _owner(path)) not in (None, record["username"]):
            why = f"it is {owner}'s, not {record['username']}'s"
        if why:
            record["timestamp"] = datetime.min  # older than any real submission (nbgrader's times are naive UTC)
            self._refused = {**self._refused, name: why}
        return record

    def init_src(self) -> None:
        """nbgrader's choice of each student's newest folder, without the refused ones: not even an older real
        submission of the named student is replaced by them (or, with ``--update``, deleted for them)."""
        super().init_src()
        self.src_records = [r for r in self.src_records if r["filename"] not in self._refused]

    def copy_files(self) -> None:
        close_working_folders(self.coursedir)
        super().copy_files()
        for name, why in sorted(self._refused.items()):
            self.log.error("%s: not collected: %s", name, why)
        if self._refused:
            self.log.error("%d folder(s) in the exchange left out (above); the class's submissions were collected",
                           len(self._refused))

    def do_copy(self, src: str, dest: str, log: Any = None) -> None:
        dropped = copy_in(Path(src), Path(dest))
        for line in dropped:
            self.log.warning("%s: left out %s", Path(src).name, line)
        student = Path(src).name.rsplit("+", 3)[0]  # as nbgrader's collect reads it
        notes_for_instructor(Path(self.coursedir.root), student, self.coursedir.assignment_id, "collected",
                             [f"left out: {line}" for line in dropped])


def _owner(path: str) -> str | None:
    """The login name of the user owning ``path`` (not following a link); ``None`` where that cannot be said, or where
    it is root or the user collecting, who put it there by hand."""
    try:
        import pwd

        uid = os.lstat(path).st_uid
    except (ImportError, OSError):  # Windows, or gone
        return None
    if uid in (0, os.geteuid()):
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"


def safe_timestamps() -> None:
    """nbgrader reads a submission's timestamp.txt whole, following links (a link to /dev/zero never ends):
    read at most a line of it, as a plain file."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import parse_utc

    def get_existing_timestamp(self: Any, dest_path: str) -> Any:
        try:
            fd = os.open(os.path.join(dest_path, "timestamp.txt"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            text = os.read(fd, 100).decode("utf-8", "replace").strip() if stat.S_ISREG(os.fstat(fd).st_mode) else ""
        finally:
            os.close(fd)
        try:
            return parse_utc(text)
        except ValueError:
            return None

    CourseDirectory.get_existing_timestamp = get_existing_timestamp  # type: ignore[method-assign]
