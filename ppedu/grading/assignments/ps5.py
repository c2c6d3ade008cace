"""ps5 — the pipeline executor: the student writes the loop that runs a schedule op by op on the
chunks of the course's MNIST model, graded against the unpipelined model (loss and every gradient)
and by how long activations live (freed at each backward, none left at the end).

The student's ``run_pipeline`` is run by :func:`run` with its answer cell alone, in an interpreter
where neither ppedu's executor nor PyTorch's pipelining is installed; what it did comes out as
data — the loss it returned, every gradient, the activations alive at once per GPU and those left
over, both measured from the tensors' own lifetimes (:class:`Lifetimes`) — and :func:`report` judges
that data against the unpipelined model.

>>> values("alice")["p"] in (2, 3, 4)
True
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import redirect_stderr
from dataclasses import dataclass
from io import StringIO
from typing import Any

from ppedu.grading.answers import kind, plain, raised
from ppedu.grading.evaluate import Code, Library
from ppedu.grading.students import pick

EXAMPLES = 24  # the mini-batch: real MNIST digits from the course's subset
TOLERANCE = 1e-5
#: A run: (schedule, p, m, v, seed).
Spec = tuple[str, int, int, int, int]


def values(student: str) -> dict[str, Any]:
    p = pick("ps5", student, "p", (2, 3, 4))
    return {"p": p, "m": pick("ps5", student, "m", range(p, 2 * p + 1)), "seed": pick("ps5", student, "seed", range(1000))}


class Lifetimes:
    """How long the activations of each chunk's forwards live, measured from the tensors themselves: a forward's
    activations are the tensors it makes that autograd keeps for the backward (and its output), alive while any
    of their storage is. Each time a backward reaches a chunk, the activations alive on that chunk's GPU are
    counted; :attr:`peak` is the most per GPU, :meth:`left` those still alive."""

    def __init__(self, placement: Sequence[int]) -> None:
        self.placement = placement
        self.peak = [0] * (max(placement) + 1)
        self._alive: dict[int, set[int]] = {}  # forward (its number) -> its storages still allocated
        self._gpu: dict[int, int] = {}

    def watch(self, chunk: Any, index: int) -> Any:
        """``chunk`` as the student's code gets it: an ``nn.Module`` whose forwards are measured."""
        from torch import nn

        lifetimes = self

        class Watched(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.layers = chunk

            def forward(self, x: Any) -> Any:
                return lifetimes._forward(chunk, index, x)

            def __len__(self) -> int:
                return len(chunk)

        return Watched()

    def _forward(self, chunk: Any, index: int, x: Any) -> Any:
        import torch

        record = len(self._gpu)
        self._gpu[record], self._alive[record] = self.placement[index], set()
        known = {p.untyped_storage().data_ptr() for p in chunk.parameters()}
        if isinstance(x, torch.Tensor):
            known.add(x.untyped_storage().data_ptr())
        reached: list[bool] = []

        def pack(t: Any) -> Any:
            if t.untyped_storage().data_ptr() not in known:
                self._keep(record, t)
            return t

        def unpack(t: Any) -> Any:
            if not reached:  # the backward has reached this forward: count what its GPU holds
                reached.append(True)
                gpu = self._gpu[record]
                alive = sum(1 for r, storages in self._alive.items() if storages and self._gpu[r] == gpu)
                self.peak[gpu] = max(self.peak[gpu], alive)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = chunk(x)
        if isinstance(out, torch.Tensor) and out.untyped_storage().data_ptr() not in known:
            self._keep(record, out)
        return out

    def _keep(self, record: int, tensor: Any) -> None:
        import weakref

        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if storage.nbytes() and ptr not in self._alive[record]:
            self._alive[record].add(ptr)
            weakref.finalize(storage, self._alive[record].discard, ptr)

    def left(self) -> int:
        """How many forwards' activations are still alive."""
        import gc

        gc.collect()
        return sum(1 for storages in self._alive.values() if storages)


def _setting(spec: Spec) -> tuple[Any, Any, Any, Any]:
    """The schedule, the model (seeded), its inputs and labels of one run."""
    import torch

    from ppedu.mnist import load_mnist, mlp
    from ppedu.schedules import build

    name, p, m, v, seed = spec
    torch.set_num_threads(1)  # a toy model: threads only fight the other autograders for the cores
    images, labels = load_mnist("train", limit=EXAMPLES)
    torch.manual_seed(seed)
    return build(name, p, m, v), mlp(layers=8, hidden=32), images, labels  # 8 layers: up to 4 GPUs × 2 chunks


def run(function: Callable[..., object], spec: Spec) -> dict[str, object]:
    """Run the student's ``run_pipeline`` once on ``spec``; what it did, as data: the loss it returned, every
    gradient, and the activations held per GPU, measured by :class:`Lifetimes` (the most at once, and how
    many are left when it has returned)."""
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import split_model

    schedule, model, images, labels = _setting(spec)
    chunks = split_model(model, schedule.chunks)
    lifetimes = Lifetimes(schedule.placement[0])
    watched = [lifetimes.watch(c, k) for k, c in enumerate(chunks)]
    xs, ys = list(torch.tensor_split(images, schedule.microbatches)), list(torch.tensor_split(labels, schedule.microbatches))
    with warnings.catch_warnings(), redirect_stderr(StringIO()):
        warnings.simplefilter("ignore")
        returned = function(schedule, watched, xs, ys, cross_entropy, {})
    loss = plain(returned)
    del returned
    grads = [p.grad for c in chunks for p in c.parameters()]
    flat = torch.cat([g.detach().reshape(-1) for g in grads if g is not None]).float() if all(
        g is not None for g in grads) else None
    return {"loss": loss, "peak": list(lifetimes.peak), "left": lifetimes.left(),
            "grads": None if flat is None else base64.b64encode(flat.numpy().tobytes()).decode()}


@dataclass(frozen=True)
class Report:
    name: str
    points: float
    results: tuple[tuple[str, float, bool, str], ...]  # (property, points, passed, why not)

    @property
    def score(self) -> float:
        # rounded: nbgrader rejects a cell worth 5.000000000000001 of its 5 points
        return min(self.points, round(sum(points for _, points, ok, _ in self.results if ok), 6))

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.score:g}/{self.points:g} points"]
        lines += [f"  {'✓' if ok else '✗'} {prop}" + ("" if ok else f" {why}") for prop, _, ok, why in self.results]
        return "\n".join(lines)


