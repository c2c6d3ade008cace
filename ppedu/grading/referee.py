"""The hidden tests' entry point: grades with a pristine copy of ppedu, so a notebook that
monkey-patches ppedu (its checkers, its simulator, its formulas) changes nothing.

A hidden test cell reloads this module from its file first, which undoes any patch to it::

    import importlib, ppedu.grading.referee as referee
    importlib.reload(referee).grade("ps1", "gpipe_slots", globals())

:func:`grade` then sets the notebook's ``ppedu`` modules aside, imports ppedu afresh from its files,
grades with that copy and puts the notebook's modules back. This module imports nothing from
ppedu at its top, so reloading it needs nothing the notebook could have touched.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any


def _ours(name: str) -> bool:
    return name == "ppedu" or name.startswith("ppedu.")


@contextmanager
def pristine() -> Iterator[None]:
    """Within this block, ``import ppedu…`` executes ppedu's files anew."""
    saved = {name: module for name, module in sys.modules.items() if _ours(name)}
    for name in saved:
        del sys.modules[name]
    try:
        yield
    finally:
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)


def grade(assignment: str, question: str, namespace: Mapping[str, object]) -> Any:
    """Grade ``question`` of ``assignment`` for the student being autograded.

    A wrong answer raises ``AssertionError`` with a message for the student (0 points); a question
    with partial credit prints its report and returns the points earned, which nbgrader reads.
    """
    __tracebackhide__ = True
    with pristine():
        assignments: ModuleType = importlib.import_module("ppedu.grading.assignments")
        try:
            result = assignments.grade(assignment, question, namespace)
        except AssertionError as wrong:
            message = str(wrong)
        else:
            return result
    raise AssertionError(message)
