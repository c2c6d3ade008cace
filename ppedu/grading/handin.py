"""Handing an assignment in from a laptop, where there is no nbgrader exchange: ``ppedu handin ps1`` writes one zip,
``ps1+<student id>.zip``, with the assignment's folder (the notebook and the answers a widget saved beside it), for
the student to upload where the instructor asked. The instructor's ``nbgrader zip_collect ps1`` reads those zips
by their names with :data:`COLLECTOR_PATTERN` (set in the course's nbgrader_config.py) into ``submitted/``, through
the intake: the name says whose a zip is, never anything inside it.

The name joins the assignment and the student id with ``+``, as nbgrader's own exchange does: no course id
holds one.

>>> archive_name("ps1", "alice")
'ps1+alice.zip'
>>> import re; re.fullmatch(COLLECTOR_PATTERN, "ps1+alice.zip").group("assignment", "student_id")
('ps1', 'alice')
>>> [bool(re.fullmatch(COLLECTOR_PATTERN, f"ps1+alice.{kind}")) for kind in ("tar.xz", "tar.bz2", "rar")]
[True, True, False]
"""

from __future__ import annotations

import json
import os
import re
import stat
import zipfile
from pathlib import Path

from ppedu.grading.students import student_id

#: A course id, as a hand-in's name may hold it.
ID = r"[A-Za-z0-9][A-Za-z0-9_.@-]*"
#: What a hand-in may be packed as: ``ppedu handin`` writes a zip; a student may send any of these.
PACKED = ("zip", "tar", "tar.gz", "tgz", "tar.bz2", "tar.xz")
#: The name of a hand-in, whole, as nbgrader's ``zip_collect`` reads whose it is (grader/archives.py).
COLLECTOR_PATTERN = (rf"(?P<assignment>[^/+]+)\+(?P<student_id>{ID})\."
                     rf"(?:{'|'.join(kind.replace('.', chr(92) + '.') for kind in PACKED)})")
#: The files a hand-in carries: notebooks, and the answers widgets save beside them.
KINDS = (".ipynb", ".json")
#: Larger than this, a file is not an answer (nbgrader's intake takes at most 16 MB a file).
MAX_BYTES = 16 * 2**20
_ID = re.compile(ID)
_SAVED_ANSWERS = re.compile(r"""answers\s*=\s*["']([^"'/\\]+\.json)["']""")
_SHOWN_STUDENT = re.compile(r"for student '([^']*)'")


def archive_name(assignment: str, student: str) -> str:
    return f"{assignment}+{student}.zip"


def find_folder(assignment: str, start: Path) -> Path:
    """The assignment's folder: ``start`` itself, ``start/ASSIGNMENT`` or the release's ``start/exercises/ASSIGNMENT``
    — the first that holds ``ASSIGNMENT.ipynb``."""
    for folder in (start, start / assignment, start / "exercises" / assignment):
        if (folder / f"{assignment}.ipynb").is_file():
            return folder
    raise ValueError(f"no {assignment}.ipynb here, in {assignment}/ or in exercises/{assignment}/: run `ppedu handin` "
                     "in the course's folder, or give the assignment's folder with --folder")


def _code_cells(notebook: Path) -> list[dict]:
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (ValueError, OSError, AttributeError) as error:
        raise ValueError(f"{notebook.name} is not a notebook that can be read ({type(error).__name__}): open it in "
                         "JupyterLab and save it again") from None
    return [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else ""


def problems(folder: Path, assignment: str, student: str) -> list[str]:
    """Why this folder would not earn its grade if handed in as ``student``: a widget's answers file the notebook
    saves to and that is missing, or a notebook last run with another student's values."""
    found: list[str] = []
    for cell in _code_cells(folder / f"{assignment}.ipynb"):
        source = _text(cell.get("source"))
        for name in _SAVED_ANSWERS.findall(source):
            if not (folder / name).is_file() and f"{name} is missing" not in " ".join(found):
                found.append(f"{name} is missing: your answers to the exercises are saved in it as you work; open "
                             f"{assignment}.ipynb in JupyterLab, answer in the exercises, then hand in again")
        shown = [m for out in cell.get("outputs", []) if isinstance(out, dict)
                 for m in _SHOWN_STUDENT.findall(_text(out.get("data", {}).get("text/plain")))]
        if ("my_values(" in source or "my_data(" in source) and shown and shown[0] != student:
            found.append(f"{assignment}.ipynb was last run with the values of {shown[0]!r}, not {student!r}: your "
                         f"answers must be for your own values. Start JupyterLab with PPEDU_STUDENT_ID={student} "
                         f"and run the notebook again, or hand in with --student {shown[0]} if that is your course id")
    return found


def handin(assignment: str, folder: Path, student: str | None = None, out: Path | None = None) -> tuple[Path, list[str]]:
    """Write ``ASSIGNMENT+STUDENT.zip`` into ``out`` (default: the current folder) with the notebooks and saved
    answers of ``folder``; returns its path and the files in it. Raises ``ValueError`` naming what is wrong."""
    who = student or student_id()
    if not _ID.fullmatch(who) or "+" in who:
        raise ValueError(f"{who!r} is not a course id (letters, digits, and . _ @ - only): give yours with --student")
    if found := problems(folder, assignment, who):
        raise ValueError("; ".join(found))
    files = sorted(p for p in folder.iterdir() if p.suffix in KINDS and not p.name.startswith("."))
    for path in files:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path.name} is a link or not a plain file: the grader takes plain files only; copy the "
                             "file itself into the folder")
        if info.st_size > MAX_BYTES:
            raise ValueError(f"{path.name} is larger than {MAX_BYTES // 2**20} MB: clear the notebook's outputs "
                             "(Edit > Clear Outputs of All Cells), save, and hand in again")
    target = (out or Path.cwd()) / archive_name(assignment, who)
    partial = target.with_name(target.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in files:
            zipped.write(path, path.name)
    os.replace(partial, target)
    return target, [p.name for p in files]
