"""The formula sheet: the source's lost contrast table (its section 4.6.2), rebuilt for every
schedule of the course, each closed form beside the value the simulator measures; the scale
part's closed forms beside :mod:`ppedu.cluster`'s values (:mod:`ppedu.scale_laws`); a glossary
and each chapter's takeaways. ``make sheet`` writes it as two A4 landscape pages to print on both
sides: the formulas on the first, the words on the second.

Every closed form holds under the course's shared cost model, :data:`~ppedu.costs.EQUAL`: forward, input-gradient
and weight-gradient passes of a whole stage take one unit each (a full backward takes two),
hand-overs are free, and an overlapped DualPipe pair takes its forward plus its full backward.
A schedule that cuts the model into ``v`` chunks per GPU pays ``1/v`` of that per chunk.

>>> row = next(r for r in formula_sheet(4, 8, 2) if r.schedule == "1F1B")
>>> row.idle_total, row.peak_activations
('(p−1)/(m+p−1) = 27.27 %', 'min(p−j, m): 4 3 2 1')
>>> agreement(4, 8, 2)
[]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import NamedTuple

from ppedu.costs import EQUAL, Costs
from ppedu.lesson import Table, hand_overs, parameter_copies
from ppedu.ops import Schedule
from ppedu.schedules import VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.validate import one_of, require_counts



class Formula(NamedTuple):
    """A closed form as the sheet prints it and as a function of ``(p, m, v, j)`` (``j`` the GPU)."""

    text: str
    value: Callable[[int, int, int, int], float]


class AnyCosts(NamedTuple):
    """The worst GPU's idle time per step under any costs of a whole stage, the same on every GPU — ``F`` forward,
    ``B`` full backward, ``W`` weight gradient (``b = B − W``), ``FB`` an overlapped pair — as printed, as a function
    of ``(p, v, F, B, W, FB)``, and where it holds (``(p, m, v, F, B, W, FB)``, ``FB`` ``None`` for pairs not booked
    as units)."""

    text: str
    value: Callable[[int, int, float, float, float, float], float]
    condition: str
    holds: Callable[[int, int, int, float, float, float, float | None], bool]


@dataclass(frozen=True)
class Law:
    """One schedule's closed forms under :data:`EQUAL`, and where they hold; its idle time under any costs where the
    course has a closed form for it (:func:`any_cost_agreement` checks it)."""

    schedule: str
    name: str
    idle_total: Formula
    bubble_ideal: Formula
    peak: Formula
    copies: Formula
    hand_overs: Formula
    constraints: str
    holds: Callable[[int, int, int], bool]
    any_costs: AnyCosts | None = None
    # forwards GPU j runs before its first backward: its warm-up and, when m exceeds it, the steady state's first
    before_backward: Formula | None = None


def _min_peak(p: int, m: int, v: int, j: int) -> float:
    return min(p - j, m)


def _bubble(k: int, c: str) -> tuple[Formula, Formula]:
    """Both bubble definitions when each GPU idles ``(p−k)`` units against ``c·m`` busy ones
    (``c`` is ``""``, ``"3"``, ``"6"``, ``"v·"`` or ``"3v·"``): ``(p−k)/(c·m+p−k)`` and ``(p−k)/(c·m)``."""
    def busy(m: int, v: int) -> int:
        return {"": 1, "3": 3, "6": 6, "v·": v, "3v·": 3 * v}[c] * m

    return (Formula(f"(p−{k})/({c}m+p−{k})", lambda p, m, v, j: (p - k) / (busy(m, v) + p - k)),
            Formula(f"(p−{k})/({c}m)" if c else f"(p−{k})/m", lambda p, m, v, j: (p - k) / busy(m, v)))


def _hand_overs(text: str, per_boundary: Callable[[int, int], int]) -> Formula:
    return Formula(text, lambda p, m, v, j: 2 * m * per_boundary(p, v))


_ONE = Formula("1", lambda p, m, v, j: 1)
_FLUSHED = AnyCosts("(p−1)(F+B)", lambda p, v, F, B, W, FB: (p - 1) * (F + B),
                    "any F, B, the same on every GPU; hand-overs free",
                    lambda p, m, v, F, B, W, FB: True)

#: The course's schedules, in the order the chapters teach them. ``holds`` is where the closed
#: forms are exact; outside it (but inside the constraints) the simulator still runs the schedule.
LAWS: tuple[Law, ...] = (
    Law("gpipe", "GPipe", *_bubble(1, ""), Formula("m", lambda p, m, v, j: m), _ONE,
        _hand_overs("2m(p−1)", lambda p, v: p - 1), "p ≥ 1, m ≥ 1", lambda p, m, v: True, _FLUSHED,
        Formula("m", lambda p, m, v, j: m)),
    Law("1f1b", "1F1B", *_bubble(1, ""), Formula("min(p−j, m)", _min_peak), _ONE,
        _hand_overs("2m(p−1)", lambda p, v: p - 1), "p ≥ 1, m ≥ 1", lambda p, m, v: True, _FLUSHED,
        Formula("min(p−j, m)", _min_peak)),
    Law("interleaved", "Interleaved 1F1B", *_bubble(1, "v·"),
        Formula("min(2(p−j−1)+(v−1)p+1, v·m)/v",
                lambda p, m, v, j: min(2 * (p - j - 1) + (v - 1) * p + 1, v * m) / v),
        Formula("1 (v chunks of 1/v)", lambda p, m, v, j: 1), _hand_overs("2m(p·v−1)", lambda p, v: p * v - 1),
        "bubble forms for m ≥ p; peak form for m a multiple of p (the 2021 paper's groups of p; "
        "ppedu runs any m, Megatron-LM any m ≥ p with its group size set, PyTorch 2.13 m a multiple of max(1, ⌊m/p⌋)); "
        "hand-overs for p ≥ 2", lambda p, m, v: m % p == 0 and p >= 2,
        AnyCosts("(p−1)(F+B)/v", lambda p, v, F, B, W, FB: (p - 1) * (F + B) / v, "m a multiple of p",
                 lambda p, m, v, F, B, W, FB: m % p == 0),
        Formula("min(2(p−j−1)+(v−1)p+1, v·m) chunk-forwards",
                lambda p, m, v, j: min(2 * (p - j - 1) + (v - 1) * p + 1, v * m))),
    # GPU j postpones its first j W's, and W keeps its activations: p-j in flight to B, plus j awaiting W.
    Law("looped-bfs", "Looped BFS", *_bubble(1, "v·"), Formula("m", lambda p, m, v, j: m),
        Formula("1 (v chunks of 1/v)", lambda p, m, v, j: 1), _hand_overs("2m(p·v−1)", lambda p, v: p * v - 1),
        "all forwards of a chunk before the next chunk's, as GPipe; closed forms for m ≥ p ≥ 2",
        lambda p, m, v: m >= p >= 2),
    Law("zb-h1", "ZB-H1", *_bubble(1, "3"),
        Formula("min(p, m) (min(p−j, m) if B freed them)", lambda p, m, v, j: min(p, m)), _ONE,
        _hand_overs("2m(p−1)", lambda p, v: p - 1), "W separable from B; closed forms for m ≥ p",
        lambda p, m, v: m >= p,
        # Only the regime chapter 6b derives: the form for every cost is problem set 4's graded question 1.
        AnyCosts("(p−1)(F+B−2W), DeepSeek's ZB1P row", lambda p, v, F, B, W, FB: (p - 1) * (F + B - 2 * W),
                 "m ≥ p and W ≤ min(F, B−W), chapter 6b; for a longer W, derive it in problem set 4",
                 lambda p, m, v, F, B, W, FB: m >= p and W <= min(F, B - W)),
        Formula("min(p−j, m)", _min_peak)),
    # Under equal costs ZB-H2 idles as long as ZB-H1, p−1 per GPU, but only before a GPU's first op and after its
    # last (from m ≥ 2p−1): the parallelogram the next step can overlap. Its W's run in the steady state, so every
    # GPU keeps at most 2p−1 micro-batches in flight, and reaches it.
    Law("zb-h2", "ZB-H2", *_bubble(1, "3"), Formula("min(2p−1, m)", lambda p, m, v, j: min(2 * p - 1, m)), _ONE,
        _hand_overs("2m(p−1)", lambda p, v: p - 1), "W separable from B; closed forms for m ≥ p",
        lambda p, m, v: m >= p,
        # Only the regime chapter 10 finds: the form for every cost is problem set 6's graded question 1.
        AnyCosts("(p−1)F", lambda p, v, F, B, W, FB: (p - 1) * F,
                 "m ≥ 2p−1 and B−W ≤ 2·min(F, W), chapter 10; for other costs, derive it in problem set 6",
                 lambda p, m, v, F, B, W, FB: m >= 2 * p - 1 and B - W <= 2 * min(F, W)),
        Formula("min(2(p−j)−1, m)", lambda p, m, v, j: min(2 * (p - j) - 1, m))),
    Law("interleaved-zb", "Interleaved zero bubble", *_bubble(1, "3v·"),
        Formula("p", lambda p, m, v, j: p),
        Formula("1 (v chunks of 1/v)", lambda p, m, v, j: 1), _hand_overs("2m(p·v−1)", lambda p, v: p * v - 1),
        "W separable from B; closed forms for m a multiple of p, p ≥ 2 (bubble forms for any m ≥ p)",
        lambda p, m, v: m % p == 0 and p >= 2),
    Law("zb-v", "ZB-V", *_bubble(1, "6"), Formula("p", lambda p, m, v, j: p),
        Formula("1 (2 chunks of ½)", lambda p, m, v, j: 1), _hand_overs("4m(p−1)", lambda p, v: 2 * (p - 1)),
        "W separable from B; closed forms for m ≥ 2p−1", lambda p, m, v: m >= 2 * p - 1),
    Law("dualpipe", "DualPipe", *_bubble(2, "3"), Formula("p+1", lambda p, m, v, j: p + 1),
        Formula("2", lambda p, m, v, j: 2), _hand_overs("2m(p−1)", lambda p, v: p - 1),
        "p even, m even, m ≥ 2p; F&B pairs booked as one unit (f + b + w)",
        lambda p, m, v: True,
        AnyCosts("(p/2−1)(F&B+B−3W) (DeepSeek-V3's)", lambda p, v, F, B, W, FB: (p / 2 - 1) * (FB + B - 3 * W),
                 "only where F = B−W, W ≤ B−W, F+W ≤ F&B ≤ F+B, p ≥ 6 (pairs booked as units); off almost "
                 "everywhere else (ppedu.errata.deepseek_table)",
                 lambda p, m, v, F, B, W, FB: FB is not None and F == B - W and W <= B - W and F + W <= FB <= F + B
                 and p >= 6)),
    Law("dualpipe-v", "DualPipeV", *_bubble(1, "3"),
        Formula("p+½ (2p+1 half-stage chunks)", lambda p, m, v, j: p + 0.5),
        Formula("1 (2 chunks of ½)", lambda p, m, v, j: 1), _hand_overs("4m(p−1)", lambda p, v: 2 * (p - 1)),
        "m ≥ 2p; F&B pairs booked as one unit (f + b + w)", lambda p, m, v: True),
    # Chimera's basic units are drawn for B = F: with B = 2F (as here) each unit of p micro-batches idles p−2 more.
    Law("chimera", "Chimera",
        Formula("(p−2)(m+p)/(3mp+(p−2)(m+p))", lambda p, m, v, j: (p - 2) * (m + p) / (3 * m * p + (p - 2) * (m + p))),
        Formula("(p−2)(m+p)/(3mp)", lambda p, m, v, j: (p - 2) * (m + p) / (3 * m * p)),
        Formula("p/2+1+min(j, p−1−j)", lambda p, m, v, j: p // 2 + 1 + min(j, p - 1 - j)),
        Formula("2", lambda p, m, v, j: 2), _hand_overs("2m(p−1)", lambda p, v: p - 1),
        "p even, m even; closed forms for m a multiple of p (its basic units, drawn for B = F)",
        lambda p, m, v: m % p == 0),
)
#: The schedules of the chapters' comparison of bubbles as m grows (:func:`as_m_grows`).
_GROWING = ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe", "dualpipe-v")


def law(schedule: str) -> Law:
    """The closed forms of ``schedule`` (a course name, as the CLI spells it).

    >>> law("dualpipe").copies.text
    '2'
    """
    by_name = {x.schedule: x for x in LAWS}
    return by_name[one_of("schedule", schedule, by_name)]


@dataclass(frozen=True)
class Measured:
    """What the simulator reports for one schedule at one size under :data:`EQUAL`."""

    idle_total: float
    bubble_ideal: float
    peak: tuple[float, ...]
    copies: float
    hand_overs: int
    before_backward: tuple[int, ...] = ()


def _before_backward(s: Schedule) -> tuple[int, ...]:
    """Per GPU, the forwards it runs before its first backward."""
    return tuple(next((k for k, op in enumerate(ops) if op.kind != "F"), len(ops)) for ops in s.stages)


def measure(schedule: str, p: int, m: int, v: int = 1) -> Measured:
    """Simulate ``schedule`` at ``(p, m, v)`` under :data:`EQUAL` (``v`` only for those that take it).

    >>> measure("dualpipe", 4, 8).peak
    (5.0, 5.0, 5.0, 5.0)
    """
    s = build(schedule, p, m, v if schedule in VIRTUAL else 1)
    t: Timeline = simulate(s, EQUAL.per_chunk(s.virtual))
    return Measured(t.bubble_ratio, t.bubble_over_ideal, t.peak_stage_activations, parameter_copies(s),
                    hand_overs(s), _before_backward(s))


def closed(schedule: str, p: int, m: int, v: int = 1) -> Measured:
    """The same figures from the closed forms alone.

    >>> closed("interleaved", 4, 8, 2).peak
    (5.5, 4.5, 3.5, 2.5)
    """
    x, v = law(schedule), v if schedule in VIRTUAL else 1
    return Measured(x.idle_total.value(p, m, v, 0), x.bubble_ideal.value(p, m, v, 0),
                    tuple(float(x.peak.value(p, m, v, j)) for j in range(p)), x.copies.value(p, m, v, 0),
                    int(x.hand_overs.value(p, m, v, 0)),
                    tuple(int(x.before_backward.value(p, m, v, j)) for j in range(p)) if x.before_backward
                    else ())


def agreement(p: int, m: int, v: int = 2) -> list[str]:
    """Every entry where closed form and simulation differ at ``(p, m, v)``, as sentences; the
    schedules that cannot run there, or whose closed forms do not claim to hold, are skipped.

    >>> agreement(4, 8, 2)
    []
    """
    out = []
    for x in LAWS:
        try:
            got = measure(x.schedule, p, m, v)
        except ValueError:
            continue
        if not x.holds(p, m, v if x.schedule in VIRTUAL else 1):
            continue
        want = closed(x.schedule, p, m, v)
        for field in ("idle_total", "bubble_ideal", "peak", "copies", "hand_overs", "before_backward"):
            a, b = getattr(got, field), getattr(want, field)
            if field == "before_backward" and not b:
                continue
            same = all(abs(i - k) < 1e-9 for i, k in zip(a, b)) if isinstance(a, tuple) else abs(a - b) < 1e-9
            if not same:
                out.append(f"{x.name} at p={p}, m={m}, v={v}: {field} simulated {a}, closed form {b}")
    return out


def any_cost_idle(schedule: str, p: int, m: int, costs: Costs, v: int = 1) -> tuple[float, float]:
    """The worst GPU's idle time per step of ``schedule`` under ``costs`` (given for a whole stage): simulated, and
    by the sheet's any-cost form.

    >>> any_cost_idle("zb-h1", 4, 8, Costs(f=2, b=2, w=1))  # W ≤ min(F, B−W): (p−1)(F+B−2W)
    (9.0, 9.0)
    """
    x, v = law(schedule), v if schedule in VIRTUAL else 1
    if x.any_costs is None:
        raise ValueError(f"the sheet has no any-cost form for {x.name}")
    s = build(schedule, p, m, v)
    t = simulate(s, costs.per_chunk(s.virtual))
    F, B, W = costs.forward(0), costs.backward(0, full=True), costs.weight(0)
    FB = costs.pair(0)
    return (max(t.makespan - busy for busy in t.busy_per_stage),
            x.any_costs.value(p, v, F, B, W, F + B if FB is None else FB))


def any_cost_agreement(p: int, m: int, costs: Costs, v: int = 2) -> list[str]:
    """Every schedule whose any-cost form claims to hold at ``(p, m, v)`` under ``costs`` but differs from the
    simulator, as sentences (the schedules that cannot run there are skipped).

    >>> any_cost_agreement(4, 8, Costs(f=1, b=2, w=1.5))
    []
    """
    out = []
    F, B, W, FB = costs.forward(0), costs.backward(0, full=True), costs.weight(0), costs.pair(0)
    for x in LAWS:
        w = v if x.schedule in VIRTUAL else 1
        if x.any_costs is None or not x.any_costs.holds(p, m, w, F, B, W, FB):
            continue
        try:
            got, want = any_cost_idle(x.schedule, p, m, costs, v)
        except ValueError:
            continue
        if abs(got - want) > 1e-9:
            out.append(f"{x.name} at p={p}, m={m}, v={w}, {costs}: idle simulated {got:g}, any-cost form {want:g}")
    return out


@dataclass(frozen=True)
class Limit:
    """Idle/total of every schedule at one ``m`` (``None`` where it cannot run)."""

    m: int
    GPipe: str
    _1F1B: str
    interleaved: str
    ZB_H1: str
    DualPipe: str
    DualPipeV: str


def as_m_grows(p: int, ms: tuple[int, ...], v: int = 2) -> Table[Limit]:
    """Each schedule's simulated idle/total at ``p`` GPUs for each ``m`` in ``ms``: every one of
    them tends to zero as ``m`` grows, not DualPipe alone.

    >>> as_m_grows(4, (8,)).rows[0]._1F1B
    '27.27 %'
    """
    rows = []
    for m in ms:
        cells = []
        for x in (law(name) for name in _GROWING):
            try:
                cells.append(f"{measure(x.schedule, p, m, v).idle_total:.2%}".replace("%", " %"))
            except ValueError:
                cells.append("—")
        rows.append(Limit(m, *cells))
    return Table(tuple(rows))


@dataclass(frozen=True)
class Entry:
    """One row of the printed sheet: each closed form with its simulated value at one size."""

    schedule: str
    idle_total: str
    bubble_ideal: str
    peak_activations: str
    parameter_copies: str
    hand_overs: str
    constraints: str
    before_backward: str
    worst_idle_any_costs_the_same_on_every_GPU: str  # the heading the notebook shows, as the HTML's


def formula_sheet(p: int = 4, m: int = 8, v: int = 2) -> Table[Entry]:
    """The contrast table at a worked size: every value measured by the simulator. A schedule
    that cannot run at ``(p, m, v)`` shows its constraint in place of numbers."""
    require_counts(p=p, m=m, v=v)
    rows = []
    for x in LAWS:
        try:
            got = measure(x.schedule, p, m, v)
        except ValueError as e:
            rows.append(Entry(x.name, x.idle_total.text, x.bubble_ideal.text, x.peak.text, x.copies.text,
                              x.hand_overs.text, f"{x.constraints} — not at this size: {e}", *_any(x)))
            continue
        rows.append(Entry(
            x.name, f"{x.idle_total.text} = {got.idle_total:.2%}".replace("%", " %"),
            f"{x.bubble_ideal.text} = {got.bubble_ideal:.2%}".replace("%", " %"),
            f"{x.peak.text}: " + " ".join(f"{a:g}" for a in got.peak),
            f"{x.copies.text}" if float(x.copies.text.split()[0]) == got.copies else f"{got.copies:g}",
            f"{x.hand_overs.text} = {got.hand_overs}",
            x.constraints if x.holds(p, m, v if x.schedule in VIRTUAL else 1)
            else f"{x.constraints} — not every form holds at this size; the numbers are the simulator's",
            f"{x.before_backward.text}: " + " ".join(map(str, got.before_backward)) if x.before_backward
            else "—",
            _any(x)[1]))
    return Table(tuple(rows))


def _any(x: Law) -> tuple[str, str]:
    return (x.before_backward.text if x.before_backward else "—",
            f"{x.any_costs.text} ({x.any_costs.condition})" if x.any_costs else "— (simulate it)")


#: The words the course uses, each in one sentence.
GLOSSARY: dict[str, str] = {
    "stage / GPU (p)": "One of the p devices of the pipeline, holding a contiguous slice of the model's layers.",
    "micro-batch (m)": "One of the m equal slices of a mini-batch; gradients of all m are averaged, weighted by "
                       "size, into one optimizer step.",
    "chunk (v)": "A slice of the model; interleaving gives each GPU v non-adjacent chunks of 1/v of a stage.",
    "F, B, W": "Forward; backward (the input gradient ∂L/∂a, which the previous stage waits for); weight "
               "gradient ∂L/∂W, which nobody waits for until the optimizer step.",
    "slot": "One GPU for one time unit: it holds one operation (or a time unit of a longer one) or nothing, and is "
            "then idle; a grid has p × T slots.",
    "bubble (idle/total)": "Idle slots ÷ all slots, the textbook's definition.",
    "bubble (bubble/ideal)": "Idle time ÷ busy time, Megatron-LM's definition; r/(1+r) converts it to idle/total.",
    "makespan (T)": "Time from the first operation of a step to the last.",
    "warm-up / steady state / cooldown": "The pipeline filling, each GPU then alternating one forward and one "
                                         "backward, and the pipeline draining. GPU j's warm-up is the forwards "
                                         "before its steady state, 1F1B's min(p−j−1, m); the sheet's column "
                                         "'before backward' counts the forwards before its first backward, the "
                                         "warm-up and, when m exceeds it, the steady state's first: 1F1B's "
                                         "min(p−j, m).",
    "flush": "Waiting for every micro-batch's backward before the optimizer step: synchronous training.",
    "activations in flight": "Micro-batches a stage has run forward but not yet backward; each keeps its "
                             "activations until then.",
    "hand-over": "An activation or gradient sent to another GPU: one per chunk boundary that crosses GPUs.",
    "recomputation": "Keeping only a stage's or layer's input and re-running its forward inside the backward: "
                     "memory for time.",
    "weight stashing": "PipeDream's copy of the weights a micro-batch's forward used, kept for its backward.",
    "staleness": "How many optimizer updates lie between the weights a gradient was computed on and the "
                 "weights it is applied to.",
    "overlapped pair (F&B)": "DualPipe's forward chunk of one stream run together with a backward chunk of the other, "
                             "each one's computation hiding the other's communication (in DeepSeek-V3 the experts' "
                             "all-to-all and the pipeline's sends).",
    "transient (recomputation)": "What recomputation rebuilds during a backward, alive only while that backward runs: "
                                 "one block's activations, or a whole stage's under GPipe's re-materialisation.",
    "ZeRO / FSDP": "Sharding over the data-parallel replicas the optimizer state (stage 1), the gradients too (2), the "
                   "weights too (3, FSDP); beside a pipeline stages 2 and 3 pay their collectives per micro-batch.",
    "MFU": "Model FLOPs utilization: the model's FLOPs in a step (three times its forward) ÷ the GPUs' peak over the step.",
    "lower bound": "A makespan no order can beat (ppedu.search.lower_bound): the busiest GPU's work, the first forward "
                   "pass before any backward, the last backward pass after every forward, one micro-batch's path.",
    "3D parallelism": "Tensor (t) × pipeline (p) × data (d) parallel: t·p·d GPUs.",
    "α–β cost": "A message of M bytes takes α + M·β (latency, and time per byte); a collective steps·α + sent·β.",
    "algbw / busbw": "What NCCL-tests print: the buffer over the time, and that times the collective's factor "
                     "(2(n−1)/n for all-reduce), to compare with the link's bandwidth whatever n is.",
    "sequence / context parallelism": "Splitting along the tokens: the norms and dropouts between tensor-parallel "
                                      "regions (sequence), or a whole long sequence with attention's keys and values "
                                      "passed or gathered (context).",
    "expert parallelism": "A mixture of experts' experts spread over GPUs; each layer sends every token to its experts "
                          "and back (two all-to-alls forward, two backward).",
    "capacity factor": "How many tokens an expert takes, as a multiple of an even share; more drops fewer, pads more.",
    "goodput": "The share of a job's time that trains, after checkpoints, work redone after failures and restarts.",
    "noise scale (critical batch)": "tr(Σ)/|G|²: below it a larger batch takes proportionally fewer steps, above it "
                                    "it wastes examples.",
}

#: Per chapter, what a student should keep (no figures: the sheet and the chapters compute those).
TAKEAWAYS: dict[str, tuple[str, ...]] = {
    "1 · The bubble problem": (
        "A pipeline idles while it fills and drains; count idle slots over p × T slots.",
        "Two definitions are in use (idle/total, bubble/ideal); convert with r/(1+r) before comparing figures.",
    ),
    "2 · GPipe": (
        "All forwards, then all backwards, then one synchronous update: the bubble is (p−1)/(m+p−1).",
        "Every stage keeps m micro-batches of activations — memory grows with m; GPipe recomputes to cope.",
    ),
    "3 · 1F1B": (
        "Same bubble as GPipe on equally fast stages with free hand-overs; its gain is memory: at most min(p−j, m) in flight on GPU j.",
        "It is PipeDream's schedule made synchronous by a flush (PipeDream-Flush).",
    ),
    "4 · Interleaved 1F1B": (
        "v chunks per GPU divide the bubble time by v; GPU j warms up with 2(p−j−1) + (v−1)p chunk-forwards: the "
        "loops, then the turn up the pipeline and back.",
        "The idle/total ratio falls by less than the idle time: say which bubble a figure is.",
    ),
    "4b · What interleaving costs": (
        "A micro-batch crosses GPUs 2(pv−1) times instead of 2(p−1): v + (v−1)/(p−1) times the hand-overs, "
        "near v only for deep pipelines; each still carries a whole activation.",
        "Parameters per GPU are unchanged; warm-up activations grow; a slow link can eat the gain.",
    ),
    "5 · Zero bubble": (
        "Splitting B from W lets W fill the bubble (zero bubble); what W needs is still memory.",
        "No schedule beats the slowest stage: balance the partition first.",
    ),
    "6 · DualPipe": (
        "Two streams in opposite directions fill each other's triangles; two parameter copies, p+1 activations.",
        "Its real gain is overlapped pairs that hide communication; Chimera (2021) was bidirectional first.",
    ),
    "6b · DeepSeek's formulas": (
        "1F1B's (p−1)(F+B) and ZB1P's (p−1)(F+B−2W) follow from the last GPU's fill and drain; the second holds "
        "only while W ≤ min(F, B−W).",
        "DualPipe's formula cannot go below the middle rank's fill (p/2−1)F: it must fail for F&B < F + 3W − B — a "
        "floor, not the boundary: it holds only where F = B − W and F + W ≤ F&B ≤ F + B (W ≤ B − W, p ≥ 6).",
    ),
    "7 · The MNIST lab": (
        "Every schedule computes the same gradients; only time and memory differ.",
        "Measured costs predict a real step once warm-up outliers are excluded.",
    ),
    "8 · Memory and recomputation": (
        "Say what the baseline keeps: FlashAttention keeps no s × s scores, so recomputing the attention core saves "
        "nothing more (Megatron-LM's default selective mode then only re-runs the kernel); other modules still can.",
        "Recomputation trades a forward run again, and a transient during the backward, for keeping only inputs.",
    ),
    "9 · 3D parallelism and history": (
        "The global batch fixes m = B ÷ (d · micro-batch): more data parallelism means fewer micro-batches "
        "and a larger bubble.",
        "Synchronous flushes (GPipe, 1F1B) trade a bubble for exact gradients; PipeDream trades staleness for none.",
    ),
    "10 · The design space": (
        "Compare schedules only on one model and one cost model; the frontier, not one winner, is the answer.",
        "A lower bound says how far from optimal an order can be: with overlapped pairs, pairs count too.",
    ),
    "11 · The lab across processes": (
        "A deadlock is a cycle of waits; a valid order deadlocks when sends block, and isend/irecv remove it.",
        "The simulator models the schedule, not the transport: a measured step shows what it leaves out.",
    ),
    "12 · Collectives, tensor, sequence and context parallelism": (
        "A collective costs steps·α + bytes·β: a ring all-reduce 2(n−1) steps and 2(n−1)/n of the buffer per GPU; a "
        "tree fewer steps and a little more bytes — it wins on small buffers. busbw = algbw × the collective's factor.",
        "Tensor parallelism splits the MLP by columns then rows and all-reduces every block (keep it on NVLink); sequence "
        "parallelism divides the rest of the activations for a quarter more bytes (the backward re-gathers inputs); context parallelism passes keys and "
        "values, hidden when a GPU's block is long enough.",
    ),
    "13 · Experts and sharded data parallelism": (
        "Experts cost memory for all, FLOPs for the k a token uses; their all-to-all crosses nodes every layer, which "
        "capacity, node limits and DualPipe's pairs contain.",
        "ZeRO shards optimizer state, gradients, weights: 2Ψ, 2Ψ, 3Ψ of traffic; beside a pipeline stages 2 and 3 pay "
        "per micro-batch unless the order is breadth-first.",
    ),
    "14 · Training at scale": (
        "Recompute a published MFU from figures it was not computed from (GPU hours and tokens); a table can disagree "
        "with itself. MFU falls with the bubble, recomputation and exposed communication.",
        "Failures grow with the GPUs: checkpoint every √(2·C·MTBF) and make restarts fast. Past the noise scale a "
        "larger batch buys few steps and wastes examples.",
    ),
}


class Markdown(str):
    """Text that a notebook shows as Markdown."""

    def _repr_markdown_(self) -> str:
        return str(self)


def glossary() -> Markdown:
    """The glossary as a Markdown list.

    >>> print(glossary().splitlines()[2])
    - **chunk (v)**: A slice of the model; interleaving gives each GPU v non-adjacent chunks of 1/v of a stage.
    """
    return Markdown("\n".join(f"- **{k}**: {d}" for k, d in GLOSSARY.items()))


def takeaways() -> Markdown:
    """Each chapter's takeaways as Markdown."""
    return Markdown("\n\n".join(f"**{k}**\n\n" + "\n".join(f"- {x}" for x in items) for k, items in TAKEAWAYS.items()))


