"""A student's answers as plain data, and reading them: a missing name, a wrong type or a NaN
becomes a message that says what is wrong, never a traceback, and never the right answer.

:func:`plain` turns what a notebook holds into JSON-able data under a strict schema (Python's own numbers, texts,
lists, tuples and dictionaries; numpy's and torch's numbers and arrays; ppedu's ``Op`` and ``Schedule``): anything
else — a subclass with methods of its own, an object that equals everything — is not an answer, however it behaves;
the readers (:class:`Number`, :class:`Flag`, …) read that data. The autograder reads only such data, sent out of the
student's process, and holds it to the same schema again on its side (:func:`conform`): the student's process may
send anything.

>>> import numpy as np
>>> plain({"a": np.int64(3), "b": np.True_, "c": np.array(0.5), "d": (1, 2), "e": np.str_("equal")})
{'a': 3, 'b': True, 'c': 0.5, 'd': [1, 2], 'e': 'equal'}
>>> class Everything(list):
...     def __eq__(self, other):
...         return True
>>> plain(Everything([1])), plain(10**400), plain("lone " + chr(0xD800))
({'__type__': 'Everything'}, {'__type__': 'number past the largest float'}, 'lone �')
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
#: At most this many items of a list, and characters of a text, are sent as an answer; containers nest this deep.
MAX_ITEMS, MAX_TEXT, MAX_DEPTH = 100_000, 2_000, 8
#: What stands for a value that is not plain data (its type's name, where that is all that can be said of it).
NOT_DATA, TOO_LARGE = "value that could not be read", "number past the largest float"


def text(value: str, limit: int = MAX_TEXT) -> str:
    """``value`` (a ``str`` exactly) as valid Unicode, at most ``limit`` characters: a lone surrogate becomes U+FFFD.

    >>> text("a" + chr(0xDC80) + "b")
    'a�b'
    """
    value = str.__getitem__(value, slice(0, limit))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
    return value


def plain(value: object, depth: int = 0, budget: list[int] | None = None) -> object:
    """``value`` as JSON-able data; what is not data becomes ``{"__type__": its type's name}``, no answer.

    Only the types the module's text lists are read, each exactly (a subclass of one is not) and through its type's
    own methods, so no code of the value's own runs; a number past a float's range, a value that breaks (or exits, or
    is interrupted) while it is read, or one nested past :data:`MAX_DEPTH`, is no answer either. At most
    :data:`MAX_ITEMS` items are read in all, :data:`MAX_TEXT` characters per text.
    """
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    kind = type(value)  # never the value's own attributes: isinstance would ask it for __class__
    if kind is Unavailable:  # what a forbidden module gave: the answer is not the student's own
        Unavailable._refuse(value)
    try:
        return _plain(value, kind, depth, budget)
    except NotAvailable:  # an item a forbidden module gave
        raise
    except BaseException:  # noqa: B036 (a value that breaks, exits or stops the interpreter when read is no answer)
        return {"__type__": NOT_DATA}


def _plain(value: Any, kind: type, depth: int, budget: list[int]) -> object:
    if value is None or kind is bool:
        return value
    if kind is int or kind is float:
        return value if kind is float or -sys.float_info.max <= value <= sys.float_info.max else {"__type__": TOO_LARGE}
    if kind is str:
        return text(value)
    if kind is Fraction or kind is Decimal:
        number = float(value)
        return number if type(number) is float else {"__type__": NOT_DATA}
    if (scalar := _library_scalar(value, kind)) is not _MISSING:
        return plain(scalar, depth, budget)
    schedule = getattr(sys.modules.get("ppedu.ops"), "Schedule", None)
    if schedule is not None and kind is schedule:  # a ppedu Schedule: its op lists
        value = object.__getattribute__(value, "stages")
        kind = type(value)
    items: list[Any] | None = None
    if kind is list:
        items = list.copy(value)
    elif kind is tuple or kind is getattr(sys.modules.get("torch"), "Size", tuple) or (
            issubclass(kind, tuple) and "_fields" in type.__getattribute__(kind, "__dict__")):
        items = list(tuple.__getitem__(value, slice(None)))  # a named tuple (ppedu's Op) too: its fields
    elif (array := _library_array(value, kind)) is not None:
        items = array
    if items is not None and depth < MAX_DEPTH:
        return [plain(x, depth + 1, budget) for x in items[:max(budget[0], 0)]]
    if kind is dict and depth < MAX_DEPTH:
        pairs = [(k, x) for k, x in dict.items(value) if type(k) in (str, int)][:max(budget[0], 0)]
        return {text(k) if type(k) is str else int.__repr__(k): plain(x, depth + 1, budget) for k, x in pairs}
    name = type.__getattribute__(kind, "__name__")
    return {"__type__": text(name, 60) if type(name) is str else NOT_DATA}


def _library_scalar(value: object, kind: type) -> object:
    """A numpy or torch scalar (or 0-d array, or one-element tensor) as a Python number, by the library's own
    method; else ``_MISSING``. Only libraries already imported are looked at, and only their own types."""
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if numpy is not None and kind is numpy.str_:
        return str.__str__(value)
    if numpy is not None and kind in _numpy_scalars(numpy):
        item = numpy.generic.item(value)
        if isinstance(item, numpy.generic):  # a type Python has no number for (long double): through float64
            return float(numpy.ndarray.item(numpy.asarray(value).astype(numpy.float64))) if issubclass(
                kind, numpy.floating) else _MISSING
        return item
    if numpy is not None and kind is numpy.ndarray and numpy.ndarray.__dict__["ndim"].__get__(value) == 0:
        return numpy.ndarray.item(value)
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter) and torch.Tensor.dim(value) == 0:
        return torch.Tensor.item(value)
    return _MISSING


def _numpy_scalars(numpy: Any) -> frozenset[type]:
    """numpy's own scalar types of numbers and truth values (not a subclass of one; its texts are read apart)."""
    return frozenset(t for t in numpy.sctypeDict.values() if issubclass(t, (numpy.number, numpy.bool_)))


def _library_array(value: object, kind: type) -> list[Any] | None:
    """A numpy array's or a torch tensor's rows as a list, read by the library's own method (at most MAX_ITEMS)."""
    numpy, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if numpy is not None and kind is numpy.ndarray:
        if numpy.ndarray.__dict__["size"].__get__(value) > MAX_ITEMS:
            return None
        return list(numpy.ndarray.tolist(value))
    if torch is not None and kind in (torch.Tensor, torch.nn.Parameter):
        if torch.Tensor.numel(value) > MAX_ITEMS:
            return None
        return list(torch.Tensor.tolist(value))
    return None


def conform(data: object, depth: int = 0, budget: list[int] | None = None) -> object:
    """JSON read back from a student's process held to :func:`plain`'s schema on the grader's side (that process can
    send anything): texts valid Unicode and short, numbers a float can hold, containers of limited size and depth;
    what is outside it becomes ``{"__type__": …}``, no answer.

    >>> conform({"T": 10**400, "why": chr(0xD800), "deep": [[[[[[[[[[1]]]]]]]]]]})["T"]
    {'__type__': 'number past the largest float'}
    >>> conform({"why": chr(0xD800)}), conform([[[[[[[[[[1]]]]]]]]]])[0][0][0][0][0][0][0]
    ({'why': '�'}, [{'__type__': 'value that could not be read'}])
    """
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    kind = type(data)
    if data is None or kind is bool or kind is float:
        return data
    if kind is int:
        return data if -sys.float_info.max <= data <= sys.float_info.max else {"__type__": TOO_LARGE}
    if kind is str:
        return text(data)
    if depth >= MAX_DEPTH or budget[0] < 0 or kind not in (list, dict):
        return {"__type__": NOT_DATA}
    if kind is list:
        return [conform(x, depth + 1, budget) for x in data[:max(budget[0], 0)]]
    return {text(str(k)): conform(x, depth + 1, budget) for k, x in list(data.items())[:max(budget[0], 0)]}


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
    numbers; :class:`Wrong` says what is off (not defined, not a function, still the stub, raised). Of an input in
    ``hidden`` it says only that the function gave no number there, in the grader's words: neither the input nor
    anything the function chose (what it returned, the name or message of what it raised) is repeated.

    >>> results({"f": [[[2], 0.5]]}, "f")
    {(2,): 0.5}
    >>> try:
    ...     results({"f": [[[2], 0.5], [[7], {"__raised__": "Seven", "message": "7 is odd"}]]}, "f", [(7,)])
    ... except Wrong as wrong:
    ...     print(wrong)
    `f` gave no number on an input the autograder chose (not shown): it must run, and return a number, on every input.
    """
    got = data.get(name)
    if got is None:
        raise Wrong(f"`{name}` is not defined: write the function in its cell and run that cell.")
    if not isinstance(got, list):
        raise Wrong(f"`{name}` is a {kind(got)}; it should be the function you define with `def {name}(...)`.")
    out = {}
    for args, result in got:
        if tuple(args) in hidden:
            try:
                out[tuple(args)] = Number(name).read({name: result})
            except Wrong:
                raise Wrong(f"`{name}` gave no number on an input the autograder chose (not shown): it must run, and "
                            "return a number, on every input.") from None
            continue
        call = f"{name}({', '.join(f'{a:g}' if isinstance(a, numbers.Real) else str(a) for a in args)})"
        if isinstance(result, dict) and result.get("__raised__") == "NotImplementedError":
            raise Wrong(f"`{name}` is still the stub: write its body in place of `raise NotImplementedError()`.")
        if why := raised(result):
            raise Wrong(f"{call} {why}")
        out[tuple(args)] = Number(call).read({call: result})
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
