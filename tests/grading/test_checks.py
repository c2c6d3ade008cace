"""The grading library without nbgrader: per-student values, answer messages, the referee's
protection against monkey-patching, schedule checks with partial credit, stderr filtering."""

import math
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppedu import schedules
from ppedu.grading import Wrong, my_values
from ppedu.grading.answers import Choice, Counts, Flag, Number
from ppedu.grading.assignments import ASSIGNMENTS, check, load
from ppedu.grading.course import HARMLESS_STDERR
from ppedu.grading.schedule_checks import grade_schedule
from ppedu.grading.students import student_id


def message(read, namespace):
    with pytest.raises(Wrong) as caught:
        read(namespace)
    return str(caught.value)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_values_are_a_function_of_the_student_and_differ_between_students(name):
    assert my_values(name, "alice") == my_values(name, "alice")
    assert len({tuple(my_values(name, f"student{i}").values()) for i in range(30)}) > 5


def test_the_student_id_comes_from_the_environment_in_a_documented_order():
    assert student_id({"PPEDU_STUDENT_ID": "a", "JUPYTERHUB_USER": "b"}) == "a"
    assert student_id({"JUPYTERHUB_USER": "b"}) == "b"
    assert student_id({}) == __import__("getpass").getuser()


def test_the_graded_id_is_the_one_the_kernel_started_with():
    code = ("import os; os.environ['PPEDU_STUDENT_ID'] = 'bob'\n"
            "from ppedu.grading.students import graded_student_id; print(graded_student_id())")
    env = {**os.environ, "PPEDU_STUDENT_ID": "alice", "NBGRADER_EXECUTION": "autograde"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "alice"


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


def test_an_object_that_claims_to_equal_everything_does_not_pass():
    class Liar(float):
        def __eq__(self, other):
            return True

    q = load("ps1").QUESTIONS["conversion"]
    with pytest.raises(Wrong):
        q.grade({"idle_total": Liar(0.123)}, my_values("ps1", "alice"))


def test_the_referee_grades_on_a_pristine_ppedu_and_leaves_the_notebooks_patches_alone(monkeypatch):
    import ppedu.formulas
    import ppedu.grading.questions
    from ppedu.grading import referee

    monkeypatch.setenv("PPEDU_STUDENT_ID", "alice")
    patched = lambda *a, **k: 0.5  # noqa: E731
    monkeypatch.setattr(ppedu.formulas, "to_idle_total", patched)
    monkeypatch.setattr(ppedu.grading.questions.Question, "grade", lambda *a, **k: "correct")
    check("ps1", "conversion", {"idle_total": 0.5})  # the visible test sees only the form
    with pytest.raises(AssertionError, match="not right"):
        referee.grade("ps1", "conversion", {"idle_total": 0.5})
    v = my_values("ps1", "alice")
    r = (v.p - 1) / v.m
    assert referee.grade("ps1", "conversion", {"idle_total": r / (1 + r)}) is None
    assert ppedu.formulas.to_idle_total is patched  # the notebook's own modules are back


@settings(max_examples=15, deadline=None)
@given(p=st.integers(1, 5), m=st.integers(1, 6))
def test_ppedus_own_schedules_earn_every_point(p, m):
    for name in ("gpipe", "1f1b"):
        make = lambda p, m, name=name: [list(s) for s in schedules.build(name, p, m).stages]  # noqa: E731
        assert grade_schedule(make, name, [(p, m)], points=4).score == 4


def test_a_schedule_that_repeats_an_op_earns_nothing_and_is_told_which():
    def twice(p, m):
        stages = [list(s) for s in schedules.one_f_one_b(p, m).stages]
        stages[0].append(stages[0][0])
        return stages

    report = grade_schedule(twice, "1f1b", [(2, 2)], points=4)
    assert report.score == 0 and "F0c0 appears 2 times" in str(report)


def test_a_schedule_that_raises_gets_a_message_not_a_traceback():
    report = grade_schedule(lambda p, m: 1 / 0, "1f1b", [(2, 2)], points=4)
    assert report.score == 0 and "raised ZeroDivisionError" in str(report)


def test_harmless_stderr_is_recognised_and_nothing_else():
    harmless = ["/x/torch/nn/modules/module.py:123: UserWarning: the thing is deprecated\n  warnings.warn(",
                " 45%|████▌     | 9/20 [00:01<00:01,  8.00it/s]"]
    assert all(re.search(HARMLESS_STDERR, text) for text in harmless)
    assert not re.search(HARMLESS_STDERR, "Traceback (most recent call last):\nValueError: bad")
    assert not re.search(HARMLESS_STDERR, "my answer is 3")


def test_ps4s_cluster_keys_come_from_ppedu_cluster_and_a_slip_gets_its_own_hint():
    from ppedu import Costs, cluster

    ps4, v = load("ps4"), my_values("ps4", "alice")
    model, gpus = ps4.your_cluster(v)
    grade = lambda question: lambda ns: ps4.QUESTIONS[question].grade(ns, v)  # noqa: E731
    bandwidth = cluster.break_even_bandwidth(model, gpus, v.m)
    assert grade("min_bandwidth")({"min_bandwidth": bandwidth / 1e9}) == "correct"
    assert "GB/s" in message(grade("min_bandwidth"), {"min_bandwidth": bandwidth})
    per_chunk = cluster.interleaving_break_even(v.p, v.m, Costs(f=v.F, b=v.B).per_chunk(2))
    assert "whole stage" in message(grade("break_even"), {"break_even": per_chunk})
    winner = cluster.best(cluster.plan(model, gpus, [v.m]))
    wrong = next(r for r in cluster.plan(model, gpus, [v.m]) if r.fits and r.schedule != winner.schedule)
    said = message(grade("choose"), {"schedule": wrong.schedule})
    assert "fits, but" in said and winner.schedule not in said


@pytest.mark.parametrize("student", ["bob", "carol", "dave"])
def test_every_ps4_key_is_an_answer_a_student_can_give(student):
    ps4, v = load("ps4"), my_values("ps4", student)
    key = {**ps4._latency_key(v), **ps4._bandwidth_key(v), **ps4._choice_key(v)}
    assert 0 < key["break_even"] < math.inf and 0 < key["min_bandwidth"] < math.inf
    assert key["schedule"] in ps4.CHOICES
