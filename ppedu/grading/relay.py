"""The relay: the only channel between the ranks of a graded run across processes (ps8), run by the grader.

Each rank is a sandbox of its own (:mod:`ppedu.grading.ranked`): no network, a private ``/tmp``, nothing shared with
the other ranks' sandboxes but this. Inside it, ``torch.distributed`` runs on :class:`RelayGroup`, a process group
(a backend registered as ``ppedu-relay``) that sends every collective and every point-to-point message over the
rank's socket to :class:`Relay`, a service of the evaluating process — never a process that ran student code. The
relay carries them out itself: it waits until every rank has issued its next collective, checks that they issued the
same one (kind, elements, type, reduction, root), computes the result (a sum in rank order, a concatenation, a
piece) and answers each rank; a send waits for its receive, as gloo's does (chapter 11). So the grader sees, and
counts, every byte a rank sends, and in what order; a rank's code can change what it sends, never what the relay
saw of it.

What each rank computes on is the grader's too: :meth:`Relay.handle`'s ``begin`` answers a rank with its own shard of
the data, drawn for this run from a seed the relay draws and keeps (:data:`Setting`); the other ranks' shards never
reach it except through the relay. The ranks' final word (``end``: their parameters, their result) is their claim,
judged beside what the relay saw; a driver's ``mark`` (a step begins) only says where the judge cuts the record into
steps; every call's record (:meth:`Relay.observed`) is plain data for the judge.

A rank that leaves the run while others wait for it fails the run at once; one that never joins a collective fails it
on every rank :data:`JOIN_SECONDS` after every rank has begun the run (a rank's lag before that is the call before's,
which its own time limit ends). Every call ends together on all its ranks — a rank that has ended waits for the others
— so that a rank stuck in one call delays no rank's next: a hung rank costs its question, not the grading. A rank's
bytes and operations per run are limited (:data:`MOST_BYTES`, :data:`MOST_OPS`), and a frame over
:data:`~ppedu.grading.service.MAX_FRAME` ends that rank's connection.

>>> import torch
>>> relay = Relay([[["demo", 2, 0]]], lambda spec, seed, rank: {"x": torch.full((3,), float(rank + 1))}, seed=7)
>>> [relay.handle(r, {"id": 0, "begin": ["demo", 2, 0]})["world"] for r in (0, 1)]
[2, 2]
>>> replies = []
>>> for r in (0, 1):
...     relay.handle(r, {"id": 1, "op": "all-reduce", "reduce": "sum", "t": encode(torch.full((3,), float(r + 1)))},
...                  replies.append)
>>> [decode(reply["t"]).tolist() for reply in replies]
[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]
>>> [(c["kind"], c["bytes"]) for c in relay.observed(0)["collectives"]]
[('all-reduce', 12)]
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppedu.grading.service import MAX_FRAME, Refused, receive, send

#: ``setting(spec, seed, rank)``: rank ``rank``'s data for the run ``spec`` (a dict of tensors), drawn from ``seed``.
Setting = Callable[[Any, int, int], dict[str, Any]]
#: Seconds a collective (or a message) waits for the ranks that have not joined it before it fails on all.
JOIN_SECONDS = 30.0
#: Bytes one rank may send through the relay in one run, and operations it may issue.
MOST_BYTES = 64 * 2**20
MOST_OPS = 4000
#: Tags a message may carry: 32-bit non-negative ints, as a C++ ``int`` tag is; no wider channel beside the bytes.
TAGS = 2 ** 31
#: Tensors the relay takes: their types and bytes per element.
DTYPES = {"float32": 4, "float64": 8, "int64": 8, "int32": 4}
#: Reductions, by the name the sandbox sends.
REDUCTIONS = ("sum", "avg", "max", "min", "product")
#: Seconds a held collective (:class:`Relay` with ``hold``) waits for each rank's next one before it completes.
HOLD_SECONDS = 0.25


def encode(tensor: Any) -> dict[str, Any]:
    """A tensor as data: its type, shape and bytes (base64).

    >>> import torch
    >>> encode(torch.tensor([1.0, 2.0]))["shape"]
    [2]
    """
    kind = str(tensor.dtype).removeprefix("torch.")
    if kind not in DTYPES:
        raise RuntimeError(f"the autograder's process group carries {', '.join(DTYPES)} tensors, not {kind}")
    values = tensor.detach().cpu().contiguous()
    if values.numel() * values.element_size() > MAX_FRAME * 3 // 4:
        raise RuntimeError(f"a tensor of {values.numel() * values.element_size()} bytes: the autograder's process "
                           f"group carries at most {MAX_FRAME * 3 // 4} at a time")
    return {"dtype": kind, "shape": list(values.shape), "data": base64.b64encode(values.numpy().tobytes()).decode()}


def decode(data: Any, most: int = MOST_BYTES) -> Any:
    """The tensor ``data`` holds (at most ``most`` bytes); :class:`Refused` if it is not one."""
    import numpy as np
    import torch

    shape = data.get("shape") if isinstance(data, dict) else None
    kind = data.get("dtype") if isinstance(data, dict) else None
    if not (kind in DTYPES and isinstance(shape, list) and len(shape) <= 8
            and all(type(n) is int and 0 <= n <= most for n in shape) and isinstance(data.get("data"), str)):
        raise Refused("not a tensor the autograder's process group can carry")
    count = int(np.prod(shape)) if shape else 1
    if count * DTYPES[kind] > most:
        raise Refused(f"a tensor of {count * DTYPES[kind]} bytes: more than a rank may send in a run")
    raw = base64.b64decode(data["data"], validate=False)
    if len(raw) != count * DTYPES[kind]:
        raise Refused("a tensor whose bytes do not match its shape")
    return torch.from_numpy(np.frombuffer(raw, dtype=kind).copy()).reshape(shape)


def _reduce(tensors: list[Any], how: str) -> Any:
    import torch

    stacked = torch.stack(tensors)
    if how == "avg":
        return stacked.sum(0) / len(tensors)
    if how == "product":
        return stacked.prod(0)
    if how == "sum":
        return stacked.sum(0)
    return (stacked.max(0) if how == "max" else stacked.min(0)).values


# ---- the grader's side ------------------------------------------------------------------------------------------

Reply = Callable[[dict[str, Any]], None]


@dataclass
class _Slot:
    """The ``index``-th collective of a run: what each rank issued for it, and whom to answer."""

    index: int
    kind: str
    params: tuple[Any, ...]
    started: float
    inputs: dict[int, Any] = field(default_factory=dict)
    replies: dict[int, tuple[int, Reply]] = field(default_factory=dict)


@dataclass
class _Message:
    """A send waiting for its receive, or a receive for its send."""

    rank: int
    peer: int
    tag: int
    request: int
    reply: Reply
    started: float
    tensor: Any = None
    like: Any = None


class _Run:
    """One call's run across its ``world`` ranks."""

    def __init__(self, spec: Any, world: int, seed: int, hold: bool) -> None:
        self.spec, self.world, self.seed, self.hold = spec, world, seed, hold
        self.slots: dict[int, _Slot] = {}
        self.next = [0] * world  # each rank's next collective
        self.collectives: list[dict[str, Any]] = []
        self.messages: list[list[Any]] = []  # [from, to, bytes, tag]
        self.sends: list[_Message] = []
        self.recvs: list[_Message] = []
        self.claims: dict[int, Any] = {}
        self.sent = [0] * world
        self.ops = [0] * world
        self.problem: str | None = None
        self.held: list[_Slot] = []
        self.ended: set[int] = set()
        self.began: set[int] = set()
        self.all_began: float | None = None  # when the last rank began: a rank's lag before it is no hang
        self.leaving: dict[int, tuple[int, Reply]] = {}  # ranks that ended, waiting for the others to
        self.marks: list[list[int]] = [[] for _ in range(world)]  # where each rank's driver began a step

    def fail(self, why: str) -> None:
        """The run cannot go on: every waiting rank is told ``why`` (a rank that has ended is let go)."""
        self.problem = self.problem or why
        self.release()
        for slot in self.slots.values():
            for request, reply in slot.replies.values():
                reply({"id": request, "refused": why})
        for message in (*self.sends, *self.recvs):
            message.reply({"id": message.request, "refused": why})
        self.slots, self.sends, self.recvs, self.held = {}, [], [], []

    def release(self) -> None:
        """Let the ranks that ended go: each call of a run ends together on every rank, so that a rank stuck in it
        delays the next call on none."""
        for request, reply in self.leaving.values():
            reply({"id": request})
        self.leaving = {}


