"""The verdict a check gives on one attempt, shared by the widgets, the lessons and grading."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feedback:
    """The verdict on one attempt: ``correct`` and one message per answer (or per problem).

    >>> print(Feedback(False, ("idle slots: not quite.", "bubble ratio: correct.")))
    idle slots: not quite.
    bubble ratio: correct.
    """

    correct: bool
    messages: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "\n".join(self.messages)

    def __bool__(self) -> bool:
        return self.correct


class Wrong(AssertionError):
    """A student's answer is missing, malformed or wrong; the message is for the student.

    In a notebook (and in nbgrader's Validate, which shows what the notebook shows) it reads as its
    message alone, in red, without a traceback through the checking code: the sentence that helps is
    the first thing the student sees.

    >>> Wrong("`T` is not defined.")._render_traceback_()
    ['\\x1b[0;31m✗ `T` is not defined.\\x1b[0m']
    """

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines in place of the traceback
        return [f"\x1b[0;31m✗ {line}\x1b[0m" if i == 0 else f"\x1b[0;31m  {line}\x1b[0m"
                for i, line in enumerate(str(self).splitlines() or [""])]
