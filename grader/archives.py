"""Hand-ins that arrive as files (``nbgrader zip_collect``): each entry of ``downloaded/ASSIGNMENT/archive/`` is one
student's hand-in — a zip or tar archive, a folder, or a single file — and its *name* says whose it is
(``c.FileNameCollectorPlugin.named_regexp``, matched against the whole name: ``ASSIGNMENT+ID.zip``, what ``ppedu
handin`` writes). Nothing inside a hand-in can name its owner: the :class:`Extractor` files each one under the
student its name gives (``extracted/ID/``, a single top folder inside it dropped), and the :class:`Collector` reads
the student from that folder, never from a path the archive chose.

Archives are read as streams, their limits checked before anything is written: a zip's member directory is counted
entry by entry before :mod:`zipfile` parses it, and a tar's members are read one at a time from a decompressed stream
that stops at the size a submission may have, so an archive with a million members, or a small file that unpacks to
gigabytes, is refused in the time it takes to read its first :class:`~grader.intake.Limits` worth. Only regular files
with plain names inside the archive's folder are written (never a link, a device or an absolute or ``..`` path).

A hand-in that cannot be taken (a name that says no student, a second hand-in of the same student that nothing says
is newer, an archive that cannot be read or holds more than a submission may) is left out, named, with its reason;
the others are collected. ``zip_collect`` ends with a summary naming every hand-in left out, and exits 1 if any was
(:func:`guard_zip_collect`). What was left out of a collected hand-in is kept for the student's feedback.

>>> import io, tempfile; folder = Path(tempfile.mkdtemp()); buffer = io.BytesIO()
>>> with zipfile.ZipFile(folder / "ps1+alice.zip", "w") as z:
...     z.writestr("ps1+bob/ps1.ipynb", "{}"); z.writestr("../escape.txt", "x")
>>> unpack(folder / "ps1+alice.zip", folder / "alice")
['../escape.txt (a name outside the archive, hidden, or not plain text)']
>>> sorted(p.name for p in (folder / "alice").iterdir())  # the archive's only folder is dropped: it names nobody
['ps1.ipynb']
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import lzma
import os
import re
import shutil
import stat
import struct
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from nbgrader.plugins import ExtractorPlugin, FileNameCollectorPlugin
from nbgrader.utils import parse_utc

from grader.intake import Limits, close_working_folders, copy_in, notes_for_instructor, plain_name, private_folder
from ppedu.grading.handin import PACKED

#: What ``zip_collect`` unpacks; any other file in archive/ is a hand-in of one file.
ARCHIVES = tuple(f".{kind}" for kind in PACKED)
_DECOMPRESS: dict[str, Callable[[IO[bytes]], IO[bytes]]] = {
    ".tar": lambda raw: raw, ".tar.gz": lambda raw: gzip.GzipFile(fileobj=raw),
    ".tgz": lambda raw: gzip.GzipFile(fileobj=raw), ".tar.bz2": lambda raw: bz2.BZ2File(raw),
    ".tar.xz": lambda raw: lzma.LZMAFile(raw)}
_CHUNK = 2**20


class Refused(Exception):
    """An archive taken not at all; its message says why, in a few words."""


def archive_kind(name: str) -> str | None:
    """The archive suffix ``name`` ends with (``.tar.gz``…), or ``None``."""
    return next((kind for kind in sorted(ARCHIVES, key=len, reverse=True) if name.lower().endswith(kind)), None)


@dataclass(frozen=True)
class Member:
    """One member of an archive: its name inside it, its declared size, its kind ("file" for a regular file,
    "folder", or "other": links, devices, pipes), and how to read its first bytes (at most the number given)."""

    name: str
    size: int
    kind: str
    read: Callable[[int], bytes]


# ---- zip ------------------------------------------------------------------------------------------------------------

def _central_directory(file: IO[bytes]) -> tuple[int, int]:
    """Where a zip's member directory starts and how long it is, from its end records (zip64's where present)."""
    file.seek(0, os.SEEK_END)
    size = file.tell()
    file.seek(max(0, size - 22 - 2**16))
    tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise Refused("not a zip archive that can be read")
    end = size - len(tail) + at
    cd_size, cd_offset = struct.unpack("<2L", tail[at + 12:at + 20])
    if at >= 20 and tail[at - 20:at - 16] == b"PK\x06\x07":  # zip64: the locator just before the end record
        (where,) = struct.unpack("<Q", tail[at - 12:at - 4])
        file.seek(where)
        record = file.read(56)
        if len(record) < 56 or record[:4] != b"PK\x06\x06":
            raise Refused("not a zip archive that can be read")
        cd_size, cd_offset = struct.unpack("<2Q", record[40:56])
        end = where
    if cd_size > end:
        raise Refused("not a zip archive that can be read")
    return end - cd_size, cd_size


def _count_zip(file: IO[bytes], limits: Limits) -> None:
    """Walk the member directory entry by entry: more members than a submission may hold, or a directory that is not
    made of members alone, refuses the archive before :mod:`zipfile` reads the whole directory."""
    start, length = _central_directory(file)
    position, count = start, 0
    while position < start + length:
        file.seek(position)
        header = file.read(46)
        if len(header) < 46 or header[:4] != b"PK\x01\x02":
            raise Refused("not a zip archive that can be read")
        count += 1
        if count > limits.files:
            raise Refused(f"it holds more than {limits.files} members")
        name, extra, comment = struct.unpack("<3H", header[28:34])
        position += 46 + name + extra + comment
    if position != start + length:
        raise Refused("not a zip archive that can be read")


def _zip_members(path: Path, limits: Limits) -> Iterator[Member]:
    with path.open("rb") as file:
        _count_zip(file, limits)
        with zipfile.ZipFile(file) as zipped:
            for info in zipped.infolist():
                mode = stat.S_IFMT(info.external_attr >> 16)
                kind = "folder" if info.is_dir() else "file" if mode in (0, stat.S_IFREG) else "other"
                yield Member(info.filename, info.file_size, kind, functools.partial(_read_zip, zipped, info))


def _read_zip(zipped: zipfile.ZipFile, info: zipfile.ZipInfo, most: int) -> bytes:
    with zipped.open(info) as member:
        return _read_at_most(member, most)


def _read_tar(tarred: tarfile.TarFile, info: tarfile.TarInfo, most: int) -> bytes:
    return _read_at_most(tarred.extractfile(info) or io.BytesIO(), most)


def _read_at_most(file: IO[bytes], most: int) -> bytes:
    data = bytearray()
    while len(data) < most and (chunk := file.read(min(_CHUNK, most - len(data)))):
        data += chunk
    return bytes(data)


# ---- tar ------------------------------------------------------------------------------------------------------------

class _Capped(io.RawIOBase):
    """A stream that refuses to give more than ``most`` bytes in all: a tar's headers, long names and data are read
    through it, so a small file that unpacks to gigabytes stops at the size a submission may have."""

    def __init__(self, inner: IO[bytes], most: int) -> None:
        self.inner, self.left = inner, most

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            raise Refused("it unpacks to more than a submission may hold")
        data = self.inner.read(min(len(buffer), self.left, _CHUNK))
        buffer[:len(data)] = data
        self.left -= len(data)
        return len(data)


def _tar_members(path: Path, kind: str, limits: Limits) -> Iterator[Member]:
    # headers take room too: a submission's bytes, plus a block of headers per member it may have
    most = limits.total_bytes + 2 * 512 * (limits.files + 2) + 2**20
    with path.open("rb") as raw, _DECOMPRESS[kind](raw) as plain:
        stream = io.BufferedReader(_Capped(plain, most), _CHUNK)
        with tarfile.open(fileobj=stream, mode="r|") as tarred:
            for count, info in enumerate(tarred, 1):
                if count > limits.files:
                    raise Refused(f"it holds more than {limits.files} members")
                kind = "file" if info.isreg() else "folder" if info.isdir() else "other"
                yield Member(info.name, info.size if kind == "file" else 0, kind,
                             functools.partial(_read_tar, tarred, info))


# ---- writing --------------------------------------------------------------------------------------------------------

def _parts(name: str) -> list[str] | None:
    """A member's path inside its archive as plain parts, or ``None`` (absolute, ``..``, hidden or odd)."""
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return None
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    ok = parts and all(p != ".." and plain_name(p) and not p.startswith(".") for p in parts)
    return parts if ok else None


