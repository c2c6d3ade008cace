"""The final exam's keys, and the data its questions show (:func:`shown`, released as ``questions.json``).

Question 1's grid is a hand-built order (1F1B's pattern, one GPU warming up with one forward fewer) that reaches the
student as a picture only: the key simulates the order (its makespan, idle slots, the idle time its idle causes put on
the order rather than on filling and draining, and the steps one more micro-batch in the same pattern adds). Question
2 is the fastest schedule and micro-batch count under a memory budget against the simulator, within the 1 % the
question states. Question 3's fastest makespan with one slow GPU is the larger of two lower bounds no order beats,
which some warm-up reaches (tests/grading/test_final.py searches the orders); question 4's two-level all-reduce is
arithmetic. Question 5's table is the planner's, released as text. Question 7's goodput of two levels of checkpoints is
chapter 14's first-order model with each level's interval set against the failures it serves, which no function of
ppedu computes. The written answers are graded by hand.

>>> from ppedu.grading.assignments import my_values
>>> v = my_values("final", "alice")
>>> key = _grid_key(v)
>>> p, m, b = (params(v["variant"])[n] for n in ("grid_p", "grid_m", "grid_b"))
>>> key["idle_slots"] == key["T"] * p - (1 + b) * m * p
True
>>> key["per_microbatch"] > 1 + b  # the short warm-up: slower than 1F1B's f + b a micro-batch
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from grader.keys.ps1 import FormulaJudge
from grader.questiondata import variant
from grader.questions import Keyed
from ppedu import Costs, cluster, simulate
from ppedu.grading.assignments import Values
from ppedu.grading.assignments.final import QUESTIONS
from ppedu.grading.students import Picker, draw, pick
from ppedu.grid import grid
from ppedu.picture import Picture
from ppedu.schedules import one_f_one_b, zero_bubble_h2
from ppedu.schedules.one_f_one_b import with_warmups
from ppedu.simulate import Timeline

#: The idle causes that are the pipeline's own ends, not the order's (with no hand-over cost, none is in transit).
_ENDS = ("fill", "drain", "hand-over")


def params(k: int) -> dict[str, Any]:
    """Variant ``k``: question 1's grid and question 5's cluster, drawn from a hash of its number until sound."""
    return draw("final-variant", str(k), _draw, _sound)


def _draw(pick_: Picker) -> dict[str, Any]:
    p = pick_("grid_p", (3, 4))
    return {"grid_p": p, "grid_m": pick_("grid_m", (5, 6)), "short": pick_("short", tuple(range(p - 1))),
            "grid_b": pick_("grid_b", (1, 2)),
            "p": pick_("p", (4, 8)), "m": pick_("m", (16, 32)), "model": pick_("model", ("7b", "13b")),
            "gpu": pick_("gpu", ("a100-80gb", "h100-80gb")), "link": pick_("link", ("nvlink", "pcie-gen4"))}


def warmups(p: int, short: int) -> tuple[int, ...]:
    """Question 1's order: each GPU's warm-up forwards — 1F1B's ``p − 1 − j``, but one fewer on GPU ``short``."""
    return tuple(p - 1 - j - (j == short) for j in range(p))


def timeline(v: Mapping[str, Any], more: int = 0) -> Timeline:
    """Question 1's grid (with ``more`` micro-batches in the same pattern): a forward one step, a backward
    ``grid_b``."""
    order = with_warmups(warmups(v["grid_p"], v["short"]), v["grid_m"] + more, "a hand-built order")
    return simulate(order, Costs(f=1, b=v["grid_b"]))


def _sound(v: Mapping[str, Any]) -> bool:
    """The pictured grid must not have as many busy as idle slots (counting the busy ones would score), and its
    pattern must already repeat: each more micro-batch adds the same steps."""
    t, one, two = (timeline(v, k).makespan for k in range(3))
    return timeline(v).idle_slots != timeline(v).busy_slots and one - t == two - one


def _table(v: Mapping[str, Any]) -> str:
    model = cluster.MODELS[v["model"]]
    gpus = cluster.Cluster(cluster.GPUS[v["gpu"]], v["p"], cluster.LINKS[v["link"]])
    return cluster.render_plan(model, gpus, cluster.plan(model, gpus, [v["m"]]))


