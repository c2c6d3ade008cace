"""What stands in for a ppedu module a question forbids, in the copy of ppedu its functions are checked with
(:func:`ppedu.grading.evaluate.view`): the module is there, so a notebook's ``from ppedu import simulate`` still
runs, but it holds no code of ppedu's — every name in it is an :class:`Unavailable`. Calling it, or computing with
what it gave, gives another: a cell that also answers other questions with ppedu runs to its end, as it does in the
notebook, so what it defines after them is there. Turning one into a value (a number, a truth value, a list, an
answer) refuses, saying what and why. The implementation is not hidden in memory (where code could find it again):
it is not on disk.

>>> simulate = Unavailable("ppedu.simulate.simulate")
>>> makespan = simulate(None).makespan * 2
>>> try:
...     float(makespan)
... except NotAvailable as error:
...     print(error)
ppedu.simulate.simulate(…).makespan is not available while this question is checked: the answer must be your own code, not ppedu's
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


class NotAvailable(ImportError):
    """Something the question forbids was used."""


class Unavailable:
    """A name of a forbidden module, or what using one gave: calling it, reading its attributes, computing or
    comparing with it gives another (named for what was reached for); turning it into a value (truth, number,
    text format, items, length, hash, a context, a base class) raises :class:`NotAvailable`."""

    __slots__ = ("_where",)

    def __init__(self, where: str) -> None:
        object.__setattr__(self, "_where", where)

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotAvailable(f"{object.__getattribute__(self, '_where')} is not available while this question is "
                           "checked: the answer must be your own code, not ppedu's")

    def __getattr__(self, name: str) -> Unavailable:
        if name.startswith("__") and name.endswith("__"):
            self._refuse()
        return Unavailable(f"{object.__getattribute__(self, '_where')}.{name}")

    def _called(self, *args: Any, **kwargs: Any) -> Unavailable:
        return Unavailable(f"{object.__getattribute__(self, '_where')}(…)")

    def _used(self, *args: Any, **kwargs: Any) -> Unavailable:
        return self

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_where')}: not available while this question is checked>"

    __iter__ = __len__ = __bool__ = __contains__ = __mro_entries__ = __hash__ = __format__ = _refuse
    __int__ = __float__ = __complex__ = __index__ = __enter__ = __exit__ = __setattr__ = _refuse
    __call__ = _called
    __getitem__ = __neg__ = __abs__ = __round__ = _used
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _used  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _used
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _used


def module(name: str) -> Callable[[str], Unavailable]:
    """A forbidden module's ``__getattr__`` (PEP 562): every name asked of it is :class:`Unavailable`."""
    def lookup(attribute: str) -> Unavailable:
        if attribute.startswith("__") and attribute.endswith("__"):  # the import system's own questions
            raise AttributeError(attribute)
        return Unavailable(f"{name}.{attribute}")
    return lookup
