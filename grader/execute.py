"""Autograding's execution: :class:`ppedu.grading.execute.SandboxedExecute` (the sandbox itself is
generic and ships with ppedu, for ``ppedu check``), and :data:`HIDDEN`, the ppedu implementations
each assignment's notebooks cannot call while they are autograded."""

from ppedu.grading.assignments import ps3, ps5
from ppedu.grading.execute import SandboxedExecute

#: assignment -> {ppedu module: functions hidden from its notebooks (empty: all of the module's)}
HIDDEN = {"ps3": {m: list(f) for m, f in ps3.HIDDEN.items()}, "ps5": {m: list(f) for m, f in ps5.HIDDEN.items()}}

__all__ = ["HIDDEN", "SandboxedExecute"]
