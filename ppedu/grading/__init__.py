"""Checks of a student's work that a notebook can run (form and consistency, with messages that
teach), each student's own values for the graded assignments, and the hand-in of answers as plain
data for the autograder, whose judge and keys are the instructor's (docs/instructor.md).

>>> from ppedu.grading import my_values
>>> my_values("ps1", student="alice").p in range(3, 7)
True
"""

from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import check, hand_in, my_values

__all__ = ["Wrong", "check", "hand_in", "my_values"]
