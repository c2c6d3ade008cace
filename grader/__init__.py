"""The instructor's side of the course's grading (never in the ``ppedu`` package students install).

* :mod:`grader.keys` — each assignment's answer keys and hints (``grader.keys.ps1`` …);
* :mod:`grader.questions` — a question's form (from :mod:`ppedu.grading`) joined to its key;
* :mod:`grader.judge` — the nbgrader preprocessor that, after the notebook ran in its sandbox,
  reads the answers each test cell handed in as data and decides score and message;
* :mod:`grader.restore` — puts back test cells and metadata a submission changed or deleted;
* :mod:`grader.execute` — nbgrader's Execute in a bubblewrap sandbox, with output, time and crash
  handling that never leaves a submission ungradeable;
* :mod:`grader.runner` and :mod:`grader.cli` — ``ppedu grade``: a class in parallel;
* :mod:`grader.exam` — the widget exam (``counting``): judges the answers its exercises saved in the
  submission, read before the notebook runs;
* :mod:`grader.intake` — a submission taken in as data (collect from the exchange, the grading area autograding
  reads), and :mod:`grader.archives` — hand-ins as files (``zip_collect``), each owned by its name;
* :mod:`grader.status` — why a submission could not be graded; :mod:`grader.policy` — the late rule on the final
  total, each student's standing; :mod:`grader.export` — the class list exported with it.

``nbgrader_config.py`` (the course root) puts the course root on ``sys.path`` and wires these
preprocessors into nbgrader's autograder, so plain ``nbgrader autograde``, the formgrader's button
and ``ppedu grade`` grade alike.
"""
