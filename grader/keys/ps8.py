"""ps8's judge — the student's code as the relay saw it run across ranks (every collective and message, each rank's
final word; see :mod:`ppedu.grading.relay`), against the grader's unsharded run of the same steps on the whole batch,
on the visible runs, the student's own (from the student's id) and one of the autograder's own on more ranks, never
named in the feedback. Nothing here was computed by a process that ran the student's code: the relay's record is the
evaluating process's, and the reference is computed here.

The rules a right answer follows live here, never in what students have: DDP's buckets (:func:`ddp_plan`, on the
order :func:`ready_order` sees the grader's own copy of the model complete its gradients — PyTorch 2.13's reducer,
``compute_bucket_assignment_by_size`` called from ``Reducer::rebuild_buckets`` with the limits
``[first_bucket_bytes_cap, bucket_bytes_cap]``) and FSDP2's shard layout (:func:`fsdp_runs`: ``FSDPParam`` cuts each
parameter along dim 0 into ``n`` chunks padded to the first's rows, ``foreach_reduce_scatter_copy_in`` lays them out
rank-major with ``torch._chunk_cat``). ``python -m grader.keys.ps8`` prints what they give on the visible runs, the
data ``ppedu.grading.assignments.ps8.VISIBLE`` holds (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps8 import (FUNCTIONS, QUESTIONS, RanksQuestion, Report, Spec, key, model, report,
                                           unwrap)
from ppedu.grading.students import pick

#: The autograder's own runs: 3 or 4 ranks, and sizes no student's own run has.
HIDDEN_CAPS = ([5000, 64], [10000, 2000], [16000, 4000])
HIDDEN_WIDTHS = (30, 34, 38)


def ready_order(net: Any) -> list[int]:
    """The order in which a backward of ``net`` completes its parameters' gradients (by index in
    ``net.parameters()``): the order DDP records in its first step and rebuilds its buckets in."""
    import torch
    from torch.nn.functional import cross_entropy

    params = list(net.parameters())
    seen: list[int] = []
    hooks = [p.register_post_accumulate_grad_hook(lambda p, i=i: seen.append(i)) for i, p in enumerate(params)]
    try:
        cross_entropy(net(torch.zeros(2, 1, 28, 28, dtype=params[0].dtype)), torch.tensor([0, 1])).backward()
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def ddp_plan(order: Sequence[int], nbytes: Sequence[int], cap: int, first_cap: int) -> list[list[int]]:
    """DDP's rebuilt buckets: the parameters in ``order``, a bucket closed once it holds at least its limit in bytes —
    ``first_cap`` for the first, ``cap`` for every later one.

    >>> ddp_plan([3, 2, 1, 0], [800, 80, 800, 80], cap=850, first_cap=50)
    [[3], [2, 1], [0]]
    """
    plan: list[list[int]] = [[]]
    held, limit = 0, first_cap
    for i in order:
        plan[-1].append(i)
        held += nbytes[i]
        if held >= limit:
            plan.append([])
            held, limit = 0, cap
    return [bucket for bucket in plan if bucket]


def fsdp_runs(shapes: Sequence[Sequence[int]], n: int) -> list[list[list[int]]]:
    """Each rank's piece of the flattened parameters (of ``shapes``, in order) as FSDP2 lays it out: of every
    parameter, chunk ``r`` of its rows cut into ``n`` chunks of ``⌈rows/n⌉`` (the last short or empty), padded with
    zeros to ``⌈rows/n⌉`` rows; as runs ``[start, length]`` of the flattened parameters, ``start`` -1 for zeros.

    >>> fsdp_runs([(5, 2), (1,)], 2)
    [[[0, 6], [10, 1]], [[6, 4], [-1, 2], [-1, 1]]]
    """
    import math

    out = []
    for r in range(n):
        runs, start = [], 0
        for shape in shapes:
            rows, row = shape[0], math.prod(shape[1:])
            k = -(-rows // n)
            first = min(r * k, rows)
            got = min(k, rows - first)
            if got:
                runs.append([start + first * row, got * row])
            if k > got:
                runs.append([-1, (k - got) * row])
            start += rows * row
        out.append(runs)
    return out


def expected(spec: Spec) -> Any:
    """The right buckets or pieces of the run ``spec`` (as ``VISIBLE`` holds them); ``None`` for the other questions."""
    if spec[0] == "buckets":
        net = model(spec)
        nbytes = [p.numel() * p.element_size() for p in net.parameters()]
        return {"plan": ddp_plan(ready_order(net), nbytes, *spec[2])}
    if spec[0] == "zero1":
        return {"runs": fsdp_runs([tuple(p.shape) for p in model(spec).parameters()], spec[1])}
    return None


@dataclass(frozen=True)
class RanksJudge:
    """A question run across ranks, judged on what the relay saw: what a rank's process reports of itself counts only
    as its claim (its parameters, its result), checked against the reference the judge computes."""

    form: RanksQuestion

    def hidden(self, v: Values) -> tuple[Spec, ...]:
        n = pick("ps8-hidden", v.student, "n", (3, 4))
        size = {"ring": pick("ps8-hidden", v.student, "length", range(2001, 5001)),
                "buckets": pick("ps8-hidden", v.student, "caps", HIDDEN_CAPS),
                "zero1": pick("ps8-hidden", v.student, "width", HIDDEN_WIDTHS)}.get(self.form.name, 0)
        return ([self.form.name, n, size, pick("ps8-hidden", v.student, "seed", range(1000, 2000))],)

    def calls(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        specs = [*self.form.graded_specs(v), *self.hidden(v)]
        return {FUNCTIONS[self.form.name]: tuple((spec,) for spec in specs)}

    def secret(self, v: Values) -> dict[str, tuple[tuple[Spec], ...]]:
        return {FUNCTIONS[self.form.name]: tuple((spec,) for spec in self.hidden(v))}

    def judge(self, data: Mapping[str, object], v: Values) -> Report:
        specs = [args[0] for args in self.calls(v)[FUNCTIONS[self.form.name]]]
        return report(self.form.name, unwrap(data.get(FUNCTIONS[self.form.name])), specs, self.form.points,
                      hidden={key(s) for s in self.hidden(v)}, expected=expected)


KEYS: dict[str, Any] = {name: RanksJudge(q) for name, q in QUESTIONS.items()}


def visible() -> dict[str, Any]:
    """What the rules give on the visible runs: ``VISIBLE``'s data."""
    return {name: expected(q.visible_specs()[0]) for name, q in QUESTIONS.items() if name in ("buckets", "zero1")}


if __name__ == "__main__":
    import json

    print(json.dumps(visible()))
