"""ps5 — the pipeline executor: the student writes the loop that runs a schedule op by op on the
chunks of the course's MNIST model, graded against the unpipelined model (loss and every gradient)
and by how long activations live (freed at each backward, none left at the end).

The student's ``run_pipeline`` runs in their notebook (:func:`run`), where, while autograding,
ppedu's own executor is not available; what it did comes out as data — the loss, every gradient,
the activations alive at once per GPU, those left over — and :func:`report` judges that data
against the unpipelined model.

>>> values("alice")["p"] in (2, 3, 4)
True
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import redirect_stderr
from dataclasses import dataclass
from io import StringIO
from typing import Any

from ppedu.grading.answers import kind, plain, raised
from ppedu.grading.students import pick

EXAMPLES = 24  # the mini-batch: real MNIST digits from the course's subset
TOLERANCE = 1e-5
#: ppedu's functions a ps5 notebook cannot call while it is autograded (module: functions; empty: all).
HIDDEN = {"ppedu.mnist.executor": ("run_schedule", "_execution_order", "_accumulate"), "ppedu.mnist.distributed": ()}
#: A run: (schedule, p, m, v, seed).
Spec = tuple[str, int, int, int, int]


def values(student: str) -> dict[str, Any]:
    p = pick("ps5", student, "p", (2, 3, 4))
    return {"p": p, "m": pick("ps5", student, "m", range(p, 2 * p + 1)), "seed": pick("ps5", student, "seed", range(1000))}


class Saved(dict[tuple[int, int], Any]):
    """The dict a student's executor keeps activations in, ``saved[(microbatch, chunk)]``; it counts
    how many are alive on each GPU, and the most at once."""

    def __init__(self, placement: Sequence[int]) -> None:
        super().__init__()
        self.placement, self.live = placement, [0] * (max(placement) + 1)
        self.peak = [0] * len(self.live)

    def _gpu(self, key: object) -> int:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int) and 0 <= key[1] < len(self.placement)):
            raise KeyError(f"keys of `saved` are (microbatch, chunk) pairs, not {key!r}")
        return self.placement[key[1]]

    def __setitem__(self, key: tuple[int, int], value: Any) -> None:
        if key not in self:
            gpu = self._gpu(key)
            self.live[gpu] += 1
            self.peak[gpu] = max(self.peak[gpu], self.live[gpu])
        super().__setitem__(key, value)

    def __delitem__(self, key: tuple[int, int]) -> None:
        super().__delitem__(key)
        self.live[self._gpu(key)] -= 1

    def pop(self, key: tuple[int, int], *default: Any) -> Any:
        if key in self:
            value = self[key]
            del self[key]
            return value
        return super().pop(key, *default)


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
    """Run the student's ``run_pipeline`` once, in the notebook; what it did, as data."""
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import split_model

    schedule, model, images, labels = _setting(spec)
    chunks = split_model(model, schedule.chunks)
    xs, ys = list(torch.tensor_split(images, schedule.microbatches)), list(torch.tensor_split(labels, schedule.microbatches))
    saved = Saved(schedule.placement[0])
    with warnings.catch_warnings(), redirect_stderr(StringIO()):
        warnings.simplefilter("ignore")
        loss = function(schedule, chunks, xs, ys, cross_entropy, saved)
    grads = [p.grad for c in chunks for p in c.parameters()]
    flat = torch.cat([g.detach().reshape(-1) for g in grads if g is not None]).float() if all(
        g is not None for g in grads) else None
    return {"loss": plain(loss), "peak": list(saved.peak), "left": len(saved),
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
              ("no activation left in `saved` at the end", 0.2))


def report(runs: object, specs: Sequence[Spec], points: float) -> Report:
    """Judge ``runs`` (``[[spec, what run() gave], …]``, as data) on every spec against the
    unpipelined model."""
    import numpy as np
    import torch
    from torch.nn.functional import cross_entropy

    from ppedu.mnist import reference_gradients
    from ppedu.simulate import simulate

    props = [prop for prop, _ in PROPERTIES]
    failures: dict[str, str] = {}
    given = {tuple(spec): out for spec, out in runs} if isinstance(runs, list) else {}
    for spec in specs:
        where = f"({spec[0]}, p={spec[1]}, m={spec[2]})"
        if not isinstance(runs, list):
            why = "is not defined: write it in its cell and run that cell" if runs is None else f"is a {kind(runs)}"
            failures = dict.fromkeys(props, f"— `run_pipeline` {why}")
            break
        out = given.get(tuple(spec))
        if isinstance(out, dict) and out.get("__raised__") == "NotImplementedError":
            failures = dict.fromkeys(props, "— the function is still the stub")
            break
        if error := raised(out):
            failures = dict.fromkeys(props, f"{where}: your function {error}")
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
            failures.setdefault(props[2], f"{where}: GPU {s} held {held} at once, the schedule {want[s]}")
        if out.get("left"):
            failures.setdefault(props[3], f"{where}: {out.get('left')} still there")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, "")) for prop, share in PROPERTIES)
    return Report(specs[0][0], float(points), results)


@dataclass(frozen=True)
class ExecutorQuestion:
    name: str
    points: float
    sizes: tuple[tuple[str, int, int, int], ...]  # (schedule, p, m, v) tried in the visible test

    def own(self, v: Mapping[str, Any]) -> Spec:
        name = self.sizes[0][0]
        return (name, v["p"], v["p"] * 2 if name == "interleaved" else v["m"], 2 if name == "interleaved" else 1, v["seed"])

    def graded_specs(self, v: Mapping[str, Any]) -> tuple[Spec, ...]:
        return (*((*s, 0) for s in self.sizes), self.own(v))

    def data(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> dict[str, object]:
        from ppedu.grading.answers import calls

        return {"run_pipeline": calls(namespace, "run_pipeline", [(s,) for s in self.graded_specs(v)],
                                      run=_run)}

    def check(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        from ppedu.grading.answers import calls

        specs = [(*s, 0) for s in self.sizes]
        runs = calls(namespace, "run_pipeline", [(s,) for s in specs], run=_run)
        return report(_unwrap(runs), specs, self.points)


def _run(function: Callable[..., object], args: Sequence[Any]) -> object:
    return run(function, args[0])


def _unwrap(runs: object) -> object:
    """``calls`` gives ``[[[spec], out], …]`` (the arguments as a list); ``report`` wants ``[[spec, out], …]``."""
    return [[args[0], out] for args, out in runs] if isinstance(runs, list) else runs


QUESTIONS: dict[str, Any] = {
    "one_f_one_b": ExecutorQuestion("one_f_one_b", 5, (("1f1b", 2, 4, 1), ("1f1b", 4, 6, 1))),
    "gpipe": ExecutorQuestion("gpipe", 2, (("gpipe", 3, 3, 1),)),
    "interleaved": ExecutorQuestion("interleaved", 3, (("interleaved", 2, 4, 2),)),
}
