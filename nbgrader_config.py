"""nbgrader's configuration for the ppedu course (read by every `nbgrader` command run here).

The course directory is this repository: `solutions/` holds the instructor's source assignments
(nbgrader's "source"), `exercises/` the generated student versions (its "release"); submissions,
autograded copies and feedback go to `submitted/`, `autograded/` and `feedback/` here (git ignores
them). See docs/instructor.md.
"""

import os
import sys
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput, DeduplicateIds, Execute,
                                    IgnorePattern, LimitOutput, OverwriteKernelspec, SaveAutoGrades)

course = Path(__file__).resolve().parent
sys.path.insert(0, str(course))  # the instructors' grader/ package, which is not part of ppedu's install

from grader.cells import RestoreReleasedCells  # noqa: E402
from grader.exam import ReadSavedAnswers, WriteVerdicts  # noqa: E402
from ppedu.grading.course import HARMLESS_STDERR, StudentId  # noqa: E402

c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.root = str(course)
c.CourseDirectory.course_id = "ppedu"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# The gradebook: SQLite beside this file; for a large course point PPEDU_DB_URL at PostgreSQL
# (postgresql://user:password@host/ppedu). The timeout lets parallel autograders (`ppedu grade`) queue.
c.CourseDirectory.db_url = os.environ.get("PPEDU_DB_URL", f"sqlite:///{course / 'gradebook.db'}?timeout=60")
# The exchange (where `nbgrader release_assignment` puts assignments and `nbgrader collect` finds
# submissions) is the machine's, set for every user by `make exchange` in /etc/jupyter/nbgrader_config.py:
# students' nbgrader commands, run in their own folders, read only that. PPEDU_EXCHANGE overrides it here.
if "PPEDU_EXCHANGE" in os.environ:
    c.Exchange.root = os.environ["PPEDU_EXCHANGE"]

# Every cell gets at most this long when autograding; a cell that runs over is interrupted and
# scores 0, the rest of the notebook (and the class) still grades.
c.Execute.timeout = int(os.environ.get("PPEDU_CELL_TIMEOUT", "120"))
c.Execute.interrupt_on_timeout = True
c.IgnorePattern.pattern = HARMLESS_STDERR
# nbgrader's own list, with ppedu's StudentId first: the kernel learns whose values to grade. The widget exam's
# answers are read from the submission before the notebook runs, and judged in place of its test cells' output.
c.Autograde.autograde_preprocessors = [StudentId, ReadSavedAnswers, Execute, WriteVerdicts, IgnorePattern,
                                       ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, AssignLatePenalties,
                                       CheckCellMetadata]
# nbgrader's own first pass, with its OverwriteCells warning only about cells a student changed (grader/cells.py).
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec, RestoreReleasedCells,
                                      CheckCellMetadata]
