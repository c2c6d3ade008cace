"""Instructor-side question data: each assignment whose questions show data ships exactly what its generator in
grader/keys makes (in solutions/ and in the release, exercises/), every student — one who joined after the release
too — reads a variant of it, the judge reads the same one, and a release its generator no longer makes is refused."""

import json
import shutil

import pytest

from conftest import ROOT
from grader import questiondata
from ppedu.grading import my_data, my_values
from ppedu.grading.assignments import load
from ppedu.grading.questiondata import FILE, NoData, read

WITH_DATA = questiondata.with_data()


def test_the_assignments_with_data_are_known():
    assert {"counting"} <= set(WITH_DATA)


@pytest.mark.parametrize("assignment", WITH_DATA)
def test_the_released_file_is_what_the_generator_makes(assignment):
    source, released = ROOT / "solutions" / assignment / FILE, ROOT / "exercises" / assignment / FILE
    made = questiondata.text(assignment)
    assert source.read_text(encoding="utf-8") == made, f"run python -m grader.questiondata {assignment}"
    assert released.read_bytes() == source.read_bytes(), f"run nbgrader generate_assignment {assignment} --force"
    pool = read(released, assignment)
    assert len(pool) == load(assignment).VARIANTS and len({json.dumps(v) for v in pool}) > len(pool) // 4


@pytest.mark.parametrize("assignment", WITH_DATA)
def test_every_student_reads_a_variant_and_the_judge_the_same(assignment):
    folder = ROOT / "exercises" / assignment
    pool = read(folder / FILE, assignment)
    seen = set()
    for student in ("alice", "bob", "a-student-who-joined-after-the-release", "jupyter-zoë"):
        data = my_data(assignment, student, folder)
        values = my_values(assignment, student)
        assert dict(data.entries) == pool[values.variant] and data.student == student
        assert questiondata.variant(values) == values.variant
        seen.add(values.variant)
    assert len(seen) > 1


def test_a_missing_or_foreign_file_says_what_to_do(tmp_path):
    with pytest.raises(NoData, match="no questions.json beside the notebook: fetch counting again"):
        my_data("counting", "alice", tmp_path)
    (tmp_path / FILE).write_text(json.dumps({"assignment": "final", "variants": [{}] * 48}))
    with pytest.raises(NoData, match="not counting's"):
        my_data("counting", "alice", tmp_path)
    (tmp_path / FILE).write_text("{" * 100_000)
    with pytest.raises(NoData, match="not JSON"):
        my_data("counting", "alice", tmp_path)


def test_the_judge_refuses_a_release_its_generator_no_longer_makes(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "exercises" / "counting", tmp_path / "exercises" / "counting")
    values = my_values("counting", "alice")
    assert questiondata.variant(values, tmp_path) == values.variant
    path = tmp_path / "exercises" / "counting" / FILE
    pool = json.loads(path.read_text())
    pool["variants"][values.variant]["count"]["rows"][0][0] = "F9"
    path.write_text(json.dumps(pool))
    questiondata._released.cache_clear()
    with pytest.raises(questiondata.StaleRelease, match="python -m grader.questiondata counting"):
        questiondata.variant(values, tmp_path)


def test_the_command_writes_into_the_source_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(questiondata, "ROOT", tmp_path)
    (tmp_path / "solutions" / "counting").mkdir(parents=True)
    assert questiondata.main(["counting"]) == 0
    assert (tmp_path / "solutions" / "counting" / FILE).read_text() == questiondata.text("counting")
    assert "nbgrader generate_assignment counting --force" in capsys.readouterr().out
    assert questiondata.main(["ps2"]) == 2 and "ps2 shows no data of its own" in capsys.readouterr().err


def test_a_run_of_the_notebooks_functions_reads_the_owners_data_without_the_file(tmp_path, monkeypatch):
    """The autograder runs a notebook's cells again for its function questions, in a sandbox with no questions.json
    beside it: the grader hands the owner's entries in, so a cell reading ``my_data`` works there as in the kernel
    (else every cell after it raised, and the errors that explain a lost question were crowded out)."""
    from ppedu.grading.evaluate import Cell, Library, run_functions
    from ppedu.grading.questiondata import owners_data

    data = owners_data("ps1", "alice", ROOT / "solutions" / "ps1")
    assert data == dict(my_data("ps1", "alice", ROOT / "solutions" / "ps1").entries)
    monkeypatch.chdir(tmp_path)
    cells = [Cell("data = my_data('ps1')\ndef f():\n    return data.m"), Cell("", test="q")]
    prelude = Cell("from ppedu.grading import my_data")
    for given, expected in ((data, [[[], data["m"]]]), (None, None)):
        run = run_functions([prelude, *cells], Library(("ppedu.grading",)), {"q": {"f": [()]}}, "ps1", "alice",
                            dict(my_values("ps1", "alice")), 120, use_sandbox=False, data=given)
        assert run.results["q"]["f"] == expected, run
        assert bool(run.errors) == (given is None), run.errors
