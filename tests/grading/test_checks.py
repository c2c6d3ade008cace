"""The grading library without nbgrader: per-student values, answers as plain data, answer
messages, the judge's keys (grader/, the instructor's), schedule checks with partial credit."""

import dataclasses
import json
import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from ppedu import cluster, schedules
from ppedu.grading import Wrong, my_values
from ppedu.grading.answers import Choice, Counts, Flag, Number, calls, plain
from ppedu.grading.assignments import ASSIGNMENTS, load
from ppedu.grading.evaluate import Cell, run_functions
from ppedu.grading.questions import explain
from ppedu.grading.schedule_checks import grade_schedule
from ppedu.grading.students import student_id

sys.path.insert(0, str(ROOT))  # the instructor's grader/ beside nbgrader_config.py
from grader import keys  # noqa: E402


def message(read, namespace):
    with pytest.raises(Wrong) as caught:
        read(namespace)
    return str(caught.value)


def judged(assignment, question, source, student="alice"):
    """The judge's verdict on answer cell ``source`` followed by the question's test cell, run as the autograder
    runs a notebook (a message if wrong)."""
    judge, form, v = keys.load(assignment).KEYS[question], load(assignment).QUESTIONS[question], my_values(assignment, student)
    cells, requests = [Cell(source, None), Cell("", question)], {question: judge.calls(v)}
    run = run_functions(cells, form.code.library, requests, assignment, student, v, timeout=120,
                        driver=form.code.driver)
    try:
        return judge.judge(run.results.get(question, {}), v)
    except Wrong as wrong:
        return str(wrong) + explain(run.account(cells, question, requests[question]))


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_values_are_a_function_of_the_student_and_differ_between_students(name):
    assert my_values(name, "alice") == my_values(name, "alice")
    assert len({repr(my_values(name, f"student{i}")) for i in range(30)}) > 5  # values may hold lists


def test_the_student_id_comes_from_the_environment_in_a_documented_order():
    assert student_id({"PPEDU_STUDENT_ID": "a", "JUPYTERHUB_USER": "b"}) == "a"
    assert student_id({"JUPYTERHUB_USER": "b"}) == "b"
    assert student_id({}) == __import__("getpass").getuser()


@pytest.mark.parametrize("value, says", [
    ("56", "without quotes"), (True, "yes/no"), (float("nan"), "NaN"), (math.inf, "infinite"),
    ([56], "single number"), (55.5, "whole"), (-3, "negative")])
def test_a_malformed_count_gets_a_message_naming_the_problem(value, says):
    assert says in message(Number("total_slots", whole=True).read, {"total_slots": value})


def test_messages_for_ratios_choices_flags_lists_and_missing_names():
    assert "percentage" in message(Number("bubble", fraction=True).read, {"bubble": 42.9})
    assert "not defined" in message(Number("bubble").read, {})
    assert "choices" in message(Choice("c", ("smaller", "equal")).read, {"c": "less"})
    assert Choice("c", ("smaller", "equal")).read({"c": " Equal "}) == "equal"
    assert "True or False" in message(Flag("f").read, {"f": 1})
    assert "one per GPU" in message(Counts("peaks", 4).read, {"peaks": [1, 2]})


def test_an_object_that_claims_to_equal_everything_is_no_answer():
    """A subclass of a number, with methods of its own, is not read as its number: it is not an answer (issue 35)."""
    liar = ("class Liar(float):\n    def __eq__(self, other):\n        return True\n\n\n"
            "def idle_share(bubble, m, F, B, W):\n    return Liar(0.123)")
    assert "is a Liar; this answer is a single number" in judged("ps1", "conversion", liar)


@pytest.mark.parametrize("value, expected", [
    (np.int64(3), 3), (np.True_, True), (np.float32(0.5), 0.5), (np.array(2.5), 2.5), ((1, np.int64(2)), [1, 2]),
    (np.array([1, 2]), [1, 2]), (schedules.gpipe(1, 1), [[["F", 0, 0, 0], ["B", 0, 0, 0]]]), (object(), {"__type__": "object"})])
def test_plain_turns_what_a_notebook_holds_into_json_data(value, expected):
    assert plain(value) == expected and json.loads(json.dumps(plain(value))) == expected


