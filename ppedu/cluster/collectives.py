"""Collectives from first principles: what a ring or a tree sends, how long it takes on a link, and the two
bandwidths NCCL's tests report.

**The α–β model.** One message of ``M`` bytes between two GPUs takes ``α + M·β``: ``α`` the latency of a step
(:attr:`~ppedu.cluster.Link.latency`), ``β = 1/B`` the time per byte at the link's bandwidth ``B`` each way. A
collective over ``n`` GPUs is a sequence of steps in which every GPU sends at once, so it costs
``steps·α + sent·β``, ``sent`` the bytes the busiest GPU sends. Per algorithm (``M``: the whole buffer, as
NCCL-tests' ``S``):

* **ring** (NCCL's ring): a reduce-scatter passes ``n − 1`` pieces of ``M/n`` around the ring, each GPU adding its
  own to the piece it receives: ``(n−1)α + (n−1)/n·Mβ``; an all-gather passes the finished pieces the same way; an
  all-reduce is the two in a row, ``2(n−1)α + 2(n−1)/n·Mβ``. No algorithm in which the GPUs do the adding sends less per GPU
  (Patarasuk and Yuan, 2009); switches that reduce in the network (InfiniBand's SHARP) can.
* **tree** (NCCL's double binary tree, for all-reduce): a reduction up a binary tree and a broadcast back down,
  ``⌈log₂ n⌉`` hops each way, pipelined in small pieces (their count is taken large: the pipeline's fill is left
  out). Two trees each carry half the buffer and a GPU is an inner node, with two children, in at most one: it
  sends ``M/2`` up and ``M`` down in that tree and ``M/2`` up in the other, ``2M`` in all (``M`` for ``n = 2``):
  ``2⌈log₂ n⌉α + 2Mβ``. Fewer steps than the ring, a little more bandwidth: below :func:`crossover` it wins.
* **all-to-all** (pairwise exchange): ``n − 1`` steps, in each of which every GPU sends ``M/n`` to one peer.
* **broadcast** from one root (a pipelined chain): everything leaves the root once, ``(n−1)α + Mβ``.

**What NCCL-tests print** (``doc/PERFORMANCE.md`` in NVIDIA's nccl-tests): ``algbw = S/t``, and ``busbw = algbw ×
factor`` with the factor ``2(n−1)/n`` for all-reduce, ``(n−1)/n`` for reduce-scatter, all-gather and all-to-all, 1 for
broadcast: the bandwidth a ring would need on each link to take ``t``, so that it reads against the link's peak
whatever ``n`` is. On a ring without latency ``busbw`` is exactly ``B``.

>>> from ppedu.cluster import LINKS
>>> c = cost("all-reduce", 1e9, 8, LINKS["nvlink"])
>>> c.sent / 1e9, round(c.seconds * 1e3, 3), round(c.busbw / 1e9, 1)  # 2·7/8 GB sent; 14 steps of 3 µs
(1.75, 3.931, 445.2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from collections.abc import Sequence

from ppedu.cluster.hardware import Link
from ppedu.lesson import Table
from ppedu.validate import one_of, whole

#: The collectives, each with NCCL-tests' bus-bandwidth factor as a function of ``n``.
KINDS = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
ALGORITHMS = ("ring", "tree")


@dataclass(frozen=True)
class Cost:
    """One collective of ``nbytes`` over ``n`` GPUs on ``link`` by ``algorithm``: its ``steps`` and the bytes the
    busiest GPU sends (``sent``), what those take, and the two bandwidths NCCL-tests would print for it."""

    kind: str
    algorithm: str
    n: int
    nbytes: float
    steps: int
    sent: float
    link: Link

    @property
    def latency_seconds(self) -> float:
        """The ``α`` term: one latency per step."""
        return self.steps * self.link.latency

    @property
    def bandwidth_seconds(self) -> float:
        """The ``β`` term: the busiest GPU's bytes at the link's bandwidth."""
        return self.sent / self.link.bandwidth

    @property
    def seconds(self) -> float:
        return self.latency_seconds + self.bandwidth_seconds

    @property
    def algbw(self) -> float:
        """NCCL-tests' algorithm bandwidth, ``S/t`` (bytes per second)."""
        return self.nbytes / self.seconds if self.seconds else math.inf

    @property
    def busbw(self) -> float:
        """NCCL-tests' bus bandwidth, ``algbw × factor``."""
        return self.algbw * bus_factor(self.kind, self.n)


