"""The intake (grader/intake.py): a submission is data. Every way a folder can point elsewhere or hold something
other than plain files is met, and what reaches the grading area is plain files only, each of them named in a
note when it was left out; notebooks that cannot be read as they are come back as valid notebooks holding what
could be read."""

import io
import json
import os
import tarfile
import threading
import zipfile

import nbformat
import pytest

from conftest import ROOT
from grader.archives import Refused, unpack
from grader.intake import Limits, copy_in, repair, take_in

RELEASE = ROOT / "exercises" / "ps1"
SOLVED = (ROOT / "solutions" / "ps1" / "ps1.ipynb").read_bytes()


def answers(notebook):
    """The answer cells' sources, by grade_id."""
    return {c.metadata.nbgrader["grade_id"]: c.source for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "gradebook.db"
    path.write_text("SECRET-GRADEBOOK")
    return path


def test_nothing_a_link_points_at_is_read(tmp_path, secret):
    folder = tmp_path / "submission"
    (folder / "data").mkdir(parents=True)
    (folder / "ps1.ipynb").symlink_to(ROOT / "solutions" / "ps1" / "ps1.ipynb")
    (folder / "book.db").symlink_to(secret)
    (folder / "data" / "env").symlink_to("/proc/self/environ")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "up").symlink_to(tmp_path)
    (folder / "notes.txt").write_text("mine")
    dropped = copy_in(folder, tmp_path / "in")
    assert sorted(dropped) == ["book.db (a symbolic link)", "data/env (a symbolic link)", "ps1.ipynb (a symbolic link)",
                               "up (a symbolic link)", "zero (a symbolic link)"]
    taken = sorted(str(p.relative_to(tmp_path / "in")) for p in (tmp_path / "in").rglob("*"))
    assert taken == ["data", "notes.txt"]
    assert all(not p.is_symlink() for p in (tmp_path / "in").rglob("*"))


def test_a_submission_folder_that_is_a_link_gives_nothing(tmp_path):
    (tmp_path / "classmate").mkdir()
    (tmp_path / "classmate" / "ps1.ipynb").write_bytes(SOLVED)
    (tmp_path / "mine").symlink_to(tmp_path / "classmate")
    assert copy_in(tmp_path / "mine", tmp_path / "in") == [
        "the submission folder itself (a symbolic link): nothing was taken from it"]
    assert list((tmp_path / "in").iterdir()) == []


def test_pipes_sockets_hard_links_hidden_and_odd_names_are_left_out_without_blocking(tmp_path, secret):
    import socket

    folder = tmp_path / "submission"
    folder.mkdir()
    os.mkfifo(folder / "pipe")  # opening it to read would wait for a writer forever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock"))
    os.link(secret, folder / "hard")
    (folder / ".pth").write_text("import os")
    (folder / os.fsdecode(b"bad\xff")).write_text("x")
    (folder / "new\nline").write_text("x")
    done = threading.Event()
    result = {}
    threading.Thread(target=lambda: (result.update(d=copy_in(folder, tmp_path / "in")), done.set()), daemon=True).start()
    assert done.wait(30), "reading the submission blocked"
    server.close()
    said = "\n".join(result["d"])
    for name, why in (("pipe", "named pipe"), ("sock", "socket"), ("hard", "hard link"), (".pth", "hidden")):
        assert f"{name} (" in said and why in said, said
    assert said.count("not plain text") == 3  # the dot file, the undecodable name, the newline
    assert not any((tmp_path / "in").iterdir())