class Relay:
    """The service for the ranks of every call asked (``asked``: each call's arguments, the spec first); a run
    begins when a rank's driver names its spec (:meth:`handle`), every rank on its own connection (``rank``: which
    connection, fixed by the grader). ``setting`` gives each rank its data; ``hold`` names the specs whose
    collectives are held (:data:`HOLD_SECONDS`) until every rank has issued the next, so that the relay can see
    collectives in flight together."""

    def __init__(self, asked: Sequence[Any], setting: Setting, hold: Callable[[Any], bool] = lambda spec: False,
                 seed: int | None = None) -> None:
        self.asked = [list(args)[:1] for args in asked]
        self.setting, self.hold = setting, hold
        self.seed = seed
        self.ranks = 16  # sandboxes its runs need at most (the question's own relay says fewer)
        self.runs: dict[int, _Run] = {}
        self.current: dict[int, int] = {}  # rank → the run it is in
        self.lock = threading.Lock()

    # -- requests -------------------------------------------------------------------------------------------------

    def handle(self, rank: int, message: Any, reply: Reply | None = None) -> dict[str, Any] | None:
        """Carry out ``message`` from rank ``rank``; answer at once (the return value) or later, through ``reply``
        (a collective, a send, a receive). Raises :class:`Refused` for what it will not do."""
        if not isinstance(message, dict) or type(message.get("id")) is not int:
            raise Refused("not a request")
        with self.lock:
            if "begin" in message:
                return {"id": message["id"], **self._begin(rank, message["begin"])}
            run = self.runs.get(self.current.get(rank, -1))
            if run is None:
                raise Refused("no run under way: the autograder's driver begins each one")
            if "end" in message:
                run.claims[rank] = message["end"]
                run.ended.add(rank)
                del self.current[rank]
                if run.slots or any(m.rank != rank for m in (*run.sends, *run.recvs) if m.peer == rank):
                    run.fail(f"rank {rank} finished the run while the others waited for it")
                if reply is None or len(run.ended) == run.world or run.problem:
                    run.release()
                    return {"id": message["id"]}
                run.leaving[rank] = (message["id"], reply)
                return None
            if run.problem:
                raise Refused(f"the run had already failed: {run.problem}")
            run.ops[rank] += 1
            if run.ops[rank] > MOST_OPS:
                run.fail(f"rank {rank} issued more than {MOST_OPS} operations in one run")
                raise Refused(run.problem or "")
            if "mark" in message:  # the driver begins a step: where the judge cuts the run (by the next collective)
                run.marks[rank].append(run.next[rank])
                return {"id": message["id"]}
            if reply is None:
                raise Refused("a collective needs an answer later")
            kind = message.get("op")
            gone = run.ended & ({message.get("peer")} if kind in ("send", "recv") else set(range(run.world)))
            if gone:
                run.fail(f"rank {min(gone)} had finished the run, so no collective or message can reach it")
                raise Refused(run.problem or "")
            if kind in ("send", "recv"):
                self._point_to_point(run, rank, message, reply)
            else:
                self._collective(run, rank, message, reply)
            return None

    def _begin(self, rank: int, spec: Any) -> dict[str, Any]:
        if rank in self.current:
            raise Refused("a run begun twice")
        k = next((k for k, args in enumerate(self.asked) if args == [spec]), None)
        if k is None:
            raise Refused("a run the autograder did not ask for")
        world = spec[1] if isinstance(spec, list) and len(spec) > 1 and type(spec[1]) is int else 0
        if not 1 <= world <= 16:
            raise Refused("a run without a world size")
        if rank >= world:
            return {"idle": True, "world": world}
        run = self.runs.get(k)
        if run is None:
            seed = secrets.randbits(48) if self.seed is None else self.seed
            run = self.runs[k] = _Run(spec, world, seed, self.hold(spec))
        if rank in run.claims:
            raise Refused("a run begun twice")
        self.current[rank] = k
        run.began.add(rank)
        if len(run.began) == world:
            run.all_began = time.monotonic()
        data = self.setting(spec, run.seed, rank)
        return {"world": world, "rank": rank, "data": {name: encode(t) for name, t in data.items()}}

    def _tensor(self, run: _Run, rank: int, data: Any) -> Any:
        tensor = decode(data, MOST_BYTES - run.sent[rank])
        run.sent[rank] += tensor.numel() * tensor.element_size()
        return tensor

    def _collective(self, run: _Run, rank: int, message: dict[str, Any], reply: Reply) -> None:
        kind = message.get("op")
        if kind not in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "barrier"):
            raise Refused(f"the autograder's process group does not carry {kind!r} (all_reduce, all_gather, "
                          "reduce_scatter, all_to_all_single, broadcast, barrier, send and recv: those it does)")
        how = message.get("reduce", "sum")
        if kind in ("all-reduce", "reduce-scatter") and how not in REDUCTIONS:
            raise Refused(f"a reduction it does not know: {how!r}")
        tensor = None if kind == "barrier" else self._tensor(run, rank, message.get("t"))
        root = message.get("root", 0)
        if kind == "broadcast" and not (type(root) is int and 0 <= root < run.world):
            raise Refused(f"a broadcast from rank {root!r}, not one of the {run.world}")
        shape = None if tensor is None else (str(tensor.dtype).removeprefix("torch."), tensor.numel())
        reduced = kind in ("all-reduce", "reduce-scatter")
        params = (shape, how if reduced else None, root if kind == "broadcast" else None)
        index = run.next[rank]
        run.next[rank] += 1
        slot = run.slots.get(index)
        if slot is None:
            slot = run.slots[index] = _Slot(index, kind, params, time.monotonic())
        elif (slot.kind, slot.params) != (kind, params):
            first = min(slot.inputs)
            run.fail(f"rank {rank} issued {_describe(kind, params)} as its collective #{index + 1}, where rank "
                     f"{first} issued {_describe(slot.kind, slot.params)}: every rank must issue the same "
                     "collectives in the same order")
            raise Refused(run.problem or "")
        if kind in ("reduce-scatter", "all-to-all") and tensor is not None and tensor.numel() % run.world:
            run.fail(f"a {kind} of {tensor.numel()} elements, not a multiple of the {run.world} ranks")
            raise Refused(run.problem or "")
        slot.inputs[rank], slot.replies[rank] = tensor, (message["id"], reply)
        for held in list(run.held):
            if held.index == index - 1 and all(held.index + 1 < run.next[r] for r in range(run.world)):
                self._complete(run, held)
        if len(slot.inputs) == run.world:
            if run.hold and any(run.next[r] <= index + 1 for r in range(run.world)):
                run.held.append(slot)
                slot.started = time.monotonic()  # the hold starts now
            else:
                self._complete(run, slot)

    def _complete(self, run: _Run, slot: _Slot) -> None:
        import torch

        inputs = [slot.inputs[r] for r in range(run.world)]
        n = run.world
        if slot.kind == "all-reduce":
            outputs = [_reduce(inputs, slot.params[1])] * n
        elif slot.kind == "all-gather":
            outputs = [torch.cat([t.reshape(-1) for t in inputs])] * n
        elif slot.kind == "reduce-scatter":
            outputs = list(_reduce(inputs, slot.params[1]).reshape(-1).chunk(n))
        elif slot.kind == "all-to-all":
            pieces = [t.reshape(-1).chunk(n) for t in inputs]
            outputs = [torch.cat([pieces[s][r] for s in range(n)]) for r in range(n)]
        elif slot.kind == "broadcast":
            outputs = [inputs[slot.params[2]]] * n
        else:
            outputs = [None] * n
        sizes = [0 if t is None else t.numel() * t.element_size() for t in inputs]
        whole = {"all-gather": sum(sizes), "barrier": 0}.get(slot.kind, sizes[0])
        run.collectives.append({
            "index": slot.index, "kind": slot.kind, "bytes": whole, "dtype": None if slot.params[0] is None else slot.params[0][0],
            "reduce": slot.params[1], "root": slot.params[2],
            "in_flight": [run.next[r] > slot.index + 1 for r in range(n)],  # the rank had issued the next already
            "result": None if outputs[0] is None or slot.kind in ("reduce-scatter", "all-to-all")
            else encode(outputs[0])["data"],
            "pieces": [encode(t)["data"] for t in outputs] if slot.kind == "reduce-scatter" else None,
        })
        for r in range(n):
            request, reply = slot.replies[r]
            reply({"id": request} if outputs[r] is None else {"id": request, "t": encode(outputs[r])})
        del run.slots[slot.index]
        if slot in run.held:
            run.held.remove(slot)

    def _point_to_point(self, run: _Run, rank: int, message: dict[str, Any], reply: Reply) -> None:
        peer, tag = message.get("peer"), message.get("tag", 0)
        if not (type(peer) is int and 0 <= peer < run.world and peer != rank):
            raise Refused(f"a message to or from rank {peer!r}: name another of the {run.world} ranks")
        if not (type(tag) is int and 0 <= tag < TAGS):  # a tag is gloo's int: wider, it would carry data unweighed
            raise Refused(f"a message's tag {tag!r}: a tag is an int from 0 to {TAGS - 1}")
        mine = _Message(rank, peer, tag, message["id"], reply, time.monotonic())
        if message["op"] == "send":
            mine.tensor = self._tensor(run, rank, message.get("t"))
            match = next((m for m in run.recvs if (m.rank, m.peer, m.tag) == (peer, rank, tag)), None)
            if match is None:
                run.sends.append(mine)
                return
            run.recvs.remove(match)
            self._deliver(run, mine, match)
        else:
            mine.like = message.get("like")
            match = next((m for m in run.sends if (m.rank, m.peer, m.tag) == (peer, rank, tag)), None)
            if match is None:
                run.recvs.append(mine)
                return
            run.sends.remove(match)
            self._deliver(run, match, mine)

    def _deliver(self, run: _Run, sent: _Message, received: _Message) -> None:
        like = received.like if isinstance(received.like, dict) else {}
        if [like.get("dtype"), like.get("shape")] != [str(sent.tensor.dtype).removeprefix("torch."),
                                                      list(sent.tensor.shape)]:
            why = (f"rank {received.rank} posted a receive of {like.get('shape')} {like.get('dtype')} from rank "
                   f"{sent.rank}, which sent {list(sent.tensor.shape)} {sent.tensor.dtype}")
            for m in (sent, received):
                m.reply({"id": m.request, "refused": why})
            return
        run.messages.append([sent.rank, received.rank, sent.tensor.numel() * sent.tensor.element_size(), sent.tag])
        received.reply({"id": received.request, "t": encode(sent.tensor)})
        sent.reply({"id": sent.request})

    # -- time -----------------------------------------------------------------------------------------------------

    def tick(self) -> None:
        """Complete held collectives whose hold has passed; fail what has waited past :data:`JOIN_SECONDS`."""
        now = time.monotonic()
        with self.lock:
            for run in self.runs.values():
                for slot in list(run.held):
                    if now - slot.started > HOLD_SECONDS:
                        self._complete(run, slot)
                if run.all_began is None:
                    continue  # a rank not yet there may be finishing the call before: its own limit stops it
                since = run.all_began
                waiting = [s for s in run.slots.values()
                           if s not in run.held and now - max(s.started, since) > JOIN_SECONDS]
                if waiting:
                    slot = min(waiting, key=lambda s: s.index)
                    missing = [r for r in range(run.world) if r not in slot.inputs]
                    run.fail(f"rank {missing[0]} never issued collective #{slot.index + 1} ({slot.kind}) that "
                             f"rank {min(slot.inputs)} issued, in {JOIN_SECONDS:g} s (it hung, finished, or issued "
                             "something else)")
                stale = [m for m in (*run.sends, *run.recvs) if now - max(m.started, since) > JOIN_SECONDS]
                if stale:
                    m = stale[0]
                    what = "send to" if m in run.sends else "receive from"
                    run.fail(f"rank {m.rank}'s {what} rank {m.peer} (tag {m.tag}) was never matched in "
                             f"{JOIN_SECONDS:g} s: with sends that wait for their receive, as gloo's do, every rank "
                             "sending first deadlocks (use isend/irecv)")

    def observed(self, k: int) -> dict[str, Any] | None:
        """What the relay saw of call ``k``, as data: its seed, every collective and message, each rank's bytes,
        claim and step marks, and what went wrong."""
        run = self.runs.get(k)
        if run is None:
            return None
        return {"seed": run.seed, "world": run.world, "collectives": run.collectives, "messages": run.messages,
                "sent": run.sent, "claims": [run.claims.get(r) for r in range(run.world)], "marks": run.marks,
                "problem": run.problem}


