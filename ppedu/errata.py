"""The course's source texts beside ppedu's simulation: each claim, the computed value, a verdict.

The textbook chapter and the vendor brief the course reads quote figures; here every one is
recomputed (the simulator is the authority), so a notebook can show the errata openly.

>>> c = textbook_claims()[0]
>>> c.claimed, c.computed, c.holds
('11', '14 (GPipe), 14 (1F1B)', False)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from ppedu.cluster.hardware import MODELS, Model
from ppedu.cluster.parallel import Parallel, data_parallel
from ppedu.costs import EQUAL, Costs
from ppedu.formulas import bubble_over_ideal, bubble_ratio, to_idle_total
from ppedu.grid import grid
from ppedu.lesson import Table, hand_overs, parameter_copies
from ppedu.ops import Schedule
from ppedu.schedules import dualpipe, gpipe, interleaved_1f1b, one_f_one_b, zero_bubble_h1
from ppedu.simulate import Timeline, simulate

Definition = Literal["idle/total", "bubble/ideal"]


@dataclass(frozen=True)
class Claim:
    """One statement of a source text: where it stands, what it says, its figure, ppedu's figure."""

    section: str
    statement: str
    claimed: str
    computed: str
    holds: bool


def textbook_claims(*sections: str) -> Table[Claim]:
    """The figures of the textbook chapter, each recomputed under its own unit-cost model; with
    ``sections``, only the claims of sections that start with one of them.

    >>> [c.section for c in textbook_claims() if not c.holds][:3]
    ['4.6.1', '4.6.1', '4.6.1']
    >>> [c.statement for c in textbook_claims("4.2.3")][0]
    "GPipe's backward wave runs in"
    """
    unit = Costs(f=1, b=1)
    g, o = simulate(gpipe(4, 4), unit), simulate(one_f_one_b(4, 4), unit)
    g8, o8 = simulate(gpipe(4, 8), unit), simulate(one_f_one_b(4, 8), unit)
    i8 = simulate(interleaved_1f1b(4, 8, 2), unit.per_chunk(2))
    big = simulate(one_f_one_b(4, 32), unit)
    first, last = backward_wave(g)
    before_b = next(i for i, op in enumerate(o8.schedule.stages[0]) if op.kind == "B")
    d = simulate(dualpipe(4, 8), unit)
    forward_end = forward_wave(g)[1]
    handed_i, handed_o = hand_overs(i8.schedule), hand_overs(o8.schedule)
    plain_links = links_of(o8.schedule)
    per_link = {link: n / plain_links[link] for link, n in links_of(i8.schedule).items() if link in plain_links}
    busy_at_start = {e.stage for e in d.events if e.start == 0}
    summed = summed_gradient_scale(4)
    handed, computed = hand_over_scale(2)
    nodes = DEEPSEEK_V3_GPUS // DEEPSEEK_V3_NODE
    hourglass = [sum(1 for row in grid(g).kinds() if row[t]) for t in range(4, 10)]
    # GPU 0's peak in mini-batches' worth when a fixed mini-batch is cut into m micro-batches
    held_gpipe, held_1f1b = ({simulate(s(4, m)).peak_activations[0] / m for m in (4, 8, 16, 32)}
                             for s in (gpipe, one_f_one_b))
    waits = [min(e.start for e in o8.on_stage(j)) for j in range(o8.p)]
    pairs = dualpipe(8, 20)
    overlapped_on_0 = sum(1 for op in pairs.overlapped if pairs.home(op) == 0)
    dual, one = simulate(pairs, EQUAL), simulate(one_f_one_b(8, 20), EQUAL)
    v3 = Model("DeepSeek-V3's shape", layers=61, hidden=7168, vocab=129280, seq=4096, heads=128)
    mla_bytes = (v3.hand_over_bytes, replace(v3, kv_heads=1).hand_over_bytes)  # 128 KV heads, or one
    zero1, zero2 = (len(data_parallel(1e9, MODELS["70b"], Parallel(d=4, zero=z), 32)) for z in (1, 2))
    rows = (
        Claim("4.6.1", "p = 4, m = 4 takes this many time steps", "11",
              f"{g.makespan:g} (GPipe), {o.makespan:g} (1F1B)", g.makespan == o.makespan == 11),
        Claim("4.6.1", "total slots S_total", "44", f"{g.total_slots:g}", g.total_slots == 44),
        Claim("4.6.1", "idle slots of GPipe", "18", f"{g.idle_slots:g}", g.idle_slots == 18),
        Claim("4.6.1", "idle slots of 1F1B", "16", f"{o.idle_slots:g}", o.idle_slots == 16),
        Claim("4.6.1", "bubble ratio of GPipe", "40.91%", f"{g.bubble_ratio:.2%}", round(g.bubble_ratio, 4) == 0.4091),
        Claim("4.6.1", "bubble ratio of 1F1B", "36.36%", f"{o.bubble_ratio:.2%}", round(o.bubble_ratio, 4) == 0.3636),
        Claim("4.2.3", "GPipe's backward wave runs in", "t8 … t11", f"t{first} … t{last}", (first, last) == (8, 11)),
        Claim("4.2.1", "GPipe's forward wave ends at", "t7", f"t{forward_end}", forward_end == 7),
        Claim("4.3, 4.6.1", "1F1B has a smaller bubble than GPipe (p = 4, m = 8)", "16 < 18 idle slots",
              f"{o8.idle_slots:g} = {g8.idle_slots:g} idle slots", o8.idle_slots < g8.idle_slots),
        Claim("4.6.1", "1F1B caps peak activations at O(p) (p = 4, m = 32)", "≤ p per GPU",
              _tuple(big.peak_activations), max(big.peak_activations) <= 4),
        Claim("4.3.1", "1F1B's GPU 0 runs p forwards before its first backward", "4",
              f"{before_b}", before_b == 4),
        Claim("4.4, 4.6.1", "v = 2 halves the bubble (p = 4, m = 8)", "-50%",
              f"idle time {o8.idle_slots:g} → {i8.idle_slots:g} ({i8.idle_slots / o8.idle_slots - 1:+.0%}); "
              f"idle/total {o8.bubble_ratio:.2%} → {i8.bubble_ratio:.2%} ({i8.bubble_ratio / o8.bubble_ratio - 1:+.1%})",
              i8.idle_slots * 2 == o8.idle_slots),
        Claim("4.4.5", "v = 2 doubles the hand-overs between GPUs (p = 4; Megatron-LM: ×v)", "×2",
              f"×{min(per_link.values()):g} on each link 1F1B uses; ×{handed_i / handed_o:.2f} in all, "
              f"with the new link GPU {o8.schedule.p - 1} → GPU 0", set(per_link.values()) == {2}),
        Claim("4.4.5", "v = 2 chunks increase static model state per GPU", "more than 1F1B",
              f"{parameter_copies(i8.schedule):g} stage of parameters (v chunks of 1/v), as 1F1B's "
              f"{parameter_copies(o8.schedule):g}", parameter_copies(i8.schedule) > parameter_copies(o8.schedule)),
        Claim("4.5.1", "DualPipe keeps GPU 0 and GPU p-1 busy from t1 (p = 4)", "both",
              "GPUs " + ", ".join(str(s) for s in sorted(busy_at_start)), busy_at_start == {0, 3}),
        Claim("4.2.2", "the update subtracts η times the sum of the m micro-batch gradients (m = 4)",
              "the mini-batch's step", f"{summed:g} × the mini-batch's gradient (each L_k a mean loss): a step "
              f"{summed:g} times too long; weight each by its share B_k/B", summed == 1),
        Claim("4.4.2", "each hand-over takes 1/v of the original time step (v = 2)", "×0.5",
              f"×{handed:g}: a hand-over still carries a whole activation (tokens × hidden), "
              f"{MODELS['7b'].hand_over_bytes / 1e6:.1f} MB for Llama 2 7B at any v; a chunk's compute is what "
              f"shrinks, ×{computed:g}", handed == 0.5),
        Claim("4.7.1", "DeepSeek-V3's DualPipe saturates thousands of nodes", "thousands",
              f"{DEEPSEEK_V3_GPUS:,} H800 GPUs in nodes of {DEEPSEEK_V3_NODE}: {nodes} nodes (DeepSeek-V3 report)",
              nodes >= 1000),
        Claim("4.2.3", "between t5 and t10 only one or two GPUs compute (GPipe, p = 4, m = 4)", "1 or 2",
              f"{', '.join(map(str, hourglass))} GPUs busy in t5 … t10", max(hourglass) <= 2),
        Claim("4.2.5, 4.6.1", "raising m raises GPipe's activation memory linearly", "∝ m",
              f"only with each micro-batch's size held: {g8.peak_activations[0]:g} micro-batches at m = 8. Cut a fixed "
              f"mini-batch into more micro-batches and GPipe holds {_set(held_gpipe)} mini-batches' activations at "
              f"m = 4 … 32 (1F1B {_set(held_1f1b)})", len(held_gpipe) > 1),
        Claim("4.4, 4.6.1", "interleaving cuts the bubble fraction to ≈ (1/v)(p−1)/m (p = 4, m = 8, v = 2)",
              f"{bubble_over_ideal(4, 8, 2):.2%}", f"that is bubble/ideal (Megatron-LM's); the section's own fraction, "
              f"idle/total, is (p−1)/(vm+p−1) = {i8.bubble_ratio:.2%}, as simulated",
              round(i8.bubble_ratio, 4) == round(bubble_over_ideal(4, 8, 2), 4)),
        Claim("4.5.1", "upstream GPUs wait during the warm-up (1F1B, p = 4, m = 8)", "upstream",
              "idle before each GPU's first op: " + ", ".join(f"GPU {j} {x:g}" for j, x in enumerate(waits))
              + ": the downstream GPUs wait, as 4.1.1 says", waits[0] > waits[-1]),
        Claim("4.5.2", "DualPipe's tasks on a GPU are mutually exclusive (p = 8, m = 20)", "one at a time",
              f"{overlapped_on_0} of GPU 0's backwards run overlapped with a forward (DeepSeek's F&B pairs), "
              f"{len(pairs.overlapped)} on all GPUs", not pairs.overlapped),
        Claim("4.5.5, 4.7.1", "DualPipe achieves a near-zero pipeline bubble (p = 8, m = 20)", "≈ 0",
              f"{dual.bubble_ratio:.2%} idle/total on the shared model (1F1B {one.bubble_ratio:.2%}): smaller, not zero. "
              "What DeepSeek-V3's report calls near-zero is the all-to-all overhead the overlapped pairs hide",
              dual.bubble_ratio < 0.01),
        Claim("4.7.1", "MLA's smaller communication volume frees bandwidth for DualPipe's streams", "less to send",
              f"a hand-over carries the hidden states: {mla_bytes[0] / 1e6:.1f} MB per micro-batch for DeepSeek-V3's "
              f"shape with 128 KV heads or one, {mla_bytes[1] / 1e6:.1f} MB; MLA shrinks the KV cache, which never "
              "crosses a pipeline link", mla_bytes[0] != mla_bytes[1]),
        Claim("4.7.2", "DeepSpeed's 1F1B pipeline runs beside ZeRO's partitioning", "ZeRO",
              f"stage 1 only: its PipelineEngine refuses stages 2 and 3 (deepspeed/runtime/pipe/engine.py), which "
              f"beside a pipeline would run {zero2} collectives a step where stage 1 runs {zero1} "
              "(Llama 2 70B, m = 32)", zero2 <= zero1),
    )
    return Table(tuple(c for c in rows if not sections or any(c.section.startswith(x) for x in sections)))