def test_a_folder_of_a_million_entries_is_not_read_to_its_end(tmp_path):
    """One line for what was not read, not one per file (a student's 200,000 files once filled the instructor's
    terminal with as many warnings); the notebook, its time and nbgrader's secret (feedback is released by it) are
    taken first, whatever the other files are called."""
    folder = tmp_path / "submission"
    (folder / "runs").mkdir(parents=True)
    for i in range(5000):
        (folder / "runs" / f"{i:05d}.csv").touch()
        (folder / f"a{i:05d}").symlink_to("/etc/hostname")
    (folder / "ps1.ipynb").write_bytes(SOLVED)
    for name in ("timestamp.txt", "submission_secret.txt"):
        (folder / name).write_text(name)
    dropped = copy_in(folder, tmp_path / "in")
    assert (tmp_path / "in" / "ps1.ipynb").read_bytes() == SOLVED
    assert [(tmp_path / "in" / n).read_text() for n in ("timestamp.txt", "submission_secret.txt")] == [
        "timestamp.txt", "submission_secret.txt"]
    assert len(dropped) <= 1000 and "more entries, not read: more than 500 files" in dropped[-1], dropped[-1]


def test_limits_on_size_count_and_depth(tmp_path):
    folder = tmp_path / "submission"
    deep = folder.joinpath(*"abcdefghij")
    deep.mkdir(parents=True)
    (deep / "x").write_text("x")
    with open(folder / "big.bin", "wb") as big:
        big.truncate(20 * 2**20)  # sparse: 20 MB on paper, nothing on disk
    for i in range(12):
        (folder / f"f{i:02}").write_text("x")
    dropped = copy_in(folder, tmp_path / "in", Limits(file_bytes=2**20, files=10, depth=4))
    said = "\n".join(dropped)
    assert "big.bin (larger than 1 MB)" in said and "nested more than 4 deep" in said
    assert "./ (2 more entries, not read: more than 10 files in the submission)" in said  # 12 files, 10 taken
    assert len([p for p in (tmp_path / "in").rglob("*") if p.is_file()]) == 10