def _describe(kind: str, params: tuple[Any, ...]) -> str:
    shape, how, root = params
    what = kind if shape is None else f"{kind} of {shape[1]} {shape[0]}"
    return what + (f" ({how})" if how else "") + (f" from rank {root}" if root is not None else "")


def serve(relay: Relay, sockets: Sequence[socket.socket]) -> Callable[[], None]:
    """Serve ``relay`` on ``sockets`` (rank ``r`` on the ``r``-th), a thread each and one for time; returns the
    function that stops them all."""
    stop = threading.Event()

    def connection(rank: int, sock: socket.socket) -> None:
        lock = threading.Lock()

        def reply(message: dict[str, Any]) -> None:
            try:
                with lock:
                    send(sock, message)
            except OSError:
                pass

        try:
            while (message := receive(sock)) is not None:
                try:
                    answer = relay.handle(rank, message, reply)
                except Refused as refused:
                    answer = {"id": message.get("id") if isinstance(message, dict) else None,
                              "refused": str(refused)[:400]}
                except Exception as error:  # noqa: BLE001 (the relay's own fault: said, and the rank goes on)
                    answer = {"id": message.get("id") if isinstance(message, dict) else None,
                              "refused": f"the autograder's relay failed ({type(error).__name__}): tell your "
                                         "instructor"}
                if answer is not None:
                    reply(answer)
        except (OSError, ValueError, RecursionError):
            pass  # the rank went away, or wrote what is not a frame (or one over MAX_FRAME): nothing more is served
        finally:
            with relay.lock:
                k = relay.current.pop(rank, None)
                if k is not None:
                    relay.runs[k].ended.add(rank)
                    relay.runs[k].fail(f"rank {rank}'s connection closed during the run")
            sock.close()

    def clock() -> None:
        while not stop.wait(0.05):
            relay.tick()

    threads = [threading.Thread(target=connection, args=(r, s), daemon=True) for r, s in enumerate(sockets)]
    threads.append(threading.Thread(target=clock, daemon=True))
    for thread in threads:
        thread.start()

    def stopping() -> None:
        stop.set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(10)

    return stopping