def test_right_answers_in_numpys_types_earn_every_point():
    v = my_values("ps2", "alice")
    key = keys.load("ps2")._memory_key(v)
    namespace = {"max_m_gpipe": np.int64(key["max_m_gpipe"]), "fits_1f1b": np.bool_(key["fits_1f1b"])}
    data = json.loads(json.dumps(load("ps2").QUESTIONS["fits"].data(namespace, v)))
    assert keys.load("ps2").KEYS["fits"].judge(data, v) == "correct"


def test_the_students_package_holds_no_key_and_no_judge():
    for name in ASSIGNMENTS:
        assert not any(hasattr(q, "key") or hasattr(q, "judge") for q in load(name).QUESTIONS.values())


@settings(max_examples=15, deadline=None)
@given(p=st.integers(1, 5), m=st.integers(1, 6))
def test_ppedus_own_schedules_earn_every_point(p, m):
    for name in ("gpipe", "1f1b"):
        results = calls({"f": lambda p, m, name=name: schedules.build(name, p, m)}, "f", [(p, m)])
        assert grade_schedule(results, name, [(p, m)], points=4).score == 4


def test_a_schedule_that_repeats_an_op_earns_nothing_and_is_told_which():
    def twice(p, m):
        stages = [list(s) for s in schedules.one_f_one_b(p, m).stages]
        stages[0].append(stages[0][0])
        return stages

    report = grade_schedule(calls({"f": twice}, "f", [(2, 2)]), "1f1b", [(2, 2)], points=4)
    assert report.score == 0 and "F0c0 appears 2 times" in str(report)


def test_a_schedule_that_raises_gets_a_message_not_a_traceback():
    report = grade_schedule(calls({"f": lambda p, m: 1 / 0}, "f", [(2, 2)]), "1f1b", [(2, 2)], points=4)
    assert report.score == 0 and "raised ZeroDivisionError" in str(report)


def test_a_schedule_not_run_on_the_students_own_size_earns_nothing():
    results = calls({"f": lambda p, m: schedules.gpipe(p, m)}, "f", [(2, 2)])
    assert grade_schedule(results, "gpipe", [(2, 2), (3, 4)], points=2).score == 0


def test_ps4s_formula_is_checked_on_hidden_inputs_where_no_simulator_is_installed():
    v = my_values("ps4", "alice")
    g = keys.load("ps4").params(v.variant)  # the student's picture: its sizes are the first input tried
    right = "def waves_makespan(p, m, k, f, b):\n    return (m + k * (p - 1)) * (f + b)"
    assert judged("ps4", "waves", right) == "correct"
    one_pass = "def waves_makespan(p, m, k, f, b):\n    return (m + p - 1) * (f + b)"
    assert "fills and drains the pipeline again" in judged("ps4", "waves", one_pass)
    own = f"def waves_makespan(p, m, k, f, b):\n    return {(g['m'] + 2 * (g['p'] - 1)) * (1 + g['b'])}"
    said = judged("ps4", "waves", own)  # right on the student's picture only: wrong on the example first
    assert "returned" in said and "(6, 12, 3, 1, 2)" in said
    example_too = own.replace("    return", "    if (p, m) == (6, 12):\n        return 81\n    return")
    said = judged("ps4", "waves", example_too)  # right on every input shown: the hidden ones are never named
    assert "not on one the autograder chose" in said and not any(str(c) in said for c in keys.load("ps4").HIDDEN_CASES)
    simulated = ("from ppedu import Costs, simulate\nfrom ppedu.ops import Op, Schedule\n"
                 "from ppedu.schedules import one_f_one_b\n\n\n"
                 "def waves_makespan(p, m, k, f, b):\n    wave = one_f_one_b(p, m // k).stages\n"
                 "    stages = tuple(tuple(Op(o.kind, o.microbatch + w * (m // k), o.chunk) for w in range(k) for o in s)"
                 " for s in wave)\n"
                 "    return simulate(Schedule(stages, 'waves', (tuple(range(p)),), m), Costs(f=f, b=b)).makespan")
    said = judged("ps4", "waves", simulated)
    assert "is not available while this question is checked" in said and "Traceback" not in said


def test_ps4s_grid_slips_get_their_own_hints():
    ps4, v = keys.load("ps4"), my_values("ps4", "alice")
    key, g = ps4._grid_key(v), ps4.params(v.variant)
    grade = lambda ns: ps4.KEYS["grid"].judge(ns, v)  # noqa: E731
    assert grade({**key, "peak_activations": list(key["peak_activations"])}) == "correct"
    busy = g["p"] * key["T"] - key["idle_slots"]
    assert "busy slots" in message(grade, {**key, "idle_slots": busy, "peak_activations": list(key["peak_activations"])})
    assert "GPU 0 first" in message(grade, {**key, "peak_activations": list(reversed(key["peak_activations"]))})
    assert "once per wave" in message(grade, {**key, "T": (g["m"] + g["p"] - 1) * (1 + g["b"]),
                                              "peak_activations": list(key["peak_activations"])})