#: DeepSeek-V3's training cluster, from its technical report (2024): 2,048 H800 GPUs, eight per node.
DEEPSEEK_V3_GPUS, DEEPSEEK_V3_NODE = 2048, 8


def summed_gradient_scale(m: int) -> float:
    """How many times the mini-batch's gradient the textbook's update (4.2.2) applies: the plain sum
    of ``m`` micro-batches' gradients, each of a mean loss, on a toy least-squares model
    ``(w·x − y)²`` over ``2m`` samples (two per micro-batch). The weighted sum, each micro-batch by its
    share of the samples, is the mini-batch's gradient (1).

    >>> summed_gradient_scale(4)
    4.0
    """
    xs = [1.0 + i / 3 for i in range(2 * m)]
    ys = [2.0 * x + (-1) ** i for i, x in enumerate(xs)]
    w = 0.5

    def gradient(pairs: list[tuple[float, float]]) -> float:  # d/dw of the mean of (w·x − y)²
        return sum(2 * (w * x - y) * x for x, y in pairs) / len(pairs)

    samples = list(zip(xs, ys))
    summed = sum(gradient(samples[2 * k: 2 * k + 2]) for k in range(m))
    return round(summed / gradient(samples), 12)


def hand_over_scale(v: int) -> tuple[float, float]:
    """Llama 2 7B on four H100s over NVLink: how a hand-over's time and a chunk's forward time change
    when each GPU holds ``v`` chunks instead of one (the textbook's 4.4.2 says both shrink to 1/v).

    >>> hand_over_scale(2)
    (1.0, 0.5)
    """
    from ppedu.cluster import GPUS, LINKS, Cluster, costs_for

    gpus = Cluster(GPUS["h100-80gb"], 4, LINKS["nvlink"])
    plain, _ = costs_for(MODELS["7b"], gpus, one_f_one_b(4, 8))
    inter, _ = costs_for(MODELS["7b"], gpus, interleaved_1f1b(4, 8, v))
    compute = sum(inter.forward(0, c) for c in range(4 * v)) / v / sum(plain.forward(0, c) for c in range(4))
    return round(inter.hand_over(0, 1, 0) / plain.hand_over(0, 1, 0), 9), round(compute, 9)


