"""The hostile corpus: submissions of ps1–ps7 and the final exam made from the solutions (or the release) by small
scripted edits — careless, wrong, and hostile — each with the score it must get.

A case names the cells it replaces or appends to (by grade_id), an optional edit of the notebook's
structure or metadata, and the points it must lose per test cell. Attacks that try to reach
something outside their sandbox (files, the network, other processes) spoil their own answers if
they succeed, so a breach shows as a lost point; attacks that try to gain points start from work
that earns none, so a success shows as a point gained. Templates: ``{course}`` (the course copy),
``{ppedu}`` (the installed ppedu package), ``{venv}`` (the environment), ``{victim}`` (a classmate), ``{student}`` (the submission's own student),
replaced as plain text (the code's other braces are its own).
"""

from __future__ import annotations

import copy
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

# ---- answers -------------------------------------------------------------------------------------

#: ps1 answers that are all wrong (and consistent enough to pass nothing by accident).
PS1_WRONG = {
    "q1a_answer": "T = 3 * (data.m + data.p - 1) + 1\ntotal_slots = data.p * T",
    "q1b_answer": "idle_slots = 3 * data.m * (data.p + 1)\nbubble = idle_slots / total_slots",  # the busy slots
    "q2_answer": "def one_f_one_b_slow(p, m, s):\n    return 3 * (m + p - 1)",  # every GPU as fast
    "q3s_answer": "def gpipe_slow(p, m, s, k):\n    return 3 * (m + p - 1) * k",  # every GPU slow
    "q3_answer": "def bubble_ratio(p, m):\n    return (p - 1) / (m + p)\n\n\ndef bubble_interleaved(p, m, v):\n    return 0.0",
    "q4_answer": "def fewest_microbatches(p, target, c):\n    return p",
    "q5_answer": "def idle_share(bubble, m, F, B, W):\n    return bubble / (m * (F + B))",  # Megatron's ratio
}
#: The red team's GPipe simulation (round 3), pure Python: each GPU's clock, forwards up then backwards down,
#: micro-batch by micro-batch; GPU ``s`` ``k`` times slower, every hand-over ``c``. Right wherever it finishes (O(p·m)).
GPIPE_DP = """def gpipe_dp(p, m, s, k, c):
    f = [k if j == s else 1 for j in range(p)]
    clock = [0.0] * p
    for i in range(m):
        t = -c
        for j in range(p):
            t = max(t + c, clock[j]) + f[j]
            clock[j] = t
    for i in range(m):
        t = -c
        for j in reversed(range(p)):
            t = max(t + c, clock[j]) + 2 * f[j]
            clock[j] = t
    return max(clock)"""
#: Question 1b counted off the covered picture's cells (``{}``: which cells count as idle).
COUNTED = "idle_slots = sum({} for row in data.grid.rows for c in row)\nbubble = idle_slots / total_slots"
#: ps1 Q2a as it was when it was open-library: 1F1B and GPipe simulated on question 1's GPUs (their run gave Q1's answers).
OLD_Q2A = """costs = Costs(f=tuple(2 if j == data.slow else 1 for j in range(data.p)),
              b=tuple(4 if j == data.slow else 2 for j in range(data.p)))
bubble_1f1b = simulate(schedules.one_f_one_b(data.p, data.m), costs).bubble_ratio
gpipe = simulate(schedules.gpipe(data.p, data.m), costs).bubble_ratio
compared_with_gpipe = "equal" if abs(bubble_1f1b - gpipe) < 1e-9 else "smaller" if bubble_1f1b < gpipe else "larger"
"""
PS1_ALL = {"gpipe_slots": 1, "gpipe_idle": 1, "one_f_one_b": 1, "slow_form": 2, "closed_form": 1, "microbatches": 2,
           "conversion": 1}

#: Prefix of every "reach" attack: record what succeeded; at the end a breach spoils the answer T.
REACH = """
import os, glob, socket, sqlite3, subprocess, sys
breached = []
def attempt(what, action):
    try:
        action()
    except BaseException:
        return
    breached.append(what)
def write(path, mode="a"):
    with open(path, mode) as f:
        f.write("# owned\\n")
"""
SPOIL = "\nif breached:\n    print('BREACH', breached)\n    T = -1\n"

ATTACKS_PS1: dict[str, str] = {
    "gradebook_writer": """
def raise_classmates():
    db = sqlite3.connect("{course}/gradebook.db")
    db.execute("UPDATE grade SET auto_score = 10")
    db.commit()
attempt("gradebook", raise_classmates)
attempt("gradebook file", lambda: write("{course}/gradebook.db", "ab"))
attempt("autograded", lambda: write("{course}/autograded/bystander_blank/ps1/ps1.ipynb"))
""",
    "grading_code_writer": """
for target in ["{course}/grader/judge.py", "{course}/grader/keys/ps1.py", "{course}/grader/questions.py",
               "{ppedu}/grading/questions.py", "{ppedu}/grading/answers.py", "{course}/nbgrader_config.py"]:
    attempt(target, lambda: write(target))
""",
    "course_writer": """
for target in ["{course}/exercises/ps1/ps1.ipynb", "{course}/solutions/ps1/ps1.ipynb",
               "{course}/submitted/bystander_solved/ps1/ps1.ipynb", "{course}/owned.txt",
               "{venv}/pyvenv.cfg", "{ppedu}/__init__.py", "{ppedu}/owned.pth", "/usr/lib/owned", "/etc/owned",
               "/submission/owned"]:
    attempt(target, lambda: write(target))
attempt("remove", lambda: os.remove("{course}/nbgrader_config.py"))
attempt("chmod", lambda: os.chmod("{ppedu}/__init__.py", 0o777))
""",
    "reader_of_others": """
def read(path):
    assert open(path).read()
for target in ["{course}/submitted/bystander_solved/ps1/ps1.ipynb", "{course}/solutions/ps1/ps1.ipynb",
               "{course}/gradebook.db", "{course}/grader/keys/ps1.py", "../../bystander_solved/ps1/ps1.ipynb"]:
    attempt(target, lambda: read(target))
attempt("course", lambda: os.listdir("{course}"))
attempt("glob", lambda: [][0] if not [p for root in ("/tmp", "/home", "/srv", "/submission")
                                     for p in glob.glob(f"{root}/**/bystander_solved*", recursive=True)] else None)
""",
    "network": """
attempt("pypi", lambda: socket.create_connection(("pypi.org", 443), timeout=3))
attempt("ip", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
def loopback():
    for port in range(8880, 8890):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2)
            return
        except OSError:
            pass
    raise OSError("nothing listens")
attempt("loopback", loopback)
""",
    "secret_printer": """
def show(path):
    text = open(path).read()
    print(text)
    assert text
print(dict(os.environ))
for target in ["{course}/secrets.txt", *glob.glob("/tmp/canary-*"), "/proc/1/environ", f"/proc/{os.getppid()}/environ"]:
    attempt(target, lambda: show(target))
""",
    "process_killer": """
import signal
def others():
    mine = {os.getpid(), os.getppid(), 1}
    assert [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine and
            "python" not in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")]
attempt("sees the grader's processes", others)
attempt("environ", lambda: open(f"/proc/{os.getppid()}/environ").read() and None if os.getppid() > 1 else 1 / 0)
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
""",
}

FORK_BOMB = """
import os, time
children = 0
for _ in range(1000):
    try:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        children += 1
    except OSError:
        break
assert children < 200, children  # the process limit stopped it
"""
MEMORY_BOMB = """
hoard = []
try:
    while True:
        hoard.append(bytearray(100 * 2**20))
except MemoryError:
    pass
del hoard
try:
    huge = bytearray(10**12)
except MemoryError:
    pass
"""
OUTPUT_BOMB = """
import sys
for _ in range(5):
    print("x" * 10**7)
    print("y" * 10**6, file=sys.stderr)
"""
DISK_BOMB = """
for i in range(20):
    try:
        with open(f"/tmp/fill{i}", "wb") as f:
            f.write(b"0" * 50 * 2**20)
    except OSError:
        break
try:
    with open("big", "wb") as f:
        f.write(b"0" * 100 * 2**20)
except OSError:
    pass
"""
NOISE = """
import logging, sys, warnings
warnings.warn("this is only a warning")
logging.warning("a log line on stderr")
print("debugging", file=sys.stderr)
"""
KEY_THIEF = """
import importlib
stolen = None
for attempt in (lambda: importlib.import_module("ppedu.grading.assignments.ps1").QUESTIONS["gpipe_slots"].key(values),
                lambda: importlib.import_module("grader.keys.ps1")._slots_key(values),
                lambda: importlib.import_module("ppedu.grading.referee")):
    try:
        stolen = attempt()
        break
    except Exception:
        pass
if isinstance(stolen, dict):
    T, total_slots = stolen["T"], stolen["total_slots"]
"""
HAND_IN_FORGER = """
import json
import ppedu.grading, ppedu.grading.assignments
from IPython.display import display
def forged(assignment, question, namespace):
    display({"text/x-ppedu-answers": json.dumps({"assignment": assignment, "question": question, "score": 10,
                                                 "verdict": "correct", "answers": {}})}, raw=True)
ppedu.grading.hand_in = ppedu.grading.assignments.hand_in = forged
import builtins
builtins.hand_in = forged
"""
FAKE_OUTPUTS = """
import json
from IPython.display import display
print("✓ gpipe_slots: correct")
display({"text/x-ppedu-answers": json.dumps({"assignment": "ps1", "question": "gpipe_slots", "answers": {"T": 1}}),
         "text/plain": "10"}, raw=True)
"""
SPOOF = """
import os
os.environ.pop("NBGRADER_EXECUTION", None)
os.environ["PPEDU_STUDENT_ID"] = "{victim}"
values, data = my_values("ps1"), my_data("ps1")
"""
ABS = "import builtins\nbuiltins.abs = lambda x: 0\n"
RELOAD = "import importlib\nimportlib.reload = lambda module: module\n"
LIAR = """
class Liar(float):
    def __eq__(self, other):
        return True
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
def idle_share(bubble, m, F, B, W):
    return Liar(0.123)
"""
NUMPY_PS1 = """
import numpy as np
T = np.int64(3 * (2 * data.m + data.p - 1))
total_slots = np.array(data.p * T)
"""
NUMPY_PS1B = """
import numpy as np
idle_slots = np.int32(total_slots - 3 * data.m * (data.p + 1))
bubble = np.float64(idle_slots / total_slots)
"""


