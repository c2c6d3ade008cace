"""Checks of a student's work that a notebook can run (form and consistency, with messages that
teach), each student's own values for the graded assignments and the data their questions show (made on the
instructors' side: :mod:`ppedu.grading.questiondata`), the answers as plain data for the
autograder, and the running of an answer cell on its own (:mod:`ppedu.grading.evaluate`); the judge
and keys are the instructor's (docs/instructor.md).

>>> from ppedu.grading import my_values
>>> my_values("ps1", student="alice").p in range(3, 7)
True
"""

from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import my_values
from ppedu.grading.questiondata import my_data
from ppedu.grading.visible import check

__all__ = ["Wrong", "check", "my_data", "my_values"]