def bus_factor(kind: str, n: int) -> float:
    """NCCL-tests' factor from algorithm to bus bandwidth for ``kind`` over ``n`` GPUs.

    >>> bus_factor("all-reduce", 8), bus_factor("all-gather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    one_of("collective", kind, KINDS)
    return float(KINDS[kind](whole("n", n)))


def cost(kind: str, nbytes: float, n: int, link: Link, algorithm: str = "ring") -> Cost:
    """The α–β cost of one ``kind`` of ``nbytes`` over ``n`` GPUs (see the module's docstring); ``tree`` is an
    all-reduce's alone.

    >>> from ppedu.cluster import LINKS
    >>> ring, tree = (cost("all-reduce", 1e6, 64, LINKS["ib-400"], a) for a in ALGORITHMS)
    >>> ring.steps, tree.steps, tree.seconds < ring.seconds  # a 1 MB all-reduce over 64 GPUs
    (126, 12, True)
    """
    one_of("collective", kind, KINDS)
    one_of("algorithm", algorithm, ALGORITHMS)
    whole("n", n)
    if nbytes < 0:
        raise ValueError(f"a collective moves a non-negative number of bytes (got {nbytes!r})")
    if algorithm == "tree" and kind != "all-reduce":
        raise ValueError(f"the tree algorithm is an all-reduce's (got {kind}); NCCL runs the others on rings")
    if n == 1:
        return Cost(kind, algorithm, 1, nbytes, 0, 0.0, link)
    if algorithm == "tree":
        return Cost(kind, algorithm, n, nbytes, 2 * math.ceil(math.log2(n)), nbytes * (2 if n > 2 else 1), link)
    if kind == "broadcast":
        return Cost(kind, algorithm, n, nbytes, n - 1, float(nbytes), link)
    rounds = 2 if kind == "all-reduce" else 1
    return Cost(kind, algorithm, n, nbytes, rounds * (n - 1), rounds * nbytes * (n - 1) / n, link)


def crossover(n: int, link: Link) -> float:
    """The all-reduce size (bytes) below which the tree beats the ring on ``link`` over ``n`` GPUs: where
    ``2(n−1)α + 2(n−1)/n·Mβ = 2⌈log₂ n⌉α + 2Mβ``, that is ``M = n·(n − 1 − ⌈log₂ n⌉)·α·B`` (0 where the ring
    never loses, ``n ≤ 3``).

    >>> from ppedu.cluster import LINKS
    >>> round(crossover(8, LINKS["nvlink"]) / 1e6, 1), round(crossover(64, LINKS["ib-400"]) / 1e9, 2)
    (43.2, 1.82)
    """
    if whole("n", n) <= 2:
        return 0.0
    return max(0.0, n * (n - 1 - math.ceil(math.log2(n))) * link.latency * link.bandwidth)


@dataclass(frozen=True)
class Timed:
    """One collective at one size and group, as NCCL-tests would print it."""

    n: int
    size_mb: float
    algorithm: str
    steps: int
    time_ms: float
    algbw_gb_s: float
    busbw_gb_s: float


def timings(kind: str, link: Link, sizes: Sequence[float], groups: Sequence[int],
            algorithms: Sequence[str] = ("ring",)) -> Table[Timed]:
    """:func:`cost` for every group size, buffer size and algorithm, as a table: rows by ``n``, then size.

    >>> from ppedu.cluster import LINKS
    >>> [(r.n, r.algbw_gb_s, r.busbw_gb_s) for r in timings("all-gather", LINKS["nvlink"], [1e9], [2, 8])]
    [(2, 897.58, 448.79), (8, 508.79, 445.19)]
    """
    rows = []
    for n in groups:
        for size in sizes:
            for algorithm in algorithms:
                c = cost(kind, size, n, link, algorithm)
                rows.append(Timed(n, size / 1e6, algorithm, c.steps, round(c.seconds * 1e3, 4),
                                  round(c.algbw / 1e9, 2), round(c.busbw / 1e9, 2)))
    return Table(tuple(rows))


def ring(nbytes: float, n: int, kind: str) -> float:
    """Bytes each of ``n`` GPUs sends in a ring ``kind`` of ``nbytes``.

    >>> ring(1e9, 4, "all-reduce")
    1500000000.0
    """
    return cost(kind, nbytes, n, _FREE).sent


def ring_seconds(nbytes: float, n: int, kind: str, link: Link) -> float:
    """How long a ring ``kind`` of ``nbytes`` over ``n`` GPUs takes on ``link``."""
    return cost(kind, nbytes, n, link).seconds


_FREE = Link("free", math.inf, 0.0)
