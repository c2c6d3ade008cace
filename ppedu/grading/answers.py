"""A student's answers as plain data, and reading them: a missing name, a wrong type or a NaN
becomes a message that says what is wrong, never a traceback, and never the right answer.

:func:`plain` turns whatever a notebook holds into JSON-able data (numpy scalars, 0-d arrays,
tuples, ppedu's ``Op`` and ``Schedule`` included); the readers (:class:`Number`, :class:`Flag`, …)
read that data. The autograder's judge reads only such data, sent out of the student's kernel, so
an object that claims to equal everything is just a ``{"__type__": …}`` there.

>>> import numpy as np
>>> plain({"a": np.int64(3), "b": np.True_, "c": np.array(0.5), "d": (1, 2)})
{'a': 3, 'b': True, 'c': 0.5, 'd': [1, 2]}
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ppedu.feedback import Wrong



_MISSING = object()
#: At most this many items of a list, and characters of a text, are sent as an answer.
MAX_ITEMS, MAX_TEXT = 100_000, 2_000


def plain(value: object, depth: int = 0) -> object:
    """``value`` as JSON-able data; what is not data becomes ``{"__type__": its type's name}``."""
    try:
        if getattr(value, "shape", None) == () and hasattr(value, "item"):  # numpy/torch scalars, 0-d arrays
            value = value.item()
        if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
            return bool(value)
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, str):
            return str.__str__(value)[:MAX_TEXT]
        if hasattr(value, "stages") and type(value).__name__ == "Schedule":  # a ppedu Schedule: its op lists
            value = value.stages
        if depth < 4 and (isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray"):
            return [plain(x, depth + 1) for x in list(value)[:MAX_ITEMS]]  # type: ignore[call-overload]
        if depth < 4 and isinstance(value, dict):
            return {str(k)[:MAX_TEXT]: plain(x, depth + 1) for k, x in list(value.items())[:MAX_ITEMS]}
    except Exception:  # a value that breaks on conversion is no answer; say what it was
        pass
    return {"__type__": type(value).__name__[:60]}


def kind(value: object) -> str:
    """The name of a plain value's type, as a message names it."""
    return str(value.get("__type__", "dict"))[:60] if isinstance(value, dict) else type(value).__name__


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
            raise Wrong(f"`{self.name}` is a {kind(value)}; this answer is a single number.")
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
            raise Wrong(f"`{self.name}` is a {kind(value)}; write one of "
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
        if type(value) is not bool:  # numpy's bools are plain bools by now
            shown = kind(value) if isinstance(value, dict) else repr(value)[:40]
            raise Wrong(f"`{self.name}` is {shown}; this answer is True or False.")
        return value

    def equal(self, got: bool, expected: bool) -> bool:
        return got == expected


@dataclass(frozen=True)
class Counts:
    """One whole number per stage, GPU 0 first (a list or a tuple)."""

    name: str
    length: int | None = None  # None: as many as the student's values say (checked against the key)

    def read(self, namespace: Mapping[str, object]) -> tuple[int, ...]:
        value = lookup(namespace, self.name)
        if not isinstance(value, list):
            raise Wrong(f"`{self.name}` is a {kind(value)}; give one number per GPU, as a list: [a, b, …].")
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


def calls(namespace: Mapping[str, object], name: str, args: Sequence[Sequence[object]],
          run: Callable[[Callable[..., object], Sequence[object]], object] | None = None) -> object:
    """What the student's function ``name`` gives for each of ``args``, as data: ``[[args, result], …]``
    where a result is plain data or ``{"__raised__": error type, "message": …}``; or, if there is
    no such function, the plain value of ``name`` (``None`` if it is not defined). ``run(function,
    args)``, if given, calls the function and returns data itself.

    >>> calls({"f": lambda p: 1 / p}, "f", [(2,), (0,)])
    [[[2], 0.5], [[0], {'__raised__': 'ZeroDivisionError', 'message': 'division by zero'}]]
    """
    value = namespace.get(name)
    if not callable(value):
        return None if name not in namespace else plain(value)
    out = []
    for a in args:
        try:
            result = run(value, a) if run else plain(value(*a))
        except BaseException as error:  # noqa: B036 (a student's KeyboardInterrupt, SystemExit…: all answers)
            if isinstance(error, KeyboardInterrupt):
                raise
            result = {"__raised__": type(error).__name__[:60], "message": str(error)[:300]}
        out.append([list(a), result])
    return out


def raised(result: object) -> str | None:
    """If ``result`` (one of :func:`calls`'s) is an error, the one line that says which."""
    if isinstance(result, dict) and "__raised__" in result:
        name, message = result["__raised__"], str(result.get("message", ""))
        return f"raised {name}" + (f": {message}" if message else "")
    return None



def results(data: Mapping[str, object], name: str) -> dict[tuple[Any, ...], float]:
    """The student's function ``name`` as :func:`calls` sent it: its results by arguments, read as
    numbers; :class:`Wrong` says what is off (not defined, not a function, still the stub, raised).

    >>> results({"f": [[[2], 0.5]]}, "f")
    {(2,): 0.5}
    """
    got = data.get(name)
    if got is None:
        raise Wrong(f"`{name}` is not defined: write the function in its cell and run that cell.")
    if not isinstance(got, list):
        raise Wrong(f"`{name}` is a {kind(got)}; it should be the function you define with `def {name}(...)`.")
    out = {}
    for args, result in got:
        call = f"{name}({', '.join(f'{a:g}' if isinstance(a, numbers.Real) else str(a) for a in args)})"
        if isinstance(result, dict) and result.get("__raised__") == "NotImplementedError":
            raise Wrong(f"`{name}` is still the stub: write its body in place of `raise NotImplementedError()`.")
        if why := raised(result):
            raise Wrong(f"{call} {why}")
        out[tuple(args)] = Number(call).read({call: result})
    return out

@contextmanager
def without(functions: Sequence[Callable[..., object]], why: str) -> Iterator[None]:
    """While inside, each of ``functions`` raises ``RuntimeError(why)`` instead of running: its code
    is swapped, so a name it was imported under elsewhere stops working too. Put back afterwards.

    >>> def double(x):
    ...     return 2 * x
    >>> twice = double
    >>> with without([double], "write it yourself"):
    ...     calls({"f": lambda x: twice(x)}, "f", [(1,)])
    [[[1], {'__raised__': 'RuntimeError', 'message': 'write it yourself'}]]
    >>> twice(2)
    4
    """
    namespace: dict[str, Any] = {}
    exec(f"def stand_in(*args, **kwargs):\n    raise RuntimeError({why!r})", namespace)
    stub = namespace["stand_in"].__code__
    swapped = []
    try:
        for f in functions:
            code = getattr(f, "__code__", None)
            if code is not None and not code.co_freevars:
                swapped.append((f, code))
                f.__code__ = stub
        yield
    finally:
        for f, code in swapped:
            f.__code__ = code
