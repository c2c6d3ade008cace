"""The schedules, read like the textbook's worked examples."""

import re

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import Costs, Op, schedules, simulate
from ppedu.memory import FREE_AT_B, FREE_AT_W
from ppedu.schedules import (SCHEDULES, VIRTUAL, build, chimera, dualpipe, dualpipe_v, gpipe, interleaved_1f1b, interleaved_zero_bubble,
                             looped_bfs, one_f_one_b, zero_bubble_h1, zero_bubble_h2, zero_bubble_v)


def ops(text: str) -> tuple[Op, ...]:
    """'F0 F1 B0' on chunk c → Op records."""
    return tuple(Op(t[0], int(t[1:].split("c")[0]), int(t.split("c")[1])) for t in text.split())


def test_gpipe_runs_all_forwards_then_all_backwards():
    assert gpipe(4, 4).stages[2] == ops("F0c2 F1c2 F2c2 F3c2 B0c2 B1c2 B2c2 B3c2")


def test_1f1b_warms_up_with_p_minus_j_minus_1_forwards():
    s = one_f_one_b(4, 8)
    assert s.stages[0] == ops("F0c0 F1c0 F2c0 F3c0 B0c0 F4c0 B1c0 F5c0 B2c0 F6c0 B3c0 F7c0 B4c0 B5c0 B6c0 B7c0")
    assert s.stages[3][:4] == ops("F0c3 B0c3 F1c3 B1c3")
    for j, stage in enumerate(s.stages):
        first_backward = next(i for i, op in enumerate(stage) if op.kind == "B")
        assert first_backward == min(4 - j, 8)  # warm-up p-j-1, then one more F before the first B


def test_interleaved_places_chunk_c_on_stage_c_mod_p():
    s = interleaved_1f1b(4, 8, v=2)
    assert s.placement == ((0, 1, 2, 3, 0, 1, 2, 3),)
    assert {op.chunk for op in s.stages[0]} == {0, 4}  # the textbook's C1 and C5, counted from 0


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (2, 4, 3), (4, 16, 4), (3, 3, 2)])
def test_interleaved_warmup_follows_megatron(p, m, v):
    s = interleaved_1f1b(p, m, v)
    for j, stage in enumerate(s.stages):
        first_backward = next(i for i, op in enumerate(stage) if op.kind == "B")
        assert first_backward == min((p - j - 1) * 2 + (v - 1) * p + 1, m * v)


def test_interleaved_takes_micro_batches_in_groups_of_p():
    forwards = [op for op in interleaved_1f1b(2, 4, v=2).stages[0] if op.kind == "F"]
    assert [(op.microbatch, op.chunk) for op in forwards] == [(0, 0), (1, 0), (0, 2), (1, 2), (2, 0), (3, 0), (2, 2), (3, 2)]


def test_zero_bubble_h1_splits_every_backward_and_keeps_1f1b_warmup():
    s = zero_bubble_h1(4, 8)
    base = one_f_one_b(4, 8)
    for ours, theirs in zip(s.stages, base.stages):
        assert [op for op in ours if op.kind != "W"] == list(theirs)
        assert sorted(op.microbatch for op in ours if op.kind == "W") == list(range(8))
        for op in ours:  # each W after its own B
            if op.kind == "W":
                assert ours.index(Op("B", op.microbatch, op.chunk)) < ours.index(op)


def test_dualpipe_feeds_both_ends_and_holds_two_stages_per_gpu():
    s = dualpipe(4, 8)
    assert s.placement == ((0, 1, 2, 3), (3, 2, 1, 0))
    assert s.stages[0][0] == Op("F", 0, 0, 0)
    assert s.stages[3][0] == Op("F", 4, 0, 1)  # direction 1 enters at the last GPU
    for j, stage in enumerate(s.stages):
        assert {(op.chunk, op.direction) for op in stage} == {(j, 0), (3 - j, 1)}
    assert sorted({op.microbatch for op in s.stages[0] if op.direction == 1}) == [4, 5, 6, 7]


