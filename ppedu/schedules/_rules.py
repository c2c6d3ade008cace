"""Validation rules shared by the schedule generators; each error names the rule broken."""

from __future__ import annotations

_MEANING = {"p": "stages", "m": "micro-batches", "v": "chunks per stage"}


def require_counts(**counts: int) -> None:
    """Raise ``ValueError`` unless every count is a whole number ≥ 1."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} ({_MEANING[name]}) must be a whole number ≥ 1 (got {value!r})")
