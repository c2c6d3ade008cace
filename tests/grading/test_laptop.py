"""Students on their own laptops, as docs/instructor.md's section tells them: the student release set up without
`make` (`python install.py --light`: no torch), chapters 1-6 and the counting exam run in it, JupyterLab started by
the same script has `nbgrader` and `ppedu` in its terminals, and the hand-in round trip: `ppedu handin` writes one zip
per student, the instructor's `nbgrader zip_collect` takes them in through the intake, `ppedu grade` grades them in
sandboxes and `nbgrader generate_feedback` writes each student's feedback. Every command run here is in the guide."""

import os
import re
import shutil
import signal
import subprocess
import sys

import nbformat
import pytest

from conftest import BIN, ROOT, autograded_cells
from grader.exam import POINTS
from ppedu.grading.assignments import TIMED
from guide import section
from test_exam import _answer

sys.path.insert(0, str(ROOT / "hub"))
from trial import free_port, terminal, wait_for  # noqa: E402

SECTION = section("Students on their own laptops")
CHAPTERS = ["01-bubble-problem", "02-gpipe", "03-1f1b", "04-interleaved", "04b-interleaving-costs", "05-zero-bubble",
            "06-dualpipe", "06b-dualpipe-bubble"]
PYTHON = shutil.which("python3") or sys.executable  # what a student types `python` for


def run(command, cwd, env=None, check=True, like=None):
    """A command of the laptop section, run as it is written there (``like``: the section's form of it)."""
    assert (like or command) in SECTION, f"`{like or command}` is not in docs/instructor.md's laptop section"
    argv = command.split()
    argv[0] = {"python": PYTHON}.get(argv[0], argv[0])
    done = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=900)
    assert not check or done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def laptop(tmp_path_factory):
    """The student release as a student clones it, set up with the guide's command: (folder, install's output)."""
    folder = tmp_path_factory.mktemp("laptop") / "ppedu-course"
    subprocess.run(["make", "-s", "student-release", f"STUDENT_RELEASE={folder}"], cwd=ROOT, check=True,
                   capture_output=True)
    done = run("python install.py --light", folder)
    assert "BuildBackendWarning" not in done.stderr and "license" not in done.stderr  # setuptools' notes, not theirs
    return folder, done.stdout


def test_the_install_without_make_has_no_torch_and_says_what_it_installed(laptop):
    folder, said = laptop
    size = re.search(r"\(([\d.]+) (MB|GB) on disk", said)
    assert size and size[2] == "MB", said  # a light install stays under 1 GB
    assert "No torch (a light install)" in said
    venv = folder / ".venv" / "bin" / "python"
    assert subprocess.run([venv, "-c", "import torch"], capture_output=True).returncode == 1
    mnist = subprocess.run([folder / ".venv" / "bin" / "ppedu", "mnist", "--schedule", "1f1b", "-p", "2", "-m", "2"],
                           capture_output=True, text=True)
    assert mnist.returncode == 2 and "without --light" in mnist.stderr and mnist.stderr.count("\n") == 1


def test_chapters_1_to_6_and_the_counting_exam_run_without_torch(laptop, tmp_path):
    folder, _ = laptop
    for name in CHAPTERS:
        shutil.copy(folder / "notebooks" / f"{name}.ipynb", tmp_path)
    for name in ("counting.ipynb", "questions.json"):  # the exam and its grids, handed out when it starts (timed)
        shutil.copy(ROOT / "exercises" / "counting" / name, tmp_path)
    script = """
import sys, nbformat
from nbclient import NotebookClient
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[0].rsplit("/", 1)[0]}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, (path, errors)
    print("ran", path)
"""
    (tmp_path / "run.py").write_text(script)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        _answer("alice")  # the exam, answered in its widgets: the notebook then shows what it saved
    finally:
        os.chdir(cwd)
    notebooks = [str(tmp_path / f"{n}.ipynb") for n in [*CHAPTERS, "counting"]]
    done = subprocess.run([folder / ".venv" / "bin" / "python", tmp_path / "run.py", *notebooks], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "MPLBACKEND": "Agg", "PPEDU_STUDENT_ID": "alice"})
    assert done.returncode == 0 and done.stdout.count("ran ") == len(notebooks), done.stdout + done.stderr[-3000:]