@lru_cache(maxsize=None)
def shown(k: int) -> dict[str, Any]:
    """What variant ``k`` shows: question 1's grid as a picture (no rule of its order is given), question 5's table."""
    v = params(k)
    costs = f"a forward takes one step, a backward {'one' if v['grid_b'] == 1 else 'two'}"
    return {"grid": Picture.of(grid(timeline(v)), title=f"Question 1 ({costs})").to_json(),
            "grid_p": v["grid_p"], "grid_m": v["grid_m"], "grid_b": v["grid_b"],
            "model": v["model"], "gpu": v["gpu"], "link": v["link"], "p": v["p"], "m": v["m"], "plan": _table(v)}


def _grid_key(values: Values | Mapping[str, Any]) -> dict[str, Any]:
    v = params(variant(values) if isinstance(values, Values) else values["variant"])
    t = timeline(v)
    causes = t.idle_causes().totals()
    return {"T": t.makespan, "idle_slots": t.idle_slots,
            "order_idle": sum(x for cause, x in causes.items() if cause not in _ENDS),
            "per_microbatch": timeline(v, 1).makespan - t.makespan}


def _grid_hint(name: str, got: Any, answers: Mapping[str, Any], key: Mapping[str, Any], values: Any) -> str | None:
    v = params(values["variant"])
    if name == "idle_slots" and got == v["grid_p"] * key["T"] - key["idle_slots"]:
        return "you counted the busy slots; count the `.` ones."
    if name == "T":
        return "count the picture's columns, t1 to the last (a `·` continues the operation to its left)."
    if name == "order_idle" and got == key["idle_slots"]:
        return ("that is every idle slot: leave out those before a GPU's first backward (filling) and after its last "
                "forward (draining).")
    if name == "per_microbatch" and got == 1 + v["grid_b"]:
        return ("that is 1F1B's f + b, what each GPU's own work grows by; follow the critical path through the steady "
                "state: which GPUs does its loop pass, and how long is one turn?")
    if name == "per_microbatch":
        return ("find the loop the critical path repeats once per micro-batch in the middle of the grid, and add up one "
                "turn.")
    return None


#: Question 2's two schedules: how each is built, and its backward as passes (1F1B's is one, ZB-H2's B and W).
_SCHEDULES = {"1F1B": one_f_one_b, "ZB-H2": zero_bubble_h2}


def plans(args: tuple[Any, ...]) -> dict[str, dict[int, tuple[float, float]]]:
    """Per schedule, per micro-batch count that question 2 allows: (makespan, peak activation GB on any GPU)."""
    p, batch, f, b, w, o, act, room = args
    out: dict[str, dict[int, tuple[float, float]]] = {}
    for name, build in _SCHEDULES.items():
        out[name] = {}
        for m in (m for m in range(2 * p - 1, batch + 1) if batch % m == 0):
            s = batch / m
            costs = (Costs(f=o + s * f, b=o + s * (b + w)) if name == "1F1B"
                     else Costs(f=o + s * f, b=o + s * b, w=o + s * w))
            t = simulate(build(p, m), costs)
            out[name][m] = (t.makespan, max(t.peak_activations) * s * act)
    return out


def _best(args: tuple[Any, ...], schedules: tuple[str, ...] = tuple(_SCHEDULES), memory: bool = True) -> float:
    room = args[-1]
    return min(time for name in schedules for time, gb in plans(args)[name].values() if gb <= room or not memory)


def _plan_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    def near(x: float) -> bool:
        return abs(got - x) <= 0.01 * x

    if near(_best(args, memory=False)):
        return "that is the fastest if memory were no limit: the fastest m's activations do not fit in `room`."
    for schedule in _SCHEDULES:
        if near(_best(args, (schedule,))):
            return f"that is {schedule}'s best; the other schedule fits at some m and is faster there."
    return ("for each schedule and each m that divides the batch, check that the GPU holding the most activations "
            "fits, then take the fastest; each pass costs `o` on top of its per-sample time.")


def _chooser(v: Values, question: str = "") -> Callable[[str, Any], Any]:
    """``choose(what, choices)``: the student's hidden draw of ``what`` among ``choices`` for ``question``."""
    return lambda what, choices: pick("final-hidden", v.student, f"{question}{what}", tuple(choices))


def _plan_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    choose = _chooser(v)
    p = choose("p", range(2, 9))
    f, b = choose("f", (1.0, 2.0)), choose("b", (1.0, 1.5, 2.0))
    act = choose("act", (0.5, 1.0))
    return (p, choose("batch", (48, 64, 96, 128)), f, b, choose("share", (0.25, 0.5, 1.0)) * min(f, b),
            choose("o", (0.25, 0.5, 1.0, 2.0)), act, act * (2 * p - 1) * choose("room", (1, 2, 3, 5))),


