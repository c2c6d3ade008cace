"""The vendor brief's remaining figures — "up to 45 % idle" for naive schedules, "3.4× throughput
vs a single-node baseline", latencies "under 10 ms" and "3.2 ms" (which contradict each other),
"asynchronous steady-state scheduling", "zero-bubble micro-batching", "1F1B bubble elimination",
"early stages completely idle" and 94.2 % "utilization" read as MFU — and what they could mean.

A node is taken to be eight GPUs (an HGX or DGX board, the usual node of 70B–405B training; the brief gives no
size), not one: "3.4× a single node" compares ``n`` nodes at the brief's 94.2 % utilization with one node at some
utilization of its own, ``u₁ = n × 0.942 / 3.4``. Each figure is compared at its printed precision,
and every pipeline figure is the simulator's, not only a formula's.

>>> [(r.p, r.m) for r in idle_matches(0.45, range(2, 12))]
[(10, 11)]
>>> naive_idle(2)
0.5
>>> [(r.nodes, r.baseline_utilization) for r in node_readings(3.4, 0.942, range(1, 5))]
[(1, '27.71 %'), (2, '55.41 %'), (3, '83.12 %'), (4, '110.82 %')]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ppedu.cluster import ADAM_BYTES, GPU, GPUS, LINKS, MODELS, Link, Model
from ppedu.costs import Costs
from ppedu.design import inner_gaps
from ppedu.errata import Claim
from ppedu.formulas import bubble_ratio
from ppedu.lesson import Table
from ppedu.schedules import build
from ppedu.simulate import simulate
from ppedu.staleness import staleness
from ppedu.validate import whole


@dataclass(frozen=True)
class Match:
    """A GPipe or 1F1B pipeline and its idle share."""

    p: int
    m: int
    idle_total: float


#: GPUs per node: the eight of an HGX or DGX board (an assumption: the brief gives no node size).
NODE = 8


def naive_idle(p: int) -> float:
    """Idle/total of a naive pipeline (one micro-batch, no micro-batching) on ``p`` GPUs: ``(p−1)/p``,
    never below one half for ``p ≥ 2``."""
    return simulate(build("gpipe", p, 1), Costs(f=1, b=2)).bubble_ratio


def idle_matches(idle: float = 0.45, p_values: Iterable[int] = range(2, 65), m_max: int = 256) -> Table[Match]:
    """Every GPipe/1F1B pipeline whose idle/total rounds to ``idle`` at 0.1 %, as simulated."""
    rows = []
    for p in p_values:
        for m in range(1, m_max + 1):
            if round(bubble_ratio(p, m) * 100, 1) == round(idle * 100, 1):
                t = simulate(build("1f1b", p, m), Costs(f=1, b=2))
                if round(t.bubble_ratio * 100, 1) == round(idle * 100, 1):
                    rows.append(Match(p, m, round(t.bubble_ratio, 4)))
    return Table(tuple(rows))


@dataclass(frozen=True)
class NodeReading:
    """One reading of "speed-up × a single node at a cluster utilization": ``nodes`` nodes against one,
    and the utilization the one node must then have run at."""

    nodes: int
    gpus: int
    baseline_utilization: str
    possible: bool


def node_readings(speedup: float = 3.4, utilization: float = 0.942, nodes: Iterable[int] = range(1, 6)) -> Table[NodeReading]:
    """For each cluster of ``nodes`` nodes at ``utilization``, the utilization one node must have run at
    for the cluster to be ``speedup`` times as fast: ``nodes × utilization / speedup`` (the same model
    and work per GPU; more than 100 % is impossible)."""
    rows = []
    for n in nodes:
        whole("nodes", n)
        base = n * utilization / speedup
        rows.append(NodeReading(n, n * NODE, f"{base:.2%}".replace("%", " %"), base <= 1))
    return Table(tuple(rows))


def model_state_nodes(model: Model, gpu: GPU) -> float:
    """How many nodes of ``gpu`` the weights, gradients and Adam's state of ``model`` fill (16 bytes per
    parameter in mixed precision), before a single activation.

    >>> from ppedu.cluster import GPUS, MODELS
    >>> round(model_state_nodes(MODELS["70b"], GPUS["h100-80gb"]), 2)
    1.72
    """
    return model.params * (2 * model.dtype_bytes + ADAM_BYTES) / (NODE * gpu.memory)


def hand_over_ms(model: Model, link: Link) -> float:
    """Milliseconds one micro-batch's activations take between two stages over ``link``."""
    return link.seconds(model.hand_over_bytes) * 1e3