PROPERTIES = (("returns the mini-batch's mean loss, as the whole model computes it", 0.2),
              ("every gradient equals the unpipelined model's", 0.4),
              ("activations freed at each backward: peak per GPU as the schedule's", 0.2),
              ("no activation still held once it has returned", 0.2))


def report(runs: object, specs: Sequence[Spec], points: float, hidden: Collection[Spec] = (),
           untrusted: Sequence[str] = ()) -> Report:
    """Judge ``runs`` (``[[spec, what run() gave], …]``, as data) on every spec against the
    unpipelined model; the specs in ``hidden`` are the autograder's own, never named. ``untrusted``: what of
    the grader's own the answer cell reached into, so that what was measured in its process (the memory
    properties) cannot be believed."""
    import numpy as np
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import reference_gradients
    from ppedu.simulate import simulate

    props = [prop for prop, _ in PROPERTIES]
    failures: dict[str, str] = {}
    given = {tuple(spec): out for spec, out in runs} if isinstance(runs, list) else {}
    for spec in specs:
        secret = tuple(spec) in hidden  # no number of it in a message, nor what the student's code said of it
        where = "(on a schedule the autograder chose, not shown)" if secret else f"({spec[0]}, p={spec[1]}, m={spec[2]})"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `run_pipeline` {why}")
            break
        out = given.get(tuple(spec))
        if isinstance(out, dict) and out.get("__raised__") == "NotImplementedError":
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        if problem := raised(out):  # on a hidden schedule, only the error's name: its message may echo the schedule
            failures = dict.fromkeys(props, f"{where}: your function {problem.split(':')[0] if secret else problem}")
            break
        if not isinstance(out, dict):
            failures = dict.fromkeys(props, f"{where}: your function was not run on this schedule")
            break
        schedule, model, images, labels = _setting(spec)
        reference = torch.cat([g.reshape(-1) for g in reference_gradients(model, (images, labels), cross_entropy)])
        with torch.no_grad():
            whole_loss = float(cross_entropy(model(images), labels))
        loss = out.get("loss")
        if isinstance(loss, bool) or not isinstance(loss, (int, float)):
            failures.setdefault(props[0], f"{where}: returned a {kind(loss)}, not the loss (a number)")
        elif not abs(loss - whole_loss) <= TOLERANCE * max(1.0, abs(whole_loss)):
            failures.setdefault(props[0], f"{where}: {loss:.6g} is not the mean loss over the mini-batch "
                                "(weight each micro-batch's mean loss by its share of the examples)")
        grads = out.get("grads")
        own = np.frombuffer(base64.b64decode(grads), dtype=np.float32) if isinstance(grads, str) else None
        if own is None:
            failures.setdefault(props[1], f"{where}: some parameters have no gradient (did every B run a backward?)")
        elif own.shape != tuple(reference.shape):
            failures.setdefault(props[1], f"{where}: the chunks' parameters changed shape")
        else:
            worst = float(np.abs(own - reference.numpy()).max())
            if not worst <= TOLERANCE:
                failures.setdefault(props[1], f"{where}: differ by up to {worst:.2g}")
        want, peak = list(simulate(schedule).peak_activations), out.get("peak")
        if peak != want:
            s = next((i for i, (a, b) in enumerate(zip(peak, want)) if a != b), 0) if isinstance(peak, list) else 0
            held = peak[s] if isinstance(peak, list) and s < len(peak) else "?"
            failures.setdefault(props[2], f"{where}: a GPU held more or fewer at once than the schedule" if secret
                                else f"{where}: GPU {s} held {held} at once, the schedule {want[s]}")
        if out.get("left"):
            failures.setdefault(props[3], f"{where}: {out.get('left')} forwards' activations still held")
    if untrusted and isinstance(runs, list):
        for prop in props[2:]:
            failures.setdefault(prop, f"— your cell reaches into the autograder's own code ({', '.join(untrusted)}), "
                                "so the memory it measured cannot be believed: your instructor will read it")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, "")) for prop, share in PROPERTIES)
    return Report(specs[0][0], float(points), results)


