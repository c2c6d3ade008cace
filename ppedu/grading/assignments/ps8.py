"""ps8 — collectives, data parallelism and sharding written by the student and run across processes: a ring
all-reduce from point-to-point messages, the gradient all-reduce of data parallelism, the same in buckets launched
from backward hooks, and a ZeRO-1 optimizer step.

Each call runs on 2–4 ranks, each a sandbox of its own (:mod:`ppedu.grading.ranked`) whose ``torch.distributed``
reaches the other ranks only through the grader's relay (:mod:`ppedu.grading.relay`): the relay carries out and
records every collective and message, and gives each rank its own shard of data drawn from a seed it keeps — real
MNIST digits for the models, random numbers for the ring. A rank therefore computes the right parameters only if its
code communicates what the others computed, and what it communicated is the relay's record, not its own word.
:func:`report` judges a run against the grader's own unsharded run of the same model on the whole batch, and its
communication against chapter 12's ring and chapter 13's ZeRO-1: which collectives, how many bytes, in what order.
Everything is in float64, so that rounding never decides a verdict.

>>> values("alice")["n"] in (2, 3)
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import kind, raised
from ppedu.grading.assignments.ps5 import Report
from ppedu.grading.evaluate import Code, Library
from ppedu.grading.students import pick

#: Digits per rank in each step, steps per run, the learning rates (SGD for data parallelism, Adam for ZeRO-1).
EXAMPLES, STEPS, SGD_RATE, ADAM_RATE = 8, 3, 0.1, 0.01
#: Largest difference allowed from the unsharded run (float64: rounding is far below it).
TOLERANCE = 1e-6
#: The runs: [question, ranks, its size (the ring's length, the bucket cap in bytes; 0 otherwise), the model's seed].
Spec = list[Any]
#: The student's function each question calls, by question.
FUNCTIONS = {"ring": "ring_all_reduce", "data_parallel": "data_parallel_step", "buckets": "bucketed_allreduce",
             "zero1": "zero1"}


def values(student: str) -> dict[str, Any]:
    n = pick("ps8", student, "n", (2, 3))
    return {"n": n, "length": pick("ps8", student, "length", range(1001, 4001)),
            "cap": pick("ps8", student, "cap", (2048, 3000, 9000, 12000)),
            "seed": pick("ps8", student, "seed", range(1000))}


# ---- the grader's side: data, model, reference -----------------------------------------------------------------

@functools.cache
def _digits() -> tuple[Any, Any]:
    import torch

    from ppedu.mnist.data import load_mnist

    images, labels = load_mnist("train")
    return images.to(torch.float64), labels


def batches(spec: Spec, seed: int) -> tuple[Any, Any]:
    """Every step's whole batch, ``(steps, n·EXAMPLES, …)``: digits drawn from ``seed`` (only the relay knows it)."""
    import torch

    images, labels = _digits()
    chosen = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))[:STEPS * spec[1] * EXAMPLES]
    return images[chosen].reshape(STEPS, -1, 1, 28, 28), labels[chosen].reshape(STEPS, -1)


def ring_inputs(spec: Spec, seed: int) -> list[Any]:
    """Each rank's vector for the ring, drawn from ``seed``."""
    import torch

    return [torch.randn(spec[2], dtype=torch.float64, generator=torch.Generator().manual_seed(seed * 8 + r))
            for r in range(spec[1])]


def setting(spec: Spec, seed: int, rank: int) -> dict[str, Any]:
    """Rank ``rank``'s own data for ``spec`` (what the relay hands it)."""
    if spec[0] == "ring":
        return {"x": ring_inputs(spec, seed)[rank]}
    x, y = batches(spec, seed)
    mine = slice(rank * EXAMPLES, (rank + 1) * EXAMPLES)
    return {"x": x[:, mine], "y": y[:, mine]}


