"""nbgrader's configuration for the ppedu course (read by every `nbgrader` command run here, by the
formgrader and by `ppedu grade`).

The course directory is this repository: `solutions/` holds the instructor's source assignments
(nbgrader's "source"), `exercises/` the generated student versions (its "release"); submissions,
autograded copies and feedback go to `submitted/`, `autograded/` and `feedback/` here (git ignores
them). `grader/` beside this file is the instructor's grading code: keys, judge, sandboxed
execution. See docs/instructor.md.
"""

import os
import sys
import warnings
from pathlib import Path

course = Path(__file__).resolve().parent
if str(course) not in sys.path:  # `grader` lives beside this file, never in the installed ppedu
    sys.path.insert(0, str(course))

from nbgrader.preprocessors import (CheckCellMetadata, ClearOutput,  # noqa: E402
                                    DeduplicateIds, LimitOutput, OverwriteCells, OverwriteKernelspec,
                                    SaveAutoGrades)
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.server_extensions.formgrader.handlers import template_path as formgrader_templates  # noqa: E402
from sqlalchemy.exc import SAWarning  # noqa: E402

from grader.archives import Collector, Extractor, guard_zip_collect  # noqa: E402
from grader.exam import ReadSavedAnswers, WriteVerdicts  # noqa: E402
from grader.execute import Evaluate  # noqa: E402
from grader.export import ClassGrades  # noqa: E402
from grader.gradebook import backup_the_file, repair_version_stamp, tools_on_path  # noqa: E402
from grader.intake import Collect, IntakeNotes, guard_autograde, safe_timestamps  # noqa: E402
from grader.judge import Judge  # noqa: E402
from grader.policy import FinalGrades  # noqa: E402
from grader.regrade import KeepManualGrades, RememberManualGrades  # noqa: E402
from grader.restore import RestoreCells  # noqa: E402
from grader.status import record_failures  # noqa: E402
from ppedu.grading.handin import COLLECTOR_PATTERN as HANDIN_PATTERN, KINDS as HANDIN_KINDS  # noqa: E402

# A student's bytes reach the grader only through the intake (grader/intake.py): collect and zip_collect copy
# with it, never following a link; autograding (ppedu grade, nbgrader autograde, the formgrader's button) reads
# only the grading area it fills from submitted/. nbgrader has no setting for the last two, hence the calls.
guard_autograde()
safe_timestamps()
# zip_collect ends with a summary of the hand-ins it left out, and exits 1 if it left any (grader/archives.py); a
# submission that could not be autograded keeps why, for the export and `ppedu grade` to say (grader/status.py).
guard_zip_collect()
record_failures()
# nbgrader runs `alembic` by name when it makes a gradebook: this environment's programs come first on PATH, whoever
# opens the gradebook first (the formgrader of a JupyterLab whose environment was not activated, say).
tools_on_path()
backup_the_file()  # `nbgrader db upgrade` of the gradebook.db?timeout=60 below
# nbgrader's own gradebook code trips SQLAlchemy's session warnings on every autograde (nothing for a grader to do).
warnings.filterwarnings("ignore", category=SAWarning, message=r"Object of type <\w+> not in session")

c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.root = str(course)
c.CourseDirectory.course_id = "ppedu"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
# The gradebook: SQLite beside this file; for a large course point PPEDU_DB_URL at PostgreSQL
# (postgresql://user:password@host/ppedu). The timeout lets parallel autograders (`ppedu grade`) queue.
c.CourseDirectory.db_url = os.environ.get("PPEDU_DB_URL", f"sqlite:///{course / 'gradebook.db'}?timeout=60")
repair_version_stamp(c.CourseDirectory.db_url)  # one made while `alembic` could not be found (grader/gradebook.py)
# The formgrader's pages load MathJax from a CDN; without a network nbgrader's own page script stops at the missing
# MathJax and no score can be typed. grader/templates/formgrade/mathjax.html.j2 stands in where it is missing.
c.HTMLExporter.extra_template_basedirs = [str(course / "grader" / "templates"), formgrader_templates]
# A submission's HTML (its outputs, its written answers) is shown cleaned: a script in it would run in the
# instructor's logged-in page, where it could set any grade through the formgrader's API.
# nbgrader's formgrade template renders markdown cells itself, past `sanitize_html`: nbconvert's SanitizeHTML
# preprocessor cleans the cells before any template sees them.
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.preprocessors = ["nbconvert.preprocessors.sanitize.SanitizeHTML"]
c.SanitizeHTML.enabled = True
# The exchange (where `nbgrader release_assignment` puts assignments and `nbgrader collect` finds
# submissions) is the machine's, set for every user by `make exchange` in /etc/jupyter/nbgrader_config.py:
# students' nbgrader commands, run in their own folders, read only that. PPEDU_EXCHANGE overrides it here.
if "PPEDU_EXCHANGE" in os.environ:
    c.Exchange.root = os.environ["PPEDU_EXCHANGE"]

