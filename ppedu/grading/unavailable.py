"""What stands in for a ppedu module a question forbids, in the copy of ppedu its functions are checked with
(:func:`ppedu.grading.evaluate.view`): the module is there, so a notebook's ``from ppedu import simulate`` still
runs, but it holds no code of ppedu's — every name in it is an :class:`Unavailable` that refuses to be used, saying
what and why. The implementation is not hidden in memory (where code could find it again): it is not on disk.

>>> simulate = Unavailable("ppedu.simulate.simulate")
>>> try:
...     simulate(None)
... except NotAvailable as error:
...     print(error)
ppedu.simulate.simulate is not available while this question is checked: the answer must be your own code, not ppedu's
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


class NotAvailable(ImportError):
    """Something the question forbids was used."""


class Unavailable:
    """A name of a forbidden module: using it in any way (calling, reading an attribute's value, iterating,
    subclassing, comparing) raises :class:`NotAvailable`; reading an attribute gives the next name down, so the
    message names what was really reached for."""

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

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_where')}: not available while this question is checked>"

    __call__ = __iter__ = __len__ = __bool__ = __getitem__ = __contains__ = __mro_entries__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __int__ = __float__ = __index__ = __enter__ = __exit__ = __setattr__ = _refuse


def module(name: str) -> Callable[[str], Unavailable]:
    """A forbidden module's ``__getattr__`` (PEP 562): every name asked of it is :class:`Unavailable`."""
    def lookup(attribute: str) -> Unavailable:
        if attribute.startswith("__") and attribute.endswith("__"):  # the import system's own questions
            raise AttributeError(attribute)
        return Unavailable(f"{name}.{attribute}")
    return lookup
