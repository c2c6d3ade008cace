"""What a rank sends: every collective and message its code issues, seen where PyTorch dispatches it.

:class:`Traffic` is a dispatch mode (``TorchDispatchMode``): every ``c10d`` operation passes through it on its way to
the process group, whoever issued it — a student's ``dist.all_reduce``, DDP's reducer, FSDP2's all-gathers — and on
any backend (gloo, NCCL). It records each as a :class:`Message`: the kind, as ``ppedu.cluster.collectives`` names
it, and ``nbytes``, the collective's whole buffer as NCCL-tests' ``S`` (an all-gather's output, a reduce-scatter's
input). :meth:`Traffic.sent` then prices each at what a ring sends per rank (chapter 12), so measured code and the
α–β model count bytes the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ppedu.cluster.collectives import ring

#: c10d's operations, by the name chapter 12 gives them; each with the argument that holds the buffer ``S``.
KINDS = {
    "allreduce_": ("all-reduce", 0), "allreduce_coalesced_": ("all-reduce", 0),
    "_allgather_base_": ("all-gather", 0), "allgather_": ("all-gather", 0),
    "allgather_into_tensor_coalesced_": ("all-gather", 0),
    "_reduce_scatter_base_": ("reduce-scatter", 1), "reduce_scatter_": ("reduce-scatter", 1),
    "reduce_scatter_tensor_coalesced_": ("reduce-scatter", 1),
    "alltoall_base_": ("all-to-all", 1), "alltoall_": ("all-to-all", 1),
    "broadcast_": ("broadcast", 0), "send": ("send", 0), "recv_": ("recv", 0), "recv_any_source_": ("recv", 0),
    "barrier": ("barrier", None), "gather_": ("gather", 1), "scatter_": ("scatter", 0), "reduce_": ("reduce", 0),
}


@dataclass(frozen=True)
class Message:
    """One operation a rank issued: its kind and its buffer's bytes (``S``)."""

    kind: str
    nbytes: int


def _bytes(arg: Any) -> int:
    import torch

    if isinstance(arg, torch.Tensor):
        return arg.numel() * arg.element_size()
    return sum(_bytes(a) for a in arg) if isinstance(arg, (list, tuple)) else 0


def _dispatch_mode() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self, log: list[Message]) -> None:
            super().__init__()
            self.log = log

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func.namespace == "c10d" and func.__name__.split(".")[0] in KINDS:
                kind, at = KINDS[func.__name__.split(".")[0]]
                self.log.append(Message(kind, 0 if at is None else _bytes(args[at])))
            return func(*args, **(kwargs or {}))

    return Recorder


class Traffic:
    """``with Traffic() as traffic:`` records what this rank issues inside the block (see the module's docstring).

    >>> import torch
    >>> with Traffic() as traffic:
    ...     _ = torch.ones(3) + 1  # no collective
    >>> traffic.messages
    []
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._mode: Any = None

    def __enter__(self) -> Traffic:
        self._mode = _dispatch_mode()(self.messages)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)

    @classmethod
    def of(cls, pairs: list[tuple[str, int]]) -> Traffic:
        """A record of ``(kind, nbytes)`` pairs, as a rank hands them back.

        >>> Traffic.of([("all-gather", 8)]).messages
        [Message(kind='all-gather', nbytes=8)]
        """
        recorded = cls()
        recorded.messages += [Message(kind, nbytes) for kind, nbytes in pairs]
        return recorded

    def pairs(self) -> list[tuple[str, int]]:
        """``(kind, nbytes)`` of every message, plain data to hand back from a rank."""
        return [(m.kind, m.nbytes) for m in self.messages]

    def summary(self) -> str:
        """How many of each kind, in words.

        >>> Traffic.of([("reduce-scatter", 8), ("all-gather", 8)]).summary()
        '1 reduce-scatter, 1 all-gather'
        """
        return ", ".join(f"{n} {kind}" for kind, n in self.counts().items())

    def counts(self) -> dict[str, int]:
        """How many of each kind.

        >>> t = Traffic(); t.messages += [Message("all-reduce", 8), Message("all-reduce", 4)]; t.counts()
        {'all-reduce': 2}
        """
        return dict(Counter(m.kind for m in self.messages))

    def buffers(self, kind: str) -> list[int]:
        """The buffers' bytes of every ``kind``, in the order issued."""
        return [m.nbytes for m in self.messages if m.kind == kind]

    def sent(self, n: int) -> float:
        """Bytes this rank sends if each collective runs as a ring over ``n`` ranks (chapter 12's ``ring``),
        point-to-point sends as they are.

        >>> t = Traffic(); t.messages += [Message("all-reduce", 1000), Message("send", 10)]; t.sent(4)
        1510.0
        """
        rings = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast")
        return sum(ring(m.nbytes, n, m.kind) if m.kind in rings else float(m.nbytes) * (m.kind == "send")
                   for m in self.messages)
