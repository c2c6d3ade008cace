"""nbgrader's submit, with the submission closed to the other students (the course's JupyterHub sets it for every
user: hub/config/common/nbgrader_config.py).

nbgrader leaves each submission folder in the exchange's ``inbound/`` open to everyone (``0777``, its files
``0644``), hidden only by an unguessable name. Here the folder is ``2770`` and its files ``0640``: its owner's, and
readable by the group of ``inbound/``, which the course's grader account owns and which nbgrader marks setgid, so
every folder made in it belongs to that group whoever makes it. The grader collects; no other student reads, lists
or changes the work.

>>> oct(FOLDER), oct(FILE)
('0o2770', '0o640')
"""

from __future__ import annotations

import os
import stat

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER = stat.S_ISGID | 0o770
FILE = 0o640


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit; the folder it wrote in ``inbound/`` then readable by its owner and the grader only."""

    def copy_files(self) -> None:
        super().copy_files()
        close(os.path.join(self.inbound_path, self.assignment_filename))


def close(folder: str) -> None:
    """``folder`` and everything in it: folders :data:`FOLDER`, files :data:`FILE` (links are left, never followed)."""
    for root, folders, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, FILE)
        for name in folders:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, FOLDER)
    os.chmod(folder, FOLDER)
