"""ps5 — the pipeline executor as each GPU's process runs it: the student writes the loop in which every GPU works
through its own list of operations (the schedule's per-stage lists), one operation whenever its input has arrived,
that stops with an error naming each GPU's blocked operation where an order deadlocks; then the same loop with
activation recomputation (a forward keeps only its chunk's input; the backward runs it again with a graph). Graded
against the unpipelined model (loss and every gradient), against the schedule (each GPU's operations in its order,
each after what it needs: so each GPU holds the activations the schedule holds) and by what is left once it returns.

The student's functions are run by :func:`run` in the sandbox, the notebook's cells run before it, where neither
ppedu's executor, its simulator (``ppedu.simulate``: no order to copy) nor PyTorch's pipelining is installed, on
chunks that the grader runs (:mod:`ppedu.grading.stages`): every forward (with a graph or under ``torch.no_grad()``)
and backward it asks for is carried out in the evaluating process, on the grader's copy of the model. So what
:func:`report` judges was seen by the grader — which examples went through which chunk in what order, the gradients
in the grader's parameters, the forwards it still holds at the end — but for the loss the function returns, which
counts only if every example went through the grader's last chunk, and an error's message, which must name the
blocked operations the grader saw. Memory is counted from the order the grader ran (a forward with a graph holds its
micro-batch's activations on its GPU until its backward; one without, only its input), never from what the
student's process keeps or says it let go of: copies it keeps cannot shape it.

>>> values("alice")["p"] in (2, 3, 4)
True
>>> [op.label() for op in deadlocked(2, 3).stages[1]]
['F0c1', 'F1c1', 'F2c1', 'B0c1', 'B1c1', 'B2c1']
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
#: A run: (schedule, p, m, v, seed); the schedule ``deadlock`` is :func:`deadlocked`'s order.
Spec = tuple[str, int, int, int, int]


def values(student: str) -> dict[str, Any]:
    p = pick("ps5", student, "p", (2, 3, 4))
    return {"p": p, "m": pick("ps5", student, "m", range(p, 2 * p + 1)), "seed": pick("ps5", student, "seed", range(1000))}


def deadlocked(p: int, m: int) -> Any:
    """An order no pipeline can finish (``m >= 2``): GPU 0 runs each micro-batch's forward and backward before the next
    micro-batch's forward, the last GPU all its forwards first (GPipe's order), the GPUs between 1F1B's. GPU 0 waits
    for a gradient that the last GPU sends only after a forward that waits for GPU 0."""
    from ppedu.ops import Op, Schedule
    from ppedu.schedules import gpipe, one_f_one_b

    first = tuple(Op(k, i, 0) for i in range(m) for k in ("F", "B"))
    return Schedule((first, *one_f_one_b(p, m).stages[1:-1], gpipe(p, m).stages[-1]), "deadlock", (tuple(range(p)),), m)


def _setting(spec: Spec) -> tuple[Any, Any, Any, Any]:
    """The schedule, the model (seeded), its inputs and labels of one run."""
    import torch

    from ppedu.mnist import load_mnist, mlp
    from ppedu.schedules import build

    name, p, m, v, seed = spec
    torch.set_num_threads(1)  # a toy model: threads only fight the other autograders for the cores
    images, labels = load_mnist("train", limit=EXAMPLES)
    torch.manual_seed(seed)
    schedule = deadlocked(p, m) if name == "deadlock" else build(name, p, m, v)
    return schedule, mlp(layers=8, hidden=32), images, labels  # 8 layers: up to 4 GPUs × 2 chunks


def run(function: Callable[..., object], spec: Spec) -> dict[str, object]:
    """Run the student's executor once on ``spec``, in the sandbox, on chunks the grader runs
    (:class:`~ppedu.grading.stages.Remote`); it gives only what the function returned: everything else graded is
    what the grader saw (:func:`serve`)."""
    import torch
    from torch.nn.functional import cross_entropy

    schedule, _, images, labels = _setting(spec)
    remote = Remote(spec, Lifetimes())
    xs, ys = list(torch.tensor_split(images, schedule.microbatches)), list(torch.tensor_split(labels, schedule.microbatches))
    with warnings.catch_warnings(), redirect_stderr(StringIO()):
        warnings.simplefilter("ignore")
        returned = function(schedule, remote.chunks(schedule.chunks), xs, ys, cross_entropy)
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


_LOSS = ("returns the mini-batch's mean loss, as the whole model computes it", 0.2)
_ORDER = ("each GPU runs the schedule's operations in its order, each after what it needs (so it holds what the "
          "schedule holds)", 0.2)
#: Per way of running (plain, recomputing, on a deadlocked order): what is graded, with its share of the points.
PROPERTIES: dict[str, tuple[tuple[str, float], ...]] = {
    "pipeline": (_LOSS, ("every gradient equals the unpipelined model's", 0.4), _ORDER,
                 ("no activation still held once it has returned", 0.2)),
    "recompute": (_LOSS, ("every gradient equals the unpipelined model's", 0.3), _ORDER,
                  ("recomputes: each F runs without a graph (its chunk's input kept), each B runs its forward again "
                   "with a graph at once before its backward, and nothing is held once it returns", 0.3)),
    "deadlock": (("runs every operation it can, each GPU in its order, then stops with an error (neither hanging nor "
                  "returning)", 0.5),
                 ("the error names each GPU's blocked operation", 0.5)),
}


def report(runs: object, specs: Sequence[Spec], points: float, hidden: Collection[Spec] = (),
           mode: str = "pipeline") -> Report:
    """Judge ``runs`` (``[[spec, what run() gave, what the grader saw], …]``, as data) on every spec against the
    unpipelined model and the schedule (``mode``: a key of :data:`PROPERTIES`); the specs in ``hidden`` are the
    autograder's own: of them a message names nothing, neither the spec nor a number or word the student's code
    chose. Only the loss and an error's message are the function's own word; the loss counts only if every example
    went through the grader's last chunk, the message only for the operations the grader saw blocked."""
    import numpy as np
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import reference_gradients

    props = [prop for prop, _ in PROPERTIES[mode]]
    function = "run_recomputed" if mode == "recompute" else "run_pipeline"
    failures: dict[str, str] = {}
    given = {tuple(run[0]): run[1:] for run in runs if isinstance(run, list) and run} if isinstance(runs, list) else {}
    for spec in specs:
        secret = tuple(spec) in hidden
        where = "(on a schedule the autograder chose, not shown)" if secret else f"({spec[0]}, p={spec[1]}, m={spec[2]})"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `{function}` {why}")
            break
        out, seen = (given.get(tuple(spec)) or [None])[0], (given.get(tuple(spec)) or [None, None])[-1]
        if isinstance(out, dict) and out.get("__raised__") == "NotImplementedError":
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        problem = raised(out)
        if problem and (mode != "deadlock" or out.get("__raised__") in ("NotAvailable", "CellTimeout")):
            # on a hidden schedule, the grader's words: what it raised is the student's choice
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
        if mode == "deadlock":
            for k, why in _deadlock(schedule, out, seen["ops"], secret).items():
                failures.setdefault(props[k], f"{where}: {why}")
            continue
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
        ops, recomputing = _as_scheduled(schedule, seen["ops"], mode == "recompute", secret)
        if off := _not_the_schedules(schedule, ops, secret):
            failures.setdefault(props[2], f"{where}: {off}")
        if recomputing:
            failures.setdefault(props[3], f"{where}: {recomputing}")
        if seen.get("left"):
            failures.setdefault(props[3], f"{where}: {'some' if secret else seen['left']} forwards' activations still "
                                "held (your code still refers to their outputs, or kept their graph)")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, ""))
                    for prop, share in PROPERTIES[mode])
    return Report(specs[0][0], float(points), results)