def fastest(p: int, m: int, s: int, k: float, f: float, b: float) -> float:
    """The shortest makespan of any order (one stage per GPU, whole backwards) with GPU ``s`` ``k`` times slower, for
    ``k ≥ 2``, ``m ≥ p`` and ``b ≥ f`` (the question's): the larger of the slow GPU's work between its fill and its
    drain, and micro-batch 0's round trip above it followed by the slow GPU's other backwards. Both bound every order;
    tests/grading/test_final.py finds no order faster, and builds one that reaches it."""
    work = s * (f + b) + m * k * (f + b)
    trip = (p - 1) * (f + b) + k * (f + b) + (m - 1) * k * max(f, b)  # max: the mirror bound, were f > b
    return max(work, trip)


def slow_timeline(p: int, m: int, s: int, k: float, f: float, b: float, order: str) -> Timeline:
    """GPipe's or 1F1B's run with GPU ``s`` ``k`` times slower (the hints compare a result with them)."""
    from ppedu.schedules import build

    return simulate(build(order, p, m), Costs(f=tuple(k * f if j == s else f for j in range(p)),
                                               b=tuple(k * b if j == s else b for j in range(p))))


def _slow_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    if abs(got - slow_timeline(*args, "gpipe").makespan) < 1e-9:
        return "that is GPipe's makespan; an order that starts the slow GPU's backwards earlier does better."
    if abs(got - slow_timeline(*args, "1f1b").makespan) < 1e-9:
        return "that is 1F1B's makespan; another warm-up on the GPUs before the slow one does better."
    if got < want:
        return "no order can be that fast: the slow GPU's own work, or a micro-batch's trip above it, takes longer."
    return ("an order exists that is faster: which warm-up keeps the slow GPU busy from its first forward to its last "
            "backward?")


