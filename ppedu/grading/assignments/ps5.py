"""ps5 — the pipeline executor: the student writes the loop that runs a schedule op by op on the
chunks of the course's MNIST model, graded against the unpipelined model (loss and every gradient),
against the schedule (each GPU's operations in its order, each after what it needs: so each GPU holds the activations
the schedule holds) and by what is left once it returns.

The student's ``run_pipeline`` is run by :func:`run` in the sandbox, the notebook's cells run before it, where
neither ppedu's executor nor PyTorch's pipelining is installed, on chunks that the grader runs
(:mod:`ppedu.grading.stages`): every forward and backward it asks for is carried out in the evaluating process, on
the grader's copy of the model. So what :func:`report` judges was seen by the grader — which examples went through
which chunk in what order, the gradients in the grader's parameters, the forwards it still holds at the end — but for
the loss the function returns, which counts only if every example went through the grader's last chunk. Memory is
counted from the order the grader ran (a forward holds its micro-batch's activations on its GPU until its backward),
never from what the student's process keeps or says it let go of: copies it keeps cannot shape it.

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
from itertools import accumulate
from typing import Any

from ppedu.grading.answers import describe, kind, plain, raised
from ppedu.grading.evaluate import Code, Library
from ppedu.grading.stages import Lifetimes, Remote, Stages
from ppedu.grading.students import pick

EXAMPLES = 24  # the mini-batch: real MNIST digits from the course's subset
TOLERANCE = 1e-5
#: A run: (schedule, p, m, v, seed).
Spec = tuple[str, int, int, int, int]


def values(student: str) -> dict[str, Any]:
    p = pick("ps5", student, "p", (2, 3, 4))
    return {"p": p, "m": pick("ps5", student, "m", range(p, 2 * p + 1)), "seed": pick("ps5", student, "seed", range(1000))}


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
    """Run the student's ``run_pipeline`` once on ``spec``, in the sandbox, on chunks the grader runs
    (:class:`~ppedu.grading.stages.Remote`); it gives only what the function returned: everything else graded is
    what the grader saw (:func:`serve`)."""
    import torch
    from torch.nn.functional import cross_entropy

    schedule, _, images, labels = _setting(spec)
    remote = Remote(spec, Lifetimes())
    xs, ys = list(torch.tensor_split(images, schedule.microbatches)), list(torch.tensor_split(labels, schedule.microbatches))
    with warnings.catch_warnings(), redirect_stderr(StringIO()):
        warnings.simplefilter("ignore")
        returned = function(schedule, remote.chunks(schedule.chunks), xs, ys, cross_entropy, {})
    loss = plain(returned)
    del returned
    remote.end()
    return {"loss": loss}


def serve(asked: Sequence[Any]) -> Stages:
    """The grader's side of :func:`run`: the chunks of every spec asked, run and watched."""
    return Stages(asked, _setting)


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
        return describe(self.name, self.score, self.points, [(prop, ok, why) for prop, _, ok, why in self.results])


PROPERTIES = (("returns the mini-batch's mean loss, as the whole model computes it", 0.2),
              ("every gradient equals the unpipelined model's", 0.4),
              ("each GPU runs the schedule's operations in its order, each after what it needs (so it holds what the "
               "schedule holds)", 0.2),
              ("no activation still held once it has returned", 0.2))


def report(runs: object, specs: Sequence[Spec], points: float, hidden: Collection[Spec] = ()) -> Report:
    """Judge ``runs`` (``[[spec, what run() gave, what the grader saw], …]``, as data) on every spec against the
    unpipelined model and the schedule; the specs in ``hidden`` are the autograder's own: of them a message names
    nothing, neither the spec nor a number or word the student's code chose. Only the loss is the function's own word,
    and it counts only if every example went through the grader's last chunk."""
    import numpy as np
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import reference_gradients

    props = [prop for prop, _ in PROPERTIES]
    failures: dict[str, str] = {}
    given = {tuple(run[0]): run[1:] for run in runs if isinstance(run, list) and run} if isinstance(runs, list) else {}
    for spec in specs:
        secret = tuple(spec) in hidden
        where = "(on a schedule the autograder chose, not shown)" if secret else f"({spec[0]}, p={spec[1]}, m={spec[2]})"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `run_pipeline` {why}")
            break
        out, seen = (given.get(tuple(spec)) or [None])[0], (given.get(tuple(spec)) or [None, None])[-1]
        if isinstance(out, dict) and out.get("__raised__") == "NotImplementedError":
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        if problem := raised(out):  # on a hidden schedule, the grader's words: what it raised is the student's choice
            failures = dict.fromkeys(props, f"{where}: your function {'raised an error' if secret else problem}")
            break
        if not isinstance(out, dict):
            failures = dict.fromkeys(props, f"{where}: your function was not run on this schedule")
            break
        if not isinstance(seen, dict) or not seen.get("ops"):
            failures = dict.fromkeys(props, f"{where}: your function never ran the chunks it was given (the "
                                     "autograder runs them, and grades what they did)")
            break
        schedule, model, images, labels = _setting(spec)
        reference = torch.cat([g.reshape(-1) for g in reference_gradients(model, (images, labels), cross_entropy)])
        with torch.no_grad():
            whole_loss = float(cross_entropy(model(images), labels))
        loss = out.get("loss")
        if isinstance(loss, bool) or not isinstance(loss, (int, float)):
            failures.setdefault(props[0], f"{where}: " + ("did not return the loss as a number" if secret else
                                                          f"returned a {kind(loss)}, not the loss (a number)"))
        elif not seen.get("covered"):
            failures.setdefault(props[0], f"{where}: not every example went once through the last chunk, so the "
                                "number returned is not the loss of what your function ran")
        elif not abs(loss - whole_loss) <= TOLERANCE * max(1.0, abs(whole_loss)):
            failures.setdefault(props[0], f"{where}: {'what it returned' if secret else f'{loss:.6g}'} is not the mean "
                                "loss over the mini-batch (weight each micro-batch's mean loss by its share of the "
                                "examples)")
        grads = seen.get("grads")
        own = np.frombuffer(base64.b64decode(grads), dtype=np.float32) if isinstance(grads, str) else None
        if own is None or own.size != reference.numel():
            failures.setdefault(props[1], f"{where}: some parameters have no gradient (did every B run a backward?)")
        else:
            worst = float(np.abs(own - reference.numpy()).max())
            if not worst <= TOLERANCE:
                failures.setdefault(props[1], f"{where}: " + ("they differ from the unpipelined model's" if secret
                                                              else f"differ by up to {worst:.2g}"))
        if off := _not_the_schedules(schedule, seen["ops"], secret):
            failures.setdefault(props[2], f"{where}: {off}")
        if seen.get("left"):
            failures.setdefault(props[3], f"{where}: {'some' if secret else seen['left']} forwards' activations still "
                                "held (your code still refers to their outputs, or kept their graph)")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, "")) for prop, share in PROPERTIES)
    return Report(specs[0][0], float(points), results)