# ---- the sandbox's side -----------------------------------------------------------------------------------------

class _Wire:
    """This rank's end of its connection: requests numbered, their answers read by a thread of their own, which hands
    each to its request's callback."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.lock = sock, threading.Lock()
        self.next = 0
        self.waiting: dict[int, Callable[[dict[str, Any]], None]] = {}
        self.closed: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def ask(self, message: dict[str, Any], answered: Callable[[dict[str, Any]], None]) -> None:
        """Send ``message``; ``answered(reply)`` is called with its answer (``{"refused": why}`` for a refusal)."""
        with self.lock:
            if self.closed:
                raise RuntimeError(self.closed)
            request, self.next = self.next, self.next + 1
            frame = {**message, "id": request}
            size = len(json.dumps(frame))
            if size > MAX_FRAME:
                raise RuntimeError(f"a message of {size} bytes: the autograder's relay takes at most {MAX_FRAME}")
            self.waiting[request] = answered
            try:
                send(self.sock, frame)
            except OSError:
                self.closed = "the autograder's relay closed the connection"
                raise RuntimeError(self.closed) from None

    def _read(self) -> None:
        try:
            while (reply := receive(self.sock)) is not None:
                with self.lock:
                    key = reply.get("id") if isinstance(reply, dict) else None
                    answered = self.waiting.pop(key, None) if type(key) is int else None
                if answered is not None:
                    answered(reply)
        except (OSError, ValueError):
            pass
        with self.lock:
            self.closed = "the autograder's relay closed the connection"
            waiting, self.waiting = self.waiting, {}
        for answered in waiting.values():
            answered({"refused": self.closed})


def request(message: dict[str, Any]) -> dict[str, Any]:
    """Ask the relay and wait for its answer (in Python, so that a time limit interrupts the wait); RuntimeError with
    the relay's reason for a refusal."""
    event, box = threading.Event(), []

    def answered(reply: dict[str, Any]) -> None:
        box.append(reply)
        event.set()

    wire().ask(message, answered)
    while not event.wait(0.05):
        pass
    if "refused" in box[0]:
        raise RuntimeError(str(box[0]["refused"]))
    return box[0]


