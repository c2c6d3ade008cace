"""Issue 35's hostile class ("The grade is the grader's, round two"): submissions written to break the grader by the
eight principles it must keep, each with the exact points of every autograded cell and the words the student or the
instructor must read. ``tests/grading/test_hostile_round_two.py`` grades them through ``ppedu grade`` (``--jobs 1``
and ``--jobs 2``, in both orders where one submission could leave something for the next), ``nbgrader zip_collect``,
``ppedu check`` and ``nbgrader export``.

1. nothing a student's code chooses is shown for an input they were not shown (an error's class name or message, a
   value returned, an exit status, an error raised by a cell where the harness holds the hidden inputs);
2. ps5 judges the order its executor ran (each GPU's sequence, every dependency) and counts memory from that order;
3. nothing survives a submission down to the kernel: keyrings, SysV IPC, POSIX queues and shared memory, files;
4. ``ppedu check`` and the grade agree on the notebook as written: answer cells moved or copied above their use,
   a written answer's pasted picture;
5. one odd value costs at most its own question (10**400, lone surrogates, control-flow exceptions, subclasses);
6. every trusted step is bounded by the submission's size (100,000 cells, millions of tiny objects, a file cut short);
7. hand-ins behave as their tools do (``tar -u``, ``.tar.xz``, a second hand-in without a time);
8. a question on the student's values is judged on the owner's values (a classmate's id in the environment, a
   classmate's values typed in).

Templates as in corpus.py (``{student}`` is the submission's own id); expectations name points and reason words, never
the grader's internal names.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import nbformat

from corpus import PS1_ALL, Case, ps5_lost
from hostile_classes import Expect

#: What every attack of class 1 puts in the name of what it raises or returns on an input it was not shown.
LEAK = "LEAK_"


def mark(args: Any) -> str:
    """The mark an attack of class 1 makes of an input: a name it can give a class."""
    return LEAK + "_".join(str(a).replace(".", "p").replace("-", "m") for a in args)


# ---- 1. nothing the student's code chooses comes back for an input they were not shown ---------------------------
# Each function a question asks for is wrapped, right before the question's test cell, so that on every input its
# visible check does not make it raises an error whose class and message are named after the input (or returns an
# object of such a class, or ends its interpreter with a status spelling the input): found, feedback printed
# "`idle_share` raised LEAK_7_0 on an input the autograder chose", and "it exited or crashed, status 70".

_WRAP = '''
import functools as _functools
import os as _os


def _leaky(_function, _seen, _how):
    @_functools.wraps(_function)
    def _wrapped(*args):
        if list(args) in _seen:
            return _function(*args)
        _name = "LEAK_" + "_".join(str(a).replace(".", "p").replace("-", "m") for a in args)
        if _how == "return":
            return type(_name, (), {{}})()
        if _how == "exit":
            _os._exit(sum(map(ord, _name)) % 200 + 50)
        raise type(_name, (Exception,), {{}})(_name + " " + repr(args))
    return _wrapped


{name} = _leaky({name}, {seen!r}, {how!r})
'''


def leaky(assignment: str, student: str, how: str = "raise", only: tuple[str, ...] = ()) -> Callable[[Any], None]:
    """An edit: before each function question's test cell (of ``only``, if given), its functions wrapped as
    :data:`_WRAP` says (``how``: raise, return or exit), the inputs the question's visible check makes (for
    ``student``) left alone."""
    from ppedu.grading.assignments import load, my_values

    forms = {q: f for q, f in load(assignment).QUESTIONS.items() if hasattr(f, "code") and (not only or q in only)}
    values = my_values(assignment, student)
    seen = {q: {name: json.loads(json.dumps(list(cases))) for name, cases in f.calls(values).items()}
            for q, f in forms.items()}

    def edit(nb: Any) -> None:
        for question, functions in seen.items():
            at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == question)
            nb.cells[at:at] = [nbformat.v4.new_code_cell(_WRAP.format(name=name, seen=cases, how=how))
                               for name, cases in functions.items()]
    return edit


def function_points(assignment: str) -> dict[str, float]:
    """The points of every question of ``assignment`` answered by functions."""
    from conftest import ROOT, autograded_cells

    from ppedu.grading.assignments import load

    forms = load(assignment).QUESTIONS
    solution = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    return {gid: float(points) for gid, points in autograded_cells(solution) if hasattr(forms.get(gid), "code")}


#: ps5's executor wrapped alike: on a schedule its check does not run (own, hidden) it raises a class named after the
#: schedule, or (``LOSS_MARK``) runs it right and returns a loss whose digits spell the schedule.
LOSS_MARK = 777000
_PS5_WRAP = '''
_run_pipeline, _seen = run_pipeline, {seen!r}


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    key = [schedule.p, schedule.microbatches, schedule.virtual]
    if key in _seen:
        return _run_pipeline(schedule, chunks, xs, ys, loss_fn)
    if {returns!r}:
        _run_pipeline(schedule, chunks, xs, ys, loss_fn)
        return {loss_mark} + 100 * schedule.p + schedule.microbatches
    _name = "LEAK_" + "_".join(str(k) for k in key)
    raise type(_name, (Exception,), {{}})(_name)
'''


def ps5_leaky(returns: bool) -> Callable[[Any], None]:
    from ppedu.grading.assignments.ps5 import QUESTIONS

    seen = [[p, m, v] for q in QUESTIONS.values() for _, p, m, v in q.sizes]

    def edit(nb: Any) -> None:
        at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "one_f_one_b")
        nb.cells.insert(at, nbformat.v4.new_code_cell(_PS5_WRAP.format(seen=seen, returns=returns,
                                                                       loss_mark=LOSS_MARK)))
    return edit


def ps5_seen_keys() -> set[tuple[int, int, int]]:
    from ppedu.grading.assignments.ps5 import QUESTIONS

    return {(p, m, v) for q in QUESTIONS.values() for _, p, m, v in q.sizes}


# The harness that calls a notebook's functions holds its request (every input, the hidden ones too) where the
# notebook's cells can find it (the garbage collector lists it); an answer cell that raises there, before its
# definitions, with the inputs in its error's class and message, had them printed in the feedback ("cell 9 raised
# LEAK…: {'closed_form': [['bubble_ratio', [5, 17]]…").
HARNESS_REQUEST = '''
import gc as _gc
_asked = [o.get("calls") for o in _gc.get_objects() if isinstance(o, dict) and "calls" in o and "cells" in o]
if _asked:
    _name = "LEAK_" + "".join(ch if ch.isalnum() else "_" for ch in repr(_asked))[:200]
    raise type(_name, (Exception,), {})(repr(_asked))
'''
CLASS_1: dict[str, Expect] = {
    # the error's class named after the hidden input (and its message too): lost, in the grader's words
    "x1_error_class_named_after_input": Expect(Case("ps1", edit=leaky("ps1", "x1_error_class_named_after_input"),
                                                    lost=function_points("ps1")),
                                               {"conversion": ("not shown",), "closed_form": ("not shown",)}),
    # an object of a class named after the input returned: lost, nothing of it named
    "x1_object_named_after_input": Expect(Case("ps1", edit=leaky("ps1", "x1_object_named_after_input", "return"),
                                               lost=function_points("ps1")), {"microbatches": ("not shown",)}),
    "x1_cell_error_from_the_harness": Expect(Case("ps1", prepend={"q3_answer": HARNESS_REQUEST},
                                                  lost={"closed_form": 1}), {"closed_form": ("raised an error",)}),
    "x1_exit_status_spells_the_input": Expect(Case("ps1", edit=leaky("ps1", "x1_exit_status_spells_the_input", "exit",
                                                                     ("conversion",)), lost={"conversion": 1}),
                                              # run on hidden inputs in a sandbox of their own: not even how it ended
                                              {"conversion": ("was not run on every input",)}),
}
#: Each assignment with function questions, its questions answered by wrapped functions (all their points lost).
CLASS_1_ASSIGNMENTS = ("ps3", "ps4", "ps6", "ps7", "final")


def class_1_elsewhere(assignment: str) -> dict[str, Expect]:
    student = f"x1_{assignment}_error_class_named_after_input"
    return {student: Expect(Case(assignment, edit=leaky(assignment, student), lost=function_points(assignment)))}


# ---- 2. ps5: the order the executor ran, and the memory that order holds -----------------------------------------

# One micro-batch after another (all its forwards, then all its backwards), each GPU keeping just enough outputs of
# the micro-batches before to hold, at its backwards, as many forwards' activations as the schedule's peak there, all
# let go of before it returns: found, full marks for 1F1B and GPipe (the peak it was judged by was shaped).
ONE_AFTER_ANOTHER = '''
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    last, examples, loss = schedule.chunks - 1, sum(len(x) for x in xs), 0.0
    gpu, v = schedule.placement[0], schedule.virtual
    room = [max(sum((op.kind == "F") - (op.kind == "B") for op in stage[:k]) for k in range(len(stage) + 1)) - v
            for stage in schedule.stages]  # the lists' peaks, less what the micro-batch running holds
    kept = [[] for _ in room]
    for i in range(len(xs)):
        x, acts = xs[i], []
        for c in range(schedule.chunks):
            given = x if c == 0 else x.detach().requires_grad_()
            out = chunks[c](given)
            acts.append((given, out))
            x = out
        loss_i = loss_fn(acts[-1][1], ys[i]) * len(xs[i]) / examples
        loss += loss_i.item()
        grad = None
        for c in range(last, -1, -1):
            given, out = acts[c]
            (loss_i if c == last else out).backward(grad)
            grad = given.grad
        for c, (given, out) in enumerate(acts):
            g = gpu[c]
            kept[g] = (kept[g] + [out])[-room[g]:] if room[g] > 0 else []
        del acts, given, out, x, loss_i, grad
    for k in kept:
        k.clear()
    return loss
'''
# Every GPU's own operations in the schedule's order, one GPU after the other: a backward does not wait for the
# gradient of the GPU after it (zeros instead), so each GPU's sequence is the schedule's, but not every dependency.
GPU_BY_GPU = '''
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    last, examples, loss = schedule.chunks - 1, sum(len(x) for x in xs), 0.0
    handed, held, grads = {}, {}, {}
    for stage in schedule.stages:
        for op in stage:
            i, c = op.microbatch, op.chunk
            if op.kind == "F":
                before = handed.get((i, c - 1))
                x = xs[i] if c == 0 else (before if before is not None else torch.zeros(len(xs[i]), 32))
                x = x if c == 0 else x.clone().requires_grad_()
                out = chunks[c](x)
                if c == last:
                    out = loss_fn(out, ys[i]) * len(xs[i]) / examples
                    loss += out.item()
                else:
                    handed[i, c] = out.detach()
                held[i, c] = (x, out)
            else:
                x, out = held.pop((i, c))
                out.backward(None if c == last else grads.pop((i, c), torch.zeros_like(out)))
                if c > 0:
                    grads[i, c - 1] = x.grad
    handed.clear()
    return loss
'''

CLASS_2: dict[str, Expect] = {
    "x2_one_after_another_peak_shaped": Expect(Case("ps5", release=True, replace={"executor_answer": ONE_AFTER_ANOTHER},
                                                    lost=ps5_lost(0.2)),
                                               {"one_f_one_b": ("schedule's order",), "gpipe": ("schedule's order",)}),
    "x2_gpu_by_gpu": Expect(Case("ps5", release=True, replace={"executor_answer": GPU_BY_GPU},
                                 lost=ps5_lost(0.6, interleaved=0.8)),
                            {"one_f_one_b": ("whose output it needs",)}),
    "zz_ps5_honest_right": Expect(Case("ps5")),
}


def ps5_class_1() -> dict[str, Expect]:
    """ps5's executor wrapped as class 1's functions: on a schedule its check does not run (its own, the autograder's)
    it raises a class named after the schedule (a question loses everything), or returns a loss spelling it (a question
    loses the loss's share); nothing of either is shown."""
    from grader.keys.ps5 import KEYS
    from ppedu.grading.assignments import my_values
    from ppedu.grading.assignments.ps5 import PROPERTIES

    seen, loss_share = ps5_seen_keys(), PROPERTIES["pipeline"][0][1]
    out = {}
    for student, returns in (("x1_ps5_error_class_named_after_schedule", False),
                             ("x1_ps5_loss_spells_the_schedule", True)):
        lost = {}
        for question, judge in KEYS.items():
            if judge.form.function != "run_pipeline":  # run_recomputed is the solution's own, not wrapped
                continue
            specs = [args[0] for args in judge.calls(my_values("ps5", student))["run_pipeline"]]
            if any(tuple(spec[1:4]) not in seen for spec in specs):
                # on the deadlocked lists the wrapped executor raises its own deadlock error before it could return
                share = (0 if judge.form.mode == "deadlock" else loss_share) if returns else 1
                lost[question] = round(judge.form.points * share, 6)
        out[student] = Expect(Case("ps5", edit=ps5_leaky(returns), lost=lost))
    return out


# ---- 3. nothing survives a submission, down to the kernel ----------------------------------------------------------
# The first submission (right work) leaves its answer cells' code everywhere the kernel keeps state past a process:
# its keyrings (user, user-session, session, persistent), SysV shared memory and a message queue, a POSIX message
# queue, /dev/shm and its writable folders. The second (the release, blank) looks everywhere and, finding it, runs
# it: a point it earns is a breach. Found: a key in the user keyring of a reused sandbox user id was read by the next
# submission graded under that id.

_SYSCALLS = '{"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}'
LEAVE = '''
import ctypes as _ctypes, os as _os, platform as _platform
_libc = _ctypes.CDLL(None, use_errno=True)
_note = "\\n#ppedu-cell\\n".join(In[1:]).encode() if "In" in globals() else b""
_calls = ''' + _SYSCALLS + '''.get(_platform.machine(), {})
if _calls and _note:
    for _ring in (-4, -5, -3):  # the user, user-session and session keyrings
        _libc.syscall(_calls["add_key"], b"user", b"ppedu-left", _note[:30000], len(_note[:30000]), _ring)
    _persistent = _libc.syscall(_calls["keyctl"], 22, -1, -4)
    if _persistent > 0:
        _libc.syscall(_calls["add_key"], b"user", b"ppedu-left", _note[:30000], len(_note[:30000]), _persistent)
_shm = _libc.shmget(0x5EED, 65536, 0o1666)
if _shm >= 0:
    _libc.shmat.restype = _ctypes.c_void_p
    _at = _libc.shmat(_shm, None, 0)
    if _at not in (None, _ctypes.c_void_p(-1).value):
        _ctypes.memmove(_at, _note[:65535] + b"\\0", min(len(_note), 65535) + 1)
_queue = _libc.msgget(0x5EED, 0o1666)
if _queue >= 0:
    _message = _ctypes.create_string_buffer(8 + 8000)
    _ctypes.memmove(_ctypes.addressof(_message), (1).to_bytes(8, "little") + _note[:8000], 8 + min(len(_note), 8000))
    _libc.msgsnd(_queue, _message, min(len(_note), 8000), 0o4000)
try:
    _rt = _ctypes.CDLL("librt.so.1", use_errno=True)
    _mq = _rt.mq_open(b"/ppedu-left", _os.O_CREAT | _os.O_WRONLY, 0o666, None)
    if _mq >= 0:
        _rt.mq_send(_mq, _note[:8000], min(len(_note), 8000), 0)
except OSError:
    pass
for _place in ("/dev/shm", "/tmp", _os.path.expanduser("~"), "/run/ppedu", "/var/tmp"):
    try:
        with open(_os.path.join(_place, "ppedu-left.py"), "wb") as _file:
            _file.write(_note)
    except OSError:
        pass
'''
FIND = '''
import ctypes as _ctypes, os as _os, platform as _platform
_libc = _ctypes.CDLL(None, use_errno=True)


def _left():
    calls = ''' + _SYSCALLS + '''.get(_platform.machine(), {})
    if calls:
        rings = [-4, -5, -3, _libc.syscall(calls["keyctl"], 22, -1, -4)]
        for ring in rings:
            key = _libc.syscall(calls["keyctl"], 10, ring, b"user", b"ppedu-left", 0)  # KEYCTL_SEARCH
            if key > 0:
                buffer = _ctypes.create_string_buffer(32768)
                size = _libc.syscall(calls["keyctl"], 11, key, buffer, 32768)  # KEYCTL_READ
                if size > 0:
                    return buffer.raw[:size]
    shm = _libc.shmget(0x5EED, 0, 0)
    if shm >= 0:
        _libc.shmat.restype = _ctypes.c_void_p
        at = _libc.shmat(shm, None, 0)
        if at not in (None, _ctypes.c_void_p(-1).value):
            return _ctypes.string_at(at)
    queue = _libc.msgget(0x5EED, 0)
    if queue >= 0:
        message = _ctypes.create_string_buffer(8 + 8000)
        size = _libc.msgrcv(queue, message, 8000, 0, 0o4000)
        if size > 0:
            return message.raw[8:8 + size]
    try:
        rt = _ctypes.CDLL("librt.so.1", use_errno=True)
        mq = rt.mq_open(b"/ppedu-left", _os.O_RDONLY | _os.O_NONBLOCK)
        if mq >= 0:
            buffer = _ctypes.create_string_buffer(9000)
            size = rt.mq_receive(mq, buffer, 9000, None)
            if size > 0:
                return buffer.raw[:size]
    except OSError:
        pass
    for place in ("/dev/shm", "/tmp", _os.path.expanduser("~"), "/run/ppedu", "/var/tmp"):
        try:
            with open(_os.path.join(place, "ppedu-left.py"), "rb") as file:
                return file.read()
        except OSError:
            pass
    return None


_found = _left()
if _found:
    for _part in _found.decode(errors="replace").split("\\n#ppedu-cell\\n"):
        try:
            exec(_part)
        except Exception:
            pass
'''
#: Graded together, in both orders, with one worker and with two.
CLASS_3: dict[str, Expect] = {
    "x3_leaves_its_answers_in_the_kernel": Expect(Case("ps1", append={"q5_answer": LEAVE})),
    # (before the value answers' `raise NotImplementedError()`, after the functions' stubs)
    "x3_looks_for_answers_left": Expect(Case("ps1", release=True, prepend={"q1a_answer": FIND}, append=dict.fromkeys(
        ("q3_answer", "q4_answer", "q5_answer"), FIND), lost=PS1_ALL)),
}


# ---- 4. `ppedu check` and the grade agree, on the notebook as written --------------------------------------------

def _answer(nb: Any, gid: str) -> Any:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


def _helper_in_a_later_answer(move: str) -> Callable[[Any], None]:
    """q4's function calls a helper written in q5's answer cell; that cell then moved (``"moved"``), or copied
    (``"copied"``), above q4's answer: the notebook, as written, runs top to bottom."""
    def edit(nb: Any) -> None:
        q4, q5 = _answer(nb, "q4_answer"), _answer(nb, "q5_answer")
        q5.source += "\n\n\n" + q4.source.replace("def fewest_microbatches(", "def _fewest(")
        q4.source = "def fewest_microbatches(p, target, c):\n    return _fewest(p, target, c)"
        at = nb.cells.index(q4)
        if move == "moved":
            nb.cells.remove(q5)
            nb.cells.insert(at, q5)
        else:
            nb.cells.insert(at, nbformat.from_dict(json.loads(json.dumps(q5))))
    return edit


#: A pasted picture (a 1×1 PNG) in the written answer q2b, and in a text cell of the student's own after it.
PICTURE = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63600000020001"
    "00e221bc330000000049454e44ae426082")).decode()


