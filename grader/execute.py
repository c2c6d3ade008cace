"""Autograding's execution: :class:`ppedu.grading.execute.SandboxedExecute` (the sandbox itself is
generic and ships with ppedu, for ``ppedu check``)."""

from ppedu.grading.execute import SandboxedExecute

__all__ = ["SandboxedExecute"]
