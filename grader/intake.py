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
import re
import shutil
import stat
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
_GOOD_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Limits:
    """What a submission may hold: bytes per file (a notebook may be larger: only what can be read of it
    is kept), bytes in all, files in all, folders deep."""

    file_bytes: int = 16 * 2**20
    notebook_bytes: int = 64 * 2**20
    total_bytes: int = 96 * 2**20
    files: int = 500
    depth: int = 8


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

def _text(value: object, limit: int = 1_000_000) -> str:
    """A cell's source as text: a string or a list of strings, with lone surrogates replaced."""
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        value = "".join(value)
    if not isinstance(value, str):
        return ""
    return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value[:limit])


def _surrogates(cell: dict[str, Any]) -> bool:
    source = cell.get("source", cell.get("input"))
    texts = source if isinstance(source, list) else [source]
    return any(isinstance(t, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in t) for t in texts)


def _nbgrader(meta: object) -> dict[str, Any] | None:
    """The cell's nbgrader metadata, its plain values only (the rest of a cell's metadata is not graded)."""
    data = meta.get("nbgrader") if isinstance(meta, dict) else None
    if not isinstance(data, dict):
        return None
    kept = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, (str, bool, int, float))
            and not (isinstance(v, str) and len(v) > 200)}
    return {k: _text(v) if isinstance(v, str) else v for k, v in kept.items()}


def _cells_of(document: object) -> list[Any]:
    if isinstance(document, dict):
        if isinstance(document.get("cells"), list):
            return document["cells"]
        sheets = document.get("worksheets")  # nbformat 3
        if isinstance(sheets, list):
            return [c for w in sheets if isinstance(w, dict) and isinstance(w.get("cells"), list) for c in w["cells"]]
    return []


def _scan(text: str) -> list[Any]:
    """The cells that can be read one by one out of a notebook file that does not parse as a whole."""
    decoder, cells = json.JSONDecoder(), []
    for match in re.finditer(r'\{\s*"cell_type"', text):
        try:
            cell, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        cells.append(cell)
    return cells


def repair(raw: bytes, release: NotebookNode | None) -> tuple[NotebookNode, list[str]]:
    """A valid notebook holding every cell that can be read from ``raw`` (the release's metadata, new cell
    ids, no outputs), and notes on what had to be done; if nothing can be read, ``release`` itself."""
    notes: list[str] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        notes.append("it held bytes that are not UTF-8 text; they were replaced")
    opening = text.lstrip("\ufeff \t\r\n")[:40]
    if not opening.startswith("{"):  # not a notebook cut short or damaged: some other file under a notebook's name
        if release is None:
            raise ValueError("it is not a notebook file and there is no release to grade instead")
        return nbformat.from_dict(release), notes + [f"it is not a notebook file (it begins {opening!r}): graded as "
                                                     "the released notebook"]
    try:
        cells = _cells_of(json.loads(text))
        if not cells:
            notes.append("it holds no cells")
    except (ValueError, RecursionError):
        cells = _scan(text)
        notes.append(f"it is not a complete notebook file; {len(cells)} cell(s) could be read from it")
    made = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown", "raw") else "markdown"
        source = _text(cell.get("source", cell.get("input")))
        if "\ufffd" in source and "lone surrogates" not in " ".join(notes) and _surrogates(cell):
            notes.append("it held characters that are not valid Unicode (lone surrogates); they were replaced")
        new = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell if kind == "markdown"
               else nbformat.v4.new_raw_cell)(source)
        if (meta := _nbgrader(cell.get("metadata"))) is not None:
            new.metadata["nbgrader"] = meta
        new.id = f"cell-{len(made)}-{uuid.uuid4().hex[:8]}"
        made.append(new)
        if isinstance(cell.get("id"), str) and not _GOOD_ID.match(cell["id"]) and "invalid cell ids" not in notes:
            notes.append("invalid cell ids")
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
            intake = take_in(source, area / student / assignment, release)
            collected = intake_notes(root, student, assignment, "collected")  # left out of its archive or folder
            notes_for_instructor(root, student, assignment, "intake", [*collected, *intake.notes])


def guard_autograde() -> None:
    """Make nbgrader's Autograde read submissions only from the grading area, filled first by
    :func:`fill_area` (nbgrader has no setting for where its autograder reads from)."""
    from nbgrader.converters.autograde import Autograde

    if getattr(Autograde, "_ppedu_intake", False):
        return
    init_notebooks = Autograde.init_notebooks

    def init_from_the_area(self: Any) -> None:
        fill_area(self.coursedir)
        init_notebooks(self)

    Autograde.init_notebooks = init_from_the_area  # type: ignore[method-assign]
    # its first pass (sanitizing) reads the submission, its second its own output
    Autograde._input_directory = property(  # type: ignore[assignment]
        lambda self: AREA if self._sanitizing else self.coursedir.autograded_directory)
    Autograde._ppedu_intake = True  # type: ignore[attr-defined]


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