def unpack(archive: Path, target: Path, limits: Limits = Limits(), kinds: tuple[str, ...] | None = None) -> list[str]:
    """The regular files of a zip or tar ``archive`` written under ``target`` (made afresh, private), within ``limits``
    and, if ``kinds`` is given, only files with those suffixes; what was left out, one line each. Of members of one
    name (a tar updated with ``tar -u``, a zip appended to), the later is the file, as GNU tar, unzip and Python's
    extraction have it. An archive that cannot be read, or holds more members or bytes than a submission may, raises
    :class:`Refused` and leaves ``target`` empty. If all it holds is one folder, that folder's contents are
    ``target``'s."""
    kind = archive_kind(archive.name)
    if kind is None:
        raise Refused("not a zip or tar archive")
    target.mkdir(mode=0o700, parents=True)
    dropped: list[str] = []
    written: set[str] = set()
    total = 0
    try:
        members = _zip_members(archive, limits) if kind == ".zip" else _tar_members(archive, kind, limits)
        for member in members:
            total += max(member.size, 0)
            if total > limits.total_bytes:
                raise Refused(f"it unpacks to more than {limits.total_bytes // 2**20} MB")
            if why := _write(member, target, limits, kinds, written):
                dropped.append(f"{member.name if plain_name(member.name) else repr(member.name)} ({why})")
    except Refused:
        _empty(target)
        raise
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError, NotImplementedError, RuntimeError,
            lzma.LZMAError, zipfile.LargeZipFile) as error:
        _empty(target)
        raise Refused(f"not an archive that can be read ({type(error).__name__})") from None
    _lift_single_folder(target)
    return dropped


