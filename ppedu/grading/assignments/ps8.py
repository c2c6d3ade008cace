"""ps8 — collectives, data parallelism and sharding written by the student and run across processes, each beyond what
chapter 15's library (``ppedu.ranks``) does: a ring all-reduce from point-to-point messages, data parallelism over
ranks holding unequal shares of the batch, DDP's buckets as its reducer really makes them (one bucket first, then
rebuilt in the order the gradients became ready, the first with a cap of its own), and a ZeRO-1 step laid out as FSDP2
lays out its shards (each parameter cut along dim 0, padded, the reduce-scatter's input rank-major).

Each call runs on 2–4 ranks, each a sandbox of its own (:mod:`ppedu.grading.ranked`) whose ``torch.distributed``
reaches the other ranks only through the grader's relay (:mod:`ppedu.grading.relay`): the relay carries out and
records every collective and message, and gives each rank its own shard of data drawn from a seed it keeps — real
MNIST digits for the models, random numbers for the ring. A rank therefore computes the right parameters only if its
code communicates what the others computed, and what it communicated is the relay's record, not its own word.
:func:`report` judges a run against the grader's own unsharded run of the same model on the whole batch, and its
communication against what the question asks for: which collectives, how many elements, what each carried, in what
order. Everything is in float64, so that rounding never decides a verdict.

What a right run's buckets and shard pieces are comes from rules this module does not hold: the key
(``grader/keys/ps8.py``, never shipped) gives them for the graded runs, and :data:`VISIBLE` holds them, as plain data
it wrote, for the one run a student's own check makes.

>>> values("alice")["n"] in (2, 3)
True
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.grading.answers import Wrong, kind, raised
from ppedu.grading.assignments.ps5 import Report
from ppedu.grading.evaluate import Code, Library
from ppedu.grading.students import pick

#: Digits per rank in each step (buckets, ZeRO-1), steps per run, the learning rates (SGD, and Adam for ZeRO-1).
EXAMPLES, STEPS, SGD_RATE, ADAM_RATE = 8, 3, 0.1, 0.01
#: The digits a rank holds in question 2, drawn for each run: never the same on every rank.
SHARES = range(2, 15)
#: Numbers a data-parallel step may all-reduce besides the gradients (the example count, the loss).
EXTRA = 16
#: Largest difference allowed from the unsharded run (float64: rounding is far below it).
TOLERANCE = 1e-6
#: The runs: [question, ranks, its size, the model's seed] — the size is the ring's length, the buckets' caps in bytes
#: ``[cap, first_cap]``, the ZeRO-1 model's width, and 0 for question 2.
Spec = list[Any]
#: The student's function each question calls, by question.
FUNCTIONS = {"ring": "ring_all_reduce", "data_parallel": "data_parallel_step", "buckets": "ddp_buckets",
             "zero1": "zero1"}
#: The buckets' caps ``[cap, first_cap]`` and the ZeRO-1 widths a student's own run draws from.
CAPS = ([9000, 100], [4096, 600], [12000, 2700], [8500, 3000])
WIDTHS = (29, 31, 35, 37)


def values(student: str) -> dict[str, Any]:
    n = pick("ps8", student, "n", (2, 3))
    return {"n": n, "length": pick("ps8", student, "length", range(1001, 4001)),
            "caps": pick("ps8", student, "caps", CAPS), "width": pick("ps8", student, "width", WIDTHS),
            "seed": pick("ps8", student, "seed", range(1000))}


# ---- the grader's side: data, model, reference -----------------------------------------------------------------

@functools.cache
def _digits() -> tuple[Any, Any]:
    import torch

    from ppedu.mnist.data import load_mnist

    images, labels = load_mnist("train")
    return images.to(torch.float64), labels


def shares(spec: Spec, seed: int) -> list[int]:
    """How many digits each rank holds in every step: question 2's drawn from ``seed`` (never all alike), else
    :data:`EXAMPLES` each."""
    import torch

    if spec[0] != "data_parallel":
        return [EXAMPLES] * spec[1]
    drawn = torch.randint(SHARES.start, SHARES.stop, (spec[1],), generator=torch.Generator().manual_seed(seed))
    counts = drawn.tolist()
    return counts if len(set(counts)) > 1 else [*counts[:-1], counts[-1] + 1]


def batches(spec: Spec, seed: int) -> tuple[Any, Any]:
    """Every step's whole batch, ``(steps, examples, …)``, the ranks' shares one after another: digits drawn from
    ``seed`` (only the relay knows it)."""
    import torch

    images, labels = _digits()
    whole = sum(shares(spec, seed))
    chosen = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))[:STEPS * whole]
    return images[chosen].reshape(STEPS, whole, 1, 28, 28), labels[chosen].reshape(STEPS, whole)


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
    counts = shares(spec, seed)
    mine = slice(sum(counts[:rank]), sum(counts[:rank + 1]))
    return {"x": x[:, mine], "y": y[:, mine]}


def model(spec: Spec) -> Any:
    """The course's MLP (four layers) in float64, initialised from the spec's public seed: 32 wide, or the spec's width
    for ZeRO-1; for the buckets, its layers registered in an order of their own (:func:`_registered`)."""
    import torch

    from ppedu.mnist.models import mlp

    torch.manual_seed(spec[3])
    net = mlp(layers=4, hidden=spec[2] if spec[0] == "zero1" else 32).to(torch.float64)
    return _registered(net, spec[3]) if spec[0] == "buckets" else net


def _registered(net: Any, seed: int) -> Any:
    """``net``'s layers registered in an order drawn from ``seed`` — never their own, the input layer never first —
    and run in theirs: ``parameters()`` lists them in an order the backward does not follow, as in a model whose
    modules are defined out of the order they are used in."""
    import torch

    layers = list(net)
    order = torch.randperm(len(layers), generator=torch.Generator().manual_seed(seed)).tolist()
    if order[0] == 0:
        order = order[1:] + order[:1]

    class Registered(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            for i in order:
                self.add_module(f"layer{i}", layers[i])

        def forward(self, x: Any) -> Any:
            for i in range(len(layers)):
                x = getattr(self, f"layer{i}")(x)
            return x

    return Registered()


@dataclass(frozen=True)
class Reference:
    """The unsharded run: each step's whole-batch gradient and the parameters after each step, flattened in the
    order of ``model.parameters()``, and each parameter's shape."""

    grads: tuple[Any, ...]
    params: tuple[Any, ...]
    shapes: tuple[tuple[int, ...], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(math.prod(shape) for shape in self.shapes)


def reference(spec: Spec, seed: int, scale: float = 1.0) -> Reference:
    """The same steps on one process and the whole batch: SGD, or Adam for ZeRO-1 (its gradients times ``scale``, for
    a run that forgot to average)."""
    import torch
    from torch.nn.functional import cross_entropy

    net = model(spec)
    params = list(net.parameters())
    optimizer = (torch.optim.Adam(params, lr=ADAM_RATE) if spec[0] == "zero1" else torch.optim.SGD(params, lr=SGD_RATE))
    grads, after = [], []
    for x, y in zip(*batches(spec, seed)):
        optimizer.zero_grad()
        (cross_entropy(net(x), y) * scale).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in params]).clone())
        optimizer.step()
        after.append(torch.cat([p.detach().reshape(-1) for p in params]).clone())
    return Reference(tuple(grads), tuple(after), tuple(tuple(p.shape) for p in params))