@dataclass(frozen=True)
class Record:
    """A statement of a source text about who did what, when: it is checked against the published
    record, not computed."""

    section: str
    statement: str
    record: str


def textbook_record() -> Table[Record]:
    """The textbook's statements of history and attribution that the published record contradicts.

    >>> [r.section for r in textbook_record()]
    ['4.2.5', '4.4.5, 4.7.2', '4.7.2', '4.5.5']
    """
    return Table((
        Record("4.2.5", "GPipe provided the earliest formalization of pipeline parallelism",
               "PipeDream (Harlap, Narayanan et al., arXiv 1806.03377, June 2018) was public five months before "
               "GPipe (Huang et al., arXiv 1811.06965, November 2018); both appeared at 2019 conferences (SOSP, NeurIPS)."),
        Record("4.4.5, 4.7.2", "GPT-3 175B was trained with Megatron-LM",
               "OpenAI's GPT-3 paper (Brown et al., 2020) names no framework: model parallelism within each matrix "
               "multiply and across layers, on a Microsoft V100 cluster. Megatron-LM's 2021 paper (Narayanan et al.) "
               "measured a GPT-3-sized 175B configuration; it did not train GPT-3."),
        Record("4.7.2", "LLaMA variants were pre-trained with Megatron-LM",
               "The LLaMA paper (Touvron et al., 2023) describes Meta's own training code: xformers attention, a "
               "hand-written backward, model and sequence parallelism as Korthikanti et al. (2022) describe them."),
        Record("4.5.5", "DualPipe is the pioneering (bidirectional) pipeline algorithm",
               "Chimera (Li and Hoefler, SC 2021) ran two pipelines in opposite directions three years earlier; "
               "DualPipe's own steps are the overlapped forward-backward pairs and zero bubble's W split."),
    ))