def claims() -> Table[Claim]:
    """The brief's remaining figures as claims beside ppedu's, each with a verdict.

    >>> [c.holds for c in claims()]
    [False, False, False, True, False, False, False, False, False, False, False]
    """
    naive = [naive_idle(p) for p in range(2, 65)]
    speedup = 3.4
    readings = node_readings(speedup)
    possible = [r for r in readings if r.possible]
    big, small, h100, ib = MODELS["405b"], MODELS["70b"], GPUS["h100-80gb"], LINKS["ib-400"]
    # one chunk of 405B on 16 stages (its blocks in 16 parts), forward, against one hand-over
    chunk_ms = h100.seconds(sum(big.layer_flops()) / 16) * 1e3
    unit = Costs(f=1, b=1)
    inter = simulate(build("interleaved", 4, 8, 2), unit.per_chunk(2))
    zb2 = simulate(build("zb-h2", 4, 8), Costs(f=1, b=1, w=1))
    gaps = max(inner_gaps(zb2))
    one, gpipe = simulate(build("1f1b", 4, 8), unit), simulate(build("gpipe", 4, 8), unit)
    latency = Costs(f=1, b=1, comm=0.1)  # the same pipeline with a hand-over latency: 1F1B now idles more
    one_late, gpipe_late = simulate(build("1f1b", 4, 8), latency), simulate(build("gpipe", 4, 8), latency)
    single = simulate(build("gpipe", 4, 1), Costs(f=1, b=2))  # a naive pipeline: one micro-batch
    naive_busy = [b / single.makespan for b in single.busy_per_stage]
    waits = [min(e.start for e in single.on_stage(j)) for j in range(single.p)]
    utilization = 0.942
    return Table((
        Claim("brief", "naive pipeline schedules waste up to 45 % of cluster compute", "≤ 45%",
              f"a naive pipeline idles {min(naive):.0%} (p = 2) to {max(naive):.0%} (p = 64)", max(naive) <= 0.45),
        Claim("brief", "3.4× throughput vs a single-node baseline, at 94.2 % utilization", "3.4× at 94.2%",
              f"a node is {NODE} GPUs (an HGX board; the brief gives no size): "
              + ", ".join(f"{r.nodes} node{'s' if r.nodes > 1 else ''} against one at {r.baseline_utilization}"
                          for r in possible)
              + f"; {len(possible) + 1} or more would need the node above 100 %, and equal utilization on both "
              f"sides {speedup:g} nodes", any(r.nodes == speedup for r in readings)),
        Claim("brief", "70B–405B models, measured against a single-node baseline", "one node",
              f"weights, gradients and Adam alone fill {model_state_nodes(small, h100):.2f} nodes of 8 × H100 80GB "
              f"(Llama 2 70B) and {model_state_nodes(big, h100):.1f} (Llama 3.1 405B)",
              model_state_nodes(small, h100) <= 1),
        Claim("brief", "sub-10 ms inter-stage latency", "< 10 ms",
              f"a micro-batch's hand-over over {ib.name}: {hand_over_ms(small, ib):.2f} ms (70B, {small.seq} tokens), "
              f"{hand_over_ms(big, ib):.2f} ms (405B, {big.seq} tokens); true, and {hand_over_ms(big, ib) / chunk_ms:.1%} "
              f"of a 16-stage 405B chunk's forward ({chunk_ms:.0f} ms): not what limits the pipeline",
              max(hand_over_ms(small, ib), hand_over_ms(big, ib)) < 10),
        Claim("brief", "streaming activations in sub-3.2 ms", "< 3.2 ms",
              f"{hand_over_ms(big, ib):.2f} ms for 405B's {big.seq}-token micro-batch over {ib.name}",
              max(hand_over_ms(small, ib), hand_over_ms(big, ib)) < 3.2),
        Claim("brief", "asynchronous steady-state scheduling (interleaved 1F1B)", "asynchronous",
              "synchronous: a flush before every update, each gradient on the step's own weights (staleness 0); "
              f"asynchronous 1F1B (PipeDream) would apply GPU 0's {staleness(build('1f1b', 4, 8))[0]} updates late "
              "(p = 4)", False),
        Claim("brief", "zero-bubble micro-batching (interleaved 1F1B)", "zero bubble",
              f"interleaved 1F1B (p = 4, m = 8, v = 2) idles {inter.bubble_ratio:.2%}; zero bubble is Qi et al.'s split "
              f"backward (ZB-H2 leaves {gaps:g} idle inside each GPU's run at f = b = w and m ≥ 2p−1)",
              inter.bubble_ratio == 0),
        Claim("brief", "1F1B schedule bubble elimination", "no bubble",
              f"1F1B idles as much as GPipe, {one.bubble_ratio:.2%} of the step at p = 4, m = 8 (GPipe "
              f"{gpipe.bubble_ratio:.2%}) with balanced stages and free hand-overs, and more with a hand-over of 0.1 "
              f"({one_late.bubble_ratio:.2%} against {gpipe_late.bubble_ratio:.2%}): it saves activation memory, not "
              "idle time", one.bubble_ratio < gpipe.bubble_ratio or one_late.bubble_ratio < gpipe_late.bubble_ratio),
        Claim("brief", "naive schedules leave early GPU stages completely idle", "early stages idle",
              f"a naive pipeline (m = 1, p = 4) keeps every GPU busy {min(naive_busy):.0%} of the step, none idle "
              "throughout; before their first op the late stages wait (GPU j for j steps), not the early ones",
              min(naive_busy) == 0 or waits[0] > waits[-1]),
        Claim("brief", "94.2 % cluster utilization (read as MFU, as training reports use the word)", "94.2% MFU",
              f"at most the kernels' share of peak times the busy share: {h100.efficiency:.0%} × 94.2 % = "
              f"{h100.efficiency * utilization:.1%} with ppedu's H100 (its kernels' efficiency, an assumption). "
              "94.2 % can only be a pipeline's busy share, 1 − idle/total", h100.efficiency * utilization >= utilization),
        Claim("brief", "inter-stage latency under 10 ms, activations streamed in under 3.2 ms", "both",
              f"one hand-over, two bounds: {hand_over_ms(big, ib):.2f} ms for 405B over {ib.name} meets the first, not "
              "the second, and a stream under 3.2 ms would make a 10 ms guarantee moot: the brief contradicts itself",
              hand_over_ms(big, ib) < 3.2),
    ))