_WIRE: list[_Wire] = []


def wire() -> _Wire:
    """This process's connection to the relay (made on first use, from ``$PPEDU_SERVICE_FD``)."""
    import os

    from ppedu.grading.service import ENV

    if not _WIRE:
        if ENV not in os.environ:
            raise RuntimeError("no relay to talk to here (this runs only while a notebook is evaluated)")
        _WIRE.append(_Wire(socket.socket(fileno=os.dup(int(os.environ[ENV])))))
    return _WIRE[0]


def _relay_group() -> type:
    """The process group class (made once torch is imported)."""
    import torch
    import torch.distributed as dist

    work: Any = dist.Work  # typed loosely: its methods are overridden the way the C++ side calls them
    group: Any = dist.ProcessGroup

    class RelayWork(work):
        """An operation sent to the relay; done when its answer has been put in place."""

        def __init__(self, message: dict[str, Any], finish: Callable[[dict[str, Any]], Any]) -> None:
            super().__init__()
            self.future: Any = torch.futures.Future()
            self.event, self.error = threading.Event(), None

            def answered(reply: dict[str, Any]) -> None:
                try:
                    if "refused" in reply:
                        raise RuntimeError(str(reply["refused"]))
                    self.future.set_result(finish(reply))
                except Exception as error:  # noqa: BLE001 (whoever waits raises it)
                    self.error = error
                    self.future.set_exception(error)
                self.event.set()

            wire().ask(message, answered)

        def wait(self, timeout: Any = None) -> bool:
            while not self.event.wait(0.05):
                pass
            if self.error is not None:
                raise self.error
            return True

        def is_completed(self) -> bool:
            return self.event.is_set()

        def get_future(self) -> Any:
            return self.future

    class RelayGroup(group):
        """Every collective and message of this rank, carried out by the autograder's relay."""

        def _go(self, message: dict[str, Any], finish: Callable[[dict[str, Any]], Any]) -> Any:
            return RelayWork(message, finish)

        @staticmethod
        def _into(out: Any) -> Callable[[dict[str, Any]], Any]:
            def finish(reply: dict[str, Any]) -> Any:
                got = decode(reply["t"])
                if got.numel() != out.numel():
                    raise RuntimeError(f"the result has {got.numel()} elements, the output {out.numel()}")
                out.copy_(got.reshape(out.shape))
                return [out]
            return finish

        def allreduce(self, tensors: list[Any], opts: Any = None) -> Any:
            t = _one(tensors)
            return self._go({"op": "all-reduce", "t": encode(t), "reduce": _reduction(opts)}, self._into(t))

        def all_gather_single(self, output: Any, input: Any, opts: Any = None) -> Any:
            return self._go({"op": "all-gather", "t": encode(input)}, self._into(output))

        def allgather(self, outputs: list[list[Any]], inputs: list[Any], opts: Any = None) -> Any:
            outs = outputs[0]

            def finish(reply: dict[str, Any]) -> Any:
                for out, piece in zip(outs, decode(reply["t"]).chunk(len(outs))):
                    out.copy_(piece.reshape(out.shape))
                return outs
            return self._go({"op": "all-gather", "t": encode(_one(inputs))}, finish)

        def reduce_scatter_single(self, output: Any, input: Any, opts: Any = None) -> Any:
            return self._go({"op": "reduce-scatter", "t": encode(input), "reduce": _reduction(opts)},
                            self._into(output))

        def reduce_scatter(self, outputs: list[Any], inputs: list[list[Any]], opts: Any = None) -> Any:
            whole = torch.cat([t.reshape(-1) for t in inputs[0]])
            return self._go({"op": "reduce-scatter", "t": encode(whole), "reduce": _reduction(opts)},
                            self._into(_one(outputs)))

        def all_to_all_single(self, output: Any, input: Any, output_splits: Any = None, input_splits: Any = None,
                              opts: Any = None) -> Any:
            if output_splits or input_splits:
                raise RuntimeError("the autograder's process group carries all-to-alls of equal pieces only")
            return self._go({"op": "all-to-all", "t": encode(input)}, self._into(output))

        def broadcast(self, tensors: list[Any], opts: Any = None) -> Any:
            t = _one(tensors)
            return self._go({"op": "broadcast", "t": encode(t), "root": int(getattr(opts, "rootRank", 0))},
                            self._into(t))

        def barrier(self, opts: Any = None) -> Any:
            return self._go({"op": "barrier"}, lambda reply: [])

        def send(self, tensors: list[Any], dst: int, tag: int = 0) -> Any:
            return self._go({"op": "send", "t": encode(_one(tensors)), "peer": dst, "tag": tag}, lambda reply: [])

        def recv(self, tensors: list[Any], src: int, tag: int = 0) -> Any:
            t = _one(tensors)
            like = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
            return self._go({"op": "recv", "peer": src, "tag": tag, "like": like}, self._into(t))

        def recv_anysource(self, tensors: list[Any], tag: int = 0) -> Any:
            raise RuntimeError("the autograder's process group receives from a named rank only (recv(t, src))")

        def getBackendName(self) -> str:
            return "ppedu-relay"

        @property
        def group_name(self) -> str:
            return dist.distributed_c10d._world.pg_names[self]

    return RelayGroup