@pytest.mark.parametrize("damage, kept", [
    (lambda raw: raw[: len(raw) * 3 // 4], {"q1a_answer", "q1b_answer", "q2_answer", "q3s_answer"}),  # cut short
    (lambda raw: raw.replace(b'"id": "', b'"id": "bad id!? ', 3), None),  # invalid cell ids
    (lambda raw: raw.replace(b"### BEGIN SOLUTION", b"\xff\xfe### BEGIN SOLUTION", 1), None),  # not UTF-8
    (lambda raw: raw.replace(b"sets the pace, so", b"\\ud800 sets the pace, so", 1), None),  # lone surrogate
    (lambda raw: raw.replace(b'"cells": [', b'"cells": [' + b"[" * 100_000, 1), None),  # nested past any parser's depth
])
def test_an_unreadable_notebook_is_repaired_keeping_the_answers_that_can_be_read(damage, kept):
    release = nbformat.read(RELEASE / "ps1.ipynb", as_version=4)
    notebook, notes = repair(damage(SOLVED), release)
    nbformat.validate(notebook)
    nbformat.writes(notebook).encode("utf-8")  # nothing left that cannot be written
    solved = answers(nbformat.reads(SOLVED.decode(), as_version=4))
    got = answers(notebook)
    for gid in kept or solved:
        assert got[gid].replace("\ufffd", "").replace("\\ud800 ", "").strip()[-40:] == solved[gid].strip()[-40:], gid
    assert notes


def test_nothing_readable_is_the_release(tmp_path):
    release = nbformat.read(RELEASE / "ps1.ipynb", as_version=4)
    notebook, notes = repair(b"\x00" * 100, release)
    assert [c.source for c in notebook.cells] == [c.source for c in release.cells] and "released notebook" in notes[-1]


def test_take_in_gives_every_released_notebook_and_says_why(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "ps1.ipynb").symlink_to(ROOT / "solutions" / "ps1" / "ps1.ipynb")
    intake = take_in(folder, tmp_path / "in", RELEASE)
    blank = nbformat.read(tmp_path / "in" / "ps1.ipynb", as_version=4)
    assert answers(blank) == answers(nbformat.read(RELEASE / "ps1.ipynb", as_version=4))
    assert "ps1.ipynb (a symbolic link)" in intake.text() and "graded as the released notebook" in intake.text()


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zipped:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zipped.writestr(info, data)


def test_archives_give_plain_files_inside_their_folder_only(tmp_path, secret):
    _zip(tmp_path / "alice.zip", [("ps1/ps1.ipynb", SOLVED, 0o100644), ("ps1/../../escape.txt", b"x", 0o100644),
                                  ("/etc/evil", b"x", 0o100644), ("ps1/link", str(secret), 0o120777)])
    dropped = unpack(tmp_path / "alice.zip", tmp_path / "out")
    assert (tmp_path / "out" / "ps1.ipynb").read_bytes() == SOLVED  # the archive's one folder is the hand-in
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out" / "link").exists()
    assert len(dropped) == 3
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tarred:
        link = tarfile.TarInfo("ps1/book.db")
        link.type, link.linkname = tarfile.SYMTYPE, str(secret)
        tarred.addfile(link)
        hard = tarfile.TarInfo("ps1/hard")
        hard.type, hard.linkname = tarfile.LNKTYPE, str(secret)
        tarred.addfile(hard)
        fifo = tarfile.TarInfo("ps1/pipe")
        fifo.type = tarfile.FIFOTYPE
        tarred.addfile(fifo)
        note = tarfile.TarInfo("ps1/notes.txt")
        note.size = 4
        tarred.addfile(note, io.BytesIO(b"mine"))
    (tmp_path / "bob.tar.gz").write_bytes(buffer.getvalue())
    dropped = unpack(tmp_path / "bob.tar.gz", tmp_path / "bob")
    assert sorted(p.name for p in (tmp_path / "bob").rglob("*") if p.is_file()) == ["notes.txt"] and len(dropped) == 3
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    with pytest.raises(Refused, match="not a zip archive"):
        unpack(tmp_path / "broken.zip", tmp_path / "broken")
    assert json.dumps(dropped)  # every note is plain text


# ---- archives: limits checked while reading, never after --------------------------------------------------------

def _million_member_zip(path, members=1_000_000):
    """A zip whose directory lists one small file a million times (every entry pointing at the same data): 50 MB,
    written in a second, where zipfile would build a million entries before anything could be checked."""
    import struct
    import zlib

    name, data = b"a.ipynb", b"{}"
    crc = zlib.crc32(data)
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0)
    local += name + data
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(name),
                          0, 0, 0, 0, 0, 0) + name
    directory = central * members
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, len(directory), len(local), 0)
    path.write_bytes(local + directory + end)


