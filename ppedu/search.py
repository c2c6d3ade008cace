"""Search: the fastest valid order for ``p`` GPUs and ``m`` micro-batches under a memory limit,
across the families the course knows, with its distance from a lower bound.

Three stages, each keeping the best order that fits the limit:

1. every named schedule (each v it takes) that fits;
2. a list scheduler on each placement (one chunk per GPU, interleaved ``v`` = 2, 3, the V):
   whenever a GPU is free it runs a ready operation by one of several priority rules (backward
   first or forward first, weight gradients deferred to idle time or not, backwards split or
   whole), never starting a forward that would take it over the limit;
3. local search: moves of one operation on one GPU to an earlier place, kept when the
   simulated makespan drops and the order stays valid and within the limit.

For tiny cases (few enough orders to try) it also tries every order of one chunk per GPU, whole
backwards and split, instead of the local search, and says so (``exact``: nothing with one
chunk per GPU beats it). The simulator is the judge of every candidate.

>>> found = search(4, 8, Costs(f=1, b=1, w=1), memory_limit=4, seconds=0.5)
>>> found.makespan < 26, found.lower_bound, max(memory_use(found.timeline)) <= 4
(True, 24.0, True)
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ppedu.costs import Costs, PerChunk
from ppedu.memory import FREE_AT_W, MemoryModel
from ppedu.ops import Kind, Op, Schedule
from ppedu.schedules import SCHEDULES, VIRTUAL, build
from ppedu.validate import require_counts
from ppedu.simulate import Timeline, simulate

#: Orders a search may try exhaustively before it falls back on the heuristic.
EXACT_LIMIT = 50_000


@dataclass(frozen=True)
class Found:
    """The outcome of :func:`search`: the best order found and how good it is known to be."""

    timeline: Timeline
    lower_bound: float
    best_named: Timeline | None
    exact: bool
    tried: int
    memory_limit: float | None = None
    seconds: float = 0.0
    family: str = field(default="")

    @property
    def schedule(self) -> Schedule:
        return self.timeline.schedule

    @property
    def makespan(self) -> float:
        return self.timeline.makespan

    @property
    def gap(self) -> float:
        """How far above the lower bound: makespan ÷ bound − 1 (0 means provably optimal)."""
        return self.makespan / self.lower_bound - 1 if self.lower_bound else 0.0

    def as_dict(self) -> dict[str, object]:
        named = self.best_named
        return {
            "makespan": self.makespan, "lower_bound": self.lower_bound, "gap": self.gap, "exact": self.exact,
            "family": self.family, "virtual": self.schedule.virtual, "tried": self.tried,
            "memory_limit": self.memory_limit, "peak_stage_activations": list(memory_use(self.timeline)),
            "bubble_ratio": self.timeline.bubble_ratio, "seconds": self.seconds,
            "best_named": None if named is None else {"schedule": named.schedule.name, "virtual": named.schedule.virtual,
                                                      "makespan": named.makespan},
            "order": [[repr(op) for op in ops] for ops in self.schedule.stages],
        }


def lower_bound(p: int, m: int, costs: Costs) -> float:
    """A makespan no order can beat, whatever its placement and whether or not it overlaps pairs: the
    largest of :func:`bound_arguments`.

    >>> lower_bound(4, 8, Costs(f=1, b=2))
    24.0
    >>> lower_bound(4, 8, Costs(f=1, b=1, w=1)), lower_bound(4, 8, Costs(f=1, b=1, w=1, fb=1))
    (24.0, 12.0)
    """
    return max(bound_arguments(p, m, costs).values())


def bound_arguments(p: int, m: int, costs: Costs) -> dict[str, float]:
    """Four makespans no order can beat, whatever its placement and whether or not it overlaps pairs.
    Per GPU ``s`` a micro-batch brings ``f + b + w`` of work (``costs`` per stage; a cut pays its
    share per chunk); an overlapped pair (``costs.fb``) does an F and a B in ``fb``. The bound is
    the largest of four arguments:

    - **work**: the busiest GPU's work, ``m · min(f + b + w, fb)``;
    - **front**: no B starts before some micro-batch has gone forward through every stage, and
      none of those forwards is in a pair (a pair needs a B that can already run, and a B never
      pairs with the forward it needs): ``Σ f``; then every GPU still runs all its backwards,
      ``m · min(b + w, fb)`` each;
    - **back**: the micro-batch whose forward on the last chunk ends last has all its input-gradient
      B's still to run, one after another and alone (every forward is done): ``Σ b``, after each GPU
      has run its ``m`` forwards (a forward in a pair takes its share of ``fb``);
    - **path**: one micro-batch there and back, ``Σ f`` alone and ``Σ b``, a B in a pair shortened
      as its pair is.

    Hand-overs (``comm``) only add to every argument, so they are left out.

    >>> {k: round(x, 2) for k, x in bound_arguments(4, 8, Costs(f=1, b=1, w=1, fb=1)).items()}
    {'work': 8.0, 'front': 12.0, 'back': 6.67, 'path': 5.33}
    """
    f = [costs.forward(s) for s in range(p)]
    b = [costs.backward(s, False) for s in range(p)]
    w = [costs.weight(s) for s in range(p)]
    pair = [math.inf if costs.pair(s) is None else float(costs.pair(s)) for s in range(p)]  # type: ignore[arg-type]
    full = [f[s] + b[s] + w[s] for s in range(p)]
    # What a pair leaves of a B at least (it shares fb in proportion), and whether the B's of the back
    # argument may be paired at all: only with a forward that takes no time.
    shrink = [1.0 if pair[s] >= full[s] else pair[s] / full[s] for s in range(p)]
    alone = [1.0 if f[s] > 0 and pair[s] > 0 else shrink[s] for s in range(p)]
    work = max(m * min(full[s], pair[s]) for s in range(p))
    front = sum(f) + max(m * min(b[s] + w[s], pair[s]) for s in range(p))
    back = max(m * f[s] * shrink[s] for s in range(p)) + sum(b[s] * alone[s] for s in range(p))
    path = sum(f) + sum(b[s] * shrink[s] for s in range(p))
    return {"work": float(work), "front": float(front), "back": float(back), "path": float(path)}


def one_chunk_bound(p: int, m: int, costs: Costs) -> float:
    """A makespan no order with one chunk per GPU, one direction and no overlapped pairs can beat: GPU ``j`` can start only once the first micro-batch has gone forward
    through GPUs ``0 … j-1``, and then has ``m · (f + b + w)`` of work.

    >>> one_chunk_bound(4, 8, Costs(f=1, b=1, w=1))  # ZB-H1 and ZB-H2 reach it
    27.0
    """
    f = [costs.forward(s) for s in range(p)]
    return float(max(sum(f[:j]) + m * (f[j] + costs.backward(j, True)) for j in range(p)))


def memory_use(timeline: Timeline) -> tuple[float, ...]:
    """Per GPU, the peak activations in units of one stage's activations for one micro-batch
    (a chunk of a v-way cut holds 1/v of them), so that the limit means the same for every cut."""
    return timeline.peak_stage_activations


def search(p: int, m: int, costs: Costs | None = None, memory_limit: float | None = None, *,
           activation_bytes: float | None = None, one_direction: bool = False, cut: int | None = None,
           memory: MemoryModel = FREE_AT_W,
           seconds: float = 2.0, seed: int = 0,
           progress: Callable[[int, float], None] | None = None) -> Found:
    """The fastest valid order found for ``p`` GPUs and ``m`` micro-batches.

    ``costs`` are per stage (a ``v``-way cut pays ``1/v`` of them per chunk, as in ``ppedu
    compare``); ``memory_limit`` is the most activations any GPU may hold at once, in one stage's
    activations for one micro-batch (1F1B needs ``p``, GPipe ``m``), or in bytes when
    ``activation_bytes`` (bytes of that unit, from :mod:`ppedu.cluster` say) is given.
    ``cut`` keeps to one placement: ``v`` chunks per GPU, chunk ``c`` on GPU ``c mod p`` (the
    schedule builder's grid). ``memory`` says when activations are freed (:mod:`ppedu.memory`; by default at W).
    ``one_direction`` leaves out DualPipe and Chimera (two copies of the parameters), whose orders
    PyTorch's runtime cannot run. ``seconds`` bounds the local search (after the named schedules and the list scheduler have
    been tried); ``progress(tried, best)`` is called after each candidate.

    Raises ``ValueError`` if no order fits the limit (below one micro-batch's activations).
    """
    require_counts(p=p, m=m, **({} if cut is None else {"v": cut}))
    costs = costs or Costs()
    if any(isinstance(x, PerChunk) for x in (costs.f, costs.b, costs.w, costs.comm)):
        raise ValueError("search takes costs per stage (it tries several cuts into chunks), not per chunk")
    costs.check(p)
    limit = memory_limit if activation_bytes is None else (memory_limit or 0) / activation_bytes
    if limit is not None and not limit >= 1:
        raise ValueError(f"memory limit {limit:g} stage-activations is below one micro-batch's (1): no order fits")
    started = time.perf_counter()
    state = _Best(limit, memory, progress)
    cuts = list(_placements(p)) if cut is None else [(tuple(c % p for c in range(p * cut)), cut)]
    only = None if cut is None else (cuts[0][0],)
    for name in SCHEDULES:
        if one_direction and name in ("dualpipe", "chimera"):
            continue
        for v in (1, 2, *([cut] if cut else [])) if name in VIRTUAL else (1,):
            state.offer(lambda: _kept(build(name, p, m, v), only), costs.per_chunk(2 if name in ("zb-v", "dualpipe-v") else v),
                        family=name, named=True)
    exact = cut in (None, 1) and _enumerate(p, m, costs, state)
    for placement, v in cuts:
        chunk_costs = costs.per_chunk(v)
        for split in (True, False) if _has_w(costs) else (False,):
            for rule in dict.fromkeys(">".join(k for k in r.split(">") if split or k != "W") for r in _RULES):
                state.offer(lambda: _list_schedule(p, m, placement, v, chunk_costs, rule, split, limit, memory),
                            chunk_costs, family=f"{placement_name(placement, p)}, {rule}, {'split' if split else 'whole'} B")
    if not exact:
        _improve(state, time.perf_counter() + seconds, random.Random(seed))
    if state.best is None:
        raise ValueError(f"no order fits a memory limit of {limit:g} stage-activations per GPU")
    return Found(state.best, lower_bound(p, m, costs), state.best_named, exact, state.tried, limit,
                 time.perf_counter() - started, state.family)


class _Best:
    """The best candidate so far that is valid and within the limit."""

    def __init__(self, limit: float | None, memory: MemoryModel, progress: Callable[[int, float], None] | None) -> None:
        self.limit, self.memory, self.progress = limit, memory, progress
        self.best: Timeline | None = None
        self.best_named: Timeline | None = None
        self.family = ""
        self.tried = 0

    def fits(self, t: Timeline) -> bool:
        return self.limit is None or max(memory_use(t)) <= self.limit + 1e-9

    def offer(self, make: Callable[[], Schedule | None], costs: Costs, family: str, named: bool = False) -> bool:
        """Simulate ``make()``'s schedule; keep it if it is valid, fits and is faster. Builders
        that refuse this shape (ValueError) or produce a deadlock are simply not candidates."""
        self.tried += 1
        try:
            schedule = make()
            if schedule is None:
                return False
            t = simulate(schedule, costs, memory=self.memory)
        except ValueError:
            return False
        if not self.fits(t):
            return False
        if named and (self.best_named is None or t.makespan < self.best_named.makespan):
            self.best_named = t
        better = self.best is None or _finish(t) < _finish(self.best)
        if better:
            self.best, self.family = t, family
        if self.progress:
            self.progress(self.tried, self.best.makespan if self.best else math.inf)
        return better


def _kept(schedule: Schedule, only: tuple[tuple[int, ...], ...] | None) -> Schedule | None:
    return schedule if only is None or schedule.placement == only else None


def _finish(t: Timeline) -> tuple[float, float]:
    """What "sooner" means: the makespan, then the sum of the GPUs' finishing times (rounded, so
    that float noise is no improvement)."""
    return round(t.makespan, 9), round(sum(max((e.end for e in t.on_stage(j)), default=0.0) for j in range(t.stages)), 9)


def _has_w(costs: Costs) -> bool:
    w = costs.w
    return any(x > 0 for x in w) if isinstance(w, tuple) else w > 0


def placement_name(placement: tuple[int, ...], p: int) -> str:
    if placement == tuple(range(p)):
        return "one chunk per GPU"
    if len(placement) == 2 * p and placement[p:] == tuple(reversed(range(p))):
        return "V"
    return f"interleaved v={len(placement) // p}"


def _placements(p: int) -> Iterator[tuple[tuple[int, ...], int]]:
    yield tuple(range(p)), 1
    for v in (2, 3):
        yield tuple(c % p for c in range(p * v)), v
    if p > 1:
        yield tuple(min(c, 2 * p - 1 - c) for c in range(2 * p)), 2


# -- the list scheduler ---------------------------------------------------------------------------

#: Priority rules: the order of preference among the kinds of ready operation.
_RULES = ("B>F>W", "B>W>F", "F>B>W", "W>B>F")


def _list_schedule(p: int, m: int, placement: tuple[int, ...], v: int, costs: Costs, rule: str, split: bool,
                   limit: float | None, memory: MemoryModel = FREE_AT_W) -> Schedule | None:
    """One order, built by running the pipeline forward in time: whenever a GPU can start an
    operation, it starts the earliest-ready one, on a tie the kind its rule prefers. Each chunk
    takes its micro-batches in order, kind by kind. A forward is held back while it would take
    its GPU over ``limit``, counting every forward not yet released by its W (by its B when
    backwards are whole, or when ``memory`` frees at B)."""
    chunks = len(placement)
    kinds: tuple[Kind, ...] = ("F", "B", "W") if split else ("F", "B")
    rank = {k: i for i, k in enumerate(x for x in rule.split(">") if x in kinds)}
    room = math.inf if limit is None else limit * v  # in chunk-activations
    release = "W" if split and memory.kept_for_w > 0 else "B"
    lanes = [[(c, k) for c in range(chunks) if placement[c] == s for k in kinds] for s in range(p)]
    durations = {(c, k): (costs.forward(placement[c], c) if k == "F" else costs.weight(placement[c], c) if k == "W"
                          else costs.backward(placement[c], not split, c)) for c in range(chunks) for k in kinds}
    nxt = {lane: 0 for lane in durations}
    end: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    held = [0] * p
    orders: list[list[Op]] = [[] for _ in range(p)]

    def candidate(s: int) -> tuple | None:
        """Stage ``s``'s preferred next operation, keyed by when it can start."""
        best = None
        for c, k in lanes[s]:
            mb = nxt[c, k]
            if mb == m or (k == "F" and held[s] + 1 > room):
                continue
            needs = Op(k, mb, c).needs(chunks)
            if needs is None:
                at = free[s]
            elif (key := (needs.kind, mb, needs.chunk)) in end:
                at = max(free[s], end[key] + costs.hand_over(placement[needs.chunk], s, min(needs.chunk, c)))
            else:
                continue
            option = (at, rank[k], mb, -c if k != "F" else c, s, k)
            if best is None or option < best:
                best = option
        return best

    cache = [candidate(s) for s in range(p)]
    for _ in range(p * len(kinds) * m * v):
        options = [o for o in cache if o is not None]
        if not options:
            return None  # the limit leaves no operation able to start
        at, _, mb, signed, s, k = min(options)
        c = abs(signed)
        end[k, mb, c] = free[s] = at + durations[c, k]
        held[s] += 1 if k == "F" else -1 if k == release else 0
        orders[s].append(Op(k, mb, c))
        nxt[c, k] += 1
        # Only this stage and the one that consumes the result can change their choice.
        touched = {s, placement[c + 1] if k == "F" and c + 1 < chunks else s,
                   placement[c - 1] if k == "B" and c > 0 else s}
        for t in touched:
            cache[t] = candidate(t)
    return Schedule(tuple(map(tuple, orders)), "searched", (placement,), m, v)


