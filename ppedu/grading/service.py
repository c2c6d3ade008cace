"""A service on the trusted side for the code a function question runs in the sandbox: what must be *observed*, not
reported, is done here. A question's :class:`~ppedu.grading.evaluate.Code` names one (``module:function``, called
with the arguments of every call asked of that run, in order, and giving an object with ``handle(message) → reply``
and ``observed(k) → data``). While the sandboxed interpreter runs, a thread of the evaluating process answers it on a
socket of its own (its number in ``$PPEDU_SERVICE_FD`` inside the sandbox), one request, one reply, each a
length-prefixed JSON frame; then what it observed for each call is put beside that call's result, as a third item
(``[args, result, observed]``), which no process that ran student code wrote.

>>> from ppedu.grading.evaluate import FunctionRun
>>> with serving(f"{__name__}:_echo", [[1]]) as line:
...     client = Client(socket.socket(fileno=os.dup(line.fd)))
...     client.ask({"hello": 1})
{'echo': {'hello': 1}}
>>> line.attach(FunctionRun({"q": {"f": [[[1], 2]]}}), [("q", "f", [1])]).results
{'q': {'f': [[[1], 2, [{'hello': 1}]]]}}
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppedu.grading.evaluate import FunctionRun

#: Where the sandbox finds its end of the socket.
ENV = "PPEDU_SERVICE_FD"
#: Bytes of one frame at most, either way; a bigger one ends the service.
MAX_FRAME = 8 << 20


class Refused(Exception):
    """A request the service will not carry out; its message goes back to the sandbox, which raises it."""


def send(sock: socket.socket, message: Any) -> None:
    data = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def receive(sock: socket.socket) -> Any:
    """The next frame's message; ``None`` when the other end has closed. Raises ValueError on a frame over
    :data:`MAX_FRAME` or that is not JSON."""
    head = _exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    body = _exactly(sock, size)
    if body is None:
        return None
    return json.loads(body)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data


class Client:
    """The sandbox's end: :meth:`ask` sends a request and gives the reply (raising RuntimeError on a refusal)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    def from_environment(cls) -> Client:
        if ENV not in os.environ:
            raise RuntimeError("no service to talk to here (this runs only while a notebook is evaluated)")
        return cls(socket.socket(fileno=os.dup(int(os.environ[ENV]))))  # a copy: closed with this client

    def ask(self, message: Any) -> Any:
        send(self.sock, message)
        reply = receive(self.sock)
        if isinstance(reply, dict) and "refused" in reply:
            raise RuntimeError(str(reply["refused"]))
        return reply


@dataclass
class Line:
    """A running service: the sandbox's end (``fd``, to pass to it) and what the service observed."""

    service: Any
    fd: int

    @property
    def env(self) -> dict[str, str]:
        return {ENV: str(self.fd)}

    def attach(self, run: FunctionRun, asked: Sequence[tuple[str, str, Any]]) -> FunctionRun:
        """``run`` with what was observed of each call beside its result (the results are in ``asked``'s order)."""
        seen: Counter[tuple[str, str]] = Counter()
        for k, (test, name, _) in enumerate(asked):
            got, j = run.results.get(test, {}).get(name), seen[test, name]
            seen[test, name] += 1
            if isinstance(got, list) and j < len(got):
                got[j] = [*got[j][:2], self.service.observed(k)]
        return run


def _serve(service: Any, sock: socket.socket) -> None:
    try:
        while (message := receive(sock)) is not None:
            try:
                reply = service.handle(message)
            except Refused as refused:
                reply = {"refused": str(refused)[:300]}
            send(sock, reply)
    except (OSError, ValueError, RecursionError):
        pass  # the sandbox went away, or wrote what is not a frame: nothing more is served
    finally:
        sock.close()


@contextmanager
def serving(name: str | None, asked: Sequence[Any]) -> Iterator[Line | None]:
    """The service ``name`` (``module:function``) made for the calls' arguments ``asked`` and answering on a socket
    while the block runs (``None``, and nothing served, when ``name`` is ``None``)."""
    if name is None:
        yield None
        return
    module, _, attribute = name.partition(":")
    factory: Callable[[Sequence[Any]], Any] = getattr(importlib.import_module(module), attribute)
    service, (mine, theirs) = factory(asked), socket.socketpair()
    line = Line(service, theirs.fileno())
    thread = threading.Thread(target=_serve, args=(service, mine), daemon=True)
    thread.start()
    try:
        yield line
    finally:
        theirs.close()
        try:
            mine.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        thread.join(10)


def _echo(asked: Sequence[Any]) -> Any:  # the doctest's service
    class Echo:
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def handle(self, message: Any) -> Any:
            self.seen.append(message)
            return {"echo": message}

        def observed(self, k: int) -> Any:
            return self.seen

    return Echo()