def model(spec: Spec) -> Any:
    """The course's MLP (four layers of 32) in float64, initialised from the spec's public seed."""
    import torch

    from ppedu.mnist.models import mlp

    torch.manual_seed(spec[3])
    return mlp(layers=4, hidden=32).to(torch.float64)


@dataclass(frozen=True)
class Reference:
    """The unsharded run: each step's whole-batch gradient and the parameters after each step, flattened in the
    order of ``model.parameters()``."""

    grads: tuple[Any, ...]
    params: tuple[Any, ...]
    sizes: tuple[int, ...]


def reference(spec: Spec, seed: int) -> Reference:
    """The same steps on one process and the whole batch: SGD for data parallelism, Adam for ZeRO-1."""
    import torch
    from torch.nn.functional import cross_entropy

    net = model(spec)
    params = list(net.parameters())
    optimizer = (torch.optim.Adam(params, lr=ADAM_RATE) if spec[0] == "zero1" else torch.optim.SGD(params, lr=SGD_RATE))
    grads, after = [], []
    for x, y in zip(*batches(spec, seed)):
        optimizer.zero_grad()
        cross_entropy(net(x), y).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in params]).clone())
        optimizer.step()
        after.append(torch.cat([p.detach().reshape(-1) for p in params]).clone())
    return Reference(tuple(grads), tuple(after), tuple(p.numel() for p in params))


def serve(asked: Sequence[Any]) -> Any:
    """The relay for every call asked; the bucketed runs' collectives are held until each rank has issued the next, so
    that buckets in flight together show."""
    from ppedu.grading.relay import Relay

    relay = Relay(asked, setting, hold=lambda spec: spec[0] == "buckets")
    relay.ranks = max((args[0][1] for args in asked), default=1)  # sandboxes the run needs
    return relay


# ---- the sandbox's side: each rank's driver ----------------------------------------------------------------------

def run(function: Callable[..., Any], spec: Spec) -> dict[str, Any] | None:
    """Run the student's function as the question says, on this rank of ``spec``'s run (in the sandbox); its claim —
    the ring's result, the final parameters — goes to the relay, and what this returns is only which rank ran."""
    import torch

    from ppedu.grading import relay

    torch.set_num_threads(1)
    joined = relay.join(spec)
    if joined is None:
        return None  # no part in a run of fewer ranks
    claim: Any = None
    try:
        claim = _RUNS[spec[0]](function, spec, joined["data"])
        return {"rank": joined["rank"]}
    finally:
        try:
            relay.leave(claim)
        except RuntimeError:
            pass  # the run failed: the relay knows why


def _params(net: Any) -> dict[str, Any]:
    import torch

    from ppedu.grading.relay import encode

    return encode(torch.cat([p.detach().reshape(-1) for p in net.parameters()]))


