"""Putting a submission's locked cells back as the gradebook has them, before it is graded, with a warning
only where a student changed something.

nbgrader's OverwriteCells restores every locked cell from the gradebook and warns "Attribute 'checksum' for
cell … has changed!" whenever the submitted cell differs. But the gradebook holds each test cell *with* its
hidden tests, and every copy students get is without them, so it warned about every hidden-test cell of
every submission, and a real edit drowned in that noise. Here a cell that differs only by its hidden tests
is restored silently; any other difference is still restored and still reported.
"""

from __future__ import annotations

from typing import Any

from nbformat import NotebookNode
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells


def released(source: str) -> str:
    """``source`` as students get it: without its hidden-test region.

    >>> released("check()\\n### BEGIN HIDDEN TESTS\\ngrade()\\n### END HIDDEN TESTS")
    'check()'
    """
    cell = NotebookNode(source=source)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


class RestoreReleasedCells(OverwriteCells):
    """nbgrader's OverwriteCells, without the warning for hidden tests that were never in the student's copy."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any], index: int) -> tuple[NotebookNode, dict[str, Any]]:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source = None
            if source is not None and source.locked and cell.source == released(source.source) != source.source:
                cell.source = source.source
        return super().preprocess_cell(cell, resources, index)
