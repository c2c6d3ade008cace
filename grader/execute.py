"""Autograding's execution: :class:`ppedu.grading.execute.SandboxedExecute` (the sandbox itself is
generic and ships with ppedu, for ``ppedu check``), and :data:`HIDDEN`, the ppedu implementations
each assignment's notebooks cannot call while they are autograded."""

from ppedu.grading.assignments import ps3, ps4, ps5
from ppedu.grading.execute import SandboxedExecute

#: assignment -> {module: functions hidden from its notebooks (empty: all of the module's; None: the module)}
HIDDEN = {name: {m: None if f is None else list(f) for m, f in a.HIDDEN.items()}
          for name, a in (("ps3", ps3), ("ps4", ps4), ("ps5", ps5))}

__all__ = ["HIDDEN", "SandboxedExecute"]