def _ring(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    from ppedu.grading.relay import encode

    x = data["x"].clone()
    out = function(x)
    result = out if out is not None else x
    return encode(result) if type(result).__name__ == "Tensor" else {"returned": kind(result)}


def _data_parallel(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    import torch

    net = model(spec)
    optimizer = torch.optim.SGD(net.parameters(), lr=SGD_RATE)
    for x, y in zip(data["x"], data["y"]):
        optimizer.zero_grad()
        function(net, x, y)
        optimizer.step()
    return _params(net)


def _buckets(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    import torch
    from torch.nn.functional import cross_entropy

    net = model(spec)
    optimizer = torch.optim.SGD(net.parameters(), lr=SGD_RATE)
    finish = function(net, spec[2])
    for x, y in zip(data["x"], data["y"]):
        optimizer.zero_grad()
        cross_entropy(net(x), y).backward()
        finish()
        optimizer.step()
    return _params(net)


def _zero1(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    from torch.nn.functional import cross_entropy

    net = model(spec)
    step = function(net, ADAM_RATE)
    for x, y in zip(data["x"], data["y"]):
        net.zero_grad()
        cross_entropy(net(x), y).backward()
        step()
    return _params(net)


_RUNS: dict[str, Callable[..., Any]] = {"ring": _ring, "data_parallel": _data_parallel, "buckets": _buckets,
                                        "zero1": _zero1}


# ---- the judge: what the relay saw, against the unsharded run ----------------------------------------------------

PROPERTIES = {
    "ring": (("every rank ends with the sum of every rank's vector", 0.4),
             ("point-to-point messages only, each to the next rank on the ring", 0.2),
             ("2(n − 1) messages per rank, 2(n − 1)/n of the vector in all: chapter 12's ring", 0.4)),
    "data_parallel": (("the final parameters are the unsharded model's", 0.4),
                      ("the gradients reduced in the first step are the whole batch's", 0.3),
                      ("all-reduces only, of every gradient once a step: 2(n − 1)/n·Ψ per rank as a ring", 0.3)),
    "buckets": (("the final parameters are the unsharded model's", 0.3),
                ("one all-reduce per bucket, DDP's buckets in order, each with its gradients", 0.4),
                ("the buckets in flight together: each issued before the one before it finished", 0.3)),
    "zero1": (("the final parameters are the unsharded model's (Adam)", 0.4),
              ("each step one reduce-scatter of the gradients, then one all-gather: ZeRO-1's 2(n − 1)/n·Ψ", 0.3),
              ("the parameters gathered each step are the unsharded model's after it", 0.3)),
}


def report(question: str, runs: object, specs: Sequence[Spec], points: float,
           hidden: Collection[tuple[Any, ...]] = ()) -> Report:
    """Judge ``runs`` (``[[spec, each rank's answer, what the relay saw], …]``, as data) on every spec; the specs in
    ``hidden`` are the autograder's own, never named."""
    props = [prop for prop, _ in PROPERTIES[question]]
    failures: dict[str, str] = {}
    given = {tuple(r[0]): r[1:] for r in runs if isinstance(r, list) and r and isinstance(r[0], list)} \
        if isinstance(runs, list) else {}
    name = FUNCTIONS[question]
    for spec in specs:
        secret = tuple(spec) in hidden
        where = "(on a run the autograder chose, not shown)" if secret else f"(on {spec[1]} ranks)"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `{name}` {why}")
            break
        answers, seen = (given.get(tuple(spec)) or [None, None])[:2]
        answers = answers if isinstance(answers, list) else []
        stub = [a for a in answers if isinstance(a, dict) and a.get("__raised__") == "NotImplementedError"]
        if stub:
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        problem = next(((r, p) for r, a in enumerate(answers) if (p := raised(a))), None)
        if problem is not None:  # on a hidden run, only the error's name: its message may echo the run
            said = problem[1].split(":")[0] if secret else problem[1]
            failures = dict.fromkeys(props, f"{where}: on rank {problem[0]} your function {said}")
            break
        if not isinstance(seen, dict) or not answers:
            failures = dict.fromkeys(props, f"{where}: your function was not run across the ranks")
            break
        for prop, why in _JUDGES[question](spec, seen, secret).items():
            failures.setdefault(prop, f"{where}: {why}")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, ""))
                    for prop, share in PROPERTIES[question])
    return Report(name, float(points), results)


def _claims(seen: Mapping[str, Any]) -> list[Any]:
    """Each rank's claim as a tensor (``None`` where it is not one)."""
    from ppedu.grading.relay import decode

    out = []
    for claim in seen.get("claims") or []:
        try:
            out.append(decode(claim))
        except Exception:  # noqa: BLE001 (not a tensor: the claim counts as missing)
            out.append(None)
    return out


def _values(data: Any, dtype: str | None) -> Any:
    import base64

    import numpy as np
    import torch

    return torch.from_numpy(np.frombuffer(base64.b64decode(data), dtype=dtype or "float64").copy())


def _gap(got: Any, want: Any) -> float:
    """The largest difference, or infinity where the shapes differ."""
    if got is None or got.numel() != want.numel():
        return float("inf")
    return float((got.reshape(-1).to(want.dtype) - want.reshape(-1)).abs().max()) if want.numel() else 0.0


def _params_right(seen: Mapping[str, Any], want: Any) -> str | None:
    claims = _claims(seen)
    worst = max((_gap(c, want) for c in claims), default=float("inf"))
    if seen.get("problem"):
        return f"the run failed: {seen['problem']}"
    if len(claims) != seen.get("world") or worst == float("inf"):
        return "not every rank ended with the model's parameters"
    if not worst <= TOLERANCE:
        return f"the final parameters differ from the unsharded model's by up to {worst:.2g}"
    return None


def _ring_judge(spec: Spec, seen: Mapping[str, Any], secret: bool) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["ring"]]
    n, length, out = spec[1], spec[2], {}
    want = torch.stack(ring_inputs(spec, seen["seed"])).sum(0)
    claims = _claims(seen)
    worst = max((_gap(c, want) for c in claims), default=float("inf"))
    if seen.get("problem"):
        out[props[0]] = f"the run failed: {seen['problem']}"
    elif len(claims) != n or not worst <= 1e-9 * max(1.0, float(want.abs().max())):
        out[props[0]] = ("not every rank's vector is the sum of the ranks' vectors" +
                         ("" if worst == float("inf") else f" (off by up to {worst:.2g})"))
    if props[0] in out:  # messages that did not make the sum are not the ring, whatever their count
        return {**out, **dict.fromkeys(props[1:], "the messages are judged only when they made the sum")}
    messages, collectives = seen.get("messages") or [], seen.get("collectives") or []
    if collectives:
        out[props[1]] = f"it issued a {collectives[0]['kind']}: the ring is made of sends and receives alone"
    elif not messages or not any(all(b == (a + step) % n for a, b, _, _ in messages) for step in (1, n - 1)):
        out[props[1]] = "not every message went to the same neighbour on the ring (rank r to rank r + 1, or r − 1)"
    counts = [sum(1 for m in messages if m[0] == r) for r in range(n)]
    sent = [sum(m[2] for m in messages if m[0] == r) for r in range(n)]
    low, high = 2 * (n - 1) * (length // n) * 8, 2 * (n - 1) * -(-length // n) * 8
    if counts != [2 * (n - 1)] * n:
        out[props[2]] = (f"each rank sent {'/'.join(map(str, counts))} messages; a ring of {n} sends 2(n − 1) = "
                         f"{2 * (n - 1)}" if not secret else "each rank did not send the ring's 2(n − 1) messages")
    elif sum(sent) != 2 * (n - 1) * length * 8 or not all(low <= s <= high for s in sent):
        out[props[2]] = (f"the ranks sent {'/'.join(map(str, sent))} bytes; a ring sends 2(n − 1)/n of the "
                         f"{length * 8}-byte vector from each, {2 * (n - 1) * length * 8 // n} or so"
                         if not secret else "the ranks did not send 2(n − 1)/n of the vector each")
    return out


def _steps(collectives: list[dict[str, Any]], per_step: int) -> list[list[dict[str, Any]]] | None:
    """The collectives cut into steps of ``per_step`` elements each; ``None`` if they do not add up."""
    steps, held, current = [], 0, []
    for c in collectives:
        current.append(c)
        held += c["bytes"] // 8
        if held == per_step:
            steps.append(current)
            current, held = [], 0
        elif held > per_step:
            return None
    return steps if not current else None


def _reduced_right(results: Any, want: Any, n: int) -> bool:
    """The reduced gradients equal ``want`` (averaged) or ``n·want`` (summed, divided afterwards), in any order."""
    if results.numel() != want.numel():
        return False
    got, mean = results.sort().values, want.sort().values
    return any(bool(((got - scale * mean).abs() <= 1e-9).all()) for scale in (1.0, float(n)))


def _data_parallel_judge(spec: Spec, seen: Mapping[str, Any], secret: bool) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["data_parallel"]]
    ref, n, out = reference(spec, seen["seed"]), spec[1], {}
    if why := _params_right(seen, ref.params[-1]):
        out[props[0]] = why
    psi = sum(ref.sizes)
    collectives = seen.get("collectives") or []
    other = next((c["kind"] for c in collectives if c["kind"] != "all-reduce"), None)
    steps = _steps(collectives, psi)
    if other:
        out[props[2]] = f"it issued a {other}: data parallelism needs only all-reduces of the gradients"
    elif steps is None or len(steps) != STEPS:
        out[props[2]] = (f"its all-reduces do not add up to every gradient once a step ({psi} elements a step, "
                         f"{STEPS} steps)")
    if not steps or other:
        out[props[1]] = "the all-reduces could not be read as each step's gradients"
        return out
    # the first step's: every later step's gradient depends on how the step before it moved the parameters
    if not _reduced_right(torch.cat([_values(c["result"], c["dtype"]) for c in steps[0]]), ref.grads[0], n):
        out[props[1]] = "the gradients reduced in the first step are not the whole batch's (averaged)"
        out[props[2]] = "what it all-reduced was not the gradients"
    return out