def test_answered_problem_sets_1_to_4_pass_their_checks_without_torch(laptop, tmp_path):
    """`ppedu check` (what Validate runs) in the light install, on the instructors' solutions: every visible test
    passes with no torch installed."""
    folder, _ = laptop
    for name in ("ps1", "ps2", "ps3", "ps4"):
        shutil.copytree(ROOT / "solutions" / name, tmp_path / name)  # with its question data, as released
        done = subprocess.run([folder / ".venv" / "bin" / "ppedu", "check", f"{name}.ipynb"], cwd=tmp_path / name,
                              capture_output=True, text=True, timeout=600, env={**os.environ, "PPEDU_STUDENT_ID": "alice"})
        assert done.returncode == 0, f"{name}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_jupyterlab_started_without_make_has_the_course_tools_in_its_terminals(laptop, tmp_path):
    """Started with no terminal of its own (its output to a file), JupyterLab runs login shells, which reset PATH:
    `nbgrader` and `ppedu` must still be found there. Inside a hub's server, the script refuses to start another."""
    folder, _ = laptop
    port, token = free_port(), "laptop-test-token"
    env = {**os.environ, "JUPYTER_TOKEN": token, "PATH": "/usr/local/bin:/usr/bin:/bin",  # no environment activated
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PPEDU_STUDENT_ID": "alice"}
    assert "PPEDU_STUDENT_ID=alice python install.py --lab" in SECTION  # here with --no-browser --port added
    with (tmp_path / "lab.log").open("wb") as log:
        lab = subprocess.Popen([PYTHON, "install.py", "--lab", "--no-browser", "--port", str(port)], cwd=folder,
                               env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/api/status", token)
        # one name per `command -v`: with SHELL unset the terminal is dash, which answers for the first name only
        said = terminal(base, token, "command -v nbgrader; command -v ppedu; nbgrader --version | tail -1; python -c "
                        "'from ppedu.grading.students import student_id; print(\"id:\", student_id())'")
        venv = folder / ".venv" / "bin"
        assert f"{venv}/nbgrader" in said and f"{venv}/ppedu" in said and "nbgrader version" in said, said
        assert "\nid: alice" in said  # the values the student sees are alice's
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)
    assert "source .venv/bin/activate" in SECTION  # a shell of the student's own
    shell = subprocess.run(["bash", "-c", "source .venv/bin/activate && command -v nbgrader ppedu"], cwd=folder,
                           capture_output=True, text=True, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert shell.stdout.split() == [f"{venv}/nbgrader", f"{venv}/ppedu"], shell.stdout + shell.stderr
    hub = subprocess.run([PYTHON, "install.py", "--lab"], cwd=folder, capture_output=True, text=True,
                         env={**os.environ, "JUPYTERHUB_API_TOKEN": "x"})
    assert hub.returncode == 2 and "JupyterHub" in hub.stderr and hub.stderr.count("\n") == 1


def _laptop_of(student, laptop, tmp_path):
    """A copy of the release's assignments, and the timed exams' folders as handed out when they start (they are not
    in the release: docs/instructor.md § 14): one student's laptop."""
    home = tmp_path / student
    shutil.copytree(laptop[0] / "exercises", home / "exercises")
    for exam in TIMED:
        assert not (home / "exercises" / exam).exists()
        shutil.copytree(ROOT / "exercises" / exam, home / "exercises" / exam)
    return home


def test_handin_refuses_what_would_not_earn_its_grade(laptop, tmp_path):
    home = _laptop_of("carol", laptop, tmp_path)
    ppedu = str(laptop[0] / ".venv" / "bin" / "ppedu")
    missing = subprocess.run([ppedu, "handin", "counting"], cwd=home, capture_output=True, text=True,
                             env={**os.environ, "PPEDU_STUDENT_ID": "carol"})
    assert missing.returncode == 2 and "counting.json is missing" in missing.stderr
    notebook = home / "exercises" / "ps1" / "ps1.ipynb"
    nb = nbformat.read(notebook, as_version=4)  # last run as someone else: its first cell shows their values
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "ps1 for student 'dave': p = 4"},
                                                  execution_count=1)]
    nbformat.write(nb, notebook)
    borrowed = subprocess.run([ppedu, "handin", "ps1"], cwd=home, capture_output=True, text=True,
                              env={**os.environ, "PPEDU_STUDENT_ID": "carol"})
    assert borrowed.returncode == 2 and "values of 'dave'" in borrowed.stderr and borrowed.stderr.count("\n") == 1
    assert not list(home.glob("*.zip"))


def test_handin_zip_collect_grade_and_feedback(laptop, course, tmp_path):
    """alice answers both; bob marks busy cells in the exam and hands ps1 in as released: each gets what they
    earned, counted from the points of what they did right."""
    zips = []
    for student in ("alice", "bob"):
        home = _laptop_of(student, laptop, tmp_path)
        cwd = os.getcwd()
        os.chdir(home / "exercises" / "counting")
        try:
            _answer(student, right_marks=student == "alice")
        finally:
            os.chdir(cwd)
        if student == "alice":
            shutil.copy(ROOT / "solutions" / "ps1" / "ps1.ipynb", home / "exercises" / "ps1" / "ps1.ipynb")
        for assignment in ("counting", "ps1"):
            env = {"PATH": f"{laptop[0] / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}", "PPEDU_STUDENT_ID": student}
            said = run(f"ppedu handin {assignment}", home, env, like="ppedu handin ps1").stdout
            assert f"{assignment}+{student}.zip" in said
            zips.append(home / f"{assignment}+{student}.zip")
    shutil.rmtree(course / "downloaded", ignore_errors=True)  # another test's downloads
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for assignment in ("counting", "ps1"):
        archive = course / "downloaded" / assignment / "archive"
        archive.mkdir(parents=True)
        for made in zips:
            if made.name.startswith(f"{assignment}+"):
                shutil.copy(made, archive)
        run(f"nbgrader zip_collect {assignment}", course, env, like="nbgrader zip_collect ps1")
        graded = run(f"ppedu grade {assignment} --student alice --student bob", course, env,
                     like="ppedu grade ps1 --student alice --student bob").stdout
        assert "2 graded" in graded, graded
    assert (course / "submitted" / "alice" / "counting" / "counting.json").is_file()
    run("nbgrader generate_feedback ps1", course, env)
    ps1 = sum(points for _, points in autograded_cells(ROOT / "solutions" / "ps1" / "ps1.ipynb"))
    deserved = {("alice", "counting"): sum(POINTS.values()),
                ("bob", "counting"): sum(POINTS.values()) - POINTS["mark"],  # the rest answered right
                ("alice", "ps1"): ps1, ("bob", "ps1"): 0}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "ppedu") as gb:
        scores = {(s, a): gb.find_submission(a, s).score for s, a in deserved}
    assert scores == deserved
    for student in ("alice", "bob"):
        page = (course / "feedback" / student / "ps1" / "ps1.html").read_text()
        assert f"Student: {student}" in page or student in page
