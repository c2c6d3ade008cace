"""ps1's closed-form questions at sizes no simulation reaches (3a at m near 10⁹, 4b with a fewest m of 10⁸–10⁹):
the key's truth there is the closed form it states, held here against the simulator wherever the simulator runs; the
model answers meet the key at every size; a function that does not answer within a call's limit loses its question
only, with the grader's words; and the covered grid of question 1 is not counted by counting its cells."""

import json
import math
import time

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT

from grader.keys import ps1 as key
from ppedu import Costs, schedules, simulate
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import Values, my_values
from ppedu.grading.assignments.ps1 import CALL_LIMIT, QUESTIONS
from ppedu.grading.evaluate import Cell, run_functions
from ppedu.picture import Picture

FEW = settings(max_examples=60, deadline=None)
STUDENTS = [f"s{i}" for i in range(120)]


def answers(*grade_ids):
    """The model answers' functions, from the solution notebook's cells."""
    nb = json.loads((ROOT / "solutions" / "ps1" / "ps1.ipynb").read_text())
    namespace = {}
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") in grade_ids:
            exec("".join(cell["source"]).replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""), namespace)
    return namespace


@FEW
@given(p=st.integers(2, 9), m=st.integers(1, 14), k=st.sampled_from((1, 1.25, 1.5, 2, 2.5, 3, 4)), data=st.data())
def test_the_slow_makespans_closed_form_is_the_simulators(p, m, k, data):
    """3a: 3(p − 1) + 3mk wherever GPU s sits — the form the key answers with above SIMULATED micro-batches."""
    s = data.draw(st.integers(0, p - 1))
    assert simulate(schedules.gpipe(p, m), key.slow_costs(p, s, k)).makespan == pytest.approx(
        float(key.slow_makespan(p, m, k)), abs=1e-9)


@FEW
@given(p=st.integers(2, 12), target=st.sampled_from((0.02, 0.05, 0.08, 0.1, 0.12, 0.2, 0.25, 0.3, 0.5)),
       c=st.sampled_from((0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.5)))
def test_the_fewest_micro_batches_closed_form_is_the_simulators(p, target, c):
    """4b: the ceiling of the exact solution is the fewest m whose simulated bubble meets the target (met exactly
    counts), and one fewer misses it."""
    m = max(1, math.ceil(key._gpipe_fewest(p, target, c)))
    assert key._gpipe_bubble(p, m, c) <= target + 1e-12
    assert m == 1 or key._gpipe_bubble(p, m - 1, c) > target + 1e-12


def test_above_what_is_simulated_the_key_answers_in_closed_form():
    assert key._gpipe_slow("gpipe_slow", (5, 10**9, 2, 2.5)) == 3 * 4 + 3 * 10**9 * 2.5
    assert key._fewest("fewest_microbatches", (12, 2e-07, 2.0)) == 128333308  # ⌈11·7·(1 − t)/(3t)⌉
    assert key.HUGE and all(10**8 <= key._gpipe_fewest(*case) <= 10**9 for case in key.HUGE)
    # a float's rounding never decides a huge case: the exact solution is 0.01 or more from a whole number
    assert all(0.01 < key._gpipe_fewest(*case) % 1 < 0.99 for case in key.HUGE)


def test_every_student_is_called_at_a_size_no_simulation_reaches():
    for student in STUDENTS[:20]:
        v = my_values("ps1", student)
        assert max(args[1] for args in key._hidden("gpipe_slow", v)) >= 5 * 10**8
        assert max(key._fewest("fewest_microbatches", a) for a in key._hidden("fewest_microbatches", v)) >= 10**8


def test_the_model_answers_meet_the_key_on_every_input():
    functions = answers("q3s_answer", "q4_answer")
    for student in STUDENTS:
        v = my_values("ps1", student)
        for question, truth in (("slow_form", key._gpipe_slow), ("microbatches", key._fewest)):
            judge = key.KEYS[question]
            for name, calls in judge.calls(v).items():
                for args in calls:
                    got, want = functions[name](*args), truth(name, args)
                    assert abs(got - want) <= max(1e-9, judge.rel * abs(want)), (student, name, args, got, want)


