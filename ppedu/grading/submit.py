"""nbgrader's submit, with the submission closed to the other students (the course's JupyterHub sets it for every
user: hub/config/common/nbgrader_config.py).

nbgrader leaves each submission folder in the exchange's ``inbound/`` open to everyone (``0777``, its files
``0644``), hidden only by an unguessable name. Here the folder is ``0770`` and its files ``0640``: its owner's, and
readable by the group of ``inbound/``, which the course's grader account owns and which nbgrader marks setgid, so
every folder made in it belongs to that group whoever makes it. The grader collects; no other student reads, lists
or changes the work.

>>> oct(FOLDER), oct(FILE)
('0o770', '0o640')
"""

from __future__ import annotations

import os
import shutil

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER = 0o770
FILE = 0o640


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit; the folder it wrote in ``inbound/`` then readable by its owner and the grader only."""

    def copy_files(self) -> None:
        super().copy_files()
        close(os.path.join(self.inbound_path, self.assignment_filename))


def close(folder: str) -> None:
    """``folder`` (in ``inbound/``) made again, its files and folders the same: folders :data:`FOLDER`, files
    :data:`FILE`, in the group of ``inbound/`` (links are left out). A student cannot give a file to a group they are
    not in, and nbgrader's copy drops the folder's setgid bit before it writes ``timestamp.txt`` and
    ``submission_secret.txt``; a folder made afresh in ``inbound/`` inherits that group, and so does what is made in
    it. The copies are made under hidden names (nbgrader's collect never reads those), then swapped in."""
    parent, name = os.path.split(folder)
    fresh, old = (os.path.join(parent, f".{name}.{part}") for part in ("new", "old"))
    for root, folders, files in os.walk(folder):
        here = os.path.normpath(os.path.join(fresh, os.path.relpath(root, folder)))
        os.mkdir(here, 0o700)  # setgid and the group, from inbound/
        for entry in files:
            source = os.path.join(root, entry)
            if os.path.islink(source):
                continue
            with open(source, "rb") as src, open(os.open(os.path.join(here, entry), os.O_WRONLY | os.O_CREAT |
                                                         os.O_EXCL, FILE), "wb") as out:
                shutil.copyfileobj(src, out)
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(root, f))]
    for root, folders, _ in os.walk(fresh):
        for entry in folders:
            os.chmod(os.path.join(root, entry), FOLDER)
    os.chmod(fresh, FOLDER)
    os.rename(folder, old)
    os.rename(fresh, folder)
    shutil.rmtree(old)
