"""ps7: variants of the scale chapters that ppedu.cluster does not compute. The solution's functions are right on every
input the key runs them on, for many students; each of the red team's routes (the chapter's case transcribed from the
library, or a numeric search on a formula it or the old question gave: `corpus.PS7_LIBRARY_ROUTES`) is wrong on some
input of every student, so it earns nothing whoever submits it, and its feedback names no remedy and no hidden input;
a search on the student's own model of the variant earns the point (its derivation is graded by hand). The end-to-end
run in test_autograde grades the same submissions through nbgrader with exact points."""

import nbformat
import pytest

from conftest import ROOT
from corpus import PS7, PS7_LIBRARY_ROUTES
from grader import keys
from ppedu.grading.answers import Wrong
from ppedu.grading.assignments import my_values

STUDENTS = tuple(f"student{i}" for i in range(30)) + ("alice", "bob", "carol")
KEYS = keys.load("ps7").KEYS


def _functions(replace=None):
    """The solution's answer cells (``replace``'s in their place) run in order, as the notebook would, without ppedu."""
    namespace = {}
    for cell in nbformat.read(ROOT / "solutions" / "ps7" / "ps7.ipynb", as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and grade_id.endswith("_answer") and grade_id != "q8a_answer":
            exec((replace or {}).get(grade_id, cell.source), namespace)
    return namespace


def _judge(question, namespace, student):
    """The key's verdict on ``namespace``'s functions, called on every input it chooses for ``student``."""
    v = my_values("ps7", student)
    data = {name: [[list(args), namespace[name](*args)] for args in calls]
            for name, calls in KEYS[question].calls(v).items()}
    try:
        return KEYS[question].judge(data, v)
    except Wrong as wrong:
        return str(wrong)


@pytest.mark.parametrize("question", [q for q in KEYS if q != "layout"])
def test_the_solution_is_right_for_every_student(question):
    namespace = _functions()
    assert all(_judge(question, namespace, s) == "correct" for s in STUDENTS)


@pytest.mark.parametrize("route", PS7_LIBRARY_ROUTES)
def test_each_red_team_route_earns_nothing_for_any_student(route):
    cell, question, source = PS7_LIBRARY_ROUTES[route]
    namespace = _functions({cell: source})
    for student in STUDENTS:
        said = _judge(question, namespace, student)
        assert said != "correct", (route, student)
        v = my_values("ps7", student)
        shown = [f"{name}({', '.join(map(str, args))}) returned" for name in KEYS[question].form.cases
                 for args in KEYS[question].form.arguments(name, v)]
        assert any(said.startswith(call) for call in shown) or "(those are not shown)" in said, said
        assert "Traceback" not in said


def test_a_search_on_the_students_own_model_of_the_variant_earns_the_point():
    namespace = _functions(PS7["failures_searched_on_own_model"].replace)
    assert all(_judge("failures", namespace, s) == "correct" for s in STUDENTS)


def test_the_variants_are_not_in_the_library():
    """No module of ppedu names the variants: the NVSwitch step, Ulysses, hybrid sharding, a reshard onto g GPUs, a
    shared expert's own width or gate, a checkpoint's persist time, an output layer on the last stage."""
    text = "\n".join(p.read_text() for p in (ROOT / "ppedu").rglob("*.py")
                     if p.name != "ps7.py").lower()
    for word in ("ulysses", "hsdp", "hybrid shard", "shared_ffn", "persist", "one-shot", "nvswitch step"):
        assert word not in text, word