# -- local search ---------------------------------------------------------------------------------

def _improve(state: _Best, deadline: float, rng: random.Random) -> None:
    """Local search on the best order: move one operation on one GPU, keep the move if it ends
    sooner (the makespan, then the sum of the GPUs' finishing times, so that a move that only
    shortens a GPU that is not the last still counts). Three moves: pull a weight-gradient pass
    back into an idle gap before it, or move any operation a few places earlier or later."""
    while state.best is not None and time.perf_counter() < deadline:
        t = state.best
        s = t.schedule
        stage = rng.randrange(s.p)
        ops = list(s.stages[stage])
        if len(ops) < 2:
            return
        events = t.on_stage(stage)
        gaps = [i for i in range(1, len(events)) if events[i].start > events[i - 1].end + 1e-9]
        move = rng.random()
        if move < 0.4 and gaps:  # a W from after the gap into it
            i = rng.choice(gaps)
            later = [k for k in range(i + 1, len(ops)) if ops[k].kind == "W" and
                     ops.index(Op("B", *ops[k][1:])) < i]
            if not later:
                continue
            k = later[0] if rng.random() < 0.5 else rng.choice(later)
            ops.insert(i, ops.pop(k))
        else:
            i = rng.randrange(len(ops))
            j = min(len(ops) - 1, max(0, i + rng.choice((-1, 1)) * rng.randint(1, 4)))
            ops.insert(j, ops.pop(i))
        stages = tuple(tuple(ops) if k == stage else row for k, row in enumerate(s.stages))
        moved = Schedule(stages, s.name, s.placement, s.microbatches, s.virtual)
        state.offer(lambda: moved, t.costs, state.family)