def _buckets_judge(spec: Spec, seen: Mapping[str, Any], secret: bool) -> dict[str, str]:
    import torch

    from ppedu.ranks import bucket_plan

    props = [p for p, _ in PROPERTIES["buckets"]]
    ref, n, out = reference(spec, seen["seed"]), spec[1], {}
    if why := _params_right(seen, ref.params[-1]):
        out[props[0]] = why
    plan = bucket_plan([size * 8 for size in ref.sizes], spec[2])
    starts = [sum(ref.sizes[:i]) for i in range(len(ref.sizes))]
    collectives = seen.get("collectives") or []
    sizes = [c["bytes"] // 8 for c in collectives]
    want = [sum(ref.sizes[i] for i in bucket) for bucket in plan]
    if any(c["kind"] != "all-reduce" for c in collectives) or sizes != want * STEPS:
        shown = sizes[:len(plan) + 2] if not secret else None
        out[props[1]] = (f"its collectives' sizes were {shown} (elements) where DDP's buckets at this cap hold {want}"
                         if shown is not None else "its collectives are not DDP's buckets at the autograder's cap")
        out[props[2]] = "without the buckets, whether they were in flight together cannot be judged"
        return out
    for s in range(STEPS):
        for b, bucket in enumerate(plan):
            c = collectives[s * len(plan) + b]
            grads = torch.cat([ref.grads[0][starts[i]:starts[i] + ref.sizes[i]] for i in bucket])
            if s == 0 and not _reduced_right(_values(c["result"], c["dtype"]), grads, n):  # later: their parameters'
                out.setdefault(props[1], f"bucket {b + 1} of the first step does not hold its parameters' averaged "
                                         "gradients")
            if b < len(plan) - 1 and not all(c["in_flight"]):
                out.setdefault(props[2], f"bucket {b + 2} of step {s + 1} was issued only after bucket {b + 1} had "
                                         "finished (launch each with async_op=True, wait at the end)")
    return out


def _zero1_judge(spec: Spec, seen: Mapping[str, Any], secret: bool) -> dict[str, str]:
    props = [p for p, _ in PROPERTIES["zero1"]]
    ref, n, out = reference(spec, seen["seed"]), spec[1], {}
    if why := _params_right(seen, ref.params[-1]):
        out[props[0]] = why
    psi = sum(ref.sizes)
    padded = -(-psi // n) * n * 8
    collectives = seen.get("collectives") or []
    shape = [(c["kind"], c["bytes"]) for c in collectives]
    if shape != [("reduce-scatter", padded), ("all-gather", padded)] * STEPS:
        got = ", ".join(kind_ for kind_, _ in shape[:4]) + (", …" if len(shape) > 4 else "")
        out[props[1]] = (f"its collectives were {got or 'none'}; ZeRO-1's step is a reduce-scatter of the {psi} "
                         f"gradients (padded to {padded // 8}, a multiple of {n}) and an all-gather of as many")
        out[props[2]] = "without one all-gather a step, the parameters it gathered cannot be judged"
        return out
    import torch

    scattered = torch.cat([_values(piece, collectives[0]["dtype"]) for piece in collectives[0]["pieces"]])
    if not _reduced_right(scattered[:psi], ref.grads[0], n) or bool(scattered[psi:].ne(0).any()):
        out[props[1]] = ("what it reduce-scattered in the first step was not the gradients (in the order of "
                         "model.parameters(), zeros after)")
    for s in range(STEPS):
        gathered = _values(collectives[2 * s + 1]["result"], collectives[2 * s + 1]["dtype"])[:psi]
        gap = _gap(gathered, ref.params[s])
        if not gap <= TOLERANCE:
            out[props[2]] = (f"the parameters all-gathered in step {s + 1} differ from the unsharded model's by up to "
                             f"{gap:.2g} (flatten them in the order of model.parameters(), padding at the end)")
            break
    return out


_JUDGES: dict[str, Callable[[Spec, Mapping[str, Any], bool], dict[str, str]]] = {
    "ring": _ring_judge, "data_parallel": _data_parallel_judge, "buckets": _buckets_judge, "zero1": _zero1_judge}

#: What the ranks' runs have: torch and ppedu's model, but none of the lab's implementations (``ppedu.ranks``), nor
#: PyTorch's distributed optimizers (``ZeroRedundancyOptimizer``) or its pipelining; their process group is the relay's.
#: (FSDP stays: ``torch.optim`` imports it. Its traffic, a gather and a scatter per unit, is not ZeRO-1's.)
CODE = Code(Library(("ppedu", "ppedu.mnist", "ppedu.mnist.models", "ppedu.grading.assignments.ps8",
                     "ppedu.grading.relay"), torch=True,
                    absent=("torch.distributed.optim", "torch.distributed.pipelining")),
            "ppedu.grading.assignments.ps8:run", "ppedu.grading.assignments.ps8:serve", ranks=4)


@dataclass(frozen=True)
class RanksQuestion:
    """A question answered by a function run across ranks: on ``sizes`` (ranks, size) in the visible check, then on
    the student's own run."""

    name: str
    points: float
    sizes: tuple[tuple[int, int], ...]
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> Spec:
        size = {"ring": v["length"], "buckets": v["cap"]}.get(self.name, 0)
        return [self.name, v["n"], size, v["seed"]]

    def visible_specs(self) -> list[Spec]:
        return [[self.name, n, size, 0] for n, size in self.sizes]

    def graded_specs(self, v: Mapping[str, Any]) -> list[Spec]:
        return [*self.visible_specs(), self.own(v)]

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Spec], ...]]:
        return {FUNCTIONS[self.name]: tuple((spec,) for spec in self.visible_specs())}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        return report(self.name, unwrap(data.get(FUNCTIONS[self.name])), self.visible_specs(), self.points)


def unwrap(runs: object) -> object:
    """The evaluator gives ``[[[spec], answers, seen], …]`` (the arguments as a list); ``report`` wants
    ``[[spec, answers, seen], …]``."""
    return [[r[0][0], *r[1:]] for r in runs if isinstance(r, list) and r and isinstance(r[0], list) and r[0]] \
        if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "ring": RanksQuestion("ring", 4, ((2, 1000),)),
    "data_parallel": RanksQuestion("data_parallel", 3, ((2, 0),)),
    "buckets": RanksQuestion("buckets", 4, ((2, 4096),)),
    "zero1": RanksQuestion("zero1", 4, ((2, 0),)),
}