def rank_gradients(spec: Spec, seed: int) -> list[Any]:
    """Each rank's own mean gradient on its share in the first step, flattened: what a mistaken combination uses."""
    import torch
    from torch.nn.functional import cross_entropy

    x, y = batches(spec, seed)
    counts, out = shares(spec, seed), []
    for r in range(spec[1]):
        net = model(spec)
        mine = slice(sum(counts[:r]), sum(counts[:r + 1]))
        cross_entropy(net(x[0, mine]), y[0, mine]).backward()
        out.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]))
    return out


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


def _train(step: Callable[[Any, Any], None], data: dict[str, Any]) -> None:
    """Every step of the run on this rank's data, each begun with a mark (where the judge cuts the relay's record)."""
    from ppedu.grading.relay import mark

    for x, y in zip(data["x"], data["y"]):
        mark()
        step(x, y)


def _data_parallel(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    import torch

    net = model(spec)
    optimizer = torch.optim.SGD(net.parameters(), lr=SGD_RATE)

    def step(x: Any, y: Any) -> None:
        optimizer.zero_grad()
        function(net, x, y)
        optimizer.step()
    _train(step, data)
    return _params(net)


def _buckets(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    import torch
    from torch.nn.functional import cross_entropy

    net = model(spec)
    optimizer = torch.optim.SGD(net.parameters(), lr=SGD_RATE)
    finish = function(net, *spec[2])

    def step(x: Any, y: Any) -> None:
        optimizer.zero_grad()
        cross_entropy(net(x), y).backward()
        finish()
        optimizer.step()
    _train(step, data)
    return _params(net)


def _zero1(function: Callable[..., Any], spec: Spec, data: dict[str, Any]) -> Any:
    from torch.nn.functional import cross_entropy

    net = model(spec)
    update = function(net, ADAM_RATE)

    def step(x: Any, y: Any) -> None:
        net.zero_grad()
        cross_entropy(net(x), y).backward()
        update()
    _train(step, data)
    return _params(net)


_RUNS: dict[str, Callable[..., Any]] = {"ring": _ring, "data_parallel": _data_parallel, "buckets": _buckets,
                                        "zero1": _zero1}


# ---- the judge: what the relay saw, against the unsharded run ----------------------------------------------------

PROPERTIES = {
    "ring": (("every rank ends with the sum of every rank's vector, by chapter 12's ring of messages alone: 2(n − 1) "
              "messages per rank — a reduce-scatter, then an all-gather — carrying 2(n − 1)/n of the vector in all",
              0.8),
             ("each message to the same neighbour on the ring: every rank to r + 1 (or every rank to r − 1) (judged "
              "where the ring is chapter 12's)", 0.2)),
    "data_parallel": (("the first step all-reduced the whole batch's gradient — each rank's weighted by its "
                       "examples — up to a constant factor, and at most a few numbers besides", 0.4),
                      ("the final parameters are the unsharded model's (judged where the first step's gradient is "
                       "the whole batch's)", 0.3),
                      ("all-reduces only, every gradient once a step: 2(n − 1)/n·Ψ per rank as a ring, and the few "
                       "numbers (judged where the first step's gradient is the whole batch's)", 0.3)),
    "buckets": (("the final parameters are the unsharded model's (judged where the buckets are DDP's rebuilt ones)",
                 0.2),
                ("the first step: one all-reduce of every gradient, averaged — DDP's first step (judged where the "
                 "buckets after it are DDP's rebuilt ones)", 0.2),
                ("from the second step DDP's rebuilt buckets: in the order the gradients became ready, the first "
                 "closed at first_cap bytes, the others at cap, each holding its parameters' gradients", 0.4),
                ("those buckets in flight together: each launched before the one before it finished", 0.2)),
    "zero1": (("each step one reduce-scatter of the gradients, then one all-gather, of FSDP2's padded size", 0.2),
              ("the pieces the first step's reduce-scatter gave each rank: its rows of every parameter's gradient, "
               "padded, in FSDP2's layout", 0.35),
              ("the parameters all-gathered each step, read in FSDP2's layout, are the unsharded model's after it",
               0.25),
              ("the final parameters are the unsharded model's (Adam; judged where the collectives are FSDP2's)",
               0.2)),
}

#: What a right run's buckets (the parameters of each, from the second step, by index in ``model.parameters()``) and
#: shard pieces (each rank's, as runs ``[start, length]`` of the flattened parameters; ``start`` -1 for zeros) are on
#: the visible runs — written by the key (``python -m grader.keys.ps8``), which computes them for every other run.
VISIBLE: dict[str, Any] = {
    "buckets": {"plan": [[3, 2], [5, 4], [1, 0], [7, 6]]},
    "zero1": {"runs": [
        [[0, 13328], [25872, 17], [25905, 561], [26994, 17], [27027, 561], [28116, 17], [28149, 165],
        [28479, 5]],
        [[13328, 12544], [-1, 784], [25889, 16], [-1, 1], [26466, 528], [-1, 33], [27011, 16], [-1, 1],
        [27588, 528], [-1, 33], [28133, 16], [-1, 1], [28314, 165], [28484, 5]]]},
}
#: ``expected(spec)``: a run's right buckets or pieces (as :data:`VISIBLE` holds them), or ``None``.
Expected = Callable[[Spec], Any]


def visible_expected(spec: Spec) -> Any:
    """:data:`VISIBLE`'s entry for the visible run ``spec``."""
    if spec not in QUESTIONS[spec[0]].visible_specs() or spec[0] not in VISIBLE:
        raise ValueError(f"no right answer here for the run {spec}: only the autograder's key has it")
    return VISIBLE[spec[0]]


def key(spec: Any) -> str:
    """A run's spec as a key (its sizes may be lists)."""
    return json.dumps(spec)


def report(question: str, runs: object, specs: Sequence[Spec], points: float, hidden: Collection[str] = (),
           expected: Expected = visible_expected) -> Report:
    """Judge ``runs`` (``[[spec, each rank's answer, what the relay saw], …]``, as data) on every spec; the specs in
    ``hidden`` (by :func:`key`) are the autograder's own, never named; ``expected`` gives each spec's right buckets or
    pieces."""
    props = [prop for prop, _ in PROPERTIES[question]]
    failures: dict[str, str] = {}
    given = {key(r[0]): r[1:] for r in runs if isinstance(r, list) and r and isinstance(r[0], list)} \
        if isinstance(runs, list) else {}
    name = FUNCTIONS[question]
    for spec in specs:
        secret = key(spec) in hidden
        where = "(on a run the autograder chose, not shown)" if secret else f"(on {spec[1]} ranks)"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `{name}` {why}")
            break
        answers, seen = (given.get(key(spec)) or [None, None])[:2]
        answers = answers if isinstance(answers, list) else []
        stub = [a for a in answers if isinstance(a, dict) and a.get("__raised__") == "NotImplementedError"]
        if stub:
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        problem = next(((r, p) for r, a in enumerate(answers) if (p := raised(a))), None)
        if problem is not None:  # on a hidden run, the grader's words only: an error's name and message are the code's
            said = "on a rank your function raised an error" if secret else \
                f"on rank {problem[0]} your function {problem[1]}"
            failures = dict.fromkeys(props, f"{where}: {said}")
            break
        if not isinstance(seen, dict) or not answers:
            failures = dict.fromkeys(props, f"{where}: your function was not run across the ranks")
            break
        if secret and seen.get("problem"):  # the relay's reason names ranks and sizes: the hidden run's own
            seen = {**seen, "problem": "the relay stopped it (the ranks' collectives or messages did not match, or a "
                                       "rank went past a limit)"}
        for prop, why in _JUDGES[question](spec, seen, secret, expected).items():
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


def _values(collective: Mapping[str, Any], piece: int | None = None) -> Any:
    """A collective's result (or its ``piece``-th rank's piece, for a reduce-scatter) as float64."""
    import base64

    import numpy as np
    import torch

    data = collective["result"] if piece is None else collective["pieces"][piece]
    got = np.frombuffer(base64.b64decode(data), dtype=collective["dtype"] or "float64").copy()
    return torch.from_numpy(got).to(torch.float64)


def _elements(collective: Mapping[str, Any]) -> int:
    """How many elements a collective carried (its buffer ``S``)."""
    from ppedu.grading.relay import DTYPES

    return collective["bytes"] // DTYPES.get(collective["dtype"] or "float64", 8)


def _gap(got: Any, want: Any) -> float:
    """The largest difference, or infinity where the shapes differ."""
    if got is None or got.numel() != want.numel():
        return float("inf")
    return float((got.reshape(-1).to(want.dtype) - want.reshape(-1)).abs().max()) if want.numel() else 0.0


def _params_gap(seen: Mapping[str, Any], want: Any) -> tuple[str | None, float]:
    """Why the ranks' final parameters are not ``want`` (``None`` if they are), and the largest gap."""
    claims = _claims(seen)
    worst = max((_gap(c, want) for c in claims), default=float("inf"))
    if seen.get("problem"):
        return f"the run failed: {seen['problem']}", worst
    if len(claims) != seen.get("world") or worst == float("inf"):
        return "not every rank ended with the model's parameters", worst
    if not worst <= TOLERANCE:
        return f"the final parameters differ from the unsharded model's by up to {worst:.2g}", worst
    return None, worst


def _scale(got: Any, want: Any, scales: Sequence[float], extra: int = 0) -> float | None:
    """The scale in ``scales`` at which every value of ``want`` is among ``got``'s, in any order, with at most
    ``extra`` of ``got``'s left over (``None`` if there is none)."""
    if not want.numel() <= got.numel() <= want.numel() + extra:
        return None
    have = got.sort().values
    for scale in scales:
        need = (want * scale).sort().values
        tol = 1e-9 * max(1.0, float(need.abs().max()) if need.numel() else 1.0)
        if have.numel() == need.numel():
            if bool(((have - need).abs() <= tol).all()):
                return scale
            continue
        i = skipped = 0
        for value in need.tolist():
            while i < have.numel() and float(have[i]) < value - tol and skipped <= extra:
                i, skipped = i + 1, skipped + 1
            if i == have.numel() or abs(float(have[i]) - value) > tol:
                break
            i += 1
        else:
            return scale
    return None


def _factors(got: Any, want: Any) -> list[float]:
    """The constant factors at which ``want``'s values could be among ``got``'s with at most :data:`EXTRA` more: its
    largest value in size over each of ``got``'s ``EXTRA + 1`` largest (one of which it must be, scaled).

    >>> import torch
    >>> [round(f, 3) for f in _factors(torch.tensor([6.0, -2.0, 0.5]), torch.tensor([3.0, -1.0]))]
    [2.0, -0.667, 0.167]
    """
    top = float(want[want.abs().argmax()]) if want.numel() else 0.0
    largest = got[got.abs().topk(min(EXTRA + 1, got.numel())).indices].tolist() if top else []
    return [v / top for v in largest if v]


def _steps(seen: Mapping[str, Any]) -> list[list[dict[str, Any]]] | None:
    """The run's collectives step by step, cut where each rank's driver began a step; ``None`` where the ranks'
    marks disagree or a collective came before the first step."""
    marks = seen.get("marks") or []
    collectives = sorted(seen.get("collectives") or [], key=lambda c: c["index"])
    if not marks or any(m != marks[0] for m in marks) or len(marks[0]) != STEPS:
        return None
    if collectives and collectives[0]["index"] < marks[0][0]:
        return None
    bounds = [*marks[0], float("inf")]
    return [[c for c in collectives if bounds[s] <= c["index"] < bounds[s + 1]] for s in range(STEPS)]


def _a(kind_: str) -> str:
    """A collective's name with its article."""
    return ("an " if kind_[0] in "aeiou" else "a ") + kind_


def _ring_judge(spec: Spec, seen: Mapping[str, Any], secret: bool, expected: Expected) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["ring"]]
    n, length = spec[1], spec[2]
    messages, collectives = seen.get("messages") or [], seen.get("collectives") or []
    if collectives:  # a collective is the one call the question rules out: nothing it made counts
        return dict.fromkeys(props, f"it issued {_a(collectives[0]['kind'])}: the ring is made of sends and receives "
                                    "alone")
    want = torch.stack(ring_inputs(spec, seen["seed"])).sum(0)
    claims = _claims(seen)
    worst = max((_gap(c, want) for c in claims), default=float("inf"))
    counts = [sum(1 for m in messages if m[0] == r) for r in range(n)]
    sent = [sum(m[2] for m in messages if m[0] == r) for r in range(n)]
    low, high = 2 * (n - 1) * (length // n) * 8, 2 * (n - 1) * -(-length // n) * 8
    summed = "every rank ended with the sum, but "  # a right sum counts only as chapter 12's ring
    if seen.get("problem"):
        why = f"the run failed: {seen['problem']}"
    elif len(claims) != n or not worst <= 1e-9 * max(1.0, float(want.abs().max())):
        why = ("not every rank's vector is the sum of the ranks' vectors" +
               ("" if worst == float("inf") or secret else f" (off by up to {worst:.2g})"))
    elif counts != [2 * (n - 1)] * n:
        why = summed + (f"ranks 0, 1, … sent {'/'.join(map(str, counts))} messages: not chapter 12's 2(n − 1) each"
                        if not secret else "not every rank sent chapter 12's 2(n − 1) messages")
    elif sum(sent) != 2 * (n - 1) * length * 8 or not all(low <= s <= high for s in sent):
        why = summed + (f"ranks 0, 1, … sent {'/'.join(map(str, sent))} bytes of their {length * 8}-byte vectors: "
                        "not chapter 12's 2(n − 1)/n of it each" if not secret else
                        "the ranks did not each send chapter 12's 2(n − 1)/n of the vector")
    else:
        why = None
    if why:  # messages that are not the ring are not judged for their neighbours
        return {props[0]: why, props[1]: "the neighbours are judged only where the messages are chapter 12's ring"}
    if not any(all(b == (a + step) % n for a, b, _, _ in messages) for step in (1, n - 1)):
        return {props[1]: "not every message went to the same neighbour on the ring (rank r to rank r + 1, or r − 1)"}
    return {}


def _data_parallel_judge(spec: Spec, seen: Mapping[str, Any], secret: bool, expected: Expected) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["data_parallel"]]
    seed, out = seen["seed"], {}
    ref = reference(spec, seed)
    psi, whole = sum(ref.sizes), sum(shares(spec, seed))
    other = next((c["kind"] for c in seen.get("collectives") or [] if c["kind"] != "all-reduce"), None)
    steps = _steps(seen)
    if other or steps is None or not steps[0]:
        return dict.fromkeys(props, f"it issued {_a(other)}: data parallelism needs only all-reduces" if other else
                             "its collectives could not be read step by step (one came before the first step)"
                             if steps is None else "it all-reduced nothing in the first step")
    got = torch.cat([_values(c) for c in steps[0]])
    scale = _scale(got, ref.grads[0], _factors(got, ref.grads[0]), EXTRA)  # the mean, the sum, n times the mean, …
    if scale is None:
        equal = torch.stack(rank_gradients(spec, seed)).mean(0)
        if _scale(got, equal, _factors(got, equal), EXTRA) is None:  # no gradients at all: nothing is judged
            return dict.fromkeys(props, "what it all-reduced in the first step was not the ranks' gradients, however "
                                        "combined")
        out[props[0]] = ("the first step all-reduced the ranks' mean gradients with equal weight: not the whole "
                         "batch's gradient, where the ranks hold different numbers of examples (the question's "
                         "\"what would averaging give?\")")
        judged = "judged only where the first step's gradient is the whole batch's"
        out[props[1]], out[props[2]] = f"the final parameters are {judged}", f"the traffic is {judged}"
    elif why := _params_gap(seen, ref.params[-1])[0]:
        out[props[1]] = why + ("; the first step all-reduced the whole batch's gradient summed over its examples, "
                               "and the step SGD took was not the mean's" if math.isclose(scale, whole) else "")
    elements = [sum(_elements(c) for c in step) for step in steps]
    if props[2] not in out and not all(psi <= e <= psi + EXTRA for e in elements):
        out[props[2]] = (f"its steps 1, 2, … all-reduced {'/'.join(map(str, elements))} elements: not every "
                         f"gradient once and at most {EXTRA} numbers besides" if not secret else
                         "its steps did not all-reduce every gradient once, and at most a few numbers besides")
    return out


#: Why a property of question 3 is not judged where the buckets from the second step are not DDP's.
REBUILT = "judged only where the buckets from the second step are DDP's rebuilt ones"


def _buckets_judge(spec: Spec, seen: Mapping[str, Any], secret: bool, expected: Expected) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["buckets"]]
    ref, n, out = reference(spec, seen["seed"]), spec[1], {}
    why, _ = _params_gap(seen, ref.params[-1])
    if why:
        out[props[0]] = why
    psi, plan = sum(ref.sizes), expected(spec)["plan"]
    collectives = seen.get("collectives") or []
    other = next((c["kind"] for c in collectives if c["kind"] != "all-reduce"), None)
    steps = _steps(seen)
    if other or steps is None:
        said = (f"it issued {_a(other)}: DDP's buckets are all-reduces" if other else
                "its collectives could not be read step by step (one came before the first step)")
        return {props[0]: out.get(props[0], REBUILT), **dict.fromkeys(props[1:], said)}
    first = [_elements(c) for c in steps[0]]
    if first != [psi] or _scale(_values(steps[0][0]), ref.grads[0], (1.0, float(n))) is None:
        out[props[1]] = (f"its first step all-reduced buckets of {first} elements: not one bucket of every gradient"
                         if first != [psi] and not secret else
                         "its first step was not one all-reduce of every gradient, averaged")
    want = [sum(ref.sizes[i] for i in bucket) for bucket in plan]
    later = [[_elements(c) for c in step] for step in steps[1:]]
    if wrong := next((s for s, sizes in enumerate(later, 2) if sizes != want), None):
        out[props[2]] = (f"in step {wrong} its buckets held {later[wrong - 2]} elements: not the buckets DDP's rebuild "
                         f"makes at the caps {spec[2]} (the question's third bullet)"
                         if not secret else "from the second step its buckets are not DDP's at the autograder's caps")
    else:
        starts = [sum(ref.sizes[:i]) for i in range(len(ref.sizes))]
        for b, bucket in enumerate(plan):  # the second step's gradients: its parameters', after a right first step
            grads = torch.cat([ref.grads[1][starts[i]:starts[i] + ref.sizes[i]] for i in bucket])
            if _scale(_values(steps[1][b]), grads, (1.0, float(n))) is None:
                out[props[2]] = (f"bucket {b + 1} of the second step" if not secret else "a bucket of the second "
                                 "step") + (" holds as many elements as DDP's but not the averaged gradients of the "
                                            "parameters DDP's holds")
                break
    if props[2] in out:  # a flat all-reduce every step trains right: without DDP's buckets, nothing else counts
        return {**dict.fromkeys((props[0], props[1], props[3]), REBUILT), **out}
    for s, step in enumerate(steps[1:], 2):
        late = next((b for b, c in enumerate(step[:-1]) if not all(c["in_flight"])), None)
        if late is not None:
            out[props[3]] = (f"bucket {late + 2} of step {s} was launched only after bucket {late + 1} had finished"
                             if not secret else "a bucket was launched only after the one before it had finished")
            break
    return out