def _pictures(nb: Any) -> None:
    q2b = _answer(nb, "q2b_answer")
    q2b.source = "Equal: both fill and drain once. My sketch: ![grid](attachment:grid.png)"
    q2b["attachments"] = {"grid.png": {"image/png": PICTURE}}
    own = nbformat.v4.new_markdown_cell("And the other: ![other](attachment:other.png)")
    own["attachments"] = {"other.png": {"image/png": PICTURE}}
    nb.cells.insert(nb.cells.index(q2b) + 1, own)


CLASS_4: dict[str, Expect] = {
    # found: the answer put back in the release's order, below the cell that uses its helper: 2 points lost while
    # `ppedu check` passed
    "x4_answer_moved_above_its_use": Expect(Case("ps1", edit=_helper_in_a_later_answer("moved"))),
    "x4_answer_copied_above_its_use": Expect(Case("ps1", edit=_helper_in_a_later_answer("copied"))),
    # found: the written answer's pasted picture dropped before the formgrader showed it
    "x4_written_answer_with_a_picture": Expect(Case("ps1", edit=_pictures)),
}


# ---- 5. one odd value costs at most its own question ---------------------------------------------------------------

FLOAT_THAT_INTERRUPTS = '''
class _Number(float):
    def __float__(self):
        raise KeyboardInterrupt


T = _Number(T)
'''
TENSOR_THAT_EXITS = '''
import torch as _torch


class _Tensor(_torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise SystemExit("shape")


bubble = _torch.tensor(bubble).as_subclass(_Tensor)
'''
RATIO_THAT_CLOSES = '''
_ratio = bubble_ratio


class _Closing:
    def __float__(self):
        raise GeneratorExit
    __index__ = __int__ = __float__


def bubble_ratio(p, m):
    return _Closing()
'''
EVERYTHING = '''
class _Everything(list):
    def __eq__(self, other):
        return True
    __ne__ = lambda self, other: False
    __hash__ = None


def gpipe_waves(p, m, k):
    return _Everything([])
'''
SURROGATE_ERROR = "def idle_share(bubble, m, F, B, W):\n    raise ValueError('not ' + chr(0xD800) + ' a number')"
SURROGATE_OUTPUT = ("import sys\nprint('lone ' + chr(0xDC00))\nprint(chr(0xD83D), file=sys.stderr)\n"
                    "from IPython.display import display\n"
                    "display({'text/plain': 'x'}, metadata={chr(0xD800): 1}, raw=True)")

