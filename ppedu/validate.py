"""Argument checks, each rule written once: every error is one line naming the rule broken, so
the CLI can print it (exit 2) and a notebook shows it without a long traceback.

>>> whole("p", 0, "stages")
Traceback (most recent call last):
...
ValueError: p (stages) must be a whole number ≥ 1 (got 0)
>>> one_of("schedule", "1F1B", ["gpipe", "1f1b"])
Traceback (most recent call last):
...
ValueError: unknown schedule '1F1B' (choose from gpipe, 1f1b)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

#: What the course's one-letter counts mean, for the messages.
MEANING = {"p": "stages", "m": "micro-batches", "v": "chunks per stage"}


def whole(name: str, value: object, meaning: str | None = None) -> int:
    """``value`` if it is a whole number ≥ 1 (``True`` is not), else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        what = f"{name} ({meaning})" if meaning else name
        raise ValueError(f"{what} must be a whole number ≥ 1 (got {value!r})")
    return value


def require_counts(**counts: object) -> None:
    """Check several counts at once, each named as the course names it (``p``, ``m``, ``v``, …).

    >>> require_counts(p=4, m=8)
    """
    for name, value in counts.items():
        whole(name, value, MEANING.get(name))


def one_of(what: str, value: T, choices: Iterable[T]) -> T:
    """``value`` if it is one of ``choices``, else ``ValueError`` listing them."""
    options = list(choices)
    if value not in options:
        raise ValueError(f"unknown {what} {value!r} (choose from {', '.join(map(str, options))})")
    return value


def numbers(text: str) -> tuple[float, ...]:
    """Comma-separated numbers (``1,1,2,1``), as an ``argparse`` type.

    >>> numbers("1,2.5")
    (1.0, 2.5)
    """
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or comma-separated numbers: {text!r}") from None