def _laid_out(flat: Any, runs: Sequence[Sequence[int]]) -> Any:
    """``flat``'s elements as ``runs`` (``[start, length]``, ``start`` -1 for zeros) lay them out."""
    import torch

    return torch.cat([flat.new_zeros(length) if start < 0 else flat[start:start + length] for start, length in runs])


def _zero1_judge(spec: Spec, seen: Mapping[str, Any], secret: bool, expected: Expected) -> dict[str, str]:
    import torch

    props = [p for p, _ in PROPERTIES["zero1"]]
    ref, n, out = reference(spec, seen["seed"]), spec[1], {}
    pieces = expected(spec)["runs"]
    piece = sum(length for _, length in pieces[0])
    collectives = sorted(seen.get("collectives") or [], key=lambda c: c["index"])
    shape = [(c["kind"], _elements(c)) for c in collectives]
    if shape != [("reduce-scatter", n * piece), ("all-gather", n * piece)] * STEPS:
        said = ", ".join(f"{k} of {e}" for k, e in shape[:4]) + (", …" if len(shape) > 4 else "")
        return {props[0]: f"its collectives were {said or 'none'}: not a reduce-scatter, then an all-gather, of "
                          "FSDP2's padded size each step (the question's first paragraph)" if not secret else
                          "its collectives were not a reduce-scatter and an all-gather of FSDP2's padded size each "
                          "step",
                **dict.fromkeys(props[1:], "judged only where the collectives are FSDP2's")}
    got = torch.cat([_values(collectives[0], r) for r in range(n)])
    padded = torch.cat([ref.grads[0], ref.grads[0].new_zeros(n * piece - ref.grads[0].numel())])
    if _scale(got, padded, (1.0, float(n))) is None:  # collectives that carried no gradients earn nothing
        return dict.fromkeys(props, "what its first reduce-scatter carried was not the gradients (and zeros for the "
                                    "padding), in any layout")
    scales = [_scale_of(_values(collectives[0], r), _laid_out(ref.grads[0], pieces[r]), n) for r in range(n)]
    if None in scales or len(set(scales)) > 1:
        r = scales.index(None) if None in scales else 0
        out[props[1]] = ((f"the piece rank {r}" if not secret else "the piece a rank") + " received from the first "
                         "step's reduce-scatter is not its padded chunk of every parameter's gradient in FSDP2's "
                         "layout (the question's first paragraph)")
    for s in range(STEPS):
        gap = _gap(_values(collectives[2 * s + 1]), _laid_out(ref.params[s], [run for rank in pieces for run in rank]))
        if not gap <= TOLERANCE:
            out[props[2]] = (f"the parameters all-gathered in step {s + 1} are not the unsharded model's after it, in "
                             f"FSDP2's layout (off by up to {gap:.2g})" if not secret else
                             "the parameters it all-gathered are not the unsharded model's, in FSDP2's layout")
            break
    why, _ = _params_gap(seen, ref.params[-1])
    if why:
        summed = scales[0] == float(n) and _params_gap(seen, reference(spec, seen["seed"], n).params[-1])[0] is None
        out[props[3]] = why + ("; the gradients Adam stepped on were not the whole batch's mean" if summed else "")
    return out