def _write(member: Member, target: Path, limits: Limits, kinds: tuple[str, ...] | None,
           written: set[str]) -> str | None:
    """Write one member; why it was left out (``""`` for a folder entry: folders are made as their files need them)."""
    parts = _parts(member.name)
    if parts is None or any(len(p.encode("utf-8")) > 255 for p in parts):
        return "a name outside the archive, hidden, or not plain text"
    if member.kind != "file":
        return "" if member.kind == "folder" else "a link or not a regular file"
    if len(parts) > limits.depth:
        return f"folders nested more than {limits.depth} deep"
    largest = limits.notebook_bytes if parts[-1].endswith(".ipynb") else limits.file_bytes
    if member.size > largest:
        return f"larger than {largest // 2**20} MB"
    if kinds is not None and not parts[-1].endswith(kinds):
        return f"only {' and '.join(kinds)} files are collected"
    name = "/".join(parts)
    if len(written) >= limits.files and name not in written:
        return f"more than {limits.files} files in the submission"
    folder = target
    for part in parts[:-1]:
        folder = folder / part
        if folder.exists() and not folder.is_dir():
            return "a file of the archive has its folder's name"
        folder.mkdir(mode=0o700, exist_ok=True)
    if name in written:  # a later member of the same name: it is the file (what was written is the grader's own)
        (folder / parts[-1]).unlink()
    elif (folder / parts[-1]).exists():
        return "a file of the archive has its folder's name"
    _create(folder / parts[-1], member.read(largest))
    written.add(name)
    return None