# ---- cases ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A submission: ``assignment``'s solution (``release=False``) or its release, with ``replace``
    (grade_id → new source), ``append`` (grade_id → code added after the cell's own),
    ``prepend``, ``edit`` (any change to the notebook), ``raw`` (the notebook file's bytes, rewritten: a
    corrupt or oddly encoded file) and ``folder`` (called with the submission folder and the templates once the
    notebook is written: extra files, links, pipes, or the folder itself replaced); it must lose ``lost`` points
    per test cell."""

    assignment: str
    replace: dict[str, str] = field(default_factory=dict)
    append: dict[str, str] = field(default_factory=dict)
    prepend: dict[str, str] = field(default_factory=dict)
    lost: dict[str, float] = field(default_factory=dict)
    release: bool = False
    edit: Callable[[Any], None] | None = None
    raw: Callable[[bytes], bytes] | None = None
    folder: Callable[[Any, dict[str, str]], None] | None = None


def victim(student: str) -> str:
    """A classmate none of whose ps1 values equal ``student``'s."""
    from ppedu.grading import my_values

    mine = my_values("ps1", student)
    return next(s for s in (f"classmate{i}" for i in range(100))
                if all(my_values("ps1", s)[k] != mine[k] for k in mine))


def write(case: Case, course: Path, student: str, target: Path) -> None:
    """``case`` as ``student``'s submission folder ``target`` (made here), its templates filled for the ``course``."""
    import nbformat

    import ppedu

    folder = "exercises" if case.release else "solutions"
    nb = nbformat.read(course / folder / case.assignment / f"{case.assignment}.ipynb", as_version=4)
    fill = {"{course}": str(course), "{ppedu}": str(Path(ppedu.__file__).parent), "{venv}": sys.prefix,
            "{victim}": victim(student), "{student}": student}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        parts = [case.prepend.get(gid, ""), case.replace.get(gid, cell.source), case.append.get(gid, "")]
        source = "\n".join(p.strip("\n") for p in parts if p.strip())
        for key, value in fill.items():
            source = source.replace(key, value)
        cell.source = source
    if case.edit:
        case.edit(nb)
    target.mkdir(parents=True)
    from ppedu.grading.questiondata import FILE

    if (course / "exercises" / case.assignment / FILE).is_file():  # fetched with the notebook: its question data
        shutil.copy(course / "exercises" / case.assignment / FILE, target / FILE)
    path = target / f"{case.assignment}.ipynb"
    nbformat.write(nb, path)
    if case.raw:
        path.write_bytes(case.raw(path.read_bytes()))
    if case.folder:
        case.folder(target, fill)


def _cell(nb: Any, gid: str) -> Any:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


def _rename(gid: str, new: str) -> Callable[[Any], None]:
    return lambda nb: _cell(nb, gid).metadata.nbgrader.update(grade_id=new)


def _ungrade(gid: str) -> Callable[[Any], None]:
    return lambda nb: _cell(nb, gid).metadata.nbgrader.update(grade=False)


def _points(gid: str, points: float) -> Callable[[Any], None]:
    return lambda nb: _cell(nb, gid).metadata.nbgrader.update(points=points)


def _delete(gid: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells.remove(_cell(nb, gid))


def _duplicate(gid: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells.append(copy.deepcopy(_cell(nb, gid)))


def _retype(gid: str) -> Callable[[Any], None]:
    def edit(nb: Any) -> None:
        cell = _cell(nb, gid)
        cell.cell_type = "markdown"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    return edit


def _edit_test(gid: str, source: str) -> Callable[[Any], None]:
    return lambda nb: setattr(_cell(nb, gid), "source", source)


ALL_WRONG = Case("ps1", replace=PS1_WRONG, lost=PS1_ALL)
PS1: dict[str, Case] = {
    "solved": Case("ps1"),
    "blank": Case("ps1", release=True, lost=PS1_ALL),
    # careless and wrong
    "off_by_one": Case("ps1", replace={"q1a_answer": PS1_WRONG["q1a_answer"]}, lost={"gpipe_slots": 1, "gpipe_idle": 1}),
    "busy_as_idle": Case("ps1", replace={"q1b_answer": PS1_WRONG["q1b_answer"]}, lost={"gpipe_idle": 1}),
    # chapter 3's rule for balanced stages (1F1B's step is GPipe's), applied where one GPU is slow
    "equal_as_in_chapter_3": Case("ps1", replace={"q2_answer": "def one_f_one_b_slow(p, m, s):\n"
                                                                "    return 3 * (p - 1) + 6 * m"},
                                  lost={"one_f_one_b": 1}),
    # the round trip above the slow GPU taken as hidden in full: right only where the slow GPU is the last
    "round_trip_hidden": Case("ps1", replace={"q2_answer": "def one_f_one_b_slow(p, m, s):\n"
                                                            "    return 3 * (p - 1) + 6 * m - 3 * (p - 1 - s)"},
                              lost={"one_f_one_b": 1}),
    # Q2a's old open-library answer (1F1B simulated on question 1's GPUs), handed in as it was: no function, no point
    "old_open_library_q2a": Case("ps1", replace={"q2_answer": OLD_Q2A}, lost={"one_f_one_b": 1}),
    # the same run inside the function: out of reach where ppedu has no code
    "one_f_one_b_by_simulation": Case("ps1", replace={"q2_answer": "def one_f_one_b_slow(p, m, s):\n"
                                                                    "    costs = Costs(f=tuple(2 if j == s else 1 for j in range(p)),\n"
                                                                    "                  b=tuple(4 if j == s else 2 for j in range(p)))\n"
                                                                    "    return simulate(schedules.one_f_one_b(p, m), costs).makespan"},
                                      lost={"one_f_one_b": 1}),
    "no_slow_gpu": Case("ps1", replace={"q1a_answer": "T = 3 * (data.m + data.p - 1)\ntotal_slots = data.p * T"},
                        lost={"gpipe_slots": 1, "gpipe_idle": 1}),
    # the slow GPU's makespan by simulation: out of reach while it is checked
    "slow_form_by_simulation": Case("ps1", replace={"q3s_answer": "def gpipe_slow(p, m, s, k):\n"
                                                                  "    costs = Costs(f=tuple(k if j == s else 1 for j in range(p)),\n"
                                                                  "                  b=tuple(2 * k if j == s else 2 for j in range(p)))\n"
                                                                  "    return simulate(schedules.gpipe(p, m), costs).makespan"},
                                    lost={"slow_form": 2}),
    # the red team's route (round 3): GPipe simulated in pure Python, O(p·m); right wherever it finishes, but at
    # m = 10⁹ it runs over its call's time limit (the visible case already), and the question's points go
    "slow_form_by_dp": Case("ps1", replace={"q3s_answer": GPIPE_DP + "\n\ndef gpipe_slow(p, m, s, k):\n"
                                                          "    return gpipe_dp(p, m, s, k, 0)"}, lost={"slow_form": 2}),
    # the same simulation with the hand-over latency, and m tried one at a time until the bubble meets the target
    "microbatches_by_dp": Case("ps1", replace={"q4_answer": GPIPE_DP + """

def fewest_microbatches(p, target, c):
    m = 1
    while True:
        T = gpipe_dp(p, m, 0, 1, c)
        if (p * T - 3 * m * p) / (p * T) <= target + 1e-12:
            return m
        m += 1"""}, lost={"microbatches": 2}),
    # the closed form of the step, but m searched one at a time: 10⁸ tries do not fit in a call's time limit
    "microbatches_by_search": Case("ps1", replace={"q4_answer": """def fewest_microbatches(p, target, c):
    m = 1
    while (p - 1) * (3 + 2 * c) > target * (3 * m + (p - 1) * (3 + 2 * c)) + 1e-12:
        m += 1
    return m"""}, lost={"microbatches": 2}),
    # the covered picture counted as it stands: its visible idle cells, or those and every covered cell
    "covered_counted_naively": Case("ps1", replace={"q1b_answer": COUNTED.format("c == ''")}, lost={"gpipe_idle": 1}),
    "covered_counted_as_idle": Case("ps1", replace={"q1b_answer": COUNTED.format("c in ('', '?')")},
                                    lost={"gpipe_idle": 1}),
    # the slow GPU's place taken to matter: right only where it is the last
    "slow_place_matters": Case("ps1", replace={"q3s_answer": "def gpipe_slow(p, m, s, k):\n"
                                                             "    return 3 * s + 3 * m * k + 3 * (p - 1 - s) * k"},
                               lost={"slow_form": 2}),
    # the closed forms from the library: out of reach while they are checked
    "closed_form_by_library": Case("ps1", replace={"q3_answer": "def bubble_ratio(p, m):\n"
                                                                "    return formulas.bubble_ratio(p, m)\n\n\n"
                                                                "def bubble_interleaved(p, m, v):\n"
                                                                "    return (p - 1) / (v * m + p - 1)"},
                                   prepend={"q3_answer": "from ppedu import formulas\n"}, lost={"closed_form": 1}),
    "closed_form_by_simulation": Case("ps1", replace={"q3_answer": "def bubble_ratio(p, m):\n    return (p - 1) / (m + p - 1)\n\n\n"
                                                                   "def bubble_interleaved(p, m, v):\n"
                                                                   "    return simulate(schedules.interleaved_1f1b(p, m, v)).bubble_ratio"},
                                      lost={"closed_form": 1}),
    "nan": Case("ps1", replace={"q5_answer": "def idle_share(bubble, m, F, B, W):\n    return float('nan')"},
                lost={"conversion": 1}),
    # W counted again on top of DeepSeek's whole backward
    "w_twice": Case("ps1", replace={"q5_answer": "def idle_share(bubble, m, F, B, W):\n"
                                                 "    return bubble / (bubble + m * (F + B + W))"}, lost={"conversion": 1}),
    "all_wrong": ALL_WRONG,
    "loops_forever": Case("ps1", replace={"q3_answer": "def bubble_ratio(p, m):\n    return (p - 1) / (m + p - 1)\n\n\n"
                                          "def bubble_interleaved(p, m, v):\n    while True:\n        pass"},
                          lost={"closed_form": 1}),
    "answer_cell_times_out": Case("ps1", prepend={"q4_answer": "while True:\n    pass\n"}, lost={"microbatches": 2}),
    # right work that must not lose points
    "numpy_scalars": Case("ps1", replace={"q1a_answer": NUMPY_PS1, "q1b_answer": NUMPY_PS1B}),
    "numpy_everywhere": Case("ps1", append={"q2_answer": "import numpy as np\n_ofob = one_f_one_b_slow\n\n\n"
                                                         "def one_f_one_b_slow(p, m, s):\n"
                                                         "    return np.float32(_ofob(p, m, s))",
                                            "q4_answer": "import numpy as np\n_fewest = fewest_microbatches\n\n\n"
                                                         "def fewest_microbatches(p, target, c):\n"
                                                         "    return np.int64(_fewest(p, target, c))",
                                            "q5_answer": "import numpy as np\n_share = idle_share\n\n\n"
                                                         "def idle_share(*args):\n    return np.array(_share(*args))"}),
    "noisy_stderr": Case("ps1", prepend={"q1a_answer": NOISE, "q5_answer": NOISE},
                         replace={"q3_answer": "import sys, warnings\n\n\ndef bubble_ratio(p, m):\n"
                                               "    warnings.warn('checking')\n    print(p, m, file=sys.stderr)\n"
                                               "    return (p - 1) / (m + p - 1)\n\n\n"
                                               "def bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)"}),
    "system_exit": Case("ps1", append={"q1b_answer": "raise SystemExit(0)"}),
    "own_cells": Case("ps1", edit=lambda nb: nb.cells.insert(3, __import__("nbformat").v4.new_code_cell("x = 1"))),
    # a kernel that dies: the cells run before it keep their points; a function's cell is run on its own
    # the notebook runs as nbgrader runs it: a cell that ends the kernel ends it for every test after it
    "os_exit": Case("ps1", prepend={"q2_answer": "import os\nos._exit(0)\n"},
                    lost={"one_f_one_b": 1, "slow_form": 2, "closed_form": 1, "microbatches": 2, "conversion": 1}),
    "os_exit_in_a_function_cell": Case("ps1", prepend={"q3_answer": "import os\nos._exit(0)\n"},
                                       lost={"closed_form": 1, "microbatches": 2, "conversion": 1}),
    # a cell that raises before it defines its function: the function is missing, and the message says why
    "defining_cell_raises": Case("ps1", prepend={"q5_answer": "print(undefined_name)\n"}, lost={"conversion": 1}),
    # a function that uses a name another cell defines: right, as the notebook runs top to bottom (issue 27)
    "name_from_another_cell": Case("ps1", replace={"q5_answer": "def idle_share(bubble, m, F, B, W):\n"
                                                                "    return share(bubble, m * (F + B))"},
                                   append={"q4_answer": "def share(idle, busy):\n    return idle / (idle + busy)"}),
    # test cells and metadata changed: put back as released
    "renamed_test_cell": Case("ps1", edit=_rename("gpipe_slots", "mine")),
    "ungraded_test_cell": Case("ps1", edit=_ungrade("gpipe_idle")),
    "deleted_test_cell": Case("ps1", edit=_delete("conversion")),
    "more_points": Case("ps1", edit=_points("one_f_one_b", 100)),
    "edited_test_cell": Case("ps1", replace={"q3_answer": PS1_WRONG["q3_answer"]},
                             edit=_edit_test("closed_form", "print('✓ closed_form: correct')"), lost={"closed_form": 1}),
    "copied_test_cell": Case("ps1", edit=_duplicate("gpipe_slots")),
    "renamed_answer_cell": Case("ps1", edit=_rename("q5_answer", "my_answer")),
    "retyped_answer_cell": Case("ps1", edit=_retype("q5_answer")),
    # attacks on the verdict: wrong work, patched machinery
    "abs_patcher": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": ABS}, lost=PS1_ALL),
    "reload_patcher": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": RELOAD}, lost=PS1_ALL),
    "liar": Case("ps1", replace={"q5_answer": LIAR}, lost={"conversion": 1}),
    # the kernel was handed its owner's values before the first cell (issue 35): the borrowed id changes nothing, the
    # value answers are the owner's own and right; the functions' answers are wrong
    "id_spoofer": Case("ps1", prepend={"q1a_answer": SPOOF},
                       replace={k: PS1_WRONG[k] for k in ("q3s_answer", "q3_answer", "q4_answer", "q5_answer")},
                       lost={"slow_form": 2, "closed_form": 1, "microbatches": 2, "conversion": 1}),
    "key_thief": Case("ps1", release=True, replace={"q1a_answer": KEY_THIEF}, lost=PS1_ALL),
    "hand_in_forger": Case("ps1", release=True, prepend={"q1a_answer": HAND_IN_FORGER}, lost=PS1_ALL),
    "fake_outputs": Case("ps1", release=True, replace={"q1a_answer": FAKE_OUTPUTS}, lost=PS1_ALL),
    # attacks on the machine: right work, so a breach (which spoils T) or a crash shows
    **{name: Case("ps1", append={"q1a_answer": REACH + code + SPOIL}) for name, code in ATTACKS_PS1.items()},
    "leaker": Case("ps1", append={"q1a_answer": REACH + """
def leak():
    print(open("{course}/solutions/ps5/ps5.ipynb").read()[:2000])
    print(sqlite3.connect("{course}/gradebook.db").execute("SELECT id FROM student").fetchall())
attempt("leak", leak)
""" + SPOIL}),
    # a cell deaf to the interrupt: the kernel is stopped, the tests already run keep their points
    "ignores_interrupt": Case("ps1", append={"q1b_answer": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                           "while True:\n    pass"}, lost={"gpipe_idle": 1}),
    # output in the answers' old media type is output like any other: capped, never read as an answer
    "answers_type_bomb": Case("ps1", append={"q1b_answer": "from IPython.display import display\nfor _ in range(30):\n"
                                                           "    display({'text/x-ppedu-answers': 'x' * 10**6}, raw=True)"}),
    "fork_bomb": Case("ps1", append={"q5_answer": FORK_BOMB}),
    "memory_bomb": Case("ps1", append={"q4_answer": MEMORY_BOMB}),
    "output_bomb": Case("ps1", append={"q1b_answer": OUTPUT_BOMB}),
    "disk_bomb": Case("ps1", append={"q1b_answer": DISK_BOMB}),
}

PS2_WRONG = {"q1_answer": "peak_gpipe = [1] * values.p\npeak_1f1b = [values.m] * values.p",
             "q1b_answer": "def interleaved_peak(p, m, v, j):\n    return min(p - j, m)",  # 1F1B's
             "q2f_answer": "def block_bytes(s, b, h, heads, kv_heads, ffn, gated, flash):\n    return 34 * s * b * h",
             "q2_answer": "S_act_GB = 1.0\nweights_GB = 1.0",
             "q3_answer": "gpipe_gpu0_GB = 1.0\none_f_one_b_gpu0_GB = 1.0",
             "q4_answer": "max_m_gpipe = 1\nfits_1f1b = not (one_f_one_b_gpu0_GB <= 80)"}
PS2_ALL = {"peaks": 1, "interleaved_peak": 2, "block": 2, "s_act": 1, "gpu0": 1, "fits": 1}
PS2: dict[str, Case] = {
    "solved": Case("ps2"),
    "blank": Case("ps2", release=True, lost=PS2_ALL),
    "numpy2_bool": Case("ps2", append={"q4_answer": "import numpy as np\nfits_1f1b = np.bool_(fits_1f1b)\n"
                                                     "max_m_gpipe = np.int64(max_m_gpipe)"}),
    "numpy_arrays": Case("ps2", append={"q1_answer": "import numpy as np\npeak_gpipe = np.array(peak_gpipe)\n"
                                                     "peak_1f1b = tuple(np.int64(x) for x in peak_1f1b)",
                                        "q2_answer": "S_act_GB = np.array(S_act_GB)\nweights_GB = np.float64(weights_GB)"}),
    "abs_patcher": Case("ps2", replace=PS2_WRONG, prepend={"q1_answer": ABS}, lost=PS2_ALL),
    "noisy_stderr": Case("ps2", prepend={"q2_answer": NOISE, "q4_answer": NOISE}),
    # GiB: question 2b lost; 3 and 4, computed from it, follow through
    "gib_not_gb": Case("ps2", append={"q2_answer": "S_act_GB = S_act_GB * 1e9 / 2**30"}, lost={"s_act": 1}),
    "half_right": Case("ps2", replace={k: v for k, v in PS2_WRONG.items() if k in ("q2_answer", "q3_answer", "q4_answer")},
                       lost={"s_act": 1, "gpu0": 1, "fits": 1}),
    # the interleaved peak counted in chunks, not stages
    "chunks_not_stages": Case("ps2", append={"q1b_answer": "_stages = interleaved_peak\n\n\n"
                                                           "def interleaved_peak(p, m, v, j):\n"
                                                           "    return _stages(p, m, v, j) * v"},
                              lost={"interleaved_peak": 2}),
    # the eager attention scores forgotten: right with FlashAttention only
    "no_scores": Case("ps2", append={"q2f_answer": "_kept = block_bytes\n\n\n"
                                                   "def block_bytes(s, b, h, heads, kv_heads, ffn, gated, flash):\n"
                                                   "    return _kept(s, b, h, heads, kv_heads, ffn, gated, 1) - "
                                                   "(0 if flash else 4 * b * heads * s)"},
                      lost={"block": 2}),
    # the inventory from the library: out of reach while it is checked, and not this question's block
    "block_by_library": Case("ps2", replace={"q2f_answer": "from ppedu.cluster import Model\n\n\n"
                                                           "def block_bytes(s, b, h, heads, kv_heads, ffn, gated, flash):\n"
                                                           "    x = Model('x', 1, h, 1, s, b, heads, kv_heads, ffn, bool(gated),"
                                                           " flash_attention=bool(flash))\n"
                                                           "    return sum(x.block_activations().values())"},
                             # the main kernel has the library, but its block is a sequential one: 2b's GB built on it
                             # are wrong too; 3 and 4, right from those GB, follow through
                             lost={"block": 2, "s_act": 1}),
}

LIBRARY_SCHEDULES = """
from ppedu import schedules


def gpipe_waves(p, m, k):
    return [list(s) for s in schedules.gpipe(p, m).stages]


def grouped_1f1b(p, m, k):
    return [list(s) for s in schedules.build("1f1b", p, m).stages]


def leftover_first(p, m, v):
    import ppedu.reference
    return [list(s) for s in schedules.interleaved_1f1b(p, m, v).stages]
"""
LIBRARY_SOURCE = """
import pathlib, ppedu
source = pathlib.Path(ppedu.__file__).parent / "schedules"
namespace = {}
for name in ("gpipe", "one_f_one_b", "interleaved"):
    text = (source / f"{name}.py").read_text()
    for cached in (source / "__pycache__").glob(f"{name}.*.pyc"):
        import marshal
        exec(marshal.loads(cached.read_bytes()[16:]), namespace)
    exec(compile(text, name, "exec"), namespace)


def gpipe_waves(p, m, k):
    return [list(s) for s in namespace["gpipe"](p, m).stages]


def grouped_1f1b(p, m, k):
    return [list(s) for s in namespace["with_warmups"]([min(m, k * (p - j)) - 1 for j in range(p)], m).stages]


def leftover_first(p, m, v):
    return [list(s) for s in namespace["interleaved_1f1b"](p, m, v).stages]
"""
# Orders from the library's other corners: looped BFS with one chunk is GPipe's twin, the search finds 1F1B-like
# orders, and PyTorch's pipelining lists interleaved 1F1B.
LIBRARY_RELATIVES = """
from ppedu import schedules


def gpipe_waves(p, m, k):
    return [list(s) for s in schedules.looped_bfs(p, m, 1).stages]


def grouped_1f1b(p, m, k):
    from ppedu.search import search
    found = search(p, m, Costs(f=1, b=2), memory_limit=k * p, cut=1, seconds=0.2)
    return [[o for o in s if o.kind != "W"] for s in found.schedule.stages]


def leftover_first(p, m, v):
    from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops
    ranks = get_schedule_ops("Interleaved1F1B", p, m, num_stages_per_rank=v)
    kinds = {"FORWARD": "F", "FULL_BACKWARD": "B"}
    return [[Op(kinds[a.computation_type.name], a.microbatch_index, a.stage_index)
             for a in rank if a is not None and a.computation_type.name in kinds] for rank in ranks]
"""
# ppedu's own orders pasted in by hand, as a student with the package's source can: each a valid order with every
# operation once that runs to the end, and with 1F1B's warm-up widened by hand the right peak and makespan too — never
# the question's order, which weighs half (schedule_checks: 1 + 1 + 1 + 1 of 8 and 4 of 8 for the order).
PASTED_PPEDU = """
def _pasted_gpipe(p, m):  # ppedu.schedules.gpipe, its loop copied
    return [[Op("F", i, j) for i in range(m)] + [Op("B", i, j) for i in range(m)] for j in range(p)]


def _pasted_with_warmups(warmups, m):  # ppedu.schedules.one_f_one_b.with_warmups, its loop copied
    stages = []
    for j, k in enumerate(warmups):
        k = min(k, m)
        ops = [Op("F", i, j) for i in range(k)]
        for i in range(m - k):
            ops += [Op("F", k + i, j), Op("B", i, j)]
        stages.append(ops + [Op("B", i, j) for i in range(m - k, m)])
    return stages


def _pasted_interleaved(p, m, v):  # ppedu.schedules.interleaved with its default group, copied
    group = next(g for g in range(min(p, m), m + 1) if m % g == 0 or m % g >= p)
    table = [(mb, r) for first in range(0, m, group) for r in range(v) for mb in range(first, min(first + group, m))]
    stages = []
    for j in range(p):
        forward = [Op("F", mb, r * p + j) for mb, r in table]
        backward = [Op("B", mb, (v - 1 - r) * p + j) for mb, r in table]
        warmup = min((p - j - 1) * 2 + (v - 1) * group, m * v)
        ops = forward[:warmup]
        for n in range(len(table) - warmup):
            ops += [forward[warmup + n], backward[n]]
        stages.append(ops + backward[len(table) - warmup:])
    return stages


def gpipe_waves(p, m, k):
    return _pasted_gpipe(p, m)


def grouped_1f1b(p, m, k):
    return _pasted_with_warmups([min(m, k * (p - j)) - 1 for j in range(p)], m)


def leftover_first(p, m, v):
    return _pasted_interleaved(p, m, v)
"""
PS3_ALL = {"waves": 2, "grouped": 3, "leftover": 4}  # question 4 is graded by hand
PS3: dict[str, Case] = {
    "solved": Case("ps3"),
    "blank": Case("ps3", release=True, lost=PS3_ALL),
    "library_caller": Case("ps3", replace={"q1_answer": LIBRARY_SCHEDULES, "q2_answer": "", "q3_answer": ""},
                           lost=PS3_ALL),
    "library_source_reader": Case("ps3", replace={"q1_answer": LIBRARY_SOURCE, "q2_answer": "", "q3_answer": ""},
                                  lost=PS3_ALL),
    "library_relatives": Case("ps3", replace={"q1_answer": LIBRARY_RELATIVES, "q2_answer": "", "q3_answer": ""},
                              lost=PS3_ALL),
    # GPipe: once and runs (2 of 8); widened 1F1B: and makespan and peak (4 of 8); Megatron's grouping: and makespan
    "pasted_ppedu": Case("ps3", replace={"q1_answer": PASTED_PPEDU, "q2_answer": "", "q3_answer": ""},
                         lost={"waves": 1.5, "grouped": 1.5, "leftover": 2.5}),
    "numpy_indices": Case("ps3", append={"q1_answer": "import numpy as np\n_waves = gpipe_waves\n\n\n"
                                                      "def gpipe_waves(p, m, k):\n"
                                                      "    return [[Op(o.kind, np.int64(o.microbatch), np.int64(o.chunk)) "
                                                      "for o in s] for s in _waves(p, m, k)]"}),
    "schedule_objects": Case("ps3", append={
        "q1_answer": "_waves = gpipe_waves\n\n\ndef gpipe_waves(p, m, k):\n"
                     "    return Schedule(tuple(map(tuple, _waves(p, m, k))), 'mine', (tuple(range(p)),), m)",
        "q2_answer": "_grouped = grouped_1f1b\n\n\ndef grouped_1f1b(p, m, k):\n"
                     "    return Schedule(tuple(map(tuple, _grouped(p, m, k))), 'mine', (tuple(range(p)),), m)"}),
    "noisy_stderr": Case("ps3", prepend={"q1_answer": NOISE},
                         append={"q2_answer": "import sys\n_mine = grouped_1f1b\n\n\ndef grouped_1f1b(p, m, k):\n"
                                              "    print('debug', p, m, k, file=sys.stderr)\n    return _mine(p, m, k)"}),
    "breaks_a_dependency": Case("ps3", replace={"q2_answer": """
def grouped_1f1b(p, m, k):  # no warm-up: every GPU's first operation is a backward whose forward has not run
    stages = []
    for j in range(p):
        ops, done = [], 0
        while done < m:
            ops += [Op("B", i, j) for i in range(done, min(done + k, m))]
            ops += [Op("F", i, j) for i in range(done, min(done + k, m))]
            done = min(done + k, m)
        stages.append(ops)
    return stages
"""}, lost={"grouped": 2.625}),  # every operation once (1 of 8) stands
    # the warm-up is PyTorch's own count, not k times it: a stage asks for k backwards before the stage below has run
    # the forwards they need, and the order deadlocks (every operation once, 1 of 8, stands)
    "pytorch_warmup_for_grouped": Case("ps3", replace={"q2_answer": """
def grouped_1f1b(p, m, k):
    stages = []
    for j in range(p):
        forwards, backwards = min(m, p - j), 0
        ops = [Op("F", i, j) for i in range(forwards)]
        while backwards < m:
            ops += [Op("B", i, j) for i in range(backwards, min(backwards + k, m))]
            ops += [Op("F", i, j) for i in range(forwards, min(forwards + k, m))]
            backwards, forwards = min(backwards + k, m), min(forwards + k, m)
        stages.append(ops)
    return stages
"""}, lost={"grouped": 2.625}),
    "wrong_type": Case("ps3", replace={"q3_answer": "def leftover_first(p, m, v):\n    return 'F0 F1 B0 B1'"},
                       lost={"leftover": 4}),
}

PS4_ALL = {"zb1p": 1, "grid": 1, "waves": 1, "choose": 1, "handovers": 1}  # 1b, 3b, 4b and 5 are graded by hand
#: 1F1B in waves, built by hand from the library's 1F1B and simulated with a copy of the simulator's code.
PS4_COPIED_SIMULATOR = """
import types
from ppedu.ops import Op, Schedule
from ppedu.schedules import one_f_one_b
_sim = types.FunctionType(simulate.__code__, simulate.__globals__, "sim", simulate.__defaults__)
_sim.__kwdefaults__ = simulate.__kwdefaults__


def waves_makespan(p, m, k, f, b):
    wave = one_f_one_b(p, m // k).stages
    stages = tuple(tuple(Op(o.kind, o.microbatch + w * (m // k), o.chunk) for w in range(k) for o in s) for s in wave)
    return _sim(Schedule(stages, "waves", (tuple(range(p)),), m), Costs(f=f, b=b)).makespan
"""
PS4: dict[str, Case] = {
    "solved": Case("ps4"),
    "blank": Case("ps4", release=True, lost=PS4_ALL),
    "abs_patcher": Case("ps4", append={"q1a_answer": "def zb1p_bubble(p, F, B, W):\n    return (p - 1) * (F + B - 2 * W)",
                                       "q3_answer": "def waves_makespan(p, m, k, f, b):\n    return (m + p - 1) * (f + b)",
                                       "q4_answer": ABS},
                        lost={"zb1p": 1, "waves": 1}),
    # DeepSeek's row taken at its word off its ground; two of the three paths, right where the third is shorter
    "deepseek_row": Case("ps4", replace={"q1a_answer": "def zb1p_bubble(p, F, B, W):\n"
                                                       "    return (p - 1) * (F + B - 2 * W)"}, lost={"zb1p": 1}),
    "two_paths": Case("ps4", replace={"q1a_answer": "def zb1p_bubble(p, F, B, W):\n"
                                                    "    return (p - 1) * max(F, F + B - 2 * W)"}, lost={"zb1p": 1}),
    "numpy_and_noise": Case("ps4", prepend={"q2_answer": NOISE},
                            append={"q2_answer": "import numpy as np\nT = np.int64(T)\nidle_slots = np.float64(idle_slots)\n"
                                                 "peak_activations = np.array(peak_activations)",
                                    "q3_answer": "import numpy as np\n_mine = waves_makespan\n\n\n"
                                                 "def waves_makespan(p, m, k, f, b):\n    return np.float64(_mine(p, m, k, f, b))"}),
    # the picture misread
    "counted_busy": Case("ps4", append={"q2_answer": "idle_slots = p * T - idle_slots"}, lost={"grid": 1}),
    "gpu0_last": Case("ps4", append={"q2_answer": "peak_activations = peak_activations[::-1]"}, lost={"grid": 1}),
    "one_wave_grid": Case("ps4", append={"q2_answer": "T = T - (p - 1) * (T // (m + 2 * (p - 1)))"}, lost={"grid": 1}),
    # the closed form: right only on the picture, or the simulator behind it
    "picture_only": Case("ps4", replace={"q3_answer": "def waves_makespan(p, m, k, f, b):\n    return T"},
                         lost={"waves": 1}),
    "simulates_inside": Case("ps4", replace={"q3_answer": "from ppedu.ops import Op, Schedule\n"
                                                          "from ppedu.schedules import one_f_one_b\n\n\n"
                                                          "def waves_makespan(p, m, k, f, b):\n"
                                                          "    wave = one_f_one_b(p, m // k).stages\n"
                                                          "    stages = tuple(tuple(Op(o.kind, o.microbatch + w * (m // k), "
                                                          "o.chunk) for w in range(k) for o in s) for s in wave)\n"
                                                          "    return simulate(Schedule(stages, 'w', (tuple(range(p)),), m), "
                                                          "Costs(f=f, b=b)).makespan"},
                             lost={"waves": 1}),
    "copied_simulator": Case("ps4", replace={"q3_answer": PS4_COPIED_SIMULATOR}, lost={"waves": 1}),
    # the choice: the fastest row, fitting or not (for this student the fastest does not fit)
    "fastest_whether_it_fits": Case("ps4", replace={"q4_answer": "rows = cluster.plan(model, gpus, [values.m])\n"
                                                              "schedule = max(rows, key=lambda r: r.tokens_per_second)"
                                                              ".schedule"},
                                    lost={"choose": 1}),
    # the snake counted as interleaving's round robin: its turns between rounds taken for hand-overs
    "snake_as_round_robin": Case("ps4", replace={"q6_answer": "def snake_handovers(p, m, v):\n"
                                                              "    return 2 * m * (p * v - 1)"}, lost={"handovers": 1}),
    # the written answers are the formgrader's: none of them changes the autograded score
    "no_written_answers": Case("ps4", replace={"q1b_answer": "", "q3b_answer": "", "q4b_answer": "I don't know.",
                                               "q5_answer": ""}),
}

LIBRARY_EXECUTOR = """
import torch
from ppedu.mnist import run_schedule


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    return run_schedule(schedule, chunks, (torch.cat(xs), torch.cat(ys)), loss_fn).loss
"""
#: ppedu's executor trimmed as a student would paste it: its order from the simulator, as the library's own is made
#: (issue 34): the simulator has no code where the answer runs, so nothing runs.
TRIMMED_LIBRARY_EXECUTOR = """
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    order = [e.op for e in sorted(simulate(schedule).events, key=lambda e: (e.start, e.stage))]
    last, examples = schedule.chunks - 1, sum(len(x) for x in xs)
    handed, grads, saved, loss = {}, {}, {}, 0.0
    for op in order:
        i, c = op.microbatch, op.chunk
        if op.kind == "F":
            x = xs[i] if c == 0 else handed.pop((i, c - 1)).detach().requires_grad_()
            out = chunks[c](x)
            if c == last:
                out = loss_fn(out, ys[i]) * len(x) / examples
                loss += out.item()
            else:
                handed[i, c] = out
            saved[i, c] = (x, out)
        else:
            x, out = saved.pop((i, c))
            out.backward(None if c == last else grads.pop((i, c)))
            if c > 0:
                grads[i, c - 1] = x.grad
    return loss

"""
#: The same executor with the order made without the simulator: a unit-time replay of the lists (each op at the
#: first time its GPU is free and its input done), sorted by time — simulate's order, computed by hand, not a loop
#: of GPUs that notices when none can go on. Its orders are right; on the deadlocked lists it never finishes
#: sorting (it stops at its own cap and raises without naming anything), and as "recomputation" it keeps every graph.
GLOBAL_ORDER_EXECUTOR = TRIMMED_LIBRARY_EXECUTOR.replace(
    "    order = [e.op for e in sorted(simulate(schedule).events, key=lambda e: (e.start, e.stage))]",
    """    start, free, position, order = {}, [0] * schedule.p, [0] * schedule.p, []
    for _ in range(4 * sum(map(len, schedule.stages))):
        for g, stage in enumerate(schedule.stages):
            if position[g] < len(stage):
                op = stage[position[g]]
                need = op.needs(schedule.chunks)
                if need is None or need in start:
                    start[op] = max(free[g], start[need] + 1 if need is not None else 0)
                    free[g], position[g] = start[op] + 1, position[g] + 1
                    order.append(op)
    if len(order) < sum(map(len, schedule.stages)):
        raise RuntimeError("the order does not finish")
    order.sort(key=lambda op: start[op])""")
#: The red team's route (round two): the order from ppedu's replay loop (the simulator's core) on the schedule's
#: columns; it runs where ppedu.replay is withheld like the simulator, so nothing runs.
REPLAY_ORDER_EXECUTOR = TRIMMED_LIBRARY_EXECUTOR.replace(
    "    order = [e.op for e in sorted(simulate(schedule).events, key=lambda e: (e.start, e.stage))]",
    """    from ppedu.replay import replay
    columns = schedule.columns
    ops, n = list(columns.ops), len(columns.ops)
    ran = replay([int(x) for x in columns.start], [int(x) for x in columns.needs], [0.0] * n, [1.0] * n)
    order = [ops[k] for k in sorted(range(n), key=lambda k: (ran.start[k], int(columns.stage[k])))]""")
#: A right per-GPU loop that does not recompute: full marks but for recomputation's own share.
NO_RECOMPUTATION = """
def run_recomputed(schedule, chunks, xs, ys, loss_fn):
    return drive(schedule, chunks, xs, ys, loss_fn, recompute=False)
"""
#: Recomputes, but keeps the graph of the first forward too (a graph at F, and again at B).
GRAPH_AT_F_TOO = """
def run_recomputed(schedule, chunks, xs, ys, loss_fn):
    import torch
    _switch, torch.set_grad_enabled = torch.set_grad_enabled, lambda mode: torch.enable_grad()  # every F builds one
    try:
        return drive(schedule, chunks, xs, ys, loss_fn, recompute=True)
    finally:
        torch.set_grad_enabled = _switch
"""
#: The per-GPU order of the hostile executors (hostile*.py), a loop of the GPUs' lists, not the simulator's.
PS5_ORDER = """
def _order(schedule):
    todo, done, order = [list(stage) for stage in schedule.stages], set(), []
    for _ in range(sum(map(len, todo))):
        for ops in todo:
            if ops and (ops[0].needs(schedule.chunks) is None or ops[0].needs(schedule.chunks) in done):
                order.append(ops.pop(0))
                done.add(order[-1])
    if any(todo):
        raise RuntimeError("stuck")
    return order
"""
def _hoarding(cell: Any) -> None:
    """The solution's loop, every forward's output also kept in a list of the cell's, past the end."""
    cell.source = cell.source.replace("    while any(todo):", "    hoard = _HOARD\n    while any(todo):").replace(
        "                kept[i, c] = x if recompute", "                hoard.append(out)\n                kept[i, c] = x "
        "if recompute") + "\n\n_HOARD = []\n"


PS5_ALL = {"one_f_one_b": 3, "gpipe": 1, "interleaved": 1, "deadlock": 2, "recomputed": 2}
PS5_RECOMPUTATION = 0.3 * PS5_ALL["recomputed"]


def ps5_lost(share: float, interleaved: float | None = None, deadlock: float = PS5_ALL["deadlock"]) -> dict[str, float]:
    """What a released notebook whose ``run_pipeline`` loses ``share`` of each plain question's points (``interleaved``
    there, if other) loses in all: ``run_recomputed`` is still the stub."""
    return {"one_f_one_b": round(share * PS5_ALL["one_f_one_b"], 6), "gpipe": round(share * PS5_ALL["gpipe"], 6),
            "interleaved": round((share if interleaved is None else interleaved) * PS5_ALL["interleaved"], 6),
            "deadlock": deadlock, "recomputed": PS5_ALL["recomputed"]}
PS5: dict[str, Case] = {
    "solved": Case("ps5"),
    "blank": Case("ps5", release=True, lost=PS5_ALL),
    "library_caller": Case("ps5", release=True, replace={"executor_answer": LIBRARY_EXECUTOR}, lost=PS5_ALL),
    # ppedu's run_schedule trimmed into both answers: the simulator it orders by is not there, so nothing runs
    "trimmed_library_executor": Case("ps5", release=True, replace={"executor_answer": TRIMMED_LIBRARY_EXECUTOR,
                                                                   "recompute_answer": "run_recomputed = run_pipeline"},
                                     lost=PS5_ALL),
    # simulate's order made by hand, not a loop of GPUs: every right order keeps its points; the deadlock is not
    # reported (nothing named), and it does not recompute
    "global_order": Case("ps5", release=True, replace={"executor_answer": GLOBAL_ORDER_EXECUTOR,
                                                       "recompute_answer": "run_recomputed = run_pipeline"},
                         lost={"deadlock": PS5_ALL["deadlock"], "recomputed": PS5_RECOMPUTATION}),
    "replay_order": Case("ps5", release=True, replace={"executor_answer": REPLAY_ORDER_EXECUTOR,
                                                       "recompute_answer": "run_recomputed = run_pipeline"},
                         lost=PS5_ALL),
    "no_recomputation": Case("ps5", replace={"recompute_answer": NO_RECOMPUTATION},
                             lost={"recomputed": PS5_RECOMPUTATION}),
    "graph_at_f_too": Case("ps5", replace={"recompute_answer": GRAPH_AT_F_TOO}, lost={"recomputed": PS5_RECOMPUTATION}),
    # keeps every F's graph and output in a list past the end: right gradients, and the lists' order, which is what
    # memory is counted from (issue 35: copies its own process keeps are not a peak it could shape), but they are
    # still held once it returns
    "keeps_activations": Case("ps5", edit=lambda nb: _hoarding(_cell(nb, "executor_answer")),
                              lost={"one_f_one_b": 0.6, "gpipe": 0.2, "interleaved": 0.2,
                                    "recomputed": PS5_RECOMPUTATION}),
    "noisy_stderr": Case("ps5", prepend={"executor_answer": NOISE}, edit=lambda nb: setattr(
        _cell(nb, "executor_answer"), "source", _cell(nb, "executor_answer").source.replace(
            "    last, examples = ", "    import sys, warnings\n    warnings.warn('running')\n"
            "    print('running', file=sys.stderr)\n    last, examples = "))),
}

PS6_ALL = {"zb_h2": 1, "dpv_fill": 1, "scan": 1, "staleness": 1}  # 1b, 2, 3c, 4b by hand
PS6: dict[str, Case] = {
    "solved": Case("ps6"),
    "blank": Case("ps6", release=True, lost=PS6_ALL),
    # careless: the one-chunk bound, right only where b <= 2 min(f, w) (nobody's own costs); one of GPU 0's two paths,
    # right on the student's own costs at most (the hidden inputs make each path the longest once)
    "paper_bound": Case("ps6", replace={"q1a_answer": "def zb_h2_makespan(p, m, f, b, w):\n"
                                                      "    return (p - 1) * f + m * (f + b + w)"}, lost={"zb_h2": 1}),
    "drain_path_only": Case("ps6", replace={"q1a_answer": "def zb_h2_makespan(p, m, f, b, w):\n"
                                                          "    return (p - 1) * f + m * (f + b + w) + (p - 1) * max(0, b - 2 * w)"},
                            lost={"zb_h2": 1}),
    # DualPipe's middle rank taken for DualPipeV's tip; the floor given for the scan
    "middle_rank_fill": Case("ps6", replace={"q3a_answer": "def dualpipev_fill(p, f):\n    return (p / 2 - 1) * f"},
                             lost={"dpv_fill": 1}),
    "floor_for_the_scan": Case("ps6", append={"q3b_answer": "smallest_fb = f + 3 * w - B"}, lost={"scan": 1}),
    # the simulator behind a closed form: not installed where the cell runs on its own
    "simulates_inside": Case("ps6", replace={"q3a_answer": "from ppedu import Costs, schedules, simulate\n\n\n"
                                                           "def dualpipev_fill(p, f):\n"
                                                           "    t = simulate(schedules.dualpipe_v(p, 2 * p + 2), Costs(f=f, b=f, w=f / 2))\n"
                                                           "    return max(min(e.start for e in t.on_stage(j)) for j in range(p))"},
                             lost={"dpv_fill": 1}),
    "simulates_zb_h2": Case("ps6", replace={"q1a_answer": "from ppedu import Costs, schedules, simulate\n\n\n"
                                                          "def zb_h2_makespan(p, m, f, b, w):\n"
                                                          "    return simulate(schedules.zero_bubble_h2(p, m), Costs(f=f, b=b, w=w)).makespan"},
                            lost={"zb_h2": 1}),
    # right only on the inputs the notebook shows
    "examples_only": Case("ps6", replace={"q3a_answer": "def dualpipev_fill(p, f):\n"
                                                        "    return {(4, 1): 3.0, (6, 2): 10.0}.get((p, f), 0.0)"},
                          lost={"dpv_fill": 1}),
    # the split orders counted as 1F1B's: the update taken at B, where the weight gradient is not complete yet
    "staleness_at_b": Case("ps6", replace={"q4a_answer": "def async_staleness(p, j, h):\n    return p - j - 1"},
                           lost={"staleness": 1}),
    # the written proofs are the formgrader's: none of them changes the autograded score
    "no_written_answers": Case("ps6", replace={"q1b_answer": "", "q2b_answer": "I don't know.", "q3c_answer": "",
                                               "q4b_answer": ""}),
}

FINAL_ALL = {"grid_T": 2, "grid_path": 2, "plan": 3, "slow": 2, "two_level": 2,
             "checkpoints": 2}  # 1c, 3b, 4b, 5, 6, 7b by hand
_ONE_F_ONE_B_ONLY = """def best_step(p, batch, f, b, w, o, act, room):
    times = []
    for m in range(2 * p - 1, batch + 1):
        s = batch / m
        if batch % m == 0 and p * s * act <= room:
            times.append((m + p - 1) * (o + s * f + o + s * (b + w)))
    return min(times)"""
_CKPT_LIBRARY = """from ppedu.cluster import reliability


def two_level_goodput(N, gpu_mtbf_h, q, c1, R1, c2, R2):
    mtbf = gpu_mtbf_h * 3600 / N
    return reliability.goodput(reliability.young_daly(c2, mtbf), c2, mtbf, R2)"""
_CKPT_STORAGE_ALONE = """def two_level_goodput(N, gpu_mtbf_h, q, c1, R1, c2, R2):
    mtbf = gpu_mtbf_h * 3600 / N
    return 1 - (2 * c2 / mtbf) ** 0.5 - R2 / mtbf"""
_CKPT_WHOLE_RATE = """def two_level_goodput(N, gpu_mtbf_h, q, c1, R1, c2, R2):
    mtbf = gpu_mtbf_h * 3600 / N
    t1, t2 = (2 * c1 * mtbf) ** 0.5, (2 * c2 * mtbf) ** 0.5
    return 1 - c1 / t1 - c2 / t2 - (q * (t1 / 2 + R1) + (1 - q) * (t2 / 2 + R2)) / mtbf"""
FINAL: dict[str, Case] = {
    "solved": Case("final"),
    "blank": Case("final", release=True, lost=FINAL_ALL),
    "counted_busy": Case("final", append={"q1a_answer": "idle_slots = data.grid_p * T - idle_slots"},
                         lost={"grid_T": 2}),
    # the bubble's causes not told apart: every idle slot put on the order, fill and drain included
    "every_idle_slot_the_orders": Case("final", append={"q1b_answer": "order_idle = idle_slots"}, lost={"grid_path": 2}),
    # the loop read as 1F1B's, off each GPU's own work rather than the critical path
    "loop_of_1f1b": Case("final", append={"q1b_answer": "per_microbatch = 1 + data.grid_b"}, lost={"grid_path": 2}),
    # memory forgotten: the fastest m, fitting or not
    "plan_without_memory": Case("final", edit=lambda nb: setattr(_cell(nb, "q2_answer"), "source", _cell(
        nb, "q2_answer").source.replace("act <= room", "act <= float('inf')")), lost={"plan": 3}),
    # ZB-H2 never considered (its 2p - 1 micro-batches taken to be all m): right only where 1F1B wins
    "plan_1f1b_only": Case("final", replace={"q2_answer": _ONE_F_ONE_B_ONLY}, lost={"plan": 3}),
    # the simulator behind a closed form: not installed where the cell runs on its own
    "plan_simulated": Case("final", replace={"q2_answer": "from ppedu import Costs, schedules, simulate\n\n\n"
                                                          "def best_step(p, batch, f, b, w, o, act, room):\n"
                                                          "    return simulate(schedules.zero_bubble_h2(p, batch), "
                                                          "Costs(f=o + f, b=o + b, w=o + w)).makespan"},
                           lost={"plan": 3}),
    # the slow GPU's own work alone: right where it sets the pace (many micro-batches), not on a short run
    "slow_work_only": Case("final", replace={"q3_answer": "def fastest(p, m, s, k, f, b):\n"
                                                          "    return s * (f + b) + m * k * (f + b)"}, lost={"slow": 2}),
    # GPipe's makespan taken for the best there is
    "slow_gpipe": Case("final", replace={"q3_answer": "def fastest(p, m, s, k, f, b):\n"
                                                      "    return (p - 1) * (f + b) + m * k * (f + b)"}, lost={"slow": 2}),
    # a flat ring over every GPU at the slow link's pace
    "flat_ring": Case("final", replace={"q4_answer": "def two_level(M, N, g, a_in, b_in, a_out, b_out):\n"
                                                     "    n = N * g\n"
                                                     "    return 2 * (n - 1) * a_out + 2 * (n - 1) / n * M / b_out"},
                      lost={"two_level": 2}),
    # chapter 14's goodput called from the library, storage alone (and ppedu is not where the cell runs)
    "ckpt_library_call": Case("final", replace={"q7_answer": _CKPT_LIBRARY}, lost={"checkpoints": 2}),
    # the same in arithmetic: the snapshots left out
    "ckpt_storage_alone": Case("final", replace={"q7_answer": _CKPT_STORAGE_ALONE}, lost={"checkpoints": 2}),
    # both levels at Young–Daly's interval for the whole job's failures, not each for its own share
    "ckpt_whole_rate": Case("final", replace={"q7_answer": _CKPT_WHOLE_RATE}, lost={"checkpoints": 2}),
    "no_written_answers": Case("final", replace={"q1c_answer": "", "q3b_answer": "", "q4b_answer": "",
                                                 "q5_answer": "no idea", "q6_answer": "", "q7b_answer": ""}),
}

PS7_ALL = {"hierarchical": 1, "tensor": 1, "ring_attention": 1, "zero_step": 1, "fsdp": 1, "capacity": 1, "moe": 1,
           "failures": 1, "mfu": 1, "layout": 1, "batch": 1}  # the written ones by hand

#: The red team's routes with the student release only (issue 34), each written as a student would paste it: the
#: library's formula or walk transcribed (ppedu is not there when the functions run), or a numeric search on a formula
#: the library or the old question gave. Each answers the chapter's case, not the question's variant: nothing earned.
PS7_LIBRARY_ROUTES: dict[str, tuple[str, str, str]] = {
    # 1a: three collectives.cost rings added up (the node's steps as rings)
    "route_three_costs": ("q1a_answer", "hierarchical", """
def hierarchical_allreduce_seconds(nodes, per_node, nbytes, alpha_in, bandwidth_in, alpha_out, bandwidth_out):
    k, n = per_node, nodes
    rs = (k - 1) * alpha_in + nbytes * (k - 1) / k / bandwidth_in
    ar = 2 * (n - 1) * alpha_out + 2 * (nbytes / k) * (n - 1) / n / bandwidth_out
    return rs + ar + rs"""),
    # 2a: tensor.block_collectives with sequence parallelism, each collective costed as cost() does (10 rings)
    "route_block_collectives": ("q2_answer", "tensor", """
def ulysses_block_seconds(t, tokens, hidden, kv_width, alpha, bandwidth):
    nbytes = 2 * tokens * hidden
    return 10 * ((t - 1) * alpha + nbytes * (t - 1) / t / bandwidth)"""),
    # 2a: tensor parallelism's four all-reduces
    "route_four_allreduces": ("q2_answer", "tensor", """
def ulysses_block_seconds(t, tokens, hidden, kv_width, alpha, bandwidth):
    nbytes = 2 * tokens * hidden
    return 4 * (2 * (t - 1) * alpha + 2 * nbytes * (t - 1) / t / bandwidth)"""),
    # 4a: parallel.data_parallel's ZeRO-3 over every GPU with ring(), on the slower link
    "route_data_parallel": ("q4a_answer", "zero_step", """
def hsdp_step_seconds(params, per_node, nodes, m, alpha_in, bandwidth_in, alpha_out, bandwidth_out):
    d = per_node * nodes
    one = (d - 1) * alpha_out + 2 * params * (d - 1) / d / bandwidth_out
    return 3 * m * one"""),
    # 4b: sharding.fsdp_step's walk transcribed (its reshard_after_forward is a bool: g read as resharding)
    "route_fsdp_step": ("q4b_answer", "fsdp", """
def fsdp_peak_gb(units, unit_params, d, g):
    n, w, grad = int(units), 2 * unit_params, 2 * unit_params
    sharded, held, peak = n * unit_params * 16 / d, set(), 0.0
    for i in range(n):
        for j in range(i, min(n, i + 2)):
            held.add(j)
        peak = max(peak, sharded + w * len(held))
        held.discard(i)
    for i in reversed(range(n)):
        for j in range(max(0, i - 1), i + 1):
            held.add(j)
        peak = max(peak, sharded + w * len(held) + grad)
        held.discard(i)
    return peak / 1e9"""),
    # 5b: cluster.Model(..., experts, top_k).params and .active_params transcribed (no shared expert)
    "route_model_params": ("q5c_answer", "moe", """
def _count(layers, hidden, kv_width, ffn, experts, used, vocab):
    block = 2 * hidden * hidden + 2 * hidden * kv_width + used * 3 * hidden * ffn + hidden * experts + 2 * hidden
    return layers * block + 2 * vocab * hidden + hidden


def moe_total_params(layers, hidden, kv_width, ffn, experts, top_k, shared_ffn, vocab):
    return _count(layers, hidden, kv_width, ffn, experts, experts, vocab)


def moe_active_params(layers, hidden, kv_width, ffn, experts, top_k, shared_ffn, vocab):
    return _count(layers, hidden, kv_width, ffn, experts, top_k, vocab)"""),
    # 6a: bisection on reliability.goodput at young_daly, the stall as the checkpoint
    "route_goodput_bisection": ("q6_answer", "failures", """
import math


def largest_job_gpus(gpu_mtbf_h, stall_s, persist_s, restart_s, goodput):
    def good(n):
        mtbf = gpu_mtbf_h * 3600 / n
        tau = math.sqrt(2 * stall_s * mtbf)
        return 1 - stall_s / tau - (tau / 2 + restart_s) / mtbf
    low, high = 1e-9, 1e12
    for _ in range(200):
        mid = (low * high) ** 0.5
        low, high = (mid, high) if good(mid) >= goodput else (low, mid)
    return (low * high) ** 0.5"""),
    # 7a: the MFU fitted on the simulator's equal stages
    "route_simulator_fit": ("q7_answer", "mfu", """
def pipeline_mfu(efficiency, p, m, output):
    return efficiency * m / (m + p - 1)"""),
    # 9a: the old question's own formula minimised numerically (a plain 1F1B step, no overhead)
    "route_minimise_formula": ("q9a_answer", "batch", """
import math


def best_batch(b_noise, p, d, v, overhead):
    time = lambda x: (1 + b_noise / math.exp(x)) * (math.exp(x) / d + p - 1)
    low, high = math.log(1e-6), math.log(1e12)
    for _ in range(300):
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        low, high = (low, b) if time(a) < time(b) else (a, high)
    return math.exp((low + high) / 2)"""),
}

PS7: dict[str, Case] = {
    "solved": Case("ps7"),
    "blank": Case("ps7", release=True, lost=PS7_ALL),
    # careless: one flat ring at InfiniBand's pace; the whole bucket sent across the nodes, not a GPU's shard
    "flat_ring": Case("ps7", replace={"q1a_answer": "def hierarchical_allreduce_seconds(nodes, per_node, nbytes, a_in, "
                                                    "b_in, a_out, b_out):\n    n = nodes * per_node\n"
                                                    "    return 2 * (n - 1) * a_out + 2 * (n - 1) / n * nbytes / b_out"},
                      lost={"hierarchical": 1}),
    "whole_bucket_across": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q1a_answer"), "source", _cell(
        nb, "q1a_answer").source.replace("(nbytes / k) / bandwidth_out", "nbytes / bandwidth_out")),
        lost={"hierarchical": 1}),
    # Ulysses with every GPU sending its share of the whole sequence (the split of the rows forgotten)
    "ulysses_whole_sequence": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q2_answer"), "source", _cell(
        nb, "q2_answer").source.replace("2 * tokens / t *", "2 * tokens *")), lost={"tensor": 1}),
    # the library behind a closed form: not installed where the cell runs on its own
    "library_inside": Case("ps7", replace={"q2_answer": "from ppedu.cluster import Link\n"
                                                        "from ppedu.cluster.collectives import cost\n\n\n"
                                                        "def ulysses_block_seconds(t, tokens, hidden, kv, alpha, bw):\n"
                                                        "    link = Link('l', bw, alpha)\n"
                                                        "    return 2 * sum(cost('all-to-all', 2 * tokens / t * w, t, "
                                                        "link).seconds for w in (hidden, kv, kv, hidden))"},
                           lost={"tensor": 1}),
    # chapter 12's threshold for a full block pair: the causal mask forgotten
    "full_pairs": Case("ps7", replace={"q3_answer": "def zigzag_min_tokens(flops, bandwidth, width, kv_width):\n"
                                                    "    return flops * kv_width / (width * bandwidth)"},
                       lost={"ring_attention": 1}),
    # HSDP's all-reduce across the nodes on the whole gradients, not a GPU's shard of them
    "hsdp_whole_gradients_across": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q4a_answer"), "source", _cell(
        nb, "q4a_answer").source.replace("(2 * params / k) / bandwidth_out", "2 * params / bandwidth_out")),
        lost={"zero_step": 1}),
    # FSDP's peak with every held shard forgotten (reshard onto g read as a full reshard)
    "fsdp_shards_forgotten": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q4b_answer"), "source", _cell(
        nb, "q4b_answer").source.replace(" + (units - 2) * 2 * unit_params / g", "")), lost={"fsdp": 1}),
    # padding counted against the even share, not the buffers
    "padding_of_the_average": Case("ps7", replace={"q5b_answer": "def no_drop_padding(max_load, tokens, experts, top_k):\n"
                                                                 "    return max_load * experts / (tokens * top_k) - 1"},
                                   lost={"capacity": 1}),
    # a mixture of experts counted without its router: off by layers × hidden × experts
    "moe_without_router": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q5c_answer"), "source", _cell(
        nb, "q5c_answer").source.replace(" + hidden * experts + 2 * hidden", " + 2 * hidden")), lost={"moe": 1}),
    # the batch where the fill and drain alone are small enough (m = p): the noise scale left out
    "batch_without_noise": Case("ps7", replace={"q9a_answer": "def best_batch(b_noise, p, d, v, overhead):\n"
                                                              "    return p * d"},
                                lost={"batch": 1}),
    # the largest job with the persist time left out of what a failure loses
    "persist_forgotten": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q6_answer"), "source", _cell(
        nb, "q6_answer").source.replace("r, lost = stall_s, persist_s + restart_s,", "r, lost = stall_s, restart_s,")),
        lost={"failures": 1}),
    # the student's own model searched numerically (the persist time added to the restart): the reasoning is the
    # model, which this is; the closed form's derivation is 6b's, graded by hand
    "failures_searched_on_own_model": Case("ps7", replace={"q6_answer": PS7_LIBRARY_ROUTES["route_goodput_bisection"][2]
                                                           .replace("+ restart_s) / mtbf",
                                                                    "+ persist_s + restart_s) / mtbf")}),
    # MFU with the output layer's work slowing the step but not counted as the model's
    "mfu_output_not_counted": Case("ps7", edit=lambda nb: setattr(_cell(nb, "q7_answer"), "source", _cell(
        nb, "q7_answer").source.replace("3 * m * (p + output)", "3 * m * p")), lost={"mfu": 1}),
    # a layout that fits but is slow; one that does not use every GPU
    "layout_slowest": Case("ps7", append={"q8a_answer": "slow = [r for r in rows if r.fits][-1]\n"
                                                        "t, p, d, schedule = slow.t, slow.p, slow.d, slow.schedule"},
                           lost={"layout": 1}),
    "layout_half_the_gpus": Case("ps7", append={"q8a_answer": "d = d // 2"}, lost={"layout": 1}),
    # the near-tie: the second schedule of the fastest layout is as right as the first (within the stated 1 %)
    "layout_near_tie": Case("ps7", append={"q8a_answer": "schedule = {'dualpipe-v': 'zb-v', 'zb-v': 'dualpipe-v'}"
                                                         ".get(schedule, schedule)"}),
    "no_written_answers": Case("ps7", replace={"q1b_answer": "", "q2b_answer": "I don't know.", "q3b_answer": "",
                                               "q4c_answer": "", "q5d_answer": "", "q6b_answer": "", "q7b_answer": "",
                                               "q7c_answer": "",
                                               "q8b_answer": "", "q9b_answer": ""}),
    # every red-team route at once: each of those parts earns nothing
    **{name: Case("ps7", replace={cell: source.strip()}, lost={question: 1})
       for name, (cell, question, source) in PS7_LIBRARY_ROUTES.items()},
}

CORPUS: dict[str, dict[str, Case]] = {"ps1": PS1, "ps2": PS2, "ps3": PS3, "ps4": PS4, "ps5": PS5, "ps6": PS6, "ps7": PS7,
                                      "final": FINAL}