def test_ps4s_choice_comes_from_ppedu_cluster_and_a_wrong_one_gets_its_own_hint():
    from ppedu import cluster

    ps4, v = keys.load("ps4"), my_values("ps4", "alice")
    model, gpus = ps4.your_cluster(v)
    grade = lambda ns: ps4.KEYS["choose"].judge(ns, v)  # noqa: E731
    winner = cluster.best(cluster.plan(model, gpus, [v.m]))
    assert grade({"schedule": winner.schedule}).startswith("correct\n(For question 4b's grader")
    wrong = next(r for r in cluster.plan(model, gpus, [v.m]) if r.fits and r.schedule != winner.schedule)
    said = message(grade, {"schedule": wrong.schedule})
    assert "fits, but" in said and winner.schedule not in said


@pytest.mark.parametrize("student", ["bob", "carol", "dave"])
def test_every_ps4_key_is_an_answer_a_student_can_give(student):
    ps4, v = keys.load("ps4"), my_values("ps4", student)
    grid, g = ps4._grid_key(v), ps4.params(v.variant)
    assert grid["T"] == int(grid["T"]) and 0 < grid["idle_slots"] < g["p"] * grid["T"]
    assert len(grid["peak_activations"]) == g["p"] and max(grid["peak_activations"]) <= g["m"]
    assert ps4._choice_key(v)["schedule"] in load("ps4").CHOICES


def test_ps1s_closed_forms_are_checked_where_ppedu_is_not_installed():
    mine = ("def bubble_ratio(p, m):\n    return (p - 1) / (m + p - 1)\n\n\n"
            "def bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)")
    assert judged("ps1", "closed_form", mine) == "correct"
    for borrowed in ("from ppedu import formulas\n" + mine.replace("return (p - 1) / (m + p - 1)",
                                                                   "return formulas.bubble_ratio(p, m)"),
                     "from ppedu import schedules, simulate\n" + mine.replace(
                         "return (p - 1) / (v * m + p - 1)", "return simulate(schedules.interleaved_1f1b(p, m, v)).bubble_ratio")):
        assert "is not available while this question is checked" in judged("ps1", "closed_form", borrowed)


def test_ps1s_grid_has_a_slow_gpu_and_forgetting_it_gets_its_own_hint():
    ps1, v = keys.load("ps1"), my_values("ps1", "alice")
    key, grid = ps1._slots_key(v), ps1.params(v.variant)
    p, m = grid["p"], grid["m"]
    assert key["T"] == 3 * (2 * m + p - 1) and key["idle_slots"] == key["total_slots"] - 3 * m * (p + 1)
    plain = 3 * (m + p - 1)  # every GPU as fast
    said = message(lambda ns: ps1.KEYS["gpipe_slots"].judge(ns, v), {"T": plain, "total_slots": p * plain})
    assert f"GPU {grid['slow']} takes twice as long" in said


def test_ps1s_1f1b_with_a_slow_gpu_is_a_closed_form_that_names_the_usual_slips():
    right = "def one_f_one_b_slow(p, m, s):\n    return 3 * (p - 1) + 6 * m - 2 * min(p - 1 - s, m - 1)"
    assert judged("ps1", "one_f_one_b", right) == "correct"
    assert "GPipe's step" in judged("ps1", "one_f_one_b", right.replace(" - 2 * min(p - 1 - s, m - 1)", ""))
    equal_costs = "def one_f_one_b_slow(p, m, s):\n    return 3 * (m + p - 1)"
    assert "every GPU as fast" in judged("ps1", "one_f_one_b", equal_costs)
    hidden_in_full = right.replace("2 * min(p - 1 - s, m - 1)", "3 * (p - 1 - s)")
    assert "how many forwards" in judged("ps1", "one_f_one_b", hidden_in_full)
    simulated = ("from ppedu import Costs, schedules, simulate\n\n\ndef one_f_one_b_slow(p, m, s):\n"
                 "    costs = Costs(f=tuple(2 if j == s else 1 for j in range(p)),\n"
                 "                  b=tuple(4 if j == s else 2 for j in range(p)))\n"
                 "    return simulate(schedules.one_f_one_b(p, m), costs).makespan")
    assert "is not available while this question is checked" in judged("ps1", "one_f_one_b", simulated)