def _not_the_schedules(schedule: Any, ops: Sequence[Any], secret: bool) -> str | None:
    """Why the forwards and backwards the grader ran, in the order it ran them, are not the schedule's: an operation
    on what is not one micro-batch, one run more or fewer times than once, one before what it needs, or a GPU whose
    operations are not in the schedule's order (and the activations it then held at once, counted from that order);
    ``None`` when every GPU ran exactly the schedule's operations in its order."""
    from collections import Counter

    from ppedu.ops import Op

    bounds = [0, *accumulate(_sizes(schedule))]
    micro = {(a, b): i for i, (a, b) in enumerate(zip(bounds, bounds[1:]))}
    gpu = schedule.placement[0]
    ran: list[list[Any]] = [[] for _ in schedule.stages]
    done: set[Any] = set()
    needed: str | None = None
    for kind_, a, b, chunk in ops:
        if a is None:
            return (f"{'a chunk' if secret else f'chunk {chunk}'} ran on an input that is not the output the chunk "
                    "before it gave, nor a micro-batch's examples (pass each on unchanged)")
        if (a, b) not in micro:
            return "a chunk ran on several micro-batches at once (the whole mini-batch?), not one micro-batch at a time"
        op = Op(kind_, micro[a, b], chunk)
        need = op.needs(schedule.chunks)
        if needed is None and need is not None and need not in done:
            needed = f"{_named(op)} ran before {_named(need)}, whose output it needs"
        done.add(op)
        ran[gpu[chunk]].append(op)
    want = [list(stage) for stage in schedule.stages]
    have, should = Counter(op for stage in ran for op in stage), Counter(op for stage in want for op in stage)
    if have != should:
        extra = have - should
        op = next(iter(extra or should - have))
        return ("its forwards and backwards are not the schedule's, each once" if secret else
                f"{_named(op)} ran {'more' if extra else 'fewer'} times than the schedule's once")
    if needed is not None:
        return "an operation ran before one whose output it needs" if secret else needed
    for g, (got, expected) in enumerate(zip(ran, want)):
        if got != expected:
            if secret:
                return "a GPU did not run its operations in the schedule's order"
            k = next(k for k, (x, y) in enumerate(zip(got, expected)) if x != y)
            held, peak = _peak(got), _peak(expected)
            return (f"GPU {g} ran {_named(got[k])} where the schedule runs {_named(expected[k])} (its operation "
                    f"{k + 1}): run each GPU's operations in the schedule's order" +
                    (f"; so GPU {g} held the activations of {held} forward(s) at once, where the schedule holds {peak}"
                     if held != peak else ""))
    return None


def _named(op: Any) -> str:
    return f"{op.kind} of micro-batch {op.microbatch} on chunk {op.chunk}"


def _peak(ops: Sequence[Any]) -> int:
    """The most activations a GPU running ``ops`` in this order holds at once: a forward's until its backward."""
    held = peak = 0
    for op in ops:
        held += 1 if op.kind == "F" else -1
        peak = max(peak, held)
    return peak


def _sizes(schedule: Any) -> list[int]:
    """The micro-batches' sizes, as ``torch.tensor_split`` cuts the mini-batch."""
    m = schedule.microbatches
    return [EXAMPLES // m + (i < EXAMPLES % m) for i in range(m)]


#: What the executor's run has: torch and ppedu, but no executor (ppedu's, PyTorch's pipelining); its chunks are run by
#: the grader (:func:`serve`).
CODE = Code(Library(("ppedu", "ppedu.mnist", "ppedu.mnist.data", "ppedu.mnist.models", "ppedu.grading.assignments.ps5"),
                    torch=True, absent=("torch.distributed.pipelining",)), "ppedu.grading.assignments.ps5:run",
            "ppedu.grading.assignments.ps5:serve")


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
    """The evaluator gives ``[[[spec], out, seen], …]`` (the arguments as a list; what the grader saw); ``report``
    wants ``[[spec, out, seen], …]``."""
    return [[run[0][0], *run[1:]] for run in runs] if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "one_f_one_b": ExecutorQuestion("one_f_one_b", 5, (("1f1b", 2, 4, 1), ("1f1b", 4, 6, 1))),
    "gpipe": ExecutorQuestion("gpipe", 2, (("gpipe", 3, 3, 1),)),
    "interleaved": ExecutorQuestion("interleaved", 3, (("interleaved", 2, 4, 2),)),
}
