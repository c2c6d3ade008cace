"""ps3: three orders no library builds, judged against the grader's builders. The solution earns every point, a blank
notebook none, and the corpus's wrong and pasted-from-ppedu answers exactly the points the corpus says (the end-to-end
run in test_autograde grades the same cases through nbgrader); ppedu's own schedules never give a question's order;
and the facts question 4's model answer rests on hold in the simulator over costs, not at f = b alone."""

import json

import nbformat
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT
from corpus import PS3, PS3_ALL
from grader import keys
from grader.keys.ps3 import gpipe_waves, grouped_1f1b, leftover_first
from ppedu import Costs, schedules, simulate
from ppedu.grading.answers import calls
from ppedu.grading.assignments import load, my_values
from ppedu.schedules.one_f_one_b import with_warmups

STUDENTS = ("alice", "bob", "carol")
KEYS = keys.load("ps3").KEYS
COST = st.sampled_from((0.5, 1.0, 1.5, 2.0, 3.0))


def _answers(replace=None, release=False):
    """The answer cells of the solution (or of the release), with ``replace``'s cells in their place, run in order as
    the notebook would, with ppedu's records only."""
    folder = "exercises" if release else "solutions"
    nb = nbformat.read(ROOT / folder / "ps3" / "ps3.ipynb", as_version=4)
    namespace = {}
    exec("from ppedu.ops import Op, Schedule\nfrom ppedu import Costs", namespace)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and grade_id.endswith("_answer"):
            exec((replace or {}).get(grade_id, cell.source), namespace)
    return namespace


def _scores(namespace, student):
    v = my_values("ps3", student)
    out = {}
    for question, judge in KEYS.items():
        name = judge.form.name
        data = {name: calls(namespace, name, judge.calls(v)[name])} if name in namespace else {}
        out[question] = judge.judge(json.loads(json.dumps(data)), v).score
    return out


@pytest.mark.parametrize("student", STUDENTS)
def test_the_solution_earns_every_point_and_its_own_check_agrees(student):
    namespace = _answers()
    assert _scores(namespace, student) == PS3_ALL
    v = my_values("ps3", student)
    for question, form in load("ps3").QUESTIONS.items():
        data = json.loads(json.dumps({form.name: calls(namespace, form.name, form.calls(v)[form.name])}))
        assert form.visible(data, v).score == form.points


def test_a_blank_release_earns_nothing():
    assert _scores(_answers(release=True), "alice") == dict.fromkeys(PS3_ALL, 0)


@pytest.mark.parametrize("case", ["pasted_ppedu", "breaks_a_dependency", "pytorch_warmup_for_grouped", "wrong_type"])
@pytest.mark.parametrize("student", STUDENTS)
def test_wrong_and_pasted_answers_earn_exactly_the_corpus_points(case, student):
    answers = _answers({cell: source for cell, source in PS3[case].replace.items()})
    want = {q: PS3_ALL[q] - PS3[case].lost.get(q, 0) for q in PS3_ALL}
    assert _scores(answers, student) == pytest.approx(want)


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 7), m=st.integers(1, 24), k=st.integers(2, 5), v=st.integers(2, 4))
def test_no_schedule_of_ppedus_is_a_questions_order(p, m, k, v):
    """What students have: every schedule of ppedu's (each v, each group it takes) and 1F1B with any warm-up each GPU
    alike or 1F1B's widened, against the three orders on sizes the questions ask (k not dividing m; m mod p ≠ 0 with
    three groups or more)."""
    m = k + m + (m % k == 0)  # more than one wave, the last one short
    theirs = [s.stages for s in (schedules.gpipe(p, m), schedules.one_f_one_b(p, m), schedules.looped_bfs(p, m, 1),
                                 with_warmups([min(m, k * (p - j)) - 1 for j in range(p)], m),
                                 *(with_warmups([w] * p, m) for w in range(m + 1)))]
    assert gpipe_waves(p, m, k).stages not in theirs and grouped_1f1b(p, m, k).stages not in theirs
    n = 3 * p + 1 + m % (p - 1) if p > 2 else 7
    ours = leftover_first(p, n, v).stages
    assert all(ours != schedules.interleaved_1f1b(p, n, v, group=g).stages
               for g in range(p, n + 1) if n % g == 0 or n % g >= p)
    assert ours != schedules.looped_bfs(p, n, v).stages


@settings(max_examples=40, deadline=None)
@given(p=st.integers(2, 7), groups=st.integers(1, 6), k=st.integers(1, 4), f=COST, b=COST)
def test_grouping_1f1b_costs_memory_and_no_time(p, groups, k, f, b):
    """Question 4: with k dividing m, grouped 1F1B takes 1F1B's step, (m + p − 1)(f + b) on equal stages, the last GPU
    working without a gap from its first forward; GPU j holds min(m, k(p − j)) micro-batches against min(m, p − j)."""
    m = k * groups
    t = simulate(grouped_1f1b(p, m, k), Costs(f=f, b=b))
    assert t.makespan == pytest.approx(simulate(schedules.one_f_one_b(p, m), Costs(f=f, b=b)).makespan)
    assert t.makespan == pytest.approx((m + p - 1) * (f + b))
    last = sorted((e.start, e.end) for e in t.on_stage(p - 1))
    assert last[0][0] == pytest.approx((p - 1) * f) and last[-1][1] == pytest.approx(t.makespan - (p - 1) * b)
    assert all(end == pytest.approx(start) for (_, end), (start, _) in zip(last, last[1:]))
    assert t.peak_activations == tuple(min(m, k * (p - j)) for j in range(p))
    assert grouped_1f1b(p, m, 1).stages == schedules.one_f_one_b(p, m).stages


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 6), rounds=st.integers(1, 5), left=st.integers(0, 5), v=st.integers(2, 4), f=COST, b=COST)
def test_the_leftover_first_runs_without_a_wait_beyond_the_fill(p, rounds, left, v, f, b):
    """Question 3's rules make an order that runs, at interleaving's step (v·m + p − 1)(f + b)/v on chunks of 1/v of
    a stage, and is Megatron-LM's where p divides m."""
    m = p * rounds + left % p
    t = simulate(leftover_first(p, m, v), Costs(f=f, b=b).per_chunk(v))
    assert t.makespan == pytest.approx((v * m + p - 1) * (f + b) / v)
    if m % p == 0:
        assert leftover_first(p, m, v).stages == schedules.interleaved_1f1b(p, m, v).stages


def test_the_caps_hold():
    """Question 1's waves never hold more than k micro-batches; k ≥ m is GPipe."""
    for p, m, k in ((3, 7, 2), (4, 2, 3), (5, 11, 4)):
        assert max(simulate(gpipe_waves(p, m, k)).peak_activations) == min(k, m)
    assert gpipe_waves(3, 4, 4).stages == schedules.gpipe(3, 4).stages