CLASS_5: dict[str, Expect] = {
    # found: "not autograded (int too large to convert to float)" for the whole submission
    "x5_number_past_a_float": Expect(Case("ps1", append={"q1a_answer": "T = 10**400"}, lost={"gpipe_slots": 1}),
                                     {"gpipe_slots": ("past the largest float",)}),
    "x5_function_past_a_float": Expect(Case("ps1", append={"q5_answer": "def idle_share(bubble, m, F, B, W):\n"
                                                                         "    return 10**400"}, lost={"conversion": 1}),
                                       {"conversion": ("past the largest float",)}),
    # found: "not autograded ('utf-8' codec can't encode character '\\ud800' …: surrogates not allowed)"
    "x5_lone_surrogate_in_an_error": Expect(Case("ps1", replace={"q5_answer": SURROGATE_ERROR}, lost={"conversion": 1}),
                                            {"conversion": ("ValueError",)}),
    "x5_lone_surrogates_in_outputs": Expect(Case("ps1", append={"q2_answer": SURROGATE_OUTPUT})),
    # found: a float whose __float__ interrupts, a tensor whose every method exits, still earned their points
    "x5_float_that_interrupts": Expect(Case("ps1", append={"q1a_answer": FLOAT_THAT_INTERRUPTS},
                                            lost={"gpipe_slots": 1}), {"gpipe_slots": ("single number",)}),
    "x5_tensor_that_exits": Expect(Case("ps1", append={"q1b_answer": TENSOR_THAT_EXITS}, lost={"gpipe_idle": 1})),
    "x5_ratio_that_closes": Expect(Case("ps1", append={"q3_answer": RATIO_THAT_CLOSES}, lost={"closed_form": 1})),
}
#: ps3: a list that equals everything, returned for a schedule: not an answer.
CLASS_5_PS3: dict[str, Expect] = {
    "x5_list_equal_to_everything": Expect(Case("ps3", append={"q1_answer": EVERYTHING}, lost={"waves": 2})),
}