def test_dualpipe_phase_counts_match_deepseeks_structure():
    p, m = 8, 20
    s = dualpipe(p, m)
    for j, stage in enumerate(s.stages):
        h = min(j, p - 1 - j)
        phase0 = 0 if j < p // 2 else 1
        leading = [op for op in stage[: (p // 2 - h - 1) * 2]]
        assert all(op.kind == "F" and op.direction == phase0 for op in leading)
        assert stage[-(h + 1):] == tuple(op for op in stage[-(h + 1):] if op.kind == "W")


def test_dualpipe_v_folds_the_model_onto_a_v():
    s = dualpipe_v(4, 8)
    assert s.placement == ((0, 1, 2, 3, 3, 2, 1, 0),)
    assert {op.chunk for op in s.stages[1]} == {1, 6}


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: gpipe(0, 4), "p (stages) must be a whole number ≥ 1"),
        (lambda: one_f_one_b(4, 0), "m (micro-batches) must be a whole number ≥ 1"),
        (lambda: interleaved_1f1b(4, 8, 0), "v (chunks per stage) must be a whole number ≥ 1"),
        (lambda: interleaved_1f1b(4, 6, 2, group=3), "group (micro-batches per chunk in turn) must be a whole number from min(p, m) = 4 to m = 6"),
        (lambda: interleaved_1f1b(4, 6, 2, group=4), "the last group, m mod group = 2, must be 0 or at least p = 4"),
        (lambda: chimera(3, 6), "chimera needs an even number of stages p"),
        (lambda: build("zb-v", 4, 8, v=3), "v (chunks per stage) applies only to interleaved, interleaved-zb, looped-bfs"),
        (lambda: build("1f1b", 4, 8, group=4), "group applies only to interleaved, interleaved-zb"),
        (lambda: dualpipe(3, 8), "even number of stages"),
        (lambda: dualpipe(4, 6), "m ≥ 2p"),
        (lambda: dualpipe(4, 9), "even m"),
        (lambda: dualpipe_v(4, 7), "m ≥ 2p"),
        (lambda: gpipe(2.5, 4), "whole number"),
        (lambda: build("pipedream", 4, 4), "unknown schedule 'pipedream'"),
        (lambda: build("gpipe", 4, 4, v=2), "v (chunks per stage) applies only to"),
    ],
)
def test_bad_input_names_the_rule(call, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        call()


def test_registry_builds_every_schedule():
    for name in schedules.SCHEDULES:
        s = build(name, 4, 8, v=2 if name in schedules.VIRTUAL else 1)
        s.validate()
        assert s.name == name and s.p == 4 and s.microbatches == 8


def test_validate_names_the_faulty_operation():
    s = one_f_one_b(2, 2)
    broken = type(s)((s.stages[0][1:], s.stages[1]), s.name, s.placement, s.microbatches)
    with pytest.raises(ValueError, match=r"F0c0 is missing"):
        broken.validate()
    doubled = type(s)((s.stages[0] + s.stages[0][:1], s.stages[1]), s.name, s.placement, s.microbatches)
    with pytest.raises(ValueError, match=r"F0c0 appears 2 times"):
        doubled.validate()
    odd = type(s)((s.stages[0] + (Op("X", 0, 0),), s.stages[1]), s.name, s.placement, s.microbatches)
    with pytest.raises(ValueError, match=r"X0c0 has kind 'X'; the kinds are F, B and W"):
        odd.validate()
    moved = type(s)((s.stages[0] + (Op("F", 5, 1),), s.stages[1]), s.name, s.placement, s.microbatches)
    with pytest.raises(ValueError, match=r"F5c1 is on stage 0 but chunk 1 lives on stage 1"):
        moved.validate()


UNIT_SPLIT = Costs(f=1, b=1, w=1)  # equal F, B and W: the zero-bubble paper's setting


@pytest.mark.parametrize("memory", [FREE_AT_W, FREE_AT_B])
def test_zb_v_matches_dualpipe_v_time_with_fewer_activations(memory):
    # p = 4, v = 2, m = 16: both take 99 steps for 96 of work; ZB-V keeps 8 chunk-activations, DualPipeV 9,
    # whether B or W frees them.
    zbv, dpv = (simulate(s, UNIT_SPLIT, memory=memory) for s in (zero_bubble_v(4, 16), dualpipe_v(4, 16)))
    assert zbv.makespan == dpv.makespan == 99
    assert max(zbv.peak_activations) == 8 and max(dpv.peak_activations) == 9
    assert zbv.schedule.placement == dpv.schedule.placement


def test_interleaved_zero_bubble_cuts_interleavings_bubble():
    # p = 2, v = 2, m = 8, equal F, B, W per chunk: 2.0 % idle against 5.9 % for interleaved 1F1B.
    izb = simulate(interleaved_zero_bubble(2, 8, 2), UNIT_SPLIT)
    i1 = simulate(interleaved_1f1b(2, 8, 2), UNIT_SPLIT)
    assert round(izb.bubble_ratio * 100, 1) == 2.0 and round(i1.bubble_ratio * 100, 1) == 5.9
    assert i1.bubble_ratio == pytest.approx((2 - 1) / (2 * 8 + 2 - 1))  # (p-1)/(v·m+p-1)


@pytest.mark.parametrize("p,m,v", [(4, 16, 2), (4, 8, 3), (2, 6, 2)])
def test_looped_bfs_runs_as_fast_as_interleaving_but_holds_every_activation(p, m, v):
    bfs, inter = simulate(looped_bfs(p, m, v)), simulate(interleaved_1f1b(p, m, v))
    assert bfs.makespan == inter.makespan
    assert bfs.peak_activations == (m * v,) * p  # 32 at p=4, m=16, v=2, against interleaving's 11
    assert max(inter.peak_activations) == min((p - 1) * 2 + (v - 1) * p + 1, m * v)


# The paper's ZB-H2 at p = 4, m = 12, one row per stage: 2(p-1-j)+1 forwards, then B, W, F in turn; the last
# 2p-2 backwards one op apart (a forward while any is left, else a W); the 2j+1 W's still owed.
PAPERS_ZB_H2 = """fffffffbwfbwfbwfbwfbwfbwbwbwbwbwbwbw
fffffbwfbwfbwfbwfbwfbfbfbwbwbwbwbwww
fffbwfbwfbwfbwfbwfbfbfbfbfbwbwbwwwww
fbwfbwfbwfbwfbwfbfbfbfbfbfbfbwwwwwww"""


def test_zb_h2_runs_its_ws_in_the_steady_state():
    rows = ["".join(op.kind for op in stage).lower() for stage in zero_bubble_h2(4, 12).stages]
    assert rows == PAPERS_ZB_H2.splitlines()


@pytest.mark.parametrize("p,m", [(4, 12), (4, 7), (8, 32), (3, 5), (4, 16)])
def test_zb_h2_leaves_no_gap_on_any_stage_within_2p_minus_1_micro_batches(p, m):
    # Qi et al.: ZB-H2 peaks at (2p-1) micro-batches' activations, 1F1B and ZB-H1 at p.
    t = simulate(zero_bubble_h2(p, m), UNIT_SPLIT)
    for s in range(p):
        events = t.on_stage(s)
        assert min(e.start for e in events) == s and max(e.end for e in events) == 3 * m + s  # a parallelogram
    assert t.peak_activations == (2 * p - 1,) * p  # W frees them: every stage reaches 2p-1 once, none passes it
    assert simulate(zero_bubble_h2(p, m), UNIT_SPLIT, memory=FREE_AT_B).peak_activations == \
        tuple(2 * (p - 1 - j) + 1 for j in range(p))  # B frees them: the warm-up's forwards
    assert simulate(zero_bubble_h1(p, m), UNIT_SPLIT).peak_activations == (p,) * p
    assert simulate(one_f_one_b(p, m)).peak_activations[0] == p


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 8), m=st.integers(1, 30))
def test_zb_h2_never_holds_more_than_2p_minus_1_micro_batches(p, m):
    assert max(simulate(zero_bubble_h2(p, m), UNIT_SPLIT).peak_activations) == min(m, 2 * p - 1)


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 12])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_chimera_leaves_p_minus_2_idle_slots_per_gpu(p, k):
    # Li and Hoefler: p-2 bubbles per worker against 1F1B's 2(p-1), equal F and B; k basic units of m = p.
    m = k * p
    t = simulate(chimera(p, m))
    assert t.makespan == 2 * m + p - 2 and simulate(one_f_one_b(p, m)).makespan == 2 * m + 2 * (p - 1)
    assert all(sum(e.end - e.start for e in t.on_stage(s)) == 2 * m for s in range(p))  # so p-2 idle on each
    assert t.schedule.placement == ((*range(p),), (*range(p - 1, -1, -1),))  # two model replicas


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_chimera_basic_unit_keeps_the_papers_activation_range(p, k):
    # Each worker holds between p/2 + 1 and p micro-batches' activations (the paper's range), units in a row too.
    t = simulate(chimera(p, k * p))
    assert all(p // 2 + 1 <= a <= p for a in t.peak_activations)
    assert max(t.peak_activations) == p


@pytest.mark.parametrize("p", [4, 6, 8, 10])
@pytest.mark.parametrize("k", [1, 2])
def test_chimera_between_multiples_of_p_still_leaves_p_minus_2_idle_slots(p, k):
    # The paper's units need p | m; the greedy order for the m between them does as well once m > p.
    m = k * p + 2
    assert simulate(chimera(p, m)).makespan == 2 * m + p - 2


@pytest.mark.parametrize("name", sorted(schedules.GROUPED))
def test_interleaving_accepts_every_m_megatron_or_pytorch_does(name):
    # Megatron: any m ≥ p, with a group size that leaves a last group of 0 or ≥ p; PyTorch: m < p too.
    for p in range(2, 6):
        for m in range(1, 3 * p + 2):
            for v in (2, 3):
                t = simulate(build(name, p, m, v), UNIT_SPLIT)
                assert len(t.events) == (3 if name == "interleaved-zb" else 2) * m * p * v


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 6), m=st.integers(1, 12), v=st.integers(1, 3), data=st.data())
def test_every_megatron_group_size_gives_a_valid_order(p, m, v, data):
    group = data.draw(st.integers(min(p, m), m).filter(lambda g: m % g == 0 or m % g >= p))
    for name in sorted(schedules.GROUPED):
        s = build(name, p, m, v, group)
        s.validate()
        simulate(s)  # no deadlock