def test_ps1s_slow_gpu_form_and_deepseeks_bubble_name_the_usual_slips():
    assert judged("ps1", "slow_form", "def gpipe_slow(p, m, s, k):\n    return 3 * (p - 1) + 3 * m * k") == "correct"
    said = judged("ps1", "slow_form", "def gpipe_slow(p, m, s, k):\n    return 3 * (m + p - 1) * k")
    assert "every GPU is not slow" in said
    right = "def idle_share(bubble, m, F, B, W):\n    return bubble / (bubble + m * (F + B))"
    assert judged("ps1", "conversion", right) == "correct"
    assert "W included" in judged("ps1", "conversion", right.replace("(F + B)", "(F + B + W)"))
    assert "Megatron-LM's definition" in judged("ps1", "conversion", right.replace("bubble + m", "m"))


FEWEST = """
import math


def fewest_microbatches(p, target, c):
    return max(1, math.ceil((p - 1) * (3 + LATENCIES) * (1 - target) / (3 * target) - TOLERANCE))
"""


@pytest.mark.parametrize("student", ["alice", "bob", "carol"])
def test_ps1s_fewest_micro_batches_need_gpipes_step_with_hand_overs_worked_out(student):
    right = FEWEST.replace("LATENCIES", "2 * c")
    assert judged("ps1", "microbatches", right.replace("TOLERANCE", "1e-9"), student) == "correct"
    said = judged("ps1", "microbatches", right.replace("TOLERANCE", "0"), student)  # 15 at (4, 0.3, 1.5): 14.000…02
    assert "a smaller m meets it too" in said
    said = judged("ps1", "microbatches", FEWEST.replace("LATENCIES", "c").replace("TOLERANCE", "1e-9"), student)
    assert "is still above 0.2" in said  # each link's hand-over counted once, not up and down
    # the chapters' count, ppedu's function copied: free hand-overs, wrong wherever a hand-over costs anything
    copied = """
def fewest_microbatches(p, target, c):
    m = max(1, int((p - 1) * (1 - target) / target))
    while (p - 1) / (m + p - 1) > target + 1e-12:
        m += 1
    return m
"""
    assert "the count with free hand-overs" in judged("ps1", "microbatches", copied, student)
    library = ("from ppedu import formulas\n\n\ndef fewest_microbatches(p, target, c):\n"
               "    return formulas.microbatches_for(target, p)")
    assert "is not available while this question is checked" in judged("ps1", "microbatches", library, student)


PARALLEL_BLOCK = """
def block_bytes(s, b, h, heads, kv_heads, ffn, gated, flash):
    kept = NORMS + 2 + 2 + 4 * kv_heads / heads + 2 + MLP_INPUT + (6 if gated else 4) * ffn / h
    return kept * s * b * h + (4 * b * heads * s if flash else 2 * b * heads * s * s)
"""


def test_ps2s_interleaved_peak_asks_past_the_formula_sheet():
    right = ("def interleaved_peak(p, m, v, j):\n"
             "    return min(2 * (p - j - 1) + (v - 1) * min(m, p) + 1, m * v) / v")
    assert judged("ps2", "interleaved_peak", right) == "correct"
    sheet = right.replace("min(m, p)", "p")  # the formula sheet's form: m a multiple of p only
    assert "that is the formula sheet's peak" in judged("ps2", "interleaved_peak", sheet)


def test_ps2s_block_is_a_parallel_one_that_ppedus_inventory_does_not_give():
    right = PARALLEL_BLOCK.replace("NORMS", "2").replace("MLP_INPUT", "0")
    assert judged("ps2", "block", right) == "correct"
    # chapter 8's standard block, as ppedu.cluster's inventory counts it, transcribed: two norms, the MLP's own input
    transcribed = PARALLEL_BLOCK.replace("NORMS", "4").replace("MLP_INPUT", "2")
    assert "that is a standard block's" in judged("ps2", "block", transcribed)
    library = ("from ppedu.cluster import Model\n\n\ndef block_bytes(s, b, h, heads, kv_heads, ffn, gated, flash):\n"
               "    x = Model('x', 1, h, 1, s, b, heads, kv_heads, ffn, bool(gated), flash_attention=bool(flash))\n"
               "    return sum(x.block_activations().values())")
    assert "is not available while this question is checked" in judged("ps2", "block", library)