def _judged(question, data, student="s1"):
    try:
        return key.KEYS[question].judge(data, Values("ps1", student, my_values("ps1", student)))
    except Wrong as wrong:
        return str(wrong)


def test_a_call_over_its_limit_loses_its_question_with_the_graders_words():
    v = Values("ps1", "s1", my_values("ps1", "s1"))
    judge = key.KEYS["slow_form"]
    timed_out = {"__raised__": "CellTimeout", "message": "it ran over its time limit and was stopped"}
    calls = judge.calls(v)["gpipe_slow"]
    right = {"gpipe_slow": [[list(a), key._gpipe_slow("gpipe_slow", a)] for a in calls]}
    assert _judged("slow_form", right) == "correct"
    hidden = next(a for a in calls if a[1] > 10**8 and a not in judge.form.arguments("gpipe_slow", v))
    late = {"gpipe_slow": [[a, timed_out if tuple(a) == hidden else r] for a, r in right["gpipe_slow"]]}
    said = _judged("slow_form", late)
    assert f"time limit ({CALL_LIMIT} s a call)" in said and "closed form" in said and str(hidden[1]) not in said
    shown = {"gpipe_slow": [[list(a), timed_out if a[1] == 10**9 else r] for a, r in right["gpipe_slow"]]}
    assert "gpipe_slow(5, 1000000000, 2, 2.5)" in _judged("slow_form", shown)
    with pytest.raises(Wrong, match="ran over its time limit"):
        QUESTIONS["slow_form"].visible(shown, v)


def test_the_harness_stops_a_call_at_its_own_limit_and_makes_the_next():
    """A call past ``call_timeout`` is stopped there (not at the cell's limit) and the calls after it are made."""
    cells = [Cell("def slow(m):\n    while True:\n        m += 1\n\ndef fast(m):\n    return 2 * m"),
             Cell("", test="q")]
    began = time.monotonic()
    run = run_functions(cells, QUESTIONS["slow_form"].code.library, {"q": {"slow": [(1,)], "fast": [(3,)]}}, "ps1",
                        "s1", {}, 120, cell_timeout=60, call_timeout=1, use_sandbox=False)
    assert time.monotonic() - began < 30  # the cell's limit would be 60 s
    assert run.results["q"]["slow"][0][1]["__raised__"] == "CellTimeout"
    assert run.results["q"]["fast"] == [[[3], 6]]


@pytest.mark.parametrize("variant", range(0, 48, 5))
def test_the_covered_grid_is_not_counted_by_its_cells(variant):
    """Question 1b: the visible idle cells, or those and every covered one, are never the idle count; the key's hint
    names each mistake; every GPU's busy slots (3m, 6m on the slow one) give it."""
    shown = key.shown(variant)
    rows, v = Picture.from_json(shown["grid"]).rows, {"variant": variant}
    k = key._slots_key(v)
    seen, covered = (sum(c == cell for row in rows for c in row) for cell in ("", "?"))
    assert covered and k["idle_slots"] not in (seen, seen + covered)
    assert k["idle_slots"] == k["total_slots"] - 3 * shown["m"] * (shown["p"] - 1) - 6 * shown["m"]
    assert "cover hides" in key._slots_hint("idle_slots", seen, {"idle_slots": seen}, k, v)
    both = seen + covered
    assert "not every covered cell" in key._slots_hint("idle_slots", both, {"idle_slots": both}, k, v)


def test_more_micro_batches_leave_the_slow_gpus_bubble_near_half():
    """1c's model answer: the idle slots are 3p(p − 1) + 3m(p − 1), and the bubble tends to (p − 1)/(2p)."""
    for p, m, s in ((3, 4, 0), (5, 7, 2), (4, 40, 3), (6, 200, 1)):
        t = simulate(schedules.gpipe(p, m), key.slow_costs(p, s))
        assert t.idle_slots == 3 * p * (p - 1) + 3 * m * (p - 1)