def test_each_schedules_stated_rule_is_its_builders_rule():
    from ppedu.schedules import NAMES, RULES

    assert set(RULES) == set(SCHEDULES) == set(NAMES)
    for name in SCHEDULES:
        for p in range(1, 9):
            for m in range(1, 20):
                try:
                    build(name, p, m, 2 if name in VIRTUAL else 1)
                    runs = True
                except ValueError:
                    runs = False
                assert runs == RULES[name].accepts(p, m), (name, p, m)


def test_zb_h2_runs_every_gpu_without_a_gap_exactly_from_m_2p_minus_1():
    # its docstring said "no gap at F = B = W" for every m; with fewer micro-batches the early GPUs wait
    for p in range(2, 6):
        for m in range(1, 3 * p):
            t = simulate(zero_bubble_h2(p, m), Costs(f=1, b=1, w=1))
            gaps = sum(b.start - a.end for j in range(p) for a, b in zip(t.on_stage(j), t.on_stage(j)[1:]))
            assert (gaps == 0) == (m >= 2 * p - 1), (p, m)


def _damaged(schedule, change, where):
    """``schedule`` with one op dropped, doubled, moved to another GPU, renumbered or re-kinded."""
    stages = [list(s) for s in schedule.stages]
    s = where % len(stages)
    i = where % len(stages[s])
    op = stages[s][i]
    if change == "drop":
        del stages[s][i]
    elif change == "double":
        stages[s].insert(i, op)
    elif change == "move":
        stages[(s + 1) % len(stages)].append(stages[s].pop(i))
    elif change == "renumber":
        stages[s][i] = op._replace(microbatch=op.microbatch + schedule.microbatches)
    elif change == "negative":
        stages[s][i] = op._replace(microbatch=-1)
    else:
        stages[s][i] = op._replace(kind={"F": "B", "B": "W", "W": "F"}[op.kind])
    return type(schedule)(tuple(map(tuple, stages)), schedule.name, schedule.placement, schedule.microbatches,
                          schedule.virtual)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(schedules.SCHEDULES)), p=st.sampled_from([2, 4]), k=st.integers(1, 3),
       change=st.sampled_from([None, "drop", "double", "move", "renumber", "negative", "rekind"]),
       where=st.integers(0, 10_000))
def test_the_vectorised_and_the_op_by_op_checks_agree(name, p, k, change, where):
    """Schedule.columns checks a schedule in one numpy pass, and op by op where numpy is missing (the browser
    edition): on every schedule, right or damaged, both passes say the same, and give the same columns."""
    schedule = build(name, p, 2 * p * k, v=2 if name in schedules.VIRTUAL else 1)
    if change is not None:
        schedule = _damaged(schedule, change, where)
    vectorised, one_by_one = schedule._columns(), schedule._columns_one_by_one()
    assert (vectorised is None) == (one_by_one is None), (name, change)
    if vectorised is not None:
        assert [list(map(int, column)) for column in (vectorised.needs, vectorised.forward, vectorised.split)] == \
               [list(map(int, column)) for column in (one_by_one.needs, one_by_one.forward, one_by_one.split)]