# Every cell gets at most this long when autograding; a cell that runs over is interrupted and
# scores 0, the rest of the notebook (and the class) still grades. A whole submission (its cells and its function
# runs together) gets SandboxedExecute.budget seconds (by default five times a cell's limit) and may output 2 MB
# (max_outputs) in all: past either it is ungradeable, with the reason, and the class goes on.
c.Execute.timeout = int(os.environ.get("PPEDU_CELL_TIMEOUT", "120"))
c.Execute.interrupt_on_timeout = True
# Every notebook runs in a bubblewrap sandbox, and so does every run of its functions;
# `ppedu grade --no-sandbox` (trusted notebooks only) sets PPEDU_SANDBOX=off for its own workers.
c.SandboxedExecute.sandbox = os.environ.get("PPEDU_SANDBOX", "on") != "off"
c.ExchangeFactory.collect = Collect
# Hand-ins from laptops (`ppedu handin ps1` writes ps1+<student id>.zip): `nbgrader zip_collect ps1` takes each entry of
# downloaded/ps1/archive/ as one student's hand-in, the student named by the entry's own name matched with this
# pattern (never by anything inside it), and collects notebooks and a widget's saved answers (.json) from it. Hand-ins
# named otherwise (a learning platform's) need their own --FileNameCollectorPlugin.named_regexp (grader/archives.py).
c.ZipCollectApp.extractor_plugin = Extractor
c.ZipCollectApp.collector_plugin = Collector
c.FileNameCollectorPlugin.named_regexp = HANDIN_PATTERN
c.FileNameCollectorPlugin.valid_ext = list(HANDIN_KINDS)
# Submissions are rebuilt on their release before nbgrader's checks (the intake's notes on top); the judge, not
# the kernel, scores every test cell, so nothing a notebook prints (stderr included) decides a grade.
c.Autograde.sanitize_preprocessors = [ClearOutput, RestoreCells, IntakeNotes, DeduplicateIds, OverwriteKernelspec,
                                      OverwriteCells, CheckCellMetadata]
# The widget exam's answers are read from the submission before the notebook runs, and judged in place of its
# test cells' output (grader/exam.py).
# Grading again leaves a finished manual grade finished where the answers it was given for did not change
# (grader/regrade.py).
c.Autograde.autograde_preprocessors = [RememberManualGrades, ReadSavedAnswers, Evaluate, Judge, WriteVerdicts,
                                       ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, KeepManualGrades,
                                       CheckCellMetadata]
# Due dates are set when releasing (the formgrader's due date, or `nbgrader db assignment add ps1 --duedate=…`);
# a submission after it loses this share of its final total (written answers graded by hand included) per day or
# part of a day late, and a timed exam (ppedu.grading.assignments.TIMED) all of it (grader/policy.py). The rule
# applies where grades leave the gradebook: `nbgrader export`, the feedback, `ppedu grade`'s report; never while
# autograding (nbgrader's AssignLatePenalties is left out of the list above).
c.LatePolicy.percent_per_day = 10
c.GenerateFeedback.preprocessors = [FinalGrades, CSSHTMLHeaderPreprocessor]
# `nbgrader export` writes every student of the class list, with a status, for the assignments students were given.
c.ExportApp.plugin_class = ClassGrades
