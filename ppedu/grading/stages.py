"""A pipeline's chunks run by the grader, for an executor a student wrote that runs in the sandbox (ps5).

The executor is given :class:`RemoteChunk` s: calling one sends its input to :class:`Stages`, a service of the
evaluating process (:mod:`ppedu.grading.service`) that runs the real chunk on the grader's own copy of the model and
keeps what its backward needs; the chunk's backward is run there too. So what ps5 grades is observed by the grader,
never reported by the student's process: which examples went through which chunk in what order (a forward's input
is recognised by its values: a run of the mini-batch's examples, or the output the grader gave for the previous
chunk; the order is the order the grader ran them in, from which ps5 counts the activations each GPU holds; a
forward the executor runs under ``torch.no_grad()`` is run so by the grader too, keeps no graph, and is logged ``f``:
it cannot be backpropagated, so a recomputing executor must run it again with a graph at the backward), the
gradients accumulated in the grader's parameters, and the forwards the executor still holds once it has returned. A
forward's activations stay held until the executor lets go of it — its backward has run, autograd has released it
and nothing refers to its output — which :class:`Lifetimes` tells the grader from the sandbox; telling it early gains
nothing: what the grader frees is gone, and its backward is refused.

>>> import torch
>>> from ppedu.grading.assignments.ps5 import _setting
>>> stages = Stages([[["1f1b", 2, 2, 1, 0]]], _setting)
>>> stages.handle({"begin": ["1f1b", 2, 2, 1, 0]})
{'session': 0}
>>> x = _setting(("1f1b", 2, 2, 1, 0))[2][:12]
>>> reply = stages.handle({"F": 0, "x": encode(x)})
>>> reply["handle"], decode(reply["out"], 12 * 32).shape
(0, torch.Size([12, 32]))
>>> stages.observed(0)["ops"], stages.observed(0)["left"]
([['F', 0, 12, 0]], 1)
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppedu.grading.service import Client, Refused

#: ``setting(spec)``: the schedule, the model (seeded), its inputs and labels of one run.
Setting = Callable[[Any], tuple[Any, Any, Any, Any]]


def encode(tensor: Any) -> dict[str, Any]:
    """A tensor as data: its shape and its values as float32."""
    import torch

    values = tensor.detach().to(torch.float32).contiguous()
    return {"shape": list(values.shape), "data": base64.b64encode(values.numpy().tobytes()).decode()}


def decode(data: Any, most: int) -> Any:
    """The tensor ``data`` holds (at most ``most`` values); :class:`Refused` if it is not one."""
    import numpy as np
    import torch

    shape = data.get("shape") if isinstance(data, dict) else None
    if not (isinstance(shape, list) and 1 <= len(shape) <= 4 and all(type(n) is int and 0 < n <= most for n in shape)
            and isinstance(data.get("data"), str)):
        raise Refused("a tensor the autograder's chunks cannot take")
    size = int(np.prod(shape))
    raw = base64.b64decode(data["data"], validate=False) if size <= most else b""
    if len(raw) != 4 * size:
        raise Refused("a tensor the autograder's chunks cannot take")
    return torch.from_numpy(np.frombuffer(raw, dtype=np.float32).copy()).reshape(shape)


# ---- the grader's side ------------------------------------------------------------------------------------------

@dataclass
class _Forward:
    chunk: int
    rows: tuple[int, int] | None  # which examples it ran on (None: an input the grader did not give)
    x: Any
    out: Any
    graph: bool = True  # run with autograd recording (a backward may follow)
    backward: bool = False
    released: bool = False


class _Session:
    """One call's run: the spec's model, cut into chunks, and everything done with it."""

    def __init__(self, spec: Any, setting: Setting) -> None:
        import torch

        from ppedu.mnist import split_model

        self.schedule, model, self.images, self.labels = setting(spec)
        self.chunks = split_model(model, self.schedule.chunks)
        self.params = list(model.parameters())
        sizes = [len(x) for x in torch.tensor_split(self.images, self.schedule.microbatches)]
        self.bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
        self.forwards: list[_Forward] = []
        self.ops: list[list[Any]] = []
        self.most_ops = 4 * sum(map(len, self.schedule.stages)) + 64
        self.ended = False

    def rows(self, chunk: int, x: Any) -> tuple[int, int] | None:
        import torch

        if chunk == 0:
            b = self.bounds
            return next(((b[s], b[t]) for s in range(len(b)) for t in range(s + 1, len(b))
                         if x.shape == self.images[b[s]:b[t]].shape and torch.equal(x, self.images[b[s]:b[t]])), None)
        return next((f.rows for f in self.forwards if f.chunk == chunk - 1 and f.out.shape == x.shape
                     and torch.equal(f.out.detach(), x)), None)

    def forward(self, chunk: Any, data: Any, graph: Any = True) -> dict[str, Any]:
        import torch

        if type(chunk) is not int or not 0 <= chunk < len(self.chunks):
            raise Refused(f"there is no chunk {chunk!r}")
        graph = graph is not False
        x = decode(data, self.images.numel())
        rows, x = self.rows(chunk, x), x.requires_grad_(graph)
        try:
            with torch.set_grad_enabled(graph):
                out = self.chunks[chunk](x)
        except (RuntimeError, ValueError):
            raise Refused(f"chunk {chunk} cannot run on an input of shape {tuple(x.shape)}") from None
        self.forwards.append(_Forward(chunk, rows, x, out, graph))
        self.ops.append(["F" if graph else "f", *(rows or (None, None)), chunk])
        return {"handle": len(self.forwards) - 1, "out": encode(out)}

    def backward(self, handle: Any, data: Any) -> dict[str, Any]:
        if type(handle) is not int or not 0 <= handle < len(self.forwards):
            raise Refused("a backward of no forward")
        f = self.forwards[handle]
        if not f.graph:
            raise Refused(f"a backward of a forward of chunk {f.chunk} run without a graph (under torch.no_grad())")
        if f.backward:
            raise Refused(f"the backward of a forward of chunk {f.chunk} ran twice")
        if f.released:
            raise Refused(f"a backward of chunk {f.chunk} after its forward's activations were let go of")
        grad = decode(data, self.images.numel())
        if grad.shape != f.out.shape:
            raise Refused(f"a gradient of shape {tuple(grad.shape)} for an output of shape {tuple(f.out.shape)}")
        f.out.backward(grad)
        f.backward = True
        self.ops.append(["B", *(f.rows or (None, None)), f.chunk])
        return {"grad": encode(f.x.grad)}

    def release(self, handles: Any) -> None:
        for h in handles if isinstance(handles, list) else ():
            if type(h) is int and 0 <= h < len(self.forwards) and not self.forwards[h].released:
                f = self.forwards[h]
                f.released, f.x, f.out = True, f.x.detach(), f.out.detach()  # its graph, with the activations, goes

    def observed(self) -> dict[str, Any]:
        """What the grader saw, as data."""
        import torch

        grads = [p.grad for p in self.params]
        # each micro-batch once, however often it ran (a recomputing executor runs the last chunk twice on each)
        last = sorted({f.rows or (-1, -1) for f in self.forwards if f.chunk == len(self.chunks) - 1})
        ends = [0, *(b for _, b in last)]
        return {"ops": self.ops, "left": sum(not f.released for f in self.forwards),
                "covered": all(a == ends[k] for k, (a, _) in enumerate(last)) and ends[-1] == len(self.images),
                "grads": None if any(g is None for g in grads) else base64.b64encode(
                    torch.cat([g.reshape(-1) for g in grads]).float().numpy().tobytes()).decode()}


@dataclass
class Stages:
    """The service: one :class:`_Session` per call asked (``asked``: each call's arguments, the spec first), begun
    when the sandbox's driver names that spec; requests then run on the session begun last."""

    asked: Sequence[Any]
    setting: Setting
    sessions: dict[int, _Session] = field(default_factory=dict)
    current: _Session | None = None

    def handle(self, message: Any) -> Any:
        if not isinstance(message, dict):
            raise Refused("not a request")
        if "begin" in message:
            k = next((k for k, args in enumerate(self.asked) if k not in self.sessions
                      and list(args[:1]) == [message["begin"]]), None)
            if k is None:
                raise Refused("a run the autograder did not ask for")
            self.current = self.sessions[k] = _Session(tuple(self.asked[k][0]), self.setting)
            return {"session": k}
        session = self.current
        if session is None or session.ended:
            raise Refused("no run under way")
        session.release(message.get("released"))
        if len(session.ops) >= session.most_ops:
            raise Refused(f"more than {session.most_ops} operations in one run")
        if "F" in message:
            return session.forward(message["F"], message.get("x"), message.get("graph", True))
        if "B" in message:
            return session.backward(message["B"], message.get("grad"))
        if "end" in message:
            session.ended = True
            return {}
        raise Refused("not a request")

    def observed(self, k: int) -> dict[str, Any] | None:
        session = self.sessions.get(k)
        return None if session is None else session.observed()


# ---- the sandbox's side -----------------------------------------------------------------------------------------

class Lifetimes:
    """When the executor lets go of each forward: its output's storage is gone and autograd has released what it
    saved for the backward (at the backward, unless the graph is retained; else when the graph goes). The handles
    let go of are sent with the next request."""

    def __init__(self) -> None:
        self.gone: list[int] = []
        self._parts: dict[int, int] = {}

    def watch(self, handle: int, out: Any) -> None:
        self._parts[handle] = self._parts.get(handle, 0) + 1
        weakref.finalize(out.untyped_storage(), self._lost, handle)

    def saved(self, handle: int) -> Any:
        """What autograd keeps for ``handle``'s backward, watched."""
        held = _Held()
        self._parts[handle] = self._parts.get(handle, 0) + 1
        weakref.finalize(held, self._lost, handle)
        return held

    def _lost(self, handle: int) -> None:
        self._parts[handle] -= 1
        if not self._parts[handle]:
            self.gone.append(handle)

    def take(self) -> list[int]:
        gone, self.gone = self.gone, []
        return gone


class _Held:
    tensor: Any = None


class Remote:
    """The sandbox's end of one run: :meth:`chunks` to hand the executor, :meth:`end` once it has returned."""

    def __init__(self, spec: Any, lifetimes: Lifetimes) -> None:
        self.client = Client.from_environment()
        self.lifetimes = lifetimes
        self.last = -1  # the handle of the forward run last
        self.graph = True  # whether the forward asked for now records a graph
        self.client.ask({"begin": list(spec)})

    def ask(self, message: dict[str, Any]) -> Any:
        return self.client.ask({**message, "released": self.lifetimes.take()})

    def chunks(self, n: int) -> list[Any]:
        return [_remote_chunk(self, c) for c in range(n)]

    def end(self) -> None:
        import gc

        gc.collect()
        self.ask({"end": True})


def _remote_chunk(remote: Remote, index: int) -> Any:
    import torch
    from torch import nn

    lifetimes = remote.lifetimes

    class Run(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, token: Any, x: Any) -> Any:
            # the grader runs it as the executor does: with a graph, or under torch.no_grad() (recomputation)
            reply = remote.ask({"F": index, "x": encode(x), "graph": remote.graph})
            ctx.handle = remote.last = reply["handle"]
            out = decode(reply["out"], 1 << 24)
            lifetimes.watch(ctx.handle, out)
            ctx.save_for_backward(token)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            reply = remote.ask({"B": ctx.handle, "grad": encode(grad)})
            return None, decode(reply["grad"], 1 << 24)

    class RemoteChunk(nn.Module):
        """Chunk ``index`` of the model, run by the autograder: call it on an input as you would the chunk."""

        def __init__(self) -> None:
            super().__init__()
            self.token = nn.Parameter(torch.zeros(0))  # so that its output needs a backward, as a chunk's does

        def forward(self, x: Any) -> Any:
            def pack(t: Any) -> Any:  # called once the forward has its handle
                held = lifetimes.saved(remote.last)
                held.tensor = t
                return held

            def unpack(held: Any) -> Any:
                return held.tensor

            remote.graph = torch.is_grad_enabled()  # inside Run.forward autograd is always off
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                return Run.apply(self.token, x)

        def extra_repr(self) -> str:
            return f"chunk {index}, run by the autograder"

    return RemoteChunk()
