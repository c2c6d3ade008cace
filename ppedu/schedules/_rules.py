"""Validation rules shared by the schedule generators: :func:`ppedu.validate.require_counts`."""

from ppedu.validate import require_counts

__all__ = ["require_counts"]