def _as_scheduled(schedule: Any, ops: Sequence[Any], recompute: bool, secret: bool) -> tuple[list[Any], str | None]:
    """The grader's log (``F`` a forward with a graph, ``f`` one without, ``B`` a backward) as the schedule's
    operations: any forward is an F, but where the executor recomputes, a forward with a graph of what has had its F,
    followed at once by its backward, is that B. With, where it recomputes, why the log is not recomputation's: a
    forward that kept its graph (from its F to its backward, or to the end), none if it is."""
    out: list[Any] = []
    problem, seen = None, set()
    k = 0
    while k < len(ops):
        kind_, a, b, chunk = ops[k]
        key = (a, b, chunk)
        if recompute and kind_ == "F" and key in seen and k + 1 < len(ops) and list(ops[k + 1]) == ["B", a, b, chunk]:
            out.append(["B", a, b, chunk])
            k += 2
            continue
        if recompute and kind_ == "F" and problem is None:
            what = "a forward" if secret else f"the forward of examples {a}–{b} on chunk {chunk}"
            problem = (f"{what} ran with a graph (autograd recording) and kept it " +
                       ("until its backward" if key not in seen else "while other operations ran (its backward did "
                        "not follow at once)") + ", where recomputation keeps only the chunk's input between F and B")
        if kind_ in ("F", "f"):
            seen.add(key)
        out.append(["F" if kind_ == "f" else kind_, a, b, chunk])
        k += 1
    return out, problem