def test_ps2s_question_5_premise_holds_for_every_student():
    """Question 5 says GPipe at twice the student's m does not fit in 80 GB: true of every student's model."""
    for student in [f"student{i}" for i in range(300)]:
        v = my_values("ps2", student)
        assert keys.load("ps2")._memory_key(v)["max_m_gpipe"] < 2 * v["m"], student


def test_ps2s_gpu0_and_fits_follow_through_from_the_students_own_earlier_answers():
    """One slip in 2b (GB in GiB) costs 2b only: 3 and 4 computed from it are right; numbers from neither are not."""
    v = my_values("ps2", "alice")
    key = keys.load("ps2")._memory_key(v)
    peaks = {name: list(x) for name, x in keys.load("ps2")._peaks_key(v).items()}
    s_act, weights = key["S_act_GB"] * 1e9 / 2**30, key["weights_GB"]
    own = {**peaks, "S_act_GB": s_act, "weights_GB": weights,
           "gpipe_gpu0_GB": weights + max(peaks["peak_gpipe"]) * s_act,
           "one_f_one_b_gpu0_GB": weights + max(peaks["peak_1f1b"]) * s_act,
           "max_m_gpipe": max(0, math.floor((80 - weights) / s_act)),
           "fits_1f1b": weights + max(peaks["peak_1f1b"]) * s_act <= 80}
    for question in ("gpu0", "fits"):
        data = json.loads(json.dumps(load("ps2").QUESTIONS[question].data(own, v)))
        assert keys.load("ps2").KEYS[question].judge(data, v) == "correct"
    with pytest.raises(Wrong, match="gpipe_gpu0_GB"):
        keys.load("ps2").KEYS["gpu0"].judge({**own, "gpipe_gpu0_GB": 2 * own["gpipe_gpu0_GB"]}, v)



def test_ps4s_choice_carries_4bs_figures_for_the_grader():
    """Question 4a's verdict prints, for 4b's grader, the bandwidth where the choice changes (the plan at a link a
    little faster still picks the same schedule, a little slower another) and the winner's lead."""
    ps4 = keys.load("ps4")
    for student in ("alice", "bob", "carol"):
        v = my_values("ps4", student)
        found = ps4.link_break(v)
        verdict = ps4.KEYS["choose"].judge(ps4._choice_key(v), v)
        assert verdict.startswith("correct\n(For question 4b's grader: ")
        if found is None:
            continue
        assert f"{found[0]:.3g} GB/s (to {found[1]})" in verdict
        model, gpus = ps4.your_cluster(v)
        winner = ps4._choice_key(v)["schedule"]
        for factor, same in ((1.01, True), (0.99, False)):
            link = dataclasses.replace(gpus.link, bandwidth=found[0] * 1e9 * factor)
            row = cluster.best(cluster.plan(model, cluster.Cluster(gpus.gpu, gpus.gpus, link), [v["m"]]))
            assert (row.schedule == winner) is same, (student, factor)

STUDENTS = [f"student{i}" for i in range(300)]


def test_no_students_values_let_counting_the_busy_slots_come_out_right():
    """The slip the keys' hints name first: busy slots counted as idle. Values where the two are equal are nobody's."""
    from grader.exam import grids, judge as exam
    from ppedu.answer_file import SlotAnswer

    ps1, ps4 = keys.load("ps1"), keys.load("ps4")
    for student in STUDENTS:
        v = my_values("ps1", student)
        key = ps1._slots_key(v)
        busy = key["total_slots"] - key["idle_slots"]
        said = message(lambda ns: ps1.KEYS["gpipe_idle"].judge(ns, v),
                       {"idle_slots": busy, "bubble": busy / key["total_slots"], "total_slots": key["total_slots"]})
        assert "busy slots" in said, student
        v = my_values("ps4", student)
        key = ps4._grid_key(v)
        gpus = ps4.params(v.variant)["p"]
        wrong = {**key, "idle_slots": gpus * key["T"] - key["idle_slots"], "peak_activations": list(key["peak_activations"])}
        assert "busy slots" in message(lambda ns: ps4.KEYS["grid"].judge(ns, v), wrong), student
        t = grids(student)["count"]
        answer = SlotAnswer(total=str(int(t.total_slots)), idle=str(int(t.busy_slots)), ratio="")
        assert exam(student, {"count": answer}).points["count"] < 2, student
