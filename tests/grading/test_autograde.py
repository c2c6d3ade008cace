"""The round trip an instructor makes, on the hostile corpus (corpus.py): every submission autograded
with `ppedu grade --jobs 2` (nbgrader inside, each notebook in its sandbox) in a copy of the course.
No false credit, no false blame, nothing ungradeable; feedback in sentences, without tracebacks or
the grading machine's paths; afterwards the untouched students' gradebook rows, every course file
and the installed ppedu exactly as before. Written answers (graded text cells) wait for the formgrader.

``PPEDU_CORPUS=ps4,ps1`` grades only those assignments' cases (with ``-k``, to check a changed
problem set in minutes: the other assignments' tests are skipped)."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, autograded_cells
from corpus import CORPUS as WRITTEN, PS1_WRONG, Case, write
from hostile import CHECKS, HOSTILE

import ppedu
from grader import keys
from ppedu.grading import my_values

#: corpus.py's cases and hostile.py's, by assignment
CORPUS = {a: {**WRITTEN.get(a, {}), **HOSTILE.get(a, {})} for a in dict.fromkeys([*WRITTEN, *HOSTILE])}
TIMEOUT = {"ps1": 15}  # seconds per cell: ps1's two endless loops cost this much each
SLOW = 300  # elsewhere nothing loops: a loaded CI machine is no failure
BYSTANDERS = {"bystander_solved": Case("ps1"), "bystander_blank": Case("ps1", release=True)}
AFTER = {"after_all_wrong": Case("ps1", replace=PS1_WRONG), "after_solved": Case("ps1")}
PPEDU = Path(ppedu.__file__).parent
#: The assignments whose cases are graded: all, or those ``PPEDU_CORPUS`` names.
GRADED = [a for a in CORPUS if a in os.environ.get("PPEDU_CORPUS", ",".join(CORPUS)).split(",")]


def _graded_only(assignment):
    if assignment not in GRADED:
        pytest.skip(f"PPEDU_CORPUS leaves {assignment} out")


def _submit(course, student, case):
    write(case, course, student, course / "submitted" / student / case.assignment)


#: Secrets planted outside the grading area (in the grader's environment, the course folder and the host's /tmp):
#: no graded notebook may show them.
CANARY = f"canary-{uuid.uuid4().hex}"


def _grade(course, assignment, students, tmp):
    """``ppedu grade`` with a temporary folder of this test's own (TMPDIR): what is left there is this test's alone,
    whatever other graders on the host do meanwhile."""
    args = [a for s in students for a in ("--student", s)]
    return subprocess.run([sys.executable, "-m", "ppedu", "grade", assignment, "--jobs", "2", "--timeout",
                           str(TIMEOUT.get(assignment, SLOW)), *args], cwd=course, capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "PPEDU_CANARY": CANARY, "TMPDIR": str(tmp)})


def _sandboxes_traces(tmp):
    """What grading could have left behind: anything in its own temporary folder, and anything at the top of the
    host's /tmp owned by a sandbox's user (sandboxed code writing past its private /tmp) that is not a grader's
    working folder (ppedu-…, another grader's while it runs)."""
    from ppedu.grading.sandbox import SANDBOX_UIDS

    found = set()
    for folder, dirs, files in os.walk(tmp):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found.add((path, os.path.getsize(path) if not os.path.isdir(path) else 0))
    with os.scandir("/tmp") as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid >= SANDBOX_UIDS and not entry.name.startswith("ppedu-"):
                found.add((entry.path, info.st_size if not entry.is_dir(follow_symlinks=False) else 0))
    return found


def _gradebook(course):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu")


def _rows(course, students):
    """Everything the gradebook holds about ``students``' ps1."""
    with _gradebook(course) as gb:
        rows = {}
        for s in students:
            sub = gb.find_submission("ps1", s)
            rows[s] = (sub.score, str(sub.timestamp), [(g.name, g.auto_score, g.manual_score, g.extra_credit)
                                                       for nb in sub.notebooks for g in nb.grades])
        return rows


def _hashes(*folders):
    """Each file's digest; a link's is where it points (this test follows no link either: /etc/shadow changes)."""
    return {str(p): "→ " + os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*"))
            if (p.is_symlink() or p.is_file()) and "__pycache__" not in p.parts and p.name != "gradebook.db"}


@pytest.fixture(scope="module")
def graded(course):
    (course / "secrets.txt").write_text(CANARY)
    host_secret = Path(tempfile.gettempdir()) / f"{CANARY}.txt"
    host_secret.write_text(CANARY)
    for student, case in BYSTANDERS.items():
        _submit(course, student, case)
    tmp = Path(tempfile.mkdtemp(prefix="autograde-tmp-"))
    tmp.chmod(0o1777)  # as /tmp
    first = _grade(course, "ps1", BYSTANDERS, tmp)
    assert first.returncode == 0, first.stdout + first.stderr
    traces = _sandboxes_traces(tmp)
    corpus = {a: CORPUS[a] for a in GRADED}
    for assignment, cases in corpus.items():
        for student, case in cases.items():
            _submit(course, student, case)
    before = _rows(course, BYSTANDERS), _hashes(course, PPEDU)
    runs = {a: _grade(course, a, cases, tmp) for a, cases in corpus.items()}
    after = _rows(course, BYSTANDERS), _hashes(course, PPEDU)
    with _gradebook(course) as gb:
        scores = {(a, s): gb.find_submission(a, s).score for a, cases in corpus.items() for s in cases}
        manual = {(a, s): [(g.name, g.auto_score, g.max_score) for nb in gb.find_submission(a, s).notebooks
                           for g in nb.grades if g.cell.cell_type == "markdown"]
                  for a, cases in corpus.items() for s in cases}
    for student, case in AFTER.items():
        _submit(course, student, case)
    later = _grade(course, "ps1", AFTER, tmp)
    with _gradebook(course) as gb:
        scores.update({("ps1", s): gb.find_submission("ps1", s).score for s in AFTER})
    host_secret.unlink()
    traces = (traces, _sandboxes_traces(tmp))
    shutil.rmtree(tmp, ignore_errors=True)
    return {"runs": runs, "scores": scores, "manual": manual, "before": before, "after": after, "later": later,
            "traces": traces}


CASES = [(a, s) for a, cases in CORPUS.items() for s in cases]


def test_the_corpus_is_big_enough_and_covers_every_assignment():
    assert len(CASES) >= 150 and set(CORPUS) == {"counting", "ps1", "ps2", "ps3", "ps4", "ps5", "ps6", "ps7", "final"}
    assert sum(map(len, HOSTILE.values())) >= 40


def test_ppedu_grade_grades_everything_and_reports_each_student_as_it_goes(graded):
    for assignment, run in graded["runs"].items():  # every assignment PPEDU_CORPUS leaves in
        assert run.returncode == 0, run.stdout + run.stderr  # 1 would mean a submission could not be autograded
        progress = [line for line in run.stdout.splitlines() if line.startswith("[")]
        total = len(CORPUS[assignment])
        assert len(progress) == total and progress[-1].startswith(f"[{total}/{total}]")


@pytest.mark.parametrize("assignment, student", CASES)
def test_each_submission_gets_exactly_the_score_its_work_deserves(graded, assignment, student):
    _graded_only(assignment)
    points = dict(autograded_cells(ROOT / "solutions" / assignment / f"{assignment}.ipynb"))
    lost = CORPUS[assignment][student].lost
    assert set(lost) <= set(points), "a case loses points only in autograded cells"
    assert graded["scores"][assignment, student] == pytest.approx(sum(points.values()) - sum(lost.values()))


@pytest.mark.parametrize("assignment", sorted({a for a, _ in CASES}))
def test_written_answers_wait_for_the_formgrader_with_their_points(graded, assignment):
    _graded_only(assignment)
    written = [(c.metadata.nbgrader["grade_id"], c.metadata.nbgrader["points"])
               for c in nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4).cells
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")]
    for student, case in CORPUS[assignment].items():
        # an answer left as released (nbgrader's "YOUR ANSWER HERE") scores 0 by itself; any other waits for a person
        left = {gid for gid, _ in written if case.release and gid not in case.replace}
        assert graded["manual"][assignment, student] == [(gid, 0.0 if gid in left else None, points)
                                                         for gid, points in written], student


def test_untouched_students_the_course_and_ppedu_are_exactly_as_before(graded):
    (rows_before, files_before), (rows_after, files_after) = graded["before"], graded["after"]
    assert rows_after == rows_before
    changed = [p for p, digest in files_before.items() if files_after.get(p) != digest]
    assert not changed
    added = [p for p in files_after if p not in files_before and "/autograded/" not in p and "/intake/" not in p]
    assert not added


def test_nothing_is_left_in_the_hosts_tmp_and_no_secret_reaches_a_graded_notebook(course, graded):
    before, after = graded["traces"]
    assert after == before
    leaked = [p for p in (course / "autograded").rglob("*.ipynb") if CANARY in p.read_text(errors="replace")]
    assert not leaked


def test_what_a_score_cannot_show(course, graded):
    """hostile.py's CHECKS: notebooks that stay small however much their cells printed (grading ending at all,
    and no disk or memory filled, is this module's fixture finishing)."""
    for (assignment, student), what in CHECKS.items():
        if assignment in GRADED and "small" in what:
            size = (course / "autograded" / student / assignment / f"{assignment}.ipynb").stat().st_size
            assert size < 500_000, (student, size)


def test_feedback_never_shows_the_hidden_inputs(course, graded):
    ps1, ps3, ps4 = keys.load("ps1"), keys.load("ps3"), keys.load("ps4")
    for assignment, student in CASES:
        if assignment not in GRADED or assignment not in ("ps1", "ps3", "ps4"):
            continue
        shown = "\n".join(_text(outputs) for outputs in _test_outputs(course, assignment, student).values())
        v = my_values(assignment, student)
        if assignment == "ps1":
            hidden = [f"{name}({', '.join(map(str, args))})" for name in ("bubble_ratio", "bubble_interleaved",
                      "fewest_microbatches", "idle_share") for args in ps1._hidden(name, v)]
        elif assignment == "ps3":
            hidden = [f"(p={args[0]}, m={args[1]}" for judge in ps3.KEYS.values() for args in judge.hidden(v)
                      if args not in judge.form.graded_sizes(v)]
        else:
            hidden = [f"waves_makespan({p}, {m}, {k}" for p, m, k, _, _ in ps4.HIDDEN_CASES]
        assert not [h for h in hidden if h in shown], (assignment, student)


def test_students_graded_afterwards_are_graded_by_the_real_code(graded):
    assert graded["later"].returncode == 0, graded["later"].stdout
    autograded = sum(points for _, points in autograded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb"))
    assert graded["scores"]["ps1", "after_all_wrong"] == 0 and graded["scores"]["ps1", "after_solved"] == autograded


def _test_outputs(course, assignment, student):
    nb = nbformat.read(course / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    return {c.metadata.nbgrader["grade_id"]: c.outputs for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}


def _text(outputs):
    return "\n".join(str(o.get("text", "")) + str(o.get("evalue", "")) + "\n".join(o.get("traceback", []))
                     for o in outputs)


def test_every_lost_point_reads_as_a_sentence_without_traceback_or_path(course, graded):
    for assignment, student in [(a, s) for a, s in CASES if a in GRADED]:
        for gid, outputs in _test_outputs(course, assignment, student).items():
            text = _text(outputs)
            assert "Traceback" not in text and str(course) not in text and str(ROOT) not in text, (student, gid, text)
            assert "site-packages" not in text and "File \"" not in text, (student, gid, text)
            if CORPUS[assignment][student].lost.get(gid):
                assert text.strip() and len(text) < 2000, (student, gid)


def test_time_outs_and_dead_kernels_say_what_happened(course, graded):
    _graded_only("ps1")
    assert "time limit" in _text(_test_outputs(course, "ps1", "loops_forever")["closed_form"])
    assert "time limit" in _text(_test_outputs(course, "ps1", "answer_cell_times_out")["microbatches"])
    assert "exited or crashed" in _text(_test_outputs(course, "ps1", "os_exit")["one_f_one_b"])  # a function cell
    assert "exited or crashed" in _text(_test_outputs(course, "ps1", "os_exit_in_a_function_cell")["closed_form"])
    assert "raised NameError" in _text(_test_outputs(course, "ps1", "defining_cell_raises")["conversion"])


@pytest.mark.parametrize("assignment", ["ps3", "ps4", "ps5", "ps6", "ps7"])
def test_library_implementations_are_not_answers(course, graded, assignment):
    _graded_only(assignment)
    allowed = "is not available while this question is checked"
    if assignment == "ps3":
        for student in ("library_caller", "library_relatives"):
            assert allowed in _text(_test_outputs(course, "ps3", student)["waves"])
    elif assignment == "ps4":  # the closed form is the student's: neither the simulator nor the pictured builder is there
        for student in ("simulates_inside", "copied_simulator"):
            assert allowed in _text(_test_outputs(course, "ps4", student)["waves"])
    elif assignment == "ps6":  # a derivation is a closed form: the simulator is not there
        assert allowed in _text(_test_outputs(course, "ps6", "simulates_inside")["dpv_fill"])
        assert allowed in _text(_test_outputs(course, "ps6", "simulates_zb_h2")["zb_h2"])
    elif assignment == "ps7":  # a derivation of the scale chapters is a closed form: ppedu.cluster is not there
        assert allowed in _text(_test_outputs(course, "ps7", "library_inside")["tensor"])
    else:
        assert allowed in _text(_test_outputs(course, "ps5", "library_caller")["gpipe"])


def test_feedback_says_what_is_wrong_without_the_answer_and_stays_small(course, graded):
    _graded_only("ps1")
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    cwd = os.getcwd()
    os.chdir(course)
    try:
        api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
        for student in ("busy_as_idle", "nan", "output_bomb", "leaker"):
            assert api.generate_feedback("ps1", student)["success"]
    finally:
        os.chdir(cwd)
    feedback = {s: (course / "feedback" / s / "ps1" / "ps1.html") for s in ("busy_as_idle", "nan", "output_bomb", "leaker")}
    assert "counted the busy slots" in feedback["busy_as_idle"].read_text()  # the hint, as the student reads it
    assert "NaN (not a number)" in feedback["nan"].read_text()
    assert feedback["output_bomb"].stat().st_size < 500_000
    for bomb in ("output_bomb", "answers_type_bomb"):
        assert (course / "autograded" / bomb / "ps1" / "ps1.ipynb").stat().st_size < 500_000
    leaker = nbformat.read(course / "autograded" / "leaker" / "ps1" / "ps1.ipynb", as_version=4)
    printed = _text([o for c in leaker.cells for o in c.get("outputs", [])])
    assert "handed" not in printed and "bystander" not in printed and "BREACH" not in printed  # ps5's solution, the class


def test_grading_in_process_leaves_no_students_id_in_the_environment(course, graded):
    """The formgrader autogrades inside JupyterLab's own process: nothing of the graded student may
    stay in its environment, where every later kernel would inherit it."""
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    before = dict(os.environ)
    cwd = os.getcwd()
    os.chdir(course)
    try:
        api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
        assert api.autograde("ps1", "after_solved", force=True)["success"]
    finally:
        os.chdir(cwd)
    assert dict(os.environ) == before


def test_the_practice_widget_autogrades_headless(course, graded):
    _graded_only("ps1")
    nb = nbformat.read(course / "autograded" / "solved" / "ps1" / "ps1.ipynb", as_version=4)
    widget = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q1_widget")
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget.outputs)
