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
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ppedu.feedback import Wrong
from ppedu.grading.unavailable import NotAvailable, Unavailable



_MISSING = object()
#: At most this many items of a list, and characters of a text, are sent as an answer.
MAX_ITEMS, MAX_TEXT = 100_000, 2_000


def plain(value: object, depth: int = 0, budget: list[int] | None = None) -> object:
    """``value`` as JSON-able data; what is not data becomes ``{"__type__": its type's name}``.

    No code of the value's own runs: only Python's, numpy's and torch's own types are read, each through its
    type's own methods (a subclass that overrides ``__float__``, ``__iter__`` or ``item`` changes nothing), so
    a value that loops, exits or lies when read is just its type's name. At most :data:`MAX_ITEMS` items are
    read in all, :data:`MAX_TEXT` characters per text, four levels deep.
    """
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    data: Any = value
    kind = type(data)  # never the value's own attributes: isinstance would ask it for __class__
    if kind is Unavailable:  # what a forbidden module gave: the answer is not the student's own
        Unavailable._refuse(data)
    try:
        if issubclass(kind, bool):
            return bool.__bool__(data)
        if issubclass(kind, int):
            return int.__int__(data)
        if issubclass(kind, float):
            return float.__float__(data)
        if issubclass(kind, str):
            return str.__str__(data)[:MAX_TEXT]
        if kind in (Fraction, Decimal):
            return float(data)
        if (scalar := _library_scalar(data)) is not _MISSING:
            return plain(scalar, depth, budget)
        schedule = getattr(sys.modules.get("ppedu.ops"), "Schedule", None)
        if schedule is not None and kind is schedule:  # a ppedu Schedule: its op lists
            data = data.stages
            kind = type(data)
        items: list[Any] | None = None
        if issubclass(kind, list):
            items = list.copy(data)
        elif issubclass(kind, tuple):
            items = list(tuple.__getitem__(data, slice(None)))
        elif (array := _library_array(data)) is not None:
            items = array
        if items is not None and depth < 4:
            return [plain(x, depth + 1, budget) for x in items[:max(budget[0], 0)]]
        if issubclass(kind, dict) and depth < 4:
            pairs = [(k, x) for k, x in dict.items(data) if type(k) in (str, int)][:max(budget[0], 0)]
            return {str(k)[:MAX_TEXT]: plain(x, depth + 1, budget) for k, x in pairs}
    except NotAvailable:  # an item a forbidden module gave
        raise
    except Exception:  # a value that breaks on conversion is no answer; say what it was
        pass
    return {"__type__": str(type.__getattribute__(kind, "__name__"))[:60]}


def _library_scalar(value: object) -> object:
    """A numpy or torch scalar (or 0-d array, or one-element tensor) as a Python number, by the library's own
    method; else ``_MISSING``. Only libraries already imported are looked at."""
    numpy, torch, kind = sys.modules.get("numpy"), sys.modules.get("torch"), type(value)
    if numpy is not None and issubclass(kind, numpy.generic):
        item = numpy.generic.item(value)
        if isinstance(item, numpy.generic):  # a type Python has no number for (long double): through float64
            return float(numpy.ndarray.item(numpy.asarray(value).astype(numpy.float64))) if issubclass(
                kind, numpy.floating) else _MISSING
        return item
    if numpy is not None and issubclass(kind, numpy.ndarray) and numpy.ndarray.__dict__["ndim"].__get__(value) == 0:
        return numpy.ndarray.item(value)
    if torch is not None and issubclass(kind, torch.Tensor) and torch.Tensor.dim(value) == 0:
        return torch.Tensor.item(value)
    return _MISSING


def _library_array(value: object) -> list[Any] | None:
    """A numpy array's or a torch tensor's rows as a list, read by the library's own method (at most MAX_ITEMS)."""
    numpy, torch, kind = sys.modules.get("numpy"), sys.modules.get("torch"), type(value)
    if numpy is not None and issubclass(kind, numpy.ndarray):
        if numpy.ndarray.__dict__["size"].__get__(value) > MAX_ITEMS:
            return None
        return list(numpy.ndarray.tolist(value))
    if torch is not None and issubclass(kind, torch.Tensor):
        if torch.Tensor.numel(value) > MAX_ITEMS:
            return None
        return list(torch.Tensor.tolist(value))
    return None


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
        raise Missing(name)
    return value


