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
from grader.intake import Limits, copy_in, repair, take_in, unpack

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


def test_limits_on_size_count_and_depth(tmp_path):
    folder = tmp_path / "submission"
    deep = folder.joinpath(*"abcdefghij")
    deep.mkdir(parents=True)
    (deep / "x").write_text("x")
    with open(folder / "huge.bin", "wb") as big:
        big.truncate(20 * 2**20)  # sparse: 20 MB on paper, nothing on disk
    for i in range(12):
        (folder / f"f{i:02}").write_text("x")
    dropped = copy_in(folder, tmp_path / "in", Limits(file_bytes=2**20, files=10, depth=4))
    said = "\n".join(dropped)
    assert "huge.bin (larger than 1 MB)" in said and "nested more than 4 deep" in said
    assert said.count("more than 10 files") == 2  # 12 files, 10 taken
    assert len([p for p in (tmp_path / "in").rglob("*") if p.is_file()]) == 10


@pytest.mark.parametrize("damage, kept", [
    (lambda raw: raw[: len(raw) * 3 // 4], {"q1a_answer", "q1b_answer", "q2_answer", "q3_answer"}),  # cut short
    (lambda raw: raw.replace(b'"id": "', b'"id": "bad id!? ', 3), None),  # invalid cell ids
    (lambda raw: raw.replace(b"### BEGIN SOLUTION", b"\xff\xfe### BEGIN SOLUTION", 1), None),  # not UTF-8
    (lambda raw: raw.replace(b"the slow GPU sets the pace", b"\\ud800 the slow GPU sets the pace", 1), None),  # lone surrogate
    (lambda raw: b"[" * 100_000 + raw, None),  # nested past any parser's depth
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
    assert (tmp_path / "out" / "ps1" / "ps1.ipynb").read_bytes() == SOLVED
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out" / "ps1" / "link").exists()
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
    assert "not an archive" in unpack(tmp_path / "broken.zip", tmp_path / "broken")[0]
    assert json.dumps(dropped)  # every note is plain text
