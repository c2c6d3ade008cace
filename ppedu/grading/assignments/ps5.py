"""ps5 — the pipeline executor: the student writes the loop that runs a schedule op by op on the
chunks of the course's MNIST model, graded against the unpipelined model (loss and every gradient)
and by how long activations live (freed at each backward, none left at the end).

>>> values("alice")["p"] in (2, 3, 4)
True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import redirect_stderr
from dataclasses import dataclass
from io import StringIO
from typing import Any

import torch
from torch.nn.functional import cross_entropy

from ppedu.grading.answers import function
from ppedu.grading.students import pick
from ppedu.mnist import load_mnist, mlp, reference_gradients, split_model
from ppedu.ops import Schedule
from ppedu.schedules import build
from ppedu.simulate import simulate

EXAMPLES = 24  # the mini-batch: real MNIST digits from the course's subset
TOLERANCE = 1e-5


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


def grade_executor(run: Callable[..., object], schedules: Sequence[Schedule], points: float, seed: int = 0) -> Report:
    """Run the student's ``run(schedule, chunks, xs, ys, loss_fn, saved)`` on each schedule."""
    failures: dict[str, str] = {}
    torch.set_num_threads(1)  # a toy model: threads only fight the other autograders for the cores
    images, labels = load_mnist("train", limit=EXAMPLES)
    for schedule in schedules:
        where = f"({schedule.name}, p={schedule.p}, m={schedule.microbatches})"
        torch.manual_seed(seed)
        model = mlp(layers=8, hidden=32)  # 8 layers: up to 4 GPUs × 2 chunks
        reference = reference_gradients(model, (images, labels), cross_entropy)
        with torch.no_grad():
            whole_loss = float(cross_entropy(model(images), labels))
        chunks = split_model(model, schedule.chunks)
        xs, ys = list(torch.tensor_split(images, schedule.microbatches)), list(torch.tensor_split(labels, schedule.microbatches))
        saved = Saved(schedule.placement[0])
        try:
            with warnings.catch_warnings(), redirect_stderr(StringIO()):
                warnings.simplefilter("ignore")
                loss = run(schedule, chunks, xs, ys, cross_entropy, saved)
        except NotImplementedError:
            failures = {prop: "— the function is still the stub" for prop, _ in PROPERTIES}
            break
        except Exception as error:
            failures = {prop: f"{where}: your function raised {type(error).__name__}: {error}" for prop, _ in PROPERTIES}
            break
        props = [prop for prop, _ in PROPERTIES]
        try:
            got = float(loss)  # type: ignore[arg-type]
        except (TypeError, ValueError, RuntimeError):
            failures.setdefault(props[0], f"{where}: returned {type(loss).__name__}, not the loss (a number)")
        else:
            if not abs(got - whole_loss) <= TOLERANCE * max(1.0, abs(whole_loss)):
                failures.setdefault(props[0], f"{where}: {got:.6g} is not the mean loss over the mini-batch "
                                    "(weight each micro-batch's mean loss by its share of the examples)")
        own = [p.grad for c in chunks for p in c.parameters()]
        if any(g is None for g in own):
            failures.setdefault(props[1], f"{where}: some parameters have no gradient (did every B run a backward?)")
        else:
            worst = max(float((a - b).abs().max()) for a, b in zip(own, reference) if a is not None)
            if not worst <= TOLERANCE:
                failures.setdefault(props[1], f"{where}: differ by up to {worst:.2g}")
        want = list(simulate(schedule).peak_activations)
        if saved.peak != want:
            s = next(i for i, (a, b) in enumerate(zip(saved.peak, want)) if a != b)
            failures.setdefault(props[2], f"{where}: GPU {s} held {saved.peak[s]} at once, the schedule {want[s]}")
        if len(saved):
            failures.setdefault(props[3], f"{where}: {len(saved)} still there")
    results = tuple((prop, share * points, prop not in failures, failures.get(prop, "")) for prop, share in PROPERTIES)
    return Report(schedules[0].name, float(points), results)


@dataclass(frozen=True)
class ExecutorQuestion:
    name: str
    points: float
    sizes: tuple[tuple[str, int, int, int], ...]  # (schedule, p, m, v) tried in the visible test

    def check(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        return grade_executor(function(namespace, "run_pipeline"), [build(*s) for s in self.sizes], self.points)

    def grade(self, namespace: Mapping[str, object], v: Mapping[str, Any]) -> Report:
        name = self.sizes[0][0]
        own = (name, v["p"], v["p"] * 2 if name == "interleaved" else v["m"], 2 if name == "interleaved" else 1)
        return grade_executor(function(namespace, "run_pipeline"), [build(*s) for s in (*self.sizes, own)],
                              self.points, seed=v["seed"])


QUESTIONS: dict[str, Any] = {
    "one_f_one_b": ExecutorQuestion("one_f_one_b", 5, (("1f1b", 2, 4, 1), ("1f1b", 4, 6, 1))),
    "gpipe": ExecutorQuestion("gpipe", 2, (("gpipe", 3, 3, 1),)),
    "interleaved": ExecutorQuestion("interleaved", 3, (("interleaved", 2, 4, 2),)),
}
