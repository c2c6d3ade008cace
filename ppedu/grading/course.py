"""ppedu's pieces of nbgrader's machinery: the preprocessor that tells the autograding kernel
whose work it grades, and the output filter that keeps harmless stderr from costing points."""

from __future__ import annotations

import os
from typing import Any

from nbgrader.preprocessors import NbGraderPreprocessor

from ppedu.grading.students import ENV

#: stderr text in a test cell costs all its points (nbgrader.utils.determine_grade); these are
#: Python warning lines (``file.py:12: UserWarning: …``) and progress bars (``45%|████``),
#: which say nothing about the answer. nbgrader's IgnorePattern drops streams that match.
HARMLESS_STDERR = r"(?m)^\S.*:\d+: \w*Warning: |\d+%\|"


class StudentId(NbGraderPreprocessor):
    """Put the id of the student being graded into the environment of the kernel that runs their
    notebook (``PPEDU_STUDENT_ID``), so the hidden tests recompute that student's own values.

    It runs just before nbgrader's Execute, which starts the kernel with this process's environment.
    """

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        os.environ[ENV] = resources["nbgrader"]["student"]
        return nb, resources