class Missing(Wrong):
    """Answers whose names the notebook does not define: one sentence for all of them.

    >>> print(Missing("T", "total_slots", "bubble"))
    `T`, `total_slots` and `bubble` are not defined: write your answers in their cells (replacing the `raise NotImplementedError()` lines) and run those cells.
    """

    def __init__(self, *names: str) -> None:
        self.names = names
        listed = ", ".join(f"`{n}`" for n in names[:-1]) + (" and " if len(names) > 1 else "") + f"`{names[-1]}`"
        if len(names) == 1:
            super().__init__(f"{listed} is not defined: write your answer in its cell "
                             "(replacing the `raise NotImplementedError()` line) and run that cell.")
        else:
            super().__init__(f"{listed} are not defined: write your answers in their cells "
                             "(replacing the `raise NotImplementedError()` lines) and run those cells.")


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



def results(data: Mapping[str, object], name: str, hidden: Collection[tuple[Any, ...]] = ()) -> dict[tuple[Any, ...], float]:
    """The student's function ``name`` as :func:`calls` sent it: its results by arguments, read as
    numbers; :class:`Wrong` says what is off (not defined, not a function, still the stub, raised), never
    naming an input in ``hidden`` nor repeating what the function said about one.

    >>> results({"f": [[[2], 0.5]]}, "f")
    {(2,): 0.5}
    >>> try:
    ...     results({"f": [[[2], 0.5], [[7], {"__raised__": "ValueError", "message": "7 is odd"}]]}, "f", [(7,)])
    ... except Wrong as wrong:
    ...     print(wrong)
    `f` raised ValueError on an input the autograder chose (not shown)
    """
    got = data.get(name)
    if got is None:
        raise Wrong(f"`{name}` is not defined: write the function in its cell and run that cell.")
    if not isinstance(got, list):
        raise Wrong(f"`{name}` is a {kind(got)}; it should be the function you define with `def {name}(...)`.")
    out = {}
    for args, result in got:
        secret = tuple(args) in hidden
        call = f"{name} (on an input the autograder chose, not shown)" if secret else (
            f"{name}({', '.join(f'{a:g}' if isinstance(a, numbers.Real) else str(a) for a in args)})")
        if isinstance(result, dict) and result.get("__raised__") == "NotImplementedError":
            raise Wrong(f"`{name}` is still the stub: write its body in place of `raise NotImplementedError()`.")
        if secret and isinstance(result, dict) and "__raised__" in result:
            raise Wrong(f"`{name}` raised {str(result['__raised__'])[:60]} on an input the autograder chose (not shown)")
        if why := raised(result):
            raise Wrong(f"{call} {why}")
        try:
            out[tuple(args)] = Number(call).read({call: result})
        except Wrong:
            if secret:  # what it returned may echo the input: say only what kind of thing it was
                raise Wrong(f"`{name}` did not return a number on an input the autograder chose (not shown): it "
                            f"returned a {kind(result)}") from None
            raise
    return out


def describe(name: str, score: float, points: float, results: Sequence[tuple[str, bool, str]]) -> str:
    """A question's points and, per property, ✓ or ✗ with why not; a reason every property failed for, said once.

    >>> print(describe("gpipe", 0, 2, [("one", False, "— it raised"), ("two", False, "— it raised")]))
    gpipe: 0/2 points
      ✗ every property (one, two): it raised
    """
    lines = [f"{name}: {score:g}/{points:g} points"]
    if len(results) > 1 and len({(ok, why) for _, ok, why in results}) == 1 and not results[0][1]:
        return "\n".join([*lines, f"  ✗ every property ({', '.join(p for p, _, _ in results)}): "
                           f"{results[0][2].removeprefix('— ')}"])
    lines += [f"  {'✓' if ok else '✗'} {prop}" + ("" if ok else f" {why}") for prop, ok, why in results]
    return "\n".join(lines)