def forward_wave(timeline: Timeline) -> tuple[int, int]:
    """The first and last time step (1-based, as the textbook counts) in which some forward runs."""
    return _steps_of(timeline, "F")


def backward_wave(timeline: Timeline) -> tuple[int, int]:
    """The first and last time step (1-based) in which some backward runs.

    >>> backward_wave(simulate(gpipe(4, 4)))
    (8, 14)
    """
    return _steps_of(timeline, "B")


def links_of(schedule: Schedule) -> Counter[tuple[int, int]]:
    """Per link (from GPU, to GPU), how many chunk boundaries of one micro-batch's forward pass
    cross it: each is one hand-over each way. Megatron-LM's "communication increases by v"
    counts these: every link of plain 1F1B carries v of them under interleaving, and the last
    GPU gets a new link back to GPU 0.

    >>> sorted(links_of(interleaved_1f1b(4, 8, 2)).items())
    [((0, 1), 2), ((1, 2), 2), ((2, 3), 2), ((3, 0), 1)]
    """
    row = schedule.placement[0]
    return Counter((a, b) for a, b in zip(row, row[1:]) if a != b)


@dataclass(frozen=True)
class Match:
    """A configuration of interleaved 1F1B and its bubble under one definition."""

    p: int
    m: int
    v: int
    definition: str
    bubble: str
    utilization: str
    m_multiple_of_p: bool


