"""ps7's keys — the scale chapters' derivations judged against :mod:`ppedu.cluster`: the α–β costs of NCCL's ring
and tree (:func:`~ppedu.cluster.collectives.cost`) and their crossover, a block's tensor-parallel collectives
(:func:`~ppedu.cluster.tensor.block_collectives`, each sent as a ring sends it), ZeRO's stages
(:func:`~ppedu.cluster.sharding.zero_stages`), an expert-parallel all-to-all
(:func:`~ppedu.cluster.experts.all_to_all_seconds` on a link of one byte per second), and the layouts table
(:func:`~ppedu.cluster.layouts.layouts`), where every layout within the stated tolerance of the fastest fitting one
is right. The written answers are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("ps7", "alice")
>>> key = accepted(v)
>>> all(r.fits for r in key.values()) and len(key) >= 1
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from ppedu.cluster import GPUS, MODELS, Link, Model
from ppedu.cluster.collectives import cost, crossover, ring
from ppedu.cluster.experts import all_to_all_seconds
from ppedu.cluster.layouts import Layout, layouts
from ppedu.cluster.sharding import PRECISIONS, zero_stages
from ppedu.cluster.tensor import block_collectives
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.ps7 import LAYOUT_SCHEDULES, QUESTIONS, TOLERANCE
from ppedu.grading.students import pick

#: Float noise in bytes and seconds grows with them: results are right within this share.
REL = 1e-5


def _link(alpha: float, bandwidth: float) -> Link:
    return Link("the question's", bandwidth, alpha)


def _block(tokens: int, hidden: int, experts: int = 0, top_k: int = 0) -> Model:
    """A model whose micro-batch is ``tokens`` × ``hidden`` in bf16: all the collectives read of it."""
    return Model("the question's", layers=2, hidden=hidden, vocab=1, seq=tokens, experts=experts, top_k=top_k)


@cache
def _zero(params: float, d: int) -> Any:
    return zero_stages(params, d, PRECISIONS["bf16"])


def truth(name: str, args: tuple[Any, ...]) -> float:
    if name in ("ring_allreduce_seconds", "tree_allreduce_seconds"):
        n, nbytes, alpha, bandwidth = args
        return cost("all-reduce", nbytes, n, _link(alpha, bandwidth), name.split("_")[0]).seconds
    if name == "crossover_bytes":
        n, alpha, bandwidth = args
        return crossover(n, _link(alpha, bandwidth))
    if name == "tp_sent_bytes":
        t, tokens, hidden, sequence = args
        return sum(ring(c.nbytes, t, c.kind) for c in block_collectives(_block(tokens, hidden), t, bool(sequence)))
    if name in ("zero_gb", "zero_sent_gb"):
        stage, params, d = args
        row = _zero(params, d)[int(stage)]
        return row.total_gb if name == "zero_gb" else row.sent_gb
    tokens, hidden, top_k, e = args  # dispatch_bytes: seconds on a link of one byte per second, no latency
    return all_to_all_seconds(_block(tokens, hidden, 64, top_k), e, Link("one byte per second", 1.0, 0.0))


def why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    close = lambda x: abs(got - x) <= REL * max(1.0, abs(x))  # noqa: E731
    if name == "ring_allreduce_seconds":
        n, nbytes, alpha, bandwidth = args
        if close((n - 1) * alpha + (n - 1) / n * nbytes / bandwidth):
            return "that is a reduce-scatter alone: an all-reduce is a reduce-scatter and then an all-gather."
        if close(2 * (n - 1) * (alpha + nbytes / bandwidth)):
            return "each of the ring's steps sends one piece, M/n, not the whole buffer."
        return "count the ring's steps (each costs α) and the bytes the busiest GPU sends (each costs 1/bandwidth)."
    if name == "tree_allreduce_seconds":
        return ("a reduction up and a broadcast down, ⌈log₂ n⌉ hops each (round up: a tree has whole levels); with "
                "two trees a GPU sends 2M in all (M when n = 2), pipelined in small pieces.")
    if name == "crossover_bytes":
        return "set the ring's time equal to the tree's and solve for M (zero where the ring never loses)."
    if name == "tp_sent_bytes":
        t, tokens, hidden, sequence = args
        if sequence and close(8 * (t - 1) / t * 2 * tokens * hidden):
            return ("that is tensor parallelism's four all-reduces; with sequence parallelism the backward also "
                    "gathers each column-parallel layer's input again, for its weight gradient.")
        return ("list the block's collectives, forward and backward (chapter 12), each on s·b·h bf16 values, and what "
                "a ring sends per GPU for each.")
    if name == "zero_gb":
        return ("ZeRO counts 2 + 2 + 12 bytes per parameter (bf16 weights and gradients, fp32 master weights and "
                "Adam's moments); stage 1 shards the optimizer, 2 the gradients too, 3 the weights too; GB = 10⁹ bytes.")
    if name == "zero_sent_gb":
        return ("every stage reduce-scatters the gradients and all-gathers the weights once per step, as rings; "
                "stage 3 gathers them twice (forward and backward); GB = 10⁹ bytes.")
    return "a GPU sends each token's top-k copies (2 bytes per value) to the experts of the other GPUs, pairwise."


def hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    """Inputs each function is also called on, never shown: the student's own (a hash of their id)."""
    def choose(what: str, choices: Any) -> Any:
        return pick("ps7-hidden", v.student, f"{name}:{what}", tuple(choices))

    if name in ("ring_allreduce_seconds", "tree_allreduce_seconds"):
        return ((choose("n", (3, 5, 12, 24, 100)), choose("M", (1e5, 3e7, 2e9)), choose("a", (2e-6, 2e-5)),
                 choose("B", (2.5e10, 4e11))), (2, 4e6, 1e-5, 5e10))
    if name == "crossover_bytes":
        return (choose("n", (6, 12, 24, 100, 512)), choose("a", (2e-6, 2e-5)), choose("B", (2.5e10, 4e11))), (2, 1e-5, 5e10)
    if name == "tp_sent_bytes":
        t = choose("t", (3, 8, 16))
        return (t, choose("s", (1024, 8192)), choose("h", (2048, 12288)), True), (t, 2048, 5120, False)
    if name in ("zero_gb", "zero_sent_gb"):
        return (choose("stage", range(4)), choose("P", (1.3e9, 3.3e10, 4.05e11)), choose("d", (2, 48, 128))),
    return (choose("T", (512, 16384)), choose("h", (2048, 5120)), choose("k", (1, 6)), choose("e", (4, 24, 128))),


