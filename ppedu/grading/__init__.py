"""Checks of a student's work against what ppedu computes, with messages that teach; each
student's own values for the graded assignments; the hidden tests' referee (docs/instructor.md).

>>> from ppedu.grading import my_values
>>> my_values("ps1", student="alice").p in range(3, 7)
True
"""

from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import check, my_values

__all__ = ["Wrong", "check", "my_values"]