def render_html(p: int = 4, m: int = 8, v: int = 2) -> str:
    """The sheet as a printable HTML document of two A4 landscape pages, to print on both sides: the formulas — every
    schedule's closed forms beside the simulator's values, and the scale part's beside :mod:`ppedu.cluster`'s — on the
    first; the glossary and each chapter's takeaways on the second."""
    from ppedu.scale_laws import ScaleEntry, scale_sheet  # the cluster's laws: imported only when the page is drawn

    def table(head: tuple[str, ...], rows: Table, fields: tuple[str, ...], css: str) -> str:
        body = "".join("<tr>" + "".join(f"<td>{escape(str(getattr(r, f)))}</td>" for f in fields) + "</tr>"
                       for r in rows)
        return f'<table class="{css}"><tr>' + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{body}</table>"

    schedules = table(("schedule", "bubble idle/total", "bubble/ideal", "peak activations per GPU j (stages)",
                       "parameter copies", "hand-overs per step", "constraints",
                       "forwards before GPU j's first backward",
                       "worst GPU's idle, any costs the same on every GPU (F, B full, W, F&B)"),
                      formula_sheet(p, m, v),
                      tuple(Entry.__dataclass_fields__), "schedules")
    scale = table(("topic", "closed form", "at", "the formula gives", "ppedu computes", "chapter; source"),
                  scale_sheet(), tuple(ScaleEntry.__dataclass_fields__), "scale")
    glossary = "".join(f"<dt>{escape(k)}</dt><dd>{escape(d)}</dd>" for k, d in GLOSSARY.items())
    takeaways = "".join(f"<h3>{escape(k)}</h3><ul>" + "".join(f"<li>{escape(x)}</li>" for x in items) + "</ul>"
                        for k, items in TAKEAWAYS.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ppedu formula sheet</title>
<style>
@page {{ size: A4 landscape; margin: 7mm; }}
body {{ font: 7pt/1.15 system-ui, sans-serif; margin: 0; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border: 1px solid #888; padding: 0 3px; }}
th {{ background: #eee; text-align: left; }} h1 {{ font-size: 11pt; margin: 0 0 2px; }}
h2 {{ font-size: 9pt; margin: 4px 0 2px; }} p {{ margin: 0 0 3px; }}
table.schedules td:last-child {{ width: 30%; }} table.scale td:nth-child(2) {{ width: 27%; }}
h3 {{ font-size: 7.2pt; margin: 2px 0 0; }} dl {{ columns: 4; margin: 0; }} dt {{ font-weight: bold; }}
dd {{ margin: 0 0 1px 6px; }} .takeaways {{ columns: 4; }} ul {{ margin: 0 0 2px; padding-left: 10px; }}
h2, h3, dt {{ break-after: avoid; }} dd, li, tr {{ break-inside: avoid; }}
.page {{ break-before: page; }}
</style></head><body>
<h1>Pipeline parallelism: the formula sheet</h1>
<p>Schedules — costs: forward = input-gradient = weight-gradient = 1 per whole stage (a full backward 2); v chunks pay
1/v each; free hand-overs; a DualPipe pair takes F + full B. Values measured by ppedu's simulator at p = {p}, m = {m},
v = {v}. GPU j counts from 0; activations are whole stages' worth, alive from a forward until the last pass that needs
them ends: the backward, or W where W is split off (ppedu.memory's default).</p>
{schedules}
<h2>The scale part: each closed form at a chapter's example, beside what ppedu.cluster computes its own way</h2>
<p>α a step's latency, β = 1/B the time per byte, n GPUs, M (NCCL-tests' S) the whole buffer; Ψ parameters over d
replicas; s·b·h a block's activations, a heads, t tensor-parallel GPUs; F achieved FLOP/s, w the attention's width,
w_kv the keys' and values'; T tokens, k of E experts over e GPUs, f the capacity factor; C a checkpoint's time.</p>
{scale}
<h2 class="page">Glossary</h2><dl>{glossary}</dl>
<h2>Each chapter's takeaways</h2><div class="takeaways">{takeaways}</div>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m ppedu.sheet --out build/formula-sheet.html [-p 4 -m 8 -v 2]``."""
    parser = argparse.ArgumentParser(prog="python -m ppedu.sheet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/formula-sheet.html"))
    parser.add_argument("-p", type=int, default=4)
    parser.add_argument("-m", type=int, default=8)
    parser.add_argument("-v", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        page = render_html(args.p, args.m, args.v)
    except ValueError as e:
        parser.exit(2, f"ppedu.sheet: {e}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
