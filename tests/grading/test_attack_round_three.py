"""Issue 35, round three: a red-team author's 30 attempts on the grader (attack_round_three.py), graded as an
instructor grades — the hand-ins through `nbgrader zip_collect`, every ps1 submission in one `ppedu grade --jobs 2`
run, the function cells of class 4 through `ppedu check` as the student runs it. Every case is labelled by the class
(the principle of issue 35) it tries, and asserts its exact points and reason words; class 1 that nothing of an input
the student was not shown comes back, class 3 that nothing outlives its submission, class 7 what each hand-in's
collected notebook is.

One grading run shared by every case (about two minutes on a loaded two-core machine); ``-k class_7`` picks one."""

import os
import re
import subprocess
import sys
import zipfile

import pytest

from attack_round_three import (CLASS_3, CLASS_4, CLASS_5, CLASS_6, CLASS_7, CLASS_8, LEAK, ORPHAN_MARK, SPELL, VICTIM,
                                class_1)
from conftest import make_course
from corpus import Case
from hostile_classes import Expect
from test_hostile_classes import check_grade, feedback, grade, said_about, submit_all

CLASS_1 = class_1()
#: Each case's class: the principle of issue 35 it tries.
LABEL = {s: n for n, cases in ((1, CLASS_1), (3, CLASS_3), (4, CLASS_4), (5, CLASS_5), (6, CLASS_6), (7, CLASS_7),
                               (8, CLASS_8)) for s in cases}
#: What each submission must get beyond the attack file's own ``lost``: class 1's functions are right on every input
#: they are called on in a run of their own (the hidden inputs are called in a second, fresh run, after the shown
#: ones), so nothing is lost and nothing is carried out; where a case loses its question, the words that say why.
EXPECT = {
    **{s: Expect(Case("ps1")) for s in CLASS_1},
    **CLASS_3, **CLASS_4, **CLASS_8,
    # graded from what can be read, with a note that says what was done
    "y6_metadata_nested_deep": Expect(CLASS_6["y6_metadata_nested_deep"].case, {"*": ["cell(s) could be read"]}),
    "y6_three_million_one_character_lines": Expect(CLASS_6["y6_three_million_one_character_lines"].case,
                                                   {"*": ["a cell's text was cut"]}),
    "y6_sixty_thousand_attachments": CLASS_6["y6_sixty_thousand_attachments"],
    # each odd value its own question's "not an answer", said in the grader's words
    **{s: Expect(CLASS_5[s].case, {q: words for q in CLASS_5[s].case.lost}) for s, words in {
        "y5_type_name_forges_a_feedback_line": ["this answer is a single number"],
        "y5_object_array_that_agrees": ["is a _Agrees", "single number"],
        "y5_meta_tensor": ["a value that could not be read"],
        "y5_decimal_signalling_nan": ["a value that could not be read"],
        "y5_fraction_past_a_float": ["returned 1", "simulator measures a different"],
        "y5_infinity": ["is infinite"],
        "y5_list_that_holds_itself": ["is a list", "single number"]}.items()},
    # collected from the hand-in as `tar -x` leaves it: the hard link's copy of the solved notebook
    "y7_tar_hardlink_inside": Expect(Case("ps1")),
}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("attack-round-three"), ["ps1"])


@pytest.fixture(scope="module")
def collected(course):
    """Every class 7 hand-in (and a classmate's, the victim) in archive/, collected by `nbgrader zip_collect`."""
    release = (course / "exercises" / "ps1" / "ps1.ipynb").read_bytes()
    solved = (course / "solutions" / "ps1" / "ps1.ipynb").read_bytes()
    archive = course / "downloaded" / "ps1" / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / f"ps1+{VICTIM}.zip", "w") as z:  # handed in as `ppedu handin` writes it
        z.writestr("ps1.ipynb", solved)
    for write, _ in CLASS_7.values():
        write(archive, release, solved, VICTIM)
    run = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", "ps1", "--force"], cwd=course,
                         capture_output=True, text=True, timeout=600)
    got = {}
    for student in [*CLASS_7, VICTIM]:
        nb = course / "submitted" / student / "ps1" / "ps1.ipynb"
        data = None if nb.is_symlink() or not nb.is_file() else nb.read_bytes()
        got[student] = "a link" if nb.is_symlink() else {None: None, solved: "solved", release: "release"}.get(
            data, "other")
    got["links under submitted/"] = [str(p) for p in (course / "submitted").rglob("*") if p.is_symlink()]
    return run, got


@pytest.fixture(scope="module")
def graded(course, collected):
    """Every ps1 case (and the collected hard link's) in one `ppedu grade` run with two workers, the orphan's maker
    before the honest submission after it; what was left running after it."""
    submit_all(course, {s: e for s, e in EXPECT.items() if s in LABEL and LABEL[s] != 7})
    run, seconds = grade(course, "ps1", list(EXPECT), 2, timeout=60, limit=1200)
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return run, seconds, [line for line in ps.splitlines() if str(ORPHAN_MARK) in line and "ps -eo" not in line]


def _case(student):
    return pytest.param(student, id=f"class_{LABEL[student]}-{student}")


@pytest.mark.parametrize("student", [_case(s) for s in EXPECT])
def test_each_submission_gets_its_exact_points_and_reason(course, graded, student):
    check_grade(course, graded[0].stdout, "ps1", student, EXPECT[student])


def test_class_1_no_hidden_input_comes_back_through_a_shown_inputs_error_or_value(course, graded):
    for student in CLASS_1:
        cells, whole = feedback(course, "ps1", student)
        shown = "\n".join(cells.values()) + whole + said_about(graded[0].stdout, student)
        assert not [m for m in (LEAK, SPELL, "BIT3_") if m in shown], (student, shown[:3000])


def test_class_3_nothing_outlives_its_submission(graded):
    assert not graded[2], graded[2]


def test_class_6_trusted_steps_are_bounded_by_size(course, graded):
    for student in CLASS_6:
        assert (course / "autograded" / student / "ps1" / "ps1.ipynb").stat().st_size < 5_000_000, student


@pytest.mark.parametrize("student", [_case(s) for s in CLASS_7])
def test_class_7_each_hand_in_is_collected_as_its_tools_unpack_it(collected, student):
    run, got = collected
    assert got[student] == CLASS_7[student][1], (student, (run.stdout + run.stderr)[-3000:])
    assert got[VICTIM] == "solved"  # no member of another hand-in reached the classmate's
    assert got["links under submitted/"] == []


def test_class_7_a_link_out_of_the_archive_is_named_where_it_is_left_out(collected):
    run, _ = collected
    log = run.stdout + run.stderr
    assert re.search(r"y7_tar_hardlink_out.*left out.*ps1\.ipynb \(a link or not a regular file\)", log), log[-3000:]


@pytest.mark.parametrize("student", ["y4_helper_module_beside_the_notebook",
                                     "y4_plot_with_inline_magic_in_a_function_cell"])
def test_class_4_the_check_passes_where_the_kernel_runs_the_notebook(course, graded, student):
    """`ppedu check` as the student runs it, in their folder: the same notebook, the same full marks."""
    folder = course / "submitted" / student / "ps1"
    check = subprocess.run([sys.executable, "-m", "ppedu", "check", "ps1.ipynb"], capture_output=True, text=True,
                           timeout=600, cwd=folder, env={**os.environ, "PPEDU_STUDENT_ID": student})
    assert check.returncode == 0, (student, check.stdout[-3000:] + check.stderr[-2000:])
