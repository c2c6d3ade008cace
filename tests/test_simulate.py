"""The simulator: the textbook's worked examples (with the correct numbers) and properties for all inputs."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, Op, PerChunk, Schedule, simulate
from ppedu.memory import FREE_AT_B
from ppedu.schedules import build, dualpipe, dualpipe_v, gpipe, interleaved_1f1b, one_f_one_b, zero_bubble_h1


def dependency(op: Op, last: int) -> tuple | None:
    """What an op consumes, stated independently of the simulator: F needs the previous chunk's F,
    B the next chunk's B (the last chunk's B its own F), W its own B."""
    if op.kind == "F":
        return ("F", op.microbatch, op.chunk - 1, op.direction) if op.chunk else None
    if op.kind == "B":
        nxt = ("F", op.chunk) if op.chunk == last else ("B", op.chunk + 1)
        return (nxt[0], op.microbatch, nxt[1], op.direction)
    return ("B", op.microbatch, op.chunk, op.direction)


# --- The textbook's cases, with the numbers the simulator gives ---------------------------------

@pytest.mark.parametrize("schedule", [gpipe, one_f_one_b])
def test_p4_m4_takes_14_steps_with_24_of_56_slots_idle(schedule):
    # The source text claims 11 steps and 18 (GPipe) vs 16 (1F1B) idle slots; both are wrong.
    t = simulate(schedule(4, 4), Costs(f=1, b=1))
    assert (t.makespan, t.total_slots, t.busy_slots, t.idle_slots) == (14, 56, 32, 24)
    assert Fraction(t.bubble_ratio).limit_denominator(100) == Fraction(3, 7)


@pytest.mark.parametrize("schedule", [gpipe, one_f_one_b])
def test_32_micro_batches_shrink_the_bubble_to_3_in_35(schedule):
    t = simulate(schedule(4, 32))
    assert Fraction(t.bubble_ratio).limit_denominator(1000) == Fraction(3, 35)


def test_interleaved_p4_m8_v2_leaves_24_of_152_slots_idle():
    t = simulate(interleaved_1f1b(4, 8, 2))
    assert (t.idle_slots, t.total_slots) == (24, 152)


def test_1f1b_saves_memory_not_time():
    g, o = simulate(gpipe(4, 8)), simulate(one_f_one_b(4, 8))
    assert g.makespan == o.makespan
    assert g.peak_activations == (8, 8, 8, 8)
    assert o.peak_activations == (4, 3, 2, 1)


def test_interleaved_holds_a_little_more_activation_memory():
    t = simulate(interleaved_1f1b(4, 8, 2))
    assert t.peak_activations == (11, 9, 7, 5)  # chunk-activations, each half a stage's
    assert t.peak_activations[0] / 2 > simulate(one_f_one_b(4, 8)).peak_activations[0]


def test_megatron_bubble_is_p_minus_1_over_m():
    t = simulate(one_f_one_b(8, 64))
    assert t.bubble_over_ideal == pytest.approx(7 / 64)
    assert t.bubble_ratio == pytest.approx(t.bubble_over_ideal / (1 + t.bubble_over_ideal))


def test_comm_latency_is_paid_once_per_hand_over_each_way():
    p, m, c = 4, 6, 0.5
    t = simulate(gpipe(p, m), Costs(f=1, b=2, comm=c))
    assert t.makespan == pytest.approx((m + p - 1) * 3 + 2 * (p - 1) * c)


def test_interleaving_pays_v_times_more_hand_overs():
    cheap = Costs(comm=0)
    slow_link = Costs(comm=2)
    plain, inter = one_f_one_b(4, 8), interleaved_1f1b(4, 8, 2)
    assert simulate(inter, cheap).makespan / 2 < simulate(plain, cheap).makespan  # per-chunk costs halve
    # Count hand-overs: F and B ops whose input came from another stage.
    def hand_overs(s: Schedule) -> int:
        last = s.chunks - 1
        return sum(1 for ops in s.stages for op in ops
                   if (dep := dependency(op, last)) and s.placement[dep[3]][dep[2]] != s.placement[op.direction][op.chunk])
    # Each micro-batch crosses p·v - 1 chunk boundaries each way instead of p - 1.
    assert (hand_overs(plain), hand_overs(inter)) == (2 * 8 * (4 - 1), 2 * 8 * (4 * 2 - 1))
    assert simulate(inter, slow_link).makespan > simulate(inter, cheap).makespan


def test_zero_bubble_h1_cuts_the_bubble_to_p_minus_1_times_f_plus_b_minus_w():
    p, m, costs = 4, 8, Costs(f=1, b=1, w=1)
    zb, base = simulate(zero_bubble_h1(p, m), costs), simulate(one_f_one_b(p, m), costs)
    assert base.makespan - m * 3 == (p - 1) * 3  # 1F1B: (p-1)(F+B) with B a full backward
    assert zb.makespan - m * 3 == (p - 1) * 1  # ZB-H1: (p-1)(f+b-w)
    # Its W still holds the layer inputs: with activations freed at W (the default, as a framework
    # does) every GPU peaks at p, 1F1B's worst; counted freed at B, GPU by GPU as 1F1B.
    assert zb.peak_activations == (p,) * p and max(base.peak_activations) == p
    assert simulate(zero_bubble_h1(p, m), costs, memory=FREE_AT_B).peak_activations == base.peak_activations


def test_dualpipe_against_1f1b_on_equal_costs():
    # Measured with DeepSeek's order, an overlapped pair costed as F then B (no overlap speed-up).
    costs = Costs(f=1, b=1, w=1)
    for p, m, dual, single in [(4, 8, 25, 33), (8, 20, 63, 81)]:
        assert simulate(dualpipe(p, m), costs).makespan == dual
        assert simulate(one_f_one_b(p, m), costs).makespan == single
    assert simulate(dualpipe(4, 8), costs).bubble_ratio == pytest.approx(0.04)


def test_an_overlapped_pair_starts_when_both_inputs_are_in_and_lasts_fb():
    s = dualpipe(4, 8)
    slow = simulate(s, Costs(f=1, b=1, w=1))
    fast = simulate(s, Costs(f=1, b=1, w=1, fb=2))  # F (1) and full B (2) overlapped into 2
    assert fast.makespan < slow.makespan
    last = s.chunks - 1
    ends = {e.op: e.end for e in fast.events}
    for s_, ops in enumerate(s.stages):
        for f, b in zip(ops, ops[1:]):
            if b in s.overlapped:
                ef, eb = next(e for e in fast.events if e.op == f), next(e for e in fast.events if e.op == b)
                assert eb.end - ef.start == pytest.approx(2) and ef.end == eb.start
                dep = dependency(b, last)
                assert ef.start >= ends[dep]  # the pair waited for the backward's input too


def test_without_an_fb_time_a_pair_is_just_f_then_b():
    s = dualpipe(4, 8)
    plain = Schedule(s.stages, s.name, s.placement, s.microbatches)
    costs = Costs(f=1, b=1, w=1)
    assert simulate(s, costs).events == simulate(plain, costs).events


def test_overlapped_must_follow_a_forward():
    s = one_f_one_b(2, 2)
    bad = Schedule(s.stages, s.name, s.placement, 2, overlapped=frozenset({Op("B", 1, 0)}))
    with pytest.raises(ValueError, match="B1c0 is marked overlapped but does not follow an F on stage 0"):
        simulate(bad)


def test_dualpipe_keeps_both_ends_busy_from_the_first_step():
    t = simulate(dualpipe(4, 8))
    first = {e.stage: e for e in t.events if e.start == 0}
    assert set(first) == {0, 3} and first[3].op.direction == 1


def test_dualpipe_holds_at_most_p_plus_1_activations():
    for p, m in [(4, 8), (8, 16), (8, 40)]:
        assert max(simulate(dualpipe(p, m), Costs(1, 1, 1)).peak_activations) == p + 1


def test_a_slow_stage_bounds_the_steady_state():
    p, m, k = 4, 64, 3
    t = simulate(one_f_one_b(p, m), Costs(f=(1, 1, k, 1), b=(1, 1, k, 1)))
    assert t.makespan >= m * k * 2
    assert t.makespan / (m * k * 2) < 1.1


def test_activation_profile_returns_to_zero():
    t = simulate(one_f_one_b(4, 8))
    times, counts = t.activations(0)
    assert counts[-1] == 0 and counts.max() == 4 and list(times) == sorted(times)


def test_deadlock_names_the_waiting_operations():
    s = one_f_one_b(2, 2)
    stuck = Schedule((s.stages[0], (Op("B", 0, 1),) + tuple(o for o in s.stages[1] if o != Op("B", 0, 1))),
                     "bad", s.placement, 2)
    with pytest.raises(ValueError, match=r"deadlock: .*GPU 1 waits at B0c1 for F0c1"):
        simulate(stuck)


def test_per_stage_costs_must_match_the_stage_count():
    with pytest.raises(ValueError, match="per-stage cost f has 3 values for 4 stages"):
        simulate(gpipe(4, 4), Costs(f=(1, 1, 1)))


@pytest.mark.parametrize("bad", [dict(f=-1), dict(b=float("nan")), dict(comm=-0.5), dict(w=(1, -1)), dict(fb=-2)])
def test_costs_reject_negative_values(bad):
    with pytest.raises(ValueError, match="costs must be non-negative"):
        Costs(**bad)


def test_only_the_pair_time_may_be_left_unset():
    assert Costs(fb=None).pair(0) is None
    for bad in (dict(comm=None), dict(f="fast")):
        with pytest.raises(ValueError, match="costs must be non-negative numbers"):
            Costs(**bad)  # type: ignore[arg-type]


# --- Properties over many inputs ----------------------------------------------------------------

costs_st = st.builds(
    Costs,
    f=st.sampled_from([0.5, 1, 2, 3]),
    b=st.sampled_from([0.5, 1, 2, 3]),
    w=st.sampled_from([0, 0.5, 1]),
    comm=st.sampled_from([0, 0.25, 1]),
    fb=st.sampled_from([None, 1, 2.5]),
)


@st.composite
def any_schedule(draw):
    name = draw(st.sampled_from(["gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe", "dualpipe-v"]))
    p = draw(st.integers(1, 8))
    if name == "interleaved":
        return interleaved_1f1b(p, p * draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    if name == "dualpipe":
        p = 2 * draw(st.integers(1, 4))
        return dualpipe(p, 2 * draw(st.integers(p, 3 * p)))
    if name == "dualpipe-v":
        return dualpipe_v(p, draw(st.integers(2 * p, 5 * p)))
    return build(name, p, draw(st.integers(1, 20)))


@settings(max_examples=150, deadline=None)
@given(any_schedule(), costs_st)
def test_every_op_runs_once_in_order_after_its_input(schedule, costs):
    t = simulate(schedule, costs)
    assert [e.op for e in t.events] == [op for ops in schedule.stages for op in ops]
    finished = {e.op: e for e in t.events}
    last = schedule.chunks - 1
    for e in t.events:
        dep = dependency(e.op, last)
        if dep is not None:
            before = finished[dep]
            assert e.start >= before.end + (costs.comm if before.stage != e.stage else 0) - 1e-9
    for s in range(schedule.p):
        on = t.on_stage(s)
        assert all(a.end <= b.start + 1e-9 for a, b in zip(on, on[1:]))
    assert t.busy_slots + t.idle_slots == pytest.approx(t.total_slots)
    assert 0 <= t.bubble_ratio < 1


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.sampled_from([0.5, 1, 2, 3]), st.sampled_from([0.5, 1, 2, 3]),
       st.sampled_from([0, 1]))
def test_gpipe_and_1f1b_bubble_is_p_minus_1_over_m_plus_p_minus_1(p, m, f, b, w):
    for schedule in (gpipe, one_f_one_b):
        t = simulate(schedule(p, m), Costs(f=f, b=b, w=w))
        assert t.bubble_ratio == pytest.approx((p - 1) / (m + p - 1))
        assert t.makespan == pytest.approx((m + p - 1) * (f + b + w))
    assert simulate(one_f_one_b(p, m)).peak_activations == tuple(min(p - j, m) for j in range(p))
    assert simulate(gpipe(p, m)).peak_activations == (m,) * p


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(1, 5), st.integers(1, 4), st.sampled_from([0.5, 1, 2]), st.sampled_from([0.5, 1, 2]))
def test_interleaved_bubble_is_p_minus_1_over_vm_plus_p_minus_1(p, groups, v, f, b):
    m = p * groups
    t = simulate(interleaved_1f1b(p, m, v), Costs(f=f, b=b))
    assert t.bubble_ratio == pytest.approx((p - 1) / (v * m + p - 1))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.integers(0, 20), st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 3]),
       st.sampled_from([0.5, 1, 2]))
def test_zero_bubble_h1_bubble_is_p_minus_1_times_f_plus_b_minus_w(p, extra, f, b, w):
    m = p + extra
    w = min(w, f, b)  # the handcrafted schedule assumes W is not the longest pass
    t = simulate(zero_bubble_h1(p, m), Costs(f=f, b=b, w=w))
    assert t.makespan - m * (f + b + w) == pytest.approx((p - 1) * (f + b - w))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(0, 12))
def test_dualpipe_beats_1f1b_on_equal_costs(half, extra):
    p, m = 2 * half, 4 * half + 2 * extra
    costs = Costs(f=1, b=1, w=1)
    assert simulate(dualpipe(p, m), costs).makespan <= simulate(one_f_one_b(p, m), costs).makespan


def test_costs_per_chunk_split_a_stage_v_ways():
    assert Costs(f=(2, 4), b=2, w=1, comm=3, fb=6).per_chunk(2) == Costs(f=(1, 2), b=1, w=0.5, comm=3, fb=3)


def test_peak_activations_in_whole_stages():
    t = simulate(interleaved_1f1b(4, 8, 2))
    assert t.peak_stage_activations == (5.5, 4.5, 3.5, 2.5)


# --- Per-stage, per-chunk and per-link costs ----------------------------------------------------

def test_per_link_comm_is_paid_on_each_link_once_each_way():
    p, m, links = 4, 6, (0.5, 3.0, 0.25)
    t = simulate(gpipe(p, m), Costs(f=1, b=2, comm=links))
    assert t.makespan == pytest.approx((m + p - 1) * 3 + 2 * sum(links))


def test_a_comm_matrix_is_directed():
    s = one_f_one_b(2, 1)  # F0 on GPU 0 → GPU 1, then B0 back
    t = simulate(s, Costs(f=1, b=1, comm=((0, 5), (2, 0))))
    start = {e.op: e.start for e in t.events}
    assert start[Op("F", 0, 1)] == 1 + 5 and start[Op("B", 0, 0)] == 6 + 1 + 1 + 2  # F0c1, B0c1, then back over 1 → 0


def test_uniform_forms_of_a_cost_give_identical_timelines():
    p, m, v = 4, 8, 2
    s = interleaved_1f1b(p, m, v)
    base = simulate(s, Costs(f=1, b=2, w=0.5, comm=0.25))
    matrix = tuple(tuple(0.0 if a == b else 0.25 for b in range(p)) for a in range(p))
    same = [
        Costs(f=PerChunk([1] * p * v), b=(2,) * p, w=PerChunk([0.5] * p * v), comm=PerChunk([0.25] * (p * v - 1))),
        Costs(f=1, b=2, w=0.5, comm=matrix),
    ]
    for costs in same:
        assert simulate(s, costs).events == base.events
    chain = simulate(gpipe(p, m), Costs(f=1, b=2, comm=(0.25,) * (p - 1)))
    assert chain.events == simulate(gpipe(p, m), Costs(f=1, b=2, comm=0.25)).events


def test_per_chunk_costs_follow_the_chunk_not_the_stage():
    s = interleaved_1f1b(2, 4, 2)  # chunks 0, 2 on GPU 0; 1, 3 on GPU 1
    t = simulate(s, Costs(f=PerChunk([1, 1, 3, 1]), b=1))
    for e in t.events:
        assert e.duration == (3 if (e.op.kind, e.op.chunk) == ("F", 2) else 1)


def test_per_chunk_costs_in_dualpipe_apply_to_both_directions():
    s = dualpipe(4, 8)
    t = simulate(s, Costs(f=PerChunk([1, 2, 1, 1]), b=1, w=1))
    assert {e.stage for e in t.events if e.op.kind == "F" and e.duration == 2} == {1, 2}


def test_a_per_link_chain_cannot_carry_interleavings_wrap_around():
    with pytest.raises(ValueError, match="stage 3 hands over to stage 0; give a p × p matrix"):
        simulate(interleaved_1f1b(4, 8, 2), Costs(comm=(1, 1, 1)))


@pytest.mark.parametrize("costs, words", [
    (Costs(f=PerChunk([1, 2, 3])), "per-chunk cost f has 3 values for 8 chunks"),
    (Costs(comm=(1, 2)), "per-link comm has 2 values for the 3 links between 4 stages"),
    (Costs(comm=((0, 1), (1, 0))), "a comm matrix must be 4 × 4"),
    (Costs(comm=PerChunk([1])), "per-chunk comm has 1 values for 7 chunk boundaries"),
])
def test_costs_must_fit_the_schedule(costs, words):
    with pytest.raises(ValueError, match=words):
        simulate(interleaved_1f1b(4, 8, 2), costs)


def test_pair_time_is_not_per_chunk():
    with pytest.raises(ValueError, match="fb .* not per chunk"):
        Costs(fb=PerChunk([1, 2]))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4), st.integers(0, 5), st.sampled_from([2, 3, 5]),
       st.sampled_from([0.5, 1, 2]), st.sampled_from([0.5, 1, 2]), st.sampled_from([0, 1]))
def test_one_slow_stage_sets_the_pace_of_1f1b(p, blocks, j, k, f, b, w):
    # The slow stage alone is busy m·k·(f+b+w); the fill and drain add at most (p-1) of its steps.
    m, j = p * blocks * 4, j % p
    slow = lambda x: tuple(x * (k if s == j else 1) for s in range(p))  # noqa: E731
    t = simulate(one_f_one_b(p, m), Costs(f=slow(f), b=slow(b), w=slow(w)))
    step = k * (f + b + w)
    assert m * step <= t.makespan + 1e-9
    assert t.makespan <= (m + p - 1) * step + 1e-9  # so makespan / (m·k·(f+b+w)) → 1 as m grows


@settings(max_examples=100, deadline=None)
@given(any_schedule(), st.data())
def test_every_hand_over_waits_for_its_own_links_latency(schedule, data):
    p, chunks = schedule.p, schedule.chunks
    value = st.sampled_from([0.0, 0.5, 1.0, 2.0])
    form = data.draw(st.sampled_from(["matrix", "chunk", "chain"] if len(schedule.placement) == 1 and
                                     schedule.virtual == 1 else ["matrix", "chunk"]))
    if form == "matrix":
        comm = tuple(tuple(data.draw(value) for _ in range(p)) for _ in range(p))
    elif form == "chunk":
        comm = PerChunk([data.draw(value) for _ in range(chunks - 1)])
    else:
        comm = tuple(data.draw(value) for _ in range(p - 1))
    f = PerChunk([data.draw(st.sampled_from([0.5, 1.0, 3.0])) for _ in range(chunks)])
    costs = Costs(f=f, b=1, w=0.5 if any(op.kind == "W" for ops in schedule.stages for op in ops) else 0, comm=comm)
    t = simulate(schedule, costs)
    finished = {e.op: e for e in t.events}
    last = chunks - 1
    for e in t.events:
        if e.op.kind == "F":
            assert e.duration == pytest.approx(f[e.op.chunk])
        dep = dependency(e.op, last)
        if dep is not None:
            before = finished[dep]
            boundary = min(dep[2], e.op.chunk)
            assert e.start >= before.end + costs.hand_over(before.stage, e.stage, boundary) - 1e-9


def test_per_chunk_and_per_stage_costs_never_compare_equal():
    assert Costs(f=PerChunk([1, 2])) != Costs(f=(1, 2))
    assert Costs(f=PerChunk([1, 2])) == Costs(f=PerChunk((1.0, 2.0)))
    assert len({PerChunk([1]), PerChunk([1])}) == 1
