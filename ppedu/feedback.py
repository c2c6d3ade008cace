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
    """A student's answer is missing, malformed or wrong; the message is for the student."""