def matching_configurations(
    bubble: float, v: int, definition: Definition, p_values: Iterable[int] = range(2, 65), m_max: int = 1024,
    multiple_of_p: bool = False,
) -> Table[Match]:
    """Every (p, m) whose bubble, under ``definition``, rounds to ``bubble`` at 0.1 %; utilization
    is what the same run reports as busy time ÷ total time.

    The interleaved schedule of Narayanan et al. (2021) takes micro-batches in groups of p, so m
    had to be a multiple of p; ``multiple_of_p`` keeps only those (Megatron-LM also runs other m ≥ p, with
    its group size set; PyTorch 2.13 an m that is a multiple of max(1, m // p): :mod:`ppedu.frameworks`).

    >>> [(r.p, r.m) for r in matching_configurations(0.058, 2, "bubble/ideal", (2, 4, 8))]
    [(4, 26), (8, 60)]
    >>> [(r.p, r.m) for r in matching_configurations(0.058, 2, "idle/total", range(2, 9), multiple_of_p=True)]
    [(7, 49)]
    """
    if definition not in ("idle/total", "bubble/ideal"):
        raise ValueError(f"a bubble definition is 'idle/total' or 'bubble/ideal' (got {definition!r})")
    formula = bubble_ratio if definition == "idle/total" else bubble_over_ideal
    rows = []
    for p in p_values:
        for m in range(1, m_max + 1):
            x = formula(p, m, v)
            if round(x * 100, 1) == round(bubble * 100, 1) and (m % p == 0 or not multiple_of_p):
                idle = x if definition == "idle/total" else to_idle_total(x)
                rows.append(Match(p, m, v, definition, f"{x:.2%}", f"{1 - idle:.2%}", m % p == 0))
    return Table(tuple(rows))


def vendor_claims() -> Table[Claim]:
    """The vendor brief's figures for interleaved 1F1B (v = 2), recomputed.

    >>> [c.holds for c in vendor_claims()]
    [True, False, True, True]
    """
    bubble, utilization = 0.058, 0.942
    as_idle_total = 1 - bubble
    as_bubble_ideal = 1 - to_idle_total(bubble)
    powers = (2, 4, 8, 16, 32, 64)
    valid = list(matching_configurations(bubble, 2, "idle/total", powers, multiple_of_p=True))
    unit = Costs(f=1, b=1)
    o, i = simulate(one_f_one_b(4, 8), unit), simulate(interleaved_1f1b(4, 8, 2), unit.per_chunk(2))
    ideal = list(matching_configurations(bubble, 2, "bubble/ideal", powers, multiple_of_p=True))
    rows = (
        Claim("brief", "5.8 % bubble with 94.2 % utilization, if bubble is idle/total", "94.2%",
              f"{as_idle_total:.2%}", round(as_idle_total, 3) == utilization),
        Claim("brief", "the same, if bubble is bubble/ideal (Megatron-LM)", "94.2%",
              f"{as_bubble_ideal:.2%}", round(as_bubble_ideal, 3) == utilization),
        Claim("brief", "v = 2 shrinks idle bubble time by 2× (p = 4, m = 8)", "2×",
              f"{o.idle_slots / i.idle_slots:g}×", o.idle_slots == 2 * i.idle_slots),
        Claim("brief", "interleaved v = 2 reaches 5.8 % (p a power of two, m a multiple of p as in the 2021 paper)", "5.8%",
              "idle/total: " + (", ".join(f"p={r.p}, m={r.m}" for r in valid) or "none")
              + "; bubble/ideal: " + (", ".join(f"p={r.p}, m={r.m}" for r in ideal) or "none"), bool(valid or ideal)),
    )
    return Table(rows)