#: What the executor's run has: torch and ppedu, but no executor (ppedu's, PyTorch's pipelining).
CODE = Code(Library(("ppedu", "ppedu.mnist", "ppedu.mnist.data", "ppedu.mnist.models", "ppedu.grading.assignments.ps5"),
                    torch=True, absent=("torch.distributed.pipelining",)), "ppedu.grading.assignments.ps5:run")


@dataclass(frozen=True)
class ExecutorQuestion:
    name: str
    points: float
    sizes: tuple[tuple[str, int, int, int], ...]  # (schedule, p, m, v) tried in the visible test
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> Spec:
        name = self.sizes[0][0]
        return (name, v["p"], v["p"] * 2 if name == "interleaved" else v["m"], 2 if name == "interleaved" else 1, v["seed"])

    def graded_specs(self, v: Mapping[str, Any]) -> tuple[Spec, ...]:
        return (*((*s, 0) for s in self.sizes), self.own(v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Spec], ...]]:
        return {"run_pipeline": tuple(((*s, 0),) for s in self.sizes)}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        return report(unwrap(data.get("run_pipeline")), [(*s, 0) for s in self.sizes], self.points)


def unwrap(runs: object) -> object:
    """The evaluator gives ``[[[spec], out], …]`` (the arguments as a list); ``report`` wants ``[[spec, out], …]``."""
    return [[args[0], out] for args, out in runs] if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "one_f_one_b": ExecutorQuestion("one_f_one_b", 5, (("1f1b", 2, 4, 1), ("1f1b", 4, 6, 1))),
    "gpipe": ExecutorQuestion("gpipe", 2, (("gpipe", 3, 3, 1),)),
    "interleaved": ExecutorQuestion("interleaved", 3, (("interleaved", 2, 4, 2),)),
}
