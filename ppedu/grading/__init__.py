"""Graded assignments: each student's own values, answer checks whose messages teach, and the
hidden tests' referee (see docs/instructor.md).

>>> from ppedu.grading import my_values
>>> my_values("ps1", student="alice").p in range(3, 7)
True
"""

from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import check, my_values

__all__ = ["Wrong", "check", "my_values"]
