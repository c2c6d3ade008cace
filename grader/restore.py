"""Put a submission back into the shape of its release before anything runs: an nbgrader
preprocessor for the sanitizing step of autograding, before nbgrader's own checks.

The release (``exercises/psN/psN.ipynb``) decides which cells there are, in which order, with which
metadata (points, grade_id, grade flag, locks); the student's notebook contributes only the source
of their answer cells and any cells of their own. Test cells and text come from the release, the
test cells' full source (hidden tests included) from the gradebook, as nbgrader's OverwriteCells
would put them. So a deleted, edited, retyped or renamed test cell, or changed points, is graded
as released; a copied cell's duplicate ``grade_id`` (nbgrader #1083) is dropped; and nbgrader
afterwards finds every checksum as it expects — only what was really changed is logged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor


def _id(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta.get("grade_id") if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) else None


def _own(cell: NotebookNode) -> NotebookNode:
    """A student's own cell: code or text, nothing that nbgrader would grade."""
    kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") else "markdown"
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(str(cell.get("source", "")))


def restore(submitted: NotebookNode, release: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """``submitted`` rebuilt on ``release``'s cells; also the list of what had to be put back."""
    answers: dict[str, NotebookNode] = {}
    after: dict[str | None, list[NotebookNode]] = {}
    released = {_id(c): c for c in release.cells if _id(c)}
    changed: list[str] = []
    anchor: str | None = None
    for cell in submitted.cells:
        gid = _id(cell)
        if gid in released and gid not in answers:
            if released[gid].metadata.nbgrader.get("solution"):
                answers[gid] = cell
            elif cell.get("source") != released[gid].source or cell.get("metadata", {}).get("nbgrader") != \
                    released[gid].metadata.nbgrader or cell.get("cell_type") != released[gid].cell_type:
                changed.append(f"cell {gid} was changed")
            anchor = gid
            answers.setdefault(gid, cell)
        else:
            after.setdefault(anchor, []).append(_own(cell))
    out = nbformat.from_dict(release)
    cells = list(after.get(None, []))
    for cell in [c for c in out.cells if _id(c)]:  # a released cell without an id is the student's copy
        gid = _id(cell)
        if gid and cell.metadata.nbgrader.get("solution"):
            cell.source = str(answers[gid].get("source", "")) if gid in answers else ""
        if gid and gid not in answers:
            changed.append(f"cell {gid} was missing")
        cells.append(cell)
        cells += after.get(gid, [])
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