def _slow_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    choose = _chooser(v, "slow:")
    p = choose("p", (3, 5, 7))
    # few micro-batches and a long backward: the round trip above the slow GPU sets the pace, not its own work
    trip = (p, p + choose("more", (0, 1)), choose("s", range(p // 2)), 2, 1, choose("long", (4, 5)))
    many = (p, choose("m", (2 * p, 4 * p)), choose("s2", range(p)), choose("k", (2, 4)), 1, choose("b", (1, 2, 3)))
    return trip, many


def two_level(size: float, nodes: int, per_node: int, a_in: float, b_in: float, a_out: float, b_out: float) -> float:
    """Reduce-scatter in each node, all-reduce of each GPU's share across nodes (one ring per local rank), all-gather
    in each node."""
    inside = 2 * ((per_node - 1) * a_in + (per_node - 1) / per_node * size / b_in)
    across = 2 * (nodes - 1) * a_out + 2 * (nodes - 1) / nodes * (size / per_node) / b_out
    return inside + across


def _two_level_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    size, nodes, per_node, a_in, b_in, a_out, b_out = args
    n = nodes * per_node
    if abs(got - (2 * (n - 1) * a_out + 2 * (n - 1) / n * size / b_out)) <= 1e-6 * want:
        return "that is a flat ring over all the GPUs at the slow link's pace; the question asks for the two-level one."
    if abs(got - (want - 2 * (nodes - 1) / nodes * (size / per_node) / b_out
                  + 2 * (nodes - 1) / nodes * size / b_out)) <= 1e-6 * want:
        return "across nodes each GPU all-reduces only the share it holds after the reduce-scatter: M / per_node bytes."
    return ("add the three phases: a reduce-scatter and an all-gather inside the node, each (g − 1) steps of M / g, "
            "and "
            "a ring all-reduce across the nodes of the M / g bytes each GPU holds.")


def _two_level_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    choose = _chooser(v, "two-level:")
    return ((choose("size", (1e6, 6.4e7, 4e9)), choose("nodes", (2, 8, 32)), choose("g", (2, 4, 8)),
             choose("a_in", (1e-6, 3e-6)), choose("b_in", (150e9, 400e9)), choose("a_out", (5e-6, 2e-5)),
             choose("b_out", (12.5e9, 50e9))),)


def two_level_goodput(gpus: int, gpu_mtbf_h: float, q: float, c1: float, r1: float, c2: float, r2: float) -> float:
    """Question 7: the share of time that trains with snapshots in the hosts' memory (``c1`` each, every ``τ1``), from
    which a share ``q`` of the failures restarts in ``r1``, and checkpoints to storage (``c2``, every ``τ2``), from
    which the rest restart in ``r2``.

    To first order the waste is ``c1/τ1 + c2/τ2 + (q(τ1/2 + r1) + (1 − q)(τ2/2 + r2))/MTBF``: each interval meets
    only its own failures, least at ``τ1 = √(2c1·MTBF/q)`` and ``τ2 = √(2c2·MTBF/(1 − q))`` (tests/grading/test_final.py
    checks them by search, and the goodput against a run of failures at random).

    >>> round(two_level_goodput(16384, 50_000, 0.8, 5, 300, 60, 1200), 4)
    0.8826
    >>> from ppedu.cluster.reliability import goodput, young_daly  # every failure caught in memory: chapter 14's
    >>> mtbf = 50_000 * 3600 / 16384
    >>> abs(two_level_goodput(16384, 50_000, 1, 5, 300, 60, 1200) - goodput(young_daly(5, mtbf), 5, mtbf, 300)) < 1e-12
    True
    """
    mtbf = gpu_mtbf_h * 3600 / gpus
    return 1 - math.sqrt(2 * c1 * q / mtbf) - math.sqrt(2 * c2 * (1 - q) / mtbf) - (q * r1 + (1 - q) * r2) / mtbf


def _checkpoints_why(name: str, args: tuple[Any, ...], got: float, want: float) -> str:
    gpus, gpu_mtbf_h, q, c1, r1, c2, r2 = args
    mtbf = gpu_mtbf_h * 3600 / gpus

    def near(x: float) -> bool:
        return abs(got - x) <= 1e-6 * abs(x)

    def at(t1: float, t2: float) -> float:
        return 1 - c1 / t1 - c2 / t2 - (q * (t1 / 2 + r1) + (1 - q) * (t2 / 2 + r2)) / mtbf

    if near(1 - math.sqrt(2 * c2 / mtbf) - r2 / mtbf):
        return "that is storage checkpoints alone, every failure restarting from storage; the snapshots are left out."
    if near(at(math.sqrt(2 * c1 * mtbf), math.sqrt(2 * c2 * mtbf))):
        return ("those are Young–Daly's intervals for the whole job's failures; each kind of checkpoint is there for "
                "only some of them.")
    if near(two_level_goodput(gpus, gpu_mtbf_h, 1 - q, c1, r1, c2, r2)):
        return "the shares are the wrong way round: `q` is the share that restarts from the hosts' memory."
    if near(100 * want):
        return "a share of time is asked for (a number between 0 and 1), not a percentage."
    return ("count each kind of checkpoint's stalls, and for each kind of failure the work it redoes and its restart; "
            "then choose each interval to lose the least.")


def _checkpoints_hidden(name: str, v: Values) -> tuple[tuple[Any, ...], ...]:
    choose = _chooser(v, "checkpoints:")

    def level(k: int, shares: tuple[float, ...]) -> tuple[Any, ...]:
        q, c2 = choose(f"q{k}", shares), choose(f"c2{k}", (20, 45, 180))
        # snapshots more often than storage at the best intervals (τ1 < τ2: c1(1 − q) < q·c2), as the question says:
        # else a storage checkpoint would be the newer restart point for memory's failures too
        c1 = choose(f"c1{k}", tuple(c for c in (1, 3, 8) if c * (1 - q) < q * c2))
        return (choose(f"gpus{k}", (1024, 2048, 6144, 12288)), choose(f"mtbf{k}", (30_000, 50_000, 80_000)), q, c1,
                choose(f"r1{k}", (60, 200, 450)), c2, choose(f"r2{k}", (300, 900, 1800)))

    # one with most failures caught in memory, one with few: each level's share matters
    return tuple(level(k, shares) for k, shares in enumerate(((0.7, 0.85, 0.95), (0.1, 0.25, 0.4))))


KEYS: dict[str, Any] = {
    "grid_T": Keyed(QUESTIONS["grid_T"], _grid_key, _grid_hint),
    "grid_path": Keyed(QUESTIONS["grid_path"], _grid_key, _grid_hint),
    "plan": FormulaJudge(QUESTIONS["plan"], lambda name, args: _best(args), _plan_why, _plan_hidden, rel=0.01),
    "slow": FormulaJudge(QUESTIONS["slow"], lambda name, args: fastest(*args), _slow_why, _slow_hidden, rel=1e-9),
    "two_level": FormulaJudge(QUESTIONS["two_level"], lambda name, args: two_level(*args), _two_level_why,
                              _two_level_hidden, rel=1e-6),
    "checkpoints": FormulaJudge(QUESTIONS["checkpoints"], lambda name, args: two_level_goodput(*args),
                                _checkpoints_why, _checkpoints_hidden, rel=1e-9),
}