# -- exhaustive search for tiny cases ------------------------------------------------------------

def stage_orders(ops: Sequence[Op]) -> Iterator[tuple[Op, ...]]:
    """Every order of one GPU's operations that runs each micro-batch's F before its B before its
    W (what a GPU alone can tell is needed), produced by placing one operation at a time."""
    first = {Op("B", *op[1:]): Op("F", *op[1:]) for op in ops if op.kind == "B"}
    first |= {Op("W", *op[1:]): Op("B", *op[1:]) for op in ops if op.kind == "W"}

    def extend(prefix: list[Op], rest: list[Op]) -> Iterator[tuple[Op, ...]]:
        if not rest:
            yield tuple(prefix)
            return
        placed = set(prefix)
        for i, op in enumerate(rest):
            if first.get(op, op) in placed or op not in first:
                yield from extend([*prefix, op], rest[:i] + rest[i + 1:])

    yield from extend([], list(ops))


def _enumerate(p: int, m: int, costs: Costs, state: _Best) -> bool:
    """Try every order of one chunk per GPU (whole and, when W costs anything, split backwards)
    if there are at most :data:`EXACT_LIMIT` of them; whether it did."""
    variants = (False, True) if _has_w(costs) else (False,)
    if sum(_count(m, split) ** p for split in variants) > EXACT_LIMIT:
        return False
    placement = (tuple(range(p)),)
    for split in variants:
        kinds: tuple[Kind, ...] = ("F", "B", "W") if split else ("F", "B")
        orders = [list(stage_orders([Op(k, mb, s) for mb in range(m) for k in kinds])) for s in range(p)]
        for stages in itertools.product(*orders):
            state.offer(lambda: Schedule(stages, "searched", placement, m), costs, family="one chunk per GPU, every order")
    return True


def _count(m: int, split: bool) -> int:
    """How many orders one GPU has for ``m`` micro-batches: (k·m)! / (k!)^m with k kinds each."""
    k = 3 if split else 2
    return math.factorial(k * m) // math.factorial(k) ** m