def _scale_of(got: Any, want: Any, n: int) -> float | None:
    """1 where ``got`` is ``want``, ``n`` where it is ``n`` times it (summed, not averaged), else ``None``."""
    for scale in (1.0, float(n)):
        if _gap(got, want * scale) <= 1e-9 * max(1.0, float(want.abs().max()) * scale):
            return scale
    return None


_JUDGES: dict[str, Callable[[Spec, Mapping[str, Any], bool, Expected], dict[str, str]]] = {
    "ring": _ring_judge, "data_parallel": _data_parallel_judge, "buckets": _buckets_judge, "zero1": _zero1_judge}

#: What the ranks' runs have: torch and ppedu's model, but none of the lab's implementations (``ppedu.ranks``), nor
#: PyTorch's distributed optimizers (``ZeroRedundancyOptimizer``) or its pipelining; their process group is the relay's.
#: (FSDP stays: ``torch.optim`` imports it. Its traffic, a gather before each unit's forward, is not this ZeRO-1's.)
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
    sizes: tuple[tuple[int, Any], ...]
    code: Code = CODE

    def own(self, v: Mapping[str, Any]) -> Spec:
        size = {"ring": v["length"], "buckets": v["caps"], "zero1": v["width"]}.get(self.name, 0)
        return [self.name, v["n"], size, v["seed"]]

    def visible_specs(self) -> list[Spec]:
        return [[self.name, n, size, 0] for n, size in self.sizes]

    def graded_specs(self, v: Mapping[str, Any]) -> list[Spec]:
        return [*self.visible_specs(), self.own(v)]

    def calls(self, v: Mapping[str, Any]) -> dict[str, tuple[tuple[Spec], ...]]:
        return {FUNCTIONS[self.name]: tuple((spec,) for spec in self.visible_specs())}

    def visible(self, data: Mapping[str, Any], v: Mapping[str, Any]) -> Report:
        runs = unwrap(data.get(FUNCTIONS[self.name]))
        result = report(self.name, runs, self.visible_specs(), self.points)
        if not isinstance(runs, list):  # no function: said as a failure, so that what its cell raised is added
            raise Wrong(str(result))
        return result


def unwrap(runs: object) -> object:
    """The evaluator gives ``[[[spec], answers, seen], …]`` (the arguments as a list); ``report`` wants
    ``[[spec, answers, seen], …]``."""
    return [[r[0][0], *r[1:]] for r in runs if isinstance(r, list) and r and isinstance(r[0], list) and r[0]] \
        if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "ring": RanksQuestion("ring", 4, ((2, 1000), (3, 1000))),  # 2 ranks alone: any pass of every piece is the ring
    "data_parallel": RanksQuestion("data_parallel", 3, ((2, 0),)),
    "buckets": RanksQuestion("buckets", 4, ((2, [8000, 1000]),)),
    "zero1": RanksQuestion("zero1", 4, ((2, 33),)),
}