def _one(tensors: list[Any]) -> Any:
    if len(tensors) != 1:
        raise RuntimeError("the autograder's process group takes one tensor per rank")
    return tensors[0]


def _reduction(opts: Any) -> str:
    import torch.distributed as dist

    op = getattr(opts, "reduceOp", dist.ReduceOp.SUM)
    for name in REDUCTIONS:
        if op == getattr(dist.ReduceOp, name.upper(), None):
            return name
    raise RuntimeError(f"a reduction the autograder's process group does not carry: {op}")


_REGISTERED: list[type] = []


def join(spec: Any) -> dict[str, Any] | None:
    """Begin the run ``spec`` on this rank: ``torch.distributed``'s default group becomes the relay's, and the
    answer is ``{"rank", "world", "data"}`` (the data decoded); ``None`` if this rank has no part in the run."""
    import torch.distributed as dist

    reply = request({"begin": list(spec)})
    if reply.get("idle"):
        return None
    if not _REGISTERED:
        _REGISTERED.append(_relay_group())
        dist.Backend.register_backend("ppedu-relay", lambda store, rank, world, timeout: _REGISTERED[0](rank, world),
                                      devices=["cpu"])
    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("ppedu-relay", store=dist.HashStore(), rank=reply["rank"], world_size=reply["world"])
    return {"rank": reply["rank"], "world": reply["world"],
            "data": {name: decode(t) for name, t in reply["data"].items()}}


def mark() -> None:
    """Tell the relay this rank's driver begins a step: the judge reads the collectives issued from here to the next
    mark as that step's (a mark only cuts the record; what a step did is still what the relay carried out)."""
    request({"mark": True})


def leave(claim: Any) -> None:
    """End this rank's run, handing the relay its claim (plain data)."""
    import torch.distributed as dist

    try:
        request({"end": claim})
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
