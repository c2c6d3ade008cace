"""Put a submission back into the shape of its release before anything runs: an nbgrader
preprocessor for the sanitizing step of autograding, before nbgrader's own checks.

One semantics, nbgrader's: the notebook as the student wrote it, top to bottom. Its cells stay in the student's order
(an answer cell moved above the cell that uses it still runs first); each released cell is where the student's
notebook has it — the last cell carrying its grade_id, the one nbgrader's DeduplicateIds keeps (nbgrader #1083: a
copied cell keeps its grade_id) — with the release's type and metadata (points, grade_id, grade flag, locks) and, for
a test cell or text, the release's source (a test cell's full source, hidden tests included, from the gradebook, as
nbgrader's OverwriteCells would put it); an answer cell keeps the student's source, and a written answer its pasted
pictures (attachments). A released cell the notebook lacks is put back after the released cell before it. Every other
cell (a copy, a cell of the student's own) is the student's, code or text, without nbgrader's metadata. So a deleted,
edited, retyped or renamed test cell, or changed points, is graded as released, and nbgrader afterwards finds every
checksum as it expects — only what was really changed is logged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.intake import new_cell


def _id(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta.get("grade_id") if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) else None


#: What of a released cell's metadata a student must not change (its checksum is nbgrader's to check).
_KEPT = ("grade", "grade_id", "locked", "points", "solution", "task")


def _same(cell: NotebookNode, released: NotebookNode) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == released.cell_type and cell.get("source") == released.source and all(
        meta.get(k) == released.metadata.nbgrader.get(k) for k in _KEPT)


def pictures(cell: Any) -> dict[str, dict[str, str]]:
    """A cell's pasted pictures (its attachments) that a notebook may hold: ``{name: {"image/…": base64 text}}``."""
    found = cell.get("attachments") if isinstance(cell, dict) else None
    if not isinstance(found, dict):
        return {}
    return {name: {kind: data for kind, data in files.items() if isinstance(kind, str) and kind.startswith("image/")
                   and isinstance(data, str)}
            for name, files in found.items() if isinstance(name, str) and isinstance(files, dict)}


def _with_pictures(cell: NotebookNode, source: Any) -> NotebookNode:
    if cell.cell_type == "markdown" and (found := {k: v for k, v in pictures(source).items() if v}):
        cell.attachments = found
    return cell


def _own(cell: NotebookNode) -> NotebookNode:
    """A student's own cell: code or text (with its pictures), nothing that nbgrader would grade."""
    kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") else "markdown"
    return _with_pictures(new_cell(kind, str(cell.get("source", ""))), cell)


def restore(submitted: NotebookNode, release: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """``submitted`` rebuilt on ``release``'s cells (see the module's text); also the list of what had to be put
    back."""
    released = {gid: c for c in release.cells if (gid := _id(c))}
    last = {gid: i for i, c in enumerate(submitted.cells) if (gid := _id(c)) in released}
    changed: list[str] = []
    cells: list[NotebookNode] = []
    placed: dict[str, NotebookNode] = {}
    for i, cell in enumerate(submitted.cells):
        gid = _id(cell)
        if gid is None or last.get(gid) != i:  # a cell of the student's own, or a copy of a released one
            cells.append(_own(cell))
            continue
        placed[gid] = new = nbformat.from_dict(released[gid])
        if new.metadata.nbgrader.get("solution"):
            new.source = str(cell.get("source", ""))
            _with_pictures(new, cell)
        elif not _same(cell, released[gid]):
            changed.append(f"cell {gid} was changed")
        cells.append(new)
    previous: NotebookNode | None = None
    for gid, cell in released.items():  # in the release's order
        if gid not in placed:
            placed[gid] = new = nbformat.from_dict(cell)
            if new.metadata.nbgrader.get("solution"):
                new.source = ""
            changed.append(f"cell {gid} was missing")
            at = next((k + 1 for k, c in enumerate(cells) if c is previous), 0)
            cells.insert(at, new)
        previous = placed[gid]
    out = nbformat.from_dict(release)
    out.cells = cells
    return out, changed


class RestoreCells(NbGraderPreprocessor):
    """Rebuild the submission on its release (see the module's text)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        info = resources["nbgrader"]
        course = CourseDirectory(config=self.config)
        path = Path(course.format_path(course.release_directory, ".", info["assignment"])) / f"{info['notebook']}.ipynb"
        if not path.is_file():
            self.log.warning("no release %s to restore the submission's cells from", path)
            return nb, resources
        restored, changed = restore(nb, nbformat.read(path, as_version=nbformat.NO_CONVERT))
        for what in changed:
            self.log.warning("%s: %s, put back as released", info["student"], what)
        with Gradebook(info["db_url"]) as gb:
            for cell in restored.cells:
                gid = _id(cell)
                if gid and cell.metadata.nbgrader.get("grade") and not cell.metadata.nbgrader.get("solution"):
                    try:
                        cell.source = gb.find_source_cell(gid, info["notebook"], info["assignment"]).source
                    except MissingEntry:
                        pass
        restored.metadata = nb.metadata
        return restored, resources