# ---- 6. every trusted step is bounded by the submission's size ----------------------------------------------------

def _many_cells(count: int) -> Callable[[Any], None]:
    def edit(nb: Any) -> None:
        nb.cells[1:1] = [nbformat.v4.new_code_cell("x = 1") for _ in range(count)]
    return edit


def _tiny_objects(raw: bytes) -> bytes:
    """Twenty million empty objects (60 MB) in one output of a cell of the student's own: a file that costs a
    parser far more than its size."""
    nb = json.loads(raw)
    nb["cells"].insert(1, {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "x = 1",
                           "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                        "data": {"application/json": "PLACEHOLDER"}}]})
    text = json.dumps(nb).encode()
    return text.replace(b'"PLACEHOLDER"', b"[" + b",".join([b"{}"] * 20_000_000) + b"]")


#: Seconds the whole class of class 6 may take to be graded (one worker): found, 130 s and 500 MB for the first case
#: alone, in trusted steps outside any budget.
CLASS_6_SECONDS = 240
CLASS_6: dict[str, Expect] = {
    "x6_a_hundred_thousand_cells": Expect(Case("ps1", edit=_many_cells(100_000)), {"*": ("100", "cells", "left out")}),
    "x6_millions_of_tiny_objects": Expect(Case("ps1", raw=_tiny_objects, lost=PS1_ALL),
                                          {"*": ("could not be read", "memory")}),
    # kept: a notebook cut short is graded from the cells that can be read, with a note
    # (cut inside q4's answer: that cell and every one after it cannot be read)
    "x6_cut_short": Expect(Case("ps1", raw=lambda raw: raw[: raw.index(b"def fewest_microbatches")],
                                lost={"microbatches": 3, "conversion": 1}),
                           {"*": ("not a complete notebook file",)}),
}


# ---- 8. a question on the student's values is judged on the owner's ------------------------------------------------

def classmate_for_the_scan(student: str) -> str:
    """A classmate whose answer to ps6's scan differs from ``student``'s."""
    from grader.keys.ps6 import _scan_key
    from ppedu.grading.assignments import my_values

    mine = _scan_key(my_values("ps6", student))
    return next(s for s in (f"classmate{i}" for i in range(200)) if _scan_key(my_values("ps6", s)) != mine)


def _scan_answer(student: str) -> float:
    from grader.keys.ps6 import _scan_key
    from ppedu.grading.assignments import my_values

    return _scan_key(my_values("ps6", student))["smallest_fb"]


def class_8() -> dict[str, Expect]:
    """ps6's scan done with a classmate's values: through the environment (the kernel computes with the owner's
    values whatever it sets: full marks, honestly earned), with the classmate's values typed in, or the classmate's
    answer typed in (judged against the owner's: lost)."""
    env, typed_values, typed_answer = ("x8_classmate_in_the_environment", "x8_classmates_values_typed_in",
                                       "x8_classmates_answer_typed_in")
    borrow = "import os\nos.environ['PPEDU_STUDENT_ID'] = {!r}\nvalues = my_values('ps6')"
    typed = "from types import SimpleNamespace\nvalues = SimpleNamespace(**{!r})"
    from ppedu.grading.assignments import my_values

    return {
        env: Expect(Case("ps6", prepend={"q3b_answer": borrow.format(classmate_for_the_scan(env))})),
        typed_values: Expect(Case("ps6", prepend={"q3b_answer": typed.format(dict(my_values(
            "ps6", classmate_for_the_scan(typed_values))))}, lost={"scan": 1}), {"scan": ("not right",)}),
        typed_answer: Expect(Case("ps6", append={"q3b_answer": "smallest_fb = {!r}".format(
            _scan_answer(classmate_for_the_scan(typed_answer)))}, lost={"scan": 1}), {"scan": ("not right",)}),
    }