def _gzip_repeated(path, block, times):
    """A gzip file that unpacks to ``block`` repeated ``times`` times (gzip members one after another)."""
    import gzip

    member = gzip.compress(block * 1000, compresslevel=9)
    with path.open("wb") as out:
        for _ in range(times // 1000):
            out.write(member)


def _timed(call):
    import time

    start = time.perf_counter()
    try:
        call()
    except Refused as refused:
        return time.perf_counter() - start, str(refused)
    raise AssertionError("the archive was not refused")


def test_an_archive_with_a_million_members_is_refused_before_it_is_read(tmp_path):
    _million_member_zip(tmp_path / "ps1+many.zip")
    seconds, why = _timed(lambda: unpack(tmp_path / "ps1+many.zip", tmp_path / "zip"))
    assert "more than 500 members" in why and seconds < 2, (why, seconds)
    header = tarfile.TarInfo("a.ipynb").tobuf(format=tarfile.USTAR_FORMAT)  # an empty file, a million times
    _gzip_repeated(tmp_path / "ps1+many.tar.gz", header, 1_000_000)
    seconds, why = _timed(lambda: unpack(tmp_path / "ps1+many.tar.gz", tmp_path / "tar"))
    assert "more than 500 members" in why and seconds < 2, (why, seconds)
    assert not any((tmp_path / "zip").iterdir()) and not any((tmp_path / "tar").iterdir())


def test_a_small_archive_that_unpacks_to_gigabytes_is_refused_as_it_streams(tmp_path):
    """Declared sizes over the limit are refused from the headers; a header that lies (a GNU long name of 8 GB of
    zeros, which tarfile would read into memory) is stopped once the stream passes what a submission may hold."""
    big = tarfile.TarInfo("huge.ipynb")
    big.size = 8 * 2**30
    _gzip_repeated(tmp_path / "ps1+big.tar.gz", big.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 512 * 1000, 1000)
    _, why = _timed(lambda: unpack(tmp_path / "ps1+big.tar.gz", tmp_path / "big"))
    assert "more than 96 MB" in why, why
    longname = tarfile.TarInfo("././@LongLink")
    longname.type, longname.size = tarfile.GNUTYPE_LONGNAME, 8 * 2**30
    header = longname.tobuf(format=tarfile.GNU_FORMAT)
    _gzip_repeated(tmp_path / "zeros.gz", b"\0" * 2**16, 200_000)  # 12 GB of zeros, 12 MB on disk
    import gzip

    (tmp_path / "ps1+long.tar.gz").write_bytes(gzip.compress(header) + (tmp_path / "zeros.gz").read_bytes())
    seconds, why = _timed(lambda: unpack(tmp_path / "ps1+long.tar.gz", tmp_path / "long"))
    assert "unpacks to more than" in why and seconds < 20, (why, seconds)


@pytest.mark.parametrize("name", ["my notes.ipynb", "-rf.ipynb", "x" * 250 + ".json",
                                  "caf\u00e9 \u2014 r\u00e9sum\u00e9.ipynb"])
def test_odd_but_plain_names_in_an_archive_are_taken_like_any_other(tmp_path, name):
    _zip(tmp_path / "ps1+odd.zip", [("ps1.ipynb", SOLVED, 0o100644), (name, b"{}", 0o100644)])
    assert unpack(tmp_path / "ps1+odd.zip", tmp_path / "out") == []
    assert (tmp_path / "out" / name).read_bytes() == b"{}" and (tmp_path / "out" / "ps1.ipynb").read_bytes() == SOLVED


def test_names_that_cannot_be_files_are_left_out_and_the_rest_taken(tmp_path):
    """A newline, a name over 255 bytes (which the file system would refuse), bytes that are not UTF-8 (a tar names
    its members in raw bytes): each left out with a note; the notebook beside them is taken."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tarred:
        for name, data in (("ps1.ipynb", SOLVED), ("new\nline.ipynb", b"{}"), ("\u00e9" * 200 + ".ipynb", b"{}"),
                           (os.fsdecode(b"bad\xff.ipynb"), b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tarred.addfile(info, io.BytesIO(data))
    (tmp_path / "ps1+odd.tar").write_bytes(buffer.getvalue())
    dropped = unpack(tmp_path / "ps1+odd.tar", tmp_path / "out")
    assert len(dropped) == 3 and all("not plain text" in d for d in dropped), dropped
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["ps1.ipynb"]
    assert json.dumps(dropped)


@pytest.mark.parametrize("wrapped", [
    lambda raw: b"<!DOCTYPE html><html><body><pre>" + raw + b"</pre></body></html>",  # a notebook saved as a web page
    lambda raw: b"[" * 100_000 + raw,  # a notebook inside something else
    lambda raw: b"PK\x03\x04" + raw,  # an archive's bytes
])
def test_a_file_that_is_not_a_notebook_is_graded_as_the_release_with_the_reason(wrapped):
    release = nbformat.read(RELEASE / "ps1.ipynb", as_version=4)
    notebook, notes = repair(wrapped(SOLVED), release)
    assert answers(notebook) == answers(release)
    assert any(note.startswith("it is not a notebook file (it begins ") for note in notes), notes