def accepted(v: Mapping[str, Any]) -> dict[tuple[int, int, int, str], Layout]:
    """The layouts that count as right: each (t, p, d, schedule) that fits, in any recomputation mode and ZeRO stage,
    within :data:`TOLERANCE` of the fastest fitting layout's tokens per second."""
    return _accepted(v["layout_model"], v["gpu"], v["gpus"], v["batch"])


@cache
def _accepted(model: str, gpu: str, gpus: int, batch: int) -> dict[tuple[int, int, int, str], Layout]:
    rows = [r for r in layouts(MODELS[model], GPUS[gpu], gpus, batch, schedules=LAYOUT_SCHEDULES) if r.fits]
    fastest = max(r.tokens_per_s for r in rows)
    out: dict[tuple[int, int, int, str], Layout] = {}
    for r in rows:
        if r.tokens_per_s >= (1 - TOLERANCE) * fastest:
            out.setdefault((r.t, r.p, r.d, r.schedule), r)
    return out


@cache
def _all(model: str, gpu: str, gpus: int, batch: int) -> tuple[Layout, ...]:
    return tuple(layouts(MODELS[model], GPUS[gpu], gpus, batch, schedules=LAYOUT_SCHEDULES))


@dataclass(frozen=True)
class NearBest:
    """The layout question: right if the student's layout is one of :func:`accepted`; else what is off with it."""

    form: Any

    def judge(self, data: Mapping[str, object], v: Values) -> str:
        got = self.form.read(data)
        choice = (got["t"], got["p"], got["d"], got["schedule"])
        right = accepted(v)
        if choice in right:
            return "correct"
        if got["t"] * got["p"] * got["d"] != v["gpus"]:
            raise Wrong(f"t·p·d = {got['t'] * got['p'] * got['d']}, but the layout must use all {v['gpus']} GPUs.")
        tried = [r for r in _all(v["layout_model"], v["gpu"], v["gpus"], v["batch"])
                 if (r.t, r.p, r.d, r.schedule) == choice]
        if not tried:
            raise Wrong("That layout is not one the table tries: t divides a node of 8, p is at most 16, and the global "
                        "batch must split into whole micro-batches per replica.")
        if not any(r.fits for r in tried):
            raise Wrong("That layout does not fit in the GPU's memory in any recomputation mode or ZeRO stage.")
        fastest = max(r.tokens_per_s for r in right.values())
        mine = max(r.tokens_per_s for r in tried if r.fits)
        raise Wrong(f"That layout fits, but it is {1 - mine / fastest:.1%} slower than the fastest that does (within "
                    f"{TOLERANCE:.0%} counts as right): what do the faster rows change?")


KEYS: dict[str, Any] = {
    **{q: FormulaJudge(QUESTIONS[q], truth, why, hidden, rel=REL)
       for q in ("allreduce", "crossover", "tensor", "zero_memory", "zero_traffic", "all_to_all")},
    "layout": NearBest(QUESTIONS["layout"]),
}