def _deadlock(schedule: Any, out: Mapping[str, Any], ops: Sequence[Any], secret: bool) -> dict[int, str]:
    """Why an executor given an order that deadlocks did not stop as it should (by the index of the property): each
    GPU must have run a prefix of its own list, every operation after what it needs, up to one whose input cannot
    arrive; and its error must name each GPU's blocked operation (``F1c0``, as ``Op`` prints it)."""
    import re

    log = _log(schedule, ops, secret)
    if isinstance(log, str):
        return {0: log, 1: "its blocked operations cannot be told"}
    ran: list[list[Any]] = [[] for _ in schedule.stages]
    for op in log:
        ran[schedule.placement[0][op.chunk]].append(op)
    done = set(log)
    problems: dict[int, str] = {}
    blocked = {g: stage[len(got)] for g, (got, stage) in enumerate(zip(ran, schedule.stages)) if len(got) < len(stage)}
    for g, (got, stage) in enumerate(zip(ran, schedule.stages)):
        if got != list(stage[:len(got)]):
            k = next((k for k, (x, y) in enumerate(zip(got, stage)) if x != y), len(stage))
            problems.setdefault(0, "a GPU did not run its operations in its list's order" if secret else
                                f"GPU {g} ran {got[k]!r} " + (f"where its list has {stage[k]!r} (its operation {k + 1})"
                                                             if k < len(stage) else "after the end of its list"))
    if needed := _before_its_input(schedule, log):
        problems.setdefault(0, "an operation ran before one whose output it needs" if secret else needed)
    for g, op in blocked.items():
        need = op.needs(schedule.chunks)
        if need is None or need in done:
            problems.setdefault(0, "it stopped while a GPU could still run its next operation" if secret else
                                f"it stopped while GPU {g} could still run {op!r} (its input had arrived)")
    if "__raised__" not in out:
        problems.setdefault(0, "it returned, though no order of these lists runs every operation: raise an error "
                            "naming each GPU's blocked operation")
        return {**problems, 1: "it raised no error"}
    message = str(out.get("message", ""))
    named = set(re.findall(r"(?<!\w)[FBW]\d+c\d+(?!\w)", message))
    unnamed = [(g, op) for g, op in blocked.items() if repr(op) not in named]
    # a message may say what each blocked operation waits for, but naming every operation is not finding the blocked
    waited = {repr(op) for op in blocked.values()} | {repr(op.needs(schedule.chunks)) for op in blocked.values()}
    extra = sorted(named - waited)
    if not blocked:
        problems[1] = "no GPU was left blocked (the lists were not run as the GPUs would)"
    elif unnamed:
        problems[1] = ("its message does not name every GPU's blocked operation (as `Op` prints one, e.g. F1c0)"
                       if secret else "its message does not name " + ", ".join(f"GPU {g}'s {op!r}" for g, op in unnamed))
    elif extra:
        problems[1] = ("its message also names operations that are not blocked" if secret else
                       f"its message also names operations that are not blocked ({', '.join(extra[:4])}"
                       f"{', …' if len(extra) > 4 else ''})")
    return problems


