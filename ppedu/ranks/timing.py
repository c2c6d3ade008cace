"""Collectives timed across real processes, much as NVIDIA's nccl-tests time them, and chapter 12's α–β model fitted
to the times.

:func:`measure` runs each collective on ``world`` ranks (:func:`~ppedu.ranks.launch.run_ranks`: gloo between CPU
processes, NCCL between GPUs) over a range of buffer sizes ``S`` — the whole buffer, as nccl-tests'
``doc/PERFORMANCE.md`` defines it: an all-gather's output, a reduce-scatter's input. Each size runs two warm-up
operations, then several trials of a batch of operations between barriers; a trial's time per operation is the
slowest rank's (a collective has finished when its last rank has), and the fastest trial is kept (a process the
machine set aside for a moment only ever makes a trial longer). Those two choices are the lab's: nccl-tests report
one batch's mean, averaged over the ranks by default (``-a``). Each row shows ``algbw = S/t`` and
``busbw = algbw × factor``, nccl-tests' two bandwidths (:func:`ppedu.cluster.collectives.bus_factor`).

:func:`fit` finds the link (``α``, ``β = 1/B``) under which chapter 12's ring costs ``steps·α + sent·β`` come
closest to the measured times (least squares on relative error, so that a 50 µs time counts as much as a 50 ms
one); :func:`against_model` sets every measured time beside what the fitted model predicts for it.

>>> rows = [Measured("all-reduce", 2, s, 1e-5 + s / 1e9) for s in (1e3, 1e5, 1e7)]  # α = 5 µs, B = 1 GB/s
>>> f = fit(rows)
>>> round(f.alpha * 1e6, 3), round(f.bandwidth / 1e9, 3)
(5.0, 1.0)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.cluster.collectives import bus_factor, cost
from ppedu.cluster.hardware import Link
from ppedu.lesson import Table
from ppedu.validate import one_of

#: The collectives the lab times (broadcast's root-bound traffic is a different story: chapter 12).
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
#: Buffer sizes: 4 KB to 16 MB, by factors of 4.
SIZES = tuple(4 ** k * 1024 for k in range(1, 8))


@dataclass(frozen=True)
class Measured:
    """One collective of ``nbytes`` (nccl-tests' ``S``) on ``n`` ranks, and the time it took."""

    kind: str
    n: int
    nbytes: float
    seconds: float

    @property
    def algbw(self) -> float:
        """``S / t``, bytes per second."""
        return self.nbytes / self.seconds

    @property
    def busbw(self) -> float:
        """``algbw × factor``: what each link of a ring carried per second."""
        return self.algbw * bus_factor(self.kind, self.n)


@dataclass(frozen=True)
class Row:
    """A measured collective as nccl-tests prints it: size in MB, time in ms, bandwidths in GB/s."""

    kind: str
    n: int
    size_mb: float
    time_ms: float
    algbw_gb_s: float
    busbw_gb_s: float


def table(rows: Sequence[Measured]) -> Table[Row]:
    """``rows`` as a table, rounded as nccl-tests print them."""
    return Table(tuple(Row(r.kind, r.n, round(r.nbytes / 1e6, 4), round(r.seconds * 1e3, 4),
                           round(r.algbw / 1e9, 3), round(r.busbw / 1e9, 3)) for r in rows))


def measure(world: int = 2, kinds: Sequence[str] = KINDS, sizes: Sequence[int] = SIZES, trials: int = 5,
            timeout: float = 300.0) -> list[Measured]:
    """Time each of ``kinds`` at each of ``sizes`` on ``world`` new ranks (see the module's docstring)."""
    from ppedu.ranks.launch import run_ranks

    for kind in kinds:
        one_of("collective", kind, KINDS)
    if trials < 1 or not sizes:
        raise ValueError(f"measure needs at least one trial and one size (got trials={trials}, sizes={sizes!r})")
    per_rank = run_ranks(_timed, world, list(kinds), [_size(s, world) for s in sizes], trials, timeout=timeout)
    rows = []
    for i, (kind, nbytes) in enumerate(per_rank[0]["cases"]):
        slowest = [max(rank["seconds"][i][t] for rank in per_rank) for t in range(trials)]
        rows.append(Measured(kind, world, nbytes, min(slowest)))
    return rows


def _size(nbytes: int, n: int) -> int:
    """``nbytes`` rounded to a whole number of float32 elements per rank (at least one)."""
    return max(1, round(nbytes / (4 * n))) * 4 * n


def _timed(rank: int, world: int, kinds: list[str], sizes: list[int], trials: int) -> dict[str, Any]:
    """On each rank: every kind at every size, ``trials`` batches of operations, seconds per operation."""
    import torch
    import torch.distributed as dist

    from ppedu.ranks.launch import device

    here = device(rank)
    cases, seconds = [], []
    for kind in kinds:
        for nbytes in sizes:
            elements = nbytes // 4
            whole, piece = torch.ones(elements, device=here), torch.ones(elements // world, device=here)
            out = torch.empty_like(whole)
            operation = {
                "all-reduce": lambda: dist.all_reduce(whole),
                "all-gather": lambda: dist.all_gather_single(whole, piece),
                "reduce-scatter": lambda: dist.reduce_scatter_single(piece, whole),
                "all-to-all": lambda: dist.all_to_all_single(out, whole),
            }[kind]
            batch = max(1, min(20, (1 << 22) // nbytes))  # small buffers: many per timing, above the clock's grain
            for _ in range(2):
                operation()
            times = []
            for _ in range(trials):
                dist.barrier()
                start = time.perf_counter()
                for _ in range(batch):
                    operation()
                if here.type == "cuda":
                    torch.cuda.synchronize()
                times.append((time.perf_counter() - start) / batch)
            cases.append((kind, nbytes))
            seconds.append(times)
    return {"cases": cases, "seconds": seconds}


@dataclass(frozen=True)
class Fit:
    """The link that fits: ``alpha`` seconds per step, ``beta`` seconds per byte, over ``rows`` of ``kinds``."""

    alpha: float
    beta: float
    kinds: tuple[str, ...]
    points: int

    @property
    def bandwidth(self) -> float:
        return 1 / self.beta if self.beta > 0 else float("inf")

    @property
    def link(self) -> Link:
        """The fitted link, for :mod:`ppedu.cluster.collectives`."""
        return Link("fitted", self.bandwidth, self.alpha)


def fit(rows: Sequence[Measured], kinds: Sequence[str] = ("all-reduce",)) -> Fit:
    """The ``α`` and ``β`` under which chapter 12's ring costs best match ``rows`` of ``kinds``: least squares on
    each time's relative error, ``α`` and ``β`` kept ≥ 0."""
    import numpy as np

    used = [r for r in rows if r.kind in kinds]
    if len(used) < 2:
        raise ValueError(f"fitting α and β needs at least two measured sizes of {', '.join(kinds)}")
    free = Link("free", float("inf"), 0.0)
    terms = np.array([[c.steps, c.sent] for c in (cost(r.kind, r.nbytes, r.n, free) for r in used)], dtype=float)
    times = np.array([r.seconds for r in used])
    a = terms / times[:, None]
    solution, *_ = np.linalg.lstsq(a, np.ones(len(used)), rcond=None)
    if (solution < 0).any():  # one term alone fits better than both: keep that one, the other 0
        singles = [np.linalg.lstsq(a[:, [j]], np.ones(len(used)), rcond=None)[0][0] for j in (0, 1)]
        errors = [np.sum((a[:, j] * max(s, 0) - 1) ** 2) for j, s in enumerate(singles)]
        j = int(np.argmin(errors))
        solution = np.zeros(2)
        solution[j] = max(singles[j], 0)
    return Fit(float(solution[0]), float(solution[1]), tuple(kinds), len(used))


@dataclass(frozen=True)
class Versus:
    """A measured time beside the fitted model's ring (and, for an all-reduce, its tree), in ms."""

    kind: str
    n: int
    size_mb: float
    measured_ms: float
    ring_ms: float
    measured_over_ring: float
    tree_ms: float | None


def against_model(rows: Sequence[Measured], fitted: Fit) -> Table[Versus]:
    """Every row beside chapter 12's ring (and tree) on the fitted link.

    >>> rows = [Measured("all-reduce", 2, s, 1e-5 + s / 1e9) for s in (1e3, 1e5, 1e7)]
    >>> [v.measured_over_ring for v in against_model(rows, fit(rows))]
    [1.0, 1.0, 1.0]
    """
    out = []
    for r in rows:
        ring = cost(r.kind, r.nbytes, r.n, fitted.link).seconds
        tree = cost(r.kind, r.nbytes, r.n, fitted.link, "tree").seconds if r.kind == "all-reduce" else None
        out.append(Versus(r.kind, r.n, round(r.nbytes / 1e6, 4), round(r.seconds * 1e3, 4), round(ring * 1e3, 4),
                          round(r.seconds / ring, 2), None if tree is None else round(tree * 1e3, 4)))
    return Table(tuple(out))