def _create(path: Path, data: bytes) -> None:
    """A new file of the grader's own (never one that is there, nor through a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _empty(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def _lift_single_folder(target: Path) -> None:
    """A student who zipped their assignment's folder rather than its files: its files are the hand-in."""
    entries = list(target.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        inner = entries[0].rename(target / f".lifting-{os.getpid()}")
        for child in inner.iterdir():
            child.rename(target / child.name)
        inner.rmdir()


# ---- nbgrader's zip_collect -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Handin:
    """One entry of archive/: its name, the student its name gives, the time it gives (if any), and, for a single file,
    the file it is in the submission."""

    name: str
    student: str
    timestamp: datetime | None = None
    file_id: str | None = None


class Collector(FileNameCollectorPlugin):
    """zip_collect's collector: ``named_regexp`` is matched against the whole name of each hand-in in archive/ (not
    against the paths inside it) and names the ``student_id``; it may name a ``timestamp`` (a learning platform's time
    of receipt), an ``assignment`` (which must be the one collected) and, for a hand-in of one file, its ``file_id``.
    A file under extracted/ is the student's whose folder the :class:`Extractor` put it in."""

    def owner(self, name: str, assignment: str) -> Handin | str:
        """The hand-in named ``name``, or why its name says no student of ``assignment``."""
        match = re.fullmatch(self.named_regexp, name) if self.named_regexp else None
        if match is None or not match.groupdict().get("student_id"):
            return ("its name does not say whose it is (ASSIGNMENT+ID.zip, as `ppedu handin` writes: "
                    f"{self.named_regexp})")
        found = match.groupdict()
        student = found["student_id"]
        if not plain_name(student) or student.startswith((".", "-")) or "/" in student or len(student) > 128:
            return f"{student!r} is not a student id that can be a folder's name"
        if found.get("assignment") and found["assignment"] != assignment:
            return f"it is a hand-in of {found['assignment']}, not {assignment}"
        try:
            timestamp = parse_utc(found["timestamp"]) if found.get("timestamp") else None
        except ValueError:
            return f"its time {found['timestamp']!r} cannot be read"
        return Handin(name, student, timestamp, found.get("file_id") or None)

    def collect(self, submitted_file: str) -> dict[str, Any] | None:
        filed: dict[str, Handin] = getattr(self, "filed", {})
        extracted = getattr(self, "extracted", None)
        if extracted is None:
            return None
        parts = Path(submitted_file).relative_to(extracted).parts
        if len(parts) < 2 or parts[0] not in filed:
            return None
        return {"student_id": parts[0], "file_id": "/".join(parts[1:]), "timestamp": filed[parts[0]].timestamp}


class Extractor(ExtractorPlugin):
    """zip_collect's extractor: every entry of archive/ is one student's hand-in, named by the :class:`Collector`'s
    ``named_regexp``, unpacked (archives), copied (folders, through the intake's :func:`~grader.intake.copy_in`) or
    copied as one file into ``extracted/<student id>/`` within :class:`~grader.intake.Limits`; what cannot be taken is
    left out, with its reason, in :attr:`left_out`."""

    left_out: list[tuple[str, str]]
    collected: list[Handin]

    def extract(self, archive_path: str, extracted_path: str) -> None:
        app = self.parent
        collector = getattr(app, "collector_plugin_inst", None)
        if not isinstance(collector, Collector):
            collector = Collector(parent=app)
        assignment, root = app.coursedir.assignment_id, Path(app.coursedir.root)
        self.left_out, self.collected = [], []
        handins: dict[str, list[Handin]] = {}
        for name in sorted(os.listdir(archive_path)):
            if name.startswith("."):
                continue
            found = collector.owner(name, assignment)
            if isinstance(found, str):
                self.left_out.append((name, found))
            else:
                handins.setdefault(found.student, []).append(found)
        target = Path(extracted_path)
        private_folder(root / app.downloaded_directory, strict=False)  # the class's hand-ins
        target.chmod(0o700)
        close_working_folders(app.coursedir)
        collector.extracted, collector.filed = target, {}
        kinds = tuple(collector.valid_ext) or None
        for student, theirs in sorted(handins.items()):
            chosen = self._choose(theirs)
            if not chosen:
                continue
            notes: list[str] = []
            try:
                for handin in chosen:
                    notes += _take(Path(archive_path) / handin.name, target / student, handin, kinds)
            except Refused as why:
                self.left_out.append((handin.name, str(why)))
                shutil.rmtree(target / student, ignore_errors=True)
                continue
            collector.filed[student] = max(chosen, key=lambda h: h.timestamp or datetime.min)
            self.collected += chosen
            notes_for_instructor(root, student, assignment, "collected", [f"left out: {n}" for n in notes])
            for note in notes:
                self.log.warning("%s: left out %s", ", ".join(h.name for h in chosen), note)

    def _choose(self, theirs: list[Handin]) -> list[Handin]:
        """A student's hand-ins that are collected: all of them if they are single files of different names, else the
        newest by the times their names give; where nothing says which is newest, none (each named as left out)."""
        files = [h.file_id or h.name for h in theirs]
        if len(theirs) == 1 or (all(archive_kind(h.name) is None for h in theirs) and len(set(files)) == len(files)
                                and all(h.file_id for h in theirs)):
            return theirs
        times = [h.timestamp for h in theirs]
        newest = max((t for t in times if t is not None), default=None)
        if None in times or times.count(newest) > 1:
            names = ", ".join(h.name for h in theirs)
            self.left_out += [(h.name, f"{h.student} has {len(theirs)} hand-ins ({names}) and nothing says which is "
                               "newest: keep one in archive/ and collect again") for h in theirs]
            return []
        self.left_out += [(h.name, f"an older hand-in of {h.student}'s") for h in theirs if h.timestamp != newest]
        return [h for h in theirs if h.timestamp == newest]


def _take(path: Path, target: Path, handin: Handin, kinds: tuple[str, ...] | None) -> list[str]:
    """One hand-in into ``target`` (its student's folder); what was left out of it. Raises :class:`Refused`."""
    limits = Limits()
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        dropped = copy_in(path, target, limits)
        for file in sorted(p for p in target.rglob("*") if p.is_file() and kinds and not p.name.endswith(kinds)):
            file.unlink()
            dropped.append(f"{file.relative_to(target)} (only {' and '.join(kinds or ())} files are collected)")
        return dropped
    if not stat.S_ISREG(info.st_mode):
        raise Refused("a link or not a regular file")
    if archive_kind(handin.name):
        return unpack(path, target, limits, kinds)
    name = handin.file_id or handin.name
    suffix = Path(handin.name).suffix
    name = name if name.endswith(suffix) else name + suffix
    if not plain_name(name) or name.startswith(".") or "/" in name:
        raise Refused(f"{name!r} is not a plain file name")
    if kinds is not None and not name.endswith(kinds):
        raise Refused(f"only {' and '.join(kinds)} files are collected")
    if info.st_size > (limits.notebook_bytes if name.endswith(".ipynb") else limits.file_bytes):
        raise Refused("larger than a submission's file may be")
    target.mkdir(mode=0o700, exist_ok=True)
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as handle:
        _create(target / name, _read_at_most(handle, limits.notebook_bytes))
    return []


def guard_zip_collect() -> None:
    """``nbgrader zip_collect`` ends with a summary: the hand-ins collected, and every one left out with its reason;
    it exits 1 if any was left out (nbgrader itself only logs a warning among its other lines, and exits 0)."""
    from nbgrader.apps.zipcollectapp import ZipCollectApp

    if getattr(ZipCollectApp, "_ppedu_summary", False):
        return
    start = ZipCollectApp.start

    def start_and_sum_up(self: Any) -> None:
        start(self)
        extractor = self.extractor_plugin_inst
        left_out: list[tuple[str, str]] = getattr(extractor, "left_out", [])
        collected = {h.student for h in getattr(extractor, "collected", [])}
        self.log.info("Collected hand-ins of %d student(s) of %s", len(collected), self.coursedir.assignment_id)
        for name, why in left_out:
            self.log.error("%s: not collected: %s", name, why)
        if left_out:
            self.log.error("%d hand-in(s) of %s left out (above); the other students' were collected", len(left_out),
                           self.coursedir.assignment_id)
            self.exit(1)

    ZipCollectApp.start = start_and_sum_up  # type: ignore[method-assign]
    ZipCollectApp._ppedu_summary = True  # type: ignore[attr-defined]