def _log(schedule: Any, ops: Sequence[Any], secret: bool) -> list[Any] | str:
    """The schedule's operations the grader ran (``f``, a forward without a graph, is an F), in the order it ran them;
    or why one of them is none."""
    from ppedu.ops import Op

    bounds = [0, *accumulate(_sizes(schedule))]
    micro = {(a, b): i for i, (a, b) in enumerate(zip(bounds, bounds[1:]))}
    log = []
    for kind_, a, b, chunk in ops:
        if a is None:
            return (f"{'a chunk' if secret else f'chunk {chunk}'} ran on an input that is not the output the chunk "
                    "before it gave, nor a micro-batch's examples (pass each on unchanged)")
        if (a, b) not in micro:
            return "a chunk ran on several micro-batches at once (the whole mini-batch?), not one micro-batch at a time"
        log.append(Op("F" if kind_ == "f" else kind_, micro[a, b], chunk))
    return log


def _before_its_input(schedule: Any, log: Sequence[Any]) -> str | None:
    """The first operation of ``log`` that ran before the one whose output it needs, named; ``None`` if none did."""
    done: set[Any] = set()
    for op in log:
        need = op.needs(schedule.chunks)
        if need is not None and need not in done:
            return f"{_named(op)} ran before {_named(need)}, whose output it needs"
        done.add(op)
    return None


def _not_the_schedules(schedule: Any, ops: Sequence[Any], secret: bool) -> str | None:
    """Why the forwards and backwards the grader ran, in the order it ran them, are not the schedule's: an operation
    on what is not one micro-batch, one run more or fewer times than once, one before what it needs, or a GPU whose
    operations are not in the schedule's order (and the activations it then held at once, counted from that order);
    ``None`` when every GPU ran exactly the schedule's operations in its order."""
    from collections import Counter

    log = _log(schedule, ops, secret)
    if isinstance(log, str):
        return log
    ran: list[list[Any]] = [[] for _ in schedule.stages]
    for op in log:
        ran[schedule.placement[0][op.chunk]].append(op)
    needed = _before_its_input(schedule, log)
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


#: What the executor's run has: torch and ppedu, but no executor (ppedu's, PyTorch's pipelining) and neither the
#: simulator nor its replay loop (either's order would be one call away); its chunks are run by the grader
#: (:func:`serve`).
CODE = Code(Library(("ppedu", "ppedu.mnist", "ppedu.mnist.data", "ppedu.mnist.models", "ppedu.grading.assignments.ps5"),
                    torch=True, absent=("torch.distributed.pipelining",),
                    withheld=("ppedu.simulate", "ppedu.replay")),
            "ppedu.grading.assignments.ps5:run", "ppedu.grading.assignments.ps5:serve")


@dataclass(frozen=True)
class ExecutorQuestion:
    """One of the executors (``function``), run on ``sizes`` and judged as ``mode`` says (see :data:`PROPERTIES`)."""

    name: str
    points: float
    sizes: tuple[tuple[str, int, int, int], ...]  # (schedule, p, m, v) tried in the visible test
    function: str = "run_pipeline"
    mode: str = "pipeline"
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> Spec:
        name = self.sizes[0][0]
        return (name, v["p"], v["p"] * 2 if name == "interleaved" else v["m"], 2 if name == "interleaved" else 1, v["seed"])

    def graded_specs(self, v: Mapping[str, Any]) -> tuple[Spec, ...]:
        return (*((*s, 0) for s in self.sizes), self.own(v))

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Spec], ...]]:
        return {self.function: tuple(((*s, 0),) for s in self.sizes)}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        return report(unwrap(data.get(self.function)), [(*s, 0) for s in self.sizes], self.points, mode=self.mode)


def unwrap(runs: object) -> object:
    """The evaluator gives ``[[[spec], out, seen], …]`` (the arguments as a list; what the grader saw); ``report``
    wants ``[[spec, out, seen], …]``."""
    return [[run[0][0], *run[1:]] for run in runs] if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "one_f_one_b": ExecutorQuestion("one_f_one_b", 3, (("1f1b", 2, 4, 1), ("1f1b", 4, 6, 1))),
    "gpipe": ExecutorQuestion("gpipe", 1, (("gpipe", 3, 3, 1),)),
    "interleaved": ExecutorQuestion("interleaved", 1, (("interleaved", 2, 4, 2),)),
    "deadlock": ExecutorQuestion("deadlock", 2, (("deadlock", 2, 3, 1),), mode="deadlock"),
    "recomputed": ExecutorQuestion("recomputed", 2, (("1f1b", 3, 4, 1), ("gpipe", 2, 3, 1)), "run_recomputed",
                                   "recompute"),
}