@dataclass(frozen=True)
class TableRow:
    """One line of DeepSeek-V3's comparison table, beside the simulation on the same costs."""

    schedule: str
    formula: str
    formula_bubble: float
    simulated_bubble: float
    parameters: str
    peak_activations: float


def deepseek_table(p: int, m: int, costs: Costs) -> Table[TableRow]:
    """DeepSeek-V3's table of per-rank bubble time (F, B a full backward, W, F&B an overlapped
    pair), set beside the simulated worst idle time of any rank under the same ``costs`` (no
    hand-over latency). Where each row agrees with the simulation (``tests/test_errata.py`` scans
    a grid of costs):

    - 1F1B's ``(p-1)(F+B)``: for any costs.
    - ZB1P's ``(p-1)(F+B-2W)``: exactly when ``W ≤ F`` and ``W ≤ B-W`` (no longer than the forward
      or the input-gradient part). A longer W no longer fits the gap it is meant to fill, and the
      simulation idles more than the formula books.
    - DualPipe's ``(p/2-1)(F&B+B-3W)``: only when the pairs are booked as units (``costs.fb`` set)
      and ``F&B ≥ F + W``. With a forward as long as an input-gradient pass (f = b) and p ≥ 6,
      exactly when ``F + W ≤ F&B ≤ F + B`` (B full, so at most the pair's parts one after the
      other) and ``W ≤ B-W``; at p = 4 longer pairs agree too. Shorter pairs (more overlap), a W
      longer than B-W, or f ≠ b, and the schedule leaves more or less idle time than the formula
      books. Left unset, a pair's F may run ahead of its B: the idle time differs, mostly smaller.

    >>> [(r.formula_bubble, r.simulated_bubble) for r in deepseek_table(8, 20, Costs(1, 1, 1, fb=2)).rows]
    [(21.0, 21.0), (7.0, 7.0), (3.0, 3.0)]
    >>> deepseek_table(4, 8, Costs(1, 1, 1, fb=1.5))[2].simulated_bubble  # F&B < F + W: the formula books 0.5
    1.5
    >>> deepseek_table(4, 8, Costs(1, 1, 2))[1].simulated_bubble  # W > F: ZB1P's formula books 0
    3.0
    """
    if isinstance(costs.fb, tuple):
        raise ValueError("deepseek_table takes one F&B time for all stages (the table's formula has one)")
    f, b, w = costs.forward(0), costs.backward(0, full=True), costs.weight(0)
    fb = costs.pair(0)
    pair = f + b if fb is None else fb
    rows = []
    for name, formula, value, schedule in (
        ("1F1B", "(p-1)(F+B)", (p - 1) * (f + b), one_f_one_b(p, m)),
        ("ZB1P (zb-h1)", "(p-1)(F+B-2W)", (p - 1) * (f + b - 2 * w), zero_bubble_h1(p, m)),
        ("DualPipe", "(p/2-1)(F&B+B-3W)", (p / 2 - 1) * (pair + b - 3 * w), dualpipe(p, m)),
    ):
        t = simulate(schedule, costs)
        rows.append(TableRow(name, formula, value, max(t.makespan - busy for busy in t.busy_per_stage),
                             f"{parameter_copies(schedule):g}×", max(t.peak_activations)))
    return Table(tuple(rows))


def _steps_of(timeline: Timeline, kind: str) -> tuple[int, int]:
    running = [any(cell == kind for cell in column) for column in zip(*grid(timeline).kinds())]
    steps = [t + 1 for t, yes in enumerate(running) if yes]
    return steps[0], steps[-1]


def _set(values: set[float]) -> str:
    """A set of figures as the claims print them: ``{1}``, ``{0.125, 0.25, 0.5, 1}``."""
    return "{" + ", ".join(f"{x:g}" for x in sorted(values)) + "}"


def _tuple(values: tuple[float, ...]) -> str:
    return "(" + ", ".join(map(str, values)) + ")"
