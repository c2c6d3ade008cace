"""Reading a student's answer variables: a missing name, a wrong type or a NaN becomes a message
that says what is wrong, never a traceback, and never the right answer.

Values are copied into plain ``int``/``float``/``str``/``bool`` before anything compares them, so
an object that claims to equal everything cannot pass a test.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class Wrong(AssertionError):
    """A student's answer is missing, malformed or wrong; the message is for the student."""


_MISSING = object()


def lookup(namespace: Mapping[str, object], name: str) -> object:
    """``namespace[name]``, or :class:`Wrong` saying how to define it.

    >>> try:
    ...     lookup({}, "idle_slots")
    ... except Wrong as wrong:
    ...     print(wrong)
    `idle_slots` is not defined: write your answer in its cell (replacing the `raise NotImplementedError()` line) and run that cell.
    """
    value = namespace.get(name, _MISSING)
    if value is _MISSING:
        raise Wrong(f"`{name}` is not defined: write your answer in its cell "
                    "(replacing the `raise NotImplementedError()` line) and run that cell.")
    return value


@dataclass(frozen=True)
class Number:
    """A numeric answer; ``whole`` for counts (slots, steps, micro-batches), ``fraction`` for a
    ratio in [0, 1]; compared within ``rel`` relative tolerance.

    >>> Number("T", whole=True).read({"T": 14.0})
    14
    >>> try:
    ...     Number("T", whole=True).read({"T": "14"})
    ... except Wrong as wrong:
    ...     print(wrong)
    `T` is the text '14': write the number itself, without quotes.
    """

    name: str
    whole: bool = False
    fraction: bool = False
    rel: float = 1e-3

    def read(self, namespace: Mapping[str, object]) -> float | int:
        value = lookup(namespace, self.name)
        if isinstance(value, bool):
            raise Wrong(f"`{self.name}` is {value}, a yes/no; this answer is a number.")
        if isinstance(value, str):
            raise Wrong(f"`{self.name}` is the text {value[:40]!r}: write the number itself, without quotes.")
        if not isinstance(value, numbers.Real):
            raise Wrong(f"`{self.name}` is a {type(value).__name__}; this answer is a single number.")
        x = float(value)
        if math.isnan(x):
            raise Wrong(f"`{self.name}` is NaN (not a number): did a division by zero slip in?")
        if math.isinf(x):
            raise Wrong(f"`{self.name}` is infinite: did a division by zero slip in?")
        if self.whole:
            if x != round(x):
                raise Wrong(f"`{self.name}` is {x:g}, but it counts whole things (slots, steps, micro-batches).")
            if x < 0:
                raise Wrong(f"`{self.name}` is {x:g}, but a count cannot be negative.")
            return int(round(x))
        if self.fraction and not 0 <= x <= 1:
            hint = " It looks like a percentage: give the fraction instead (0.25, not 25)." if 1 < x <= 100 else ""
            raise Wrong(f"`{self.name}` is {x:g}, but a ratio of slots lies between 0 and 1.{hint}")
        return x

    def equal(self, got: float, expected: float) -> bool:
        return abs(got - float(expected)) <= self.rel * max(1.0, abs(float(expected)))


@dataclass(frozen=True)
class Choice:
    """One of a few words (compared without case or surrounding spaces)."""

    name: str
    options: tuple[str, ...]

    def read(self, namespace: Mapping[str, object]) -> str:
        value = lookup(namespace, self.name)
        if not isinstance(value, str):
            raise Wrong(f"`{self.name}` is a {type(value).__name__}; write one of "
                        + ", ".join(repr(o) for o in self.options) + " (with quotes).")
        word = value.strip().lower()
        if word not in self.options:
            raise Wrong(f"`{self.name}` is {value!r}; the choices are " + ", ".join(repr(o) for o in self.options) + ".")
        return word

    def equal(self, got: str, expected: str) -> bool:
        return got == expected


@dataclass(frozen=True)
class Flag:
    """A yes/no answer: ``True`` or ``False``."""

    name: str

    def read(self, namespace: Mapping[str, object]) -> bool:
        value = lookup(namespace, self.name)
        if type(value) is not bool and type(value).__name__ != "bool_":  # numpy's bool too
            raise Wrong(f"`{self.name}` is {value!r}; this answer is True or False.")
        return bool(value)

    def equal(self, got: bool, expected: bool) -> bool:
        return got == expected


@dataclass(frozen=True)
class Counts:
    """One whole number per stage, GPU 0 first (a list or a tuple)."""

    name: str
    length: int | None = None  # None: as many as the student's values say (checked against the key)

    def read(self, namespace: Mapping[str, object]) -> tuple[int, ...]:
        value = lookup(namespace, self.name)
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
            raise Wrong(f"`{self.name}` is a {type(value).__name__}; give one number per GPU, as a list: [a, b, …].")
        items = list(value)
        if self.length is not None and len(items) != self.length:
            raise Wrong(f"`{self.name}` has {len(items)} entries; give one per GPU ({self.length}), GPU 0 first.")
        return tuple(int(Number(f"{self.name}[{i}]", whole=True).read({f"{self.name}[{i}]": x})) for i, x in enumerate(items))

    def equal(self, got: tuple[int, ...], expected: tuple[int, ...]) -> bool:
        return tuple(got) == tuple(expected)


def function(namespace: Mapping[str, object], name: str) -> Callable[..., object]:
    """The student's function ``name``, or :class:`Wrong` if it is missing or not callable."""
    value = lookup(namespace, name)
    if not callable(value):
        raise Wrong(f"`{name}` is a {type(value).__name__}; it should be the function you define with `def {name}(...)`.")
    return value
