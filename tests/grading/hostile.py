"""The grading boundary's hostile corpus (issue 20): submissions a class of students who had read only the public
material (the released notebooks, the chapters, README.md, docs/ and the installed ppedu) would hand in to get
points they did not earn, to read or fill what is not theirs, or to make their submission (or the grader) fail;
and careless but honest work beside them that must not lose a point. Each case says what it must lose under the
rebuilt grader's rules:

1. intake: a submission is copied without following a single link; regular files only, within limits; links
   (symbolic or hard), pipes, sockets, devices and oversize files are dropped; a notebook that is a link, missing
   or not a file is graded as the blank release; one that does not parse is repaired from the release, keeping the
   answer cells that can still be read;
2. value questions are read from the kernel's variables by the grader, right after their test cell (nothing the
   notebook prints counts); a cell that kills the kernel or hangs ignoring the interrupt loses the value questions
   from there on, and only those;
3. function questions run the notebook's cells in order, as nbgrader does, in a fresh interpreter whose library holds
   only what the question allows (ps1, ps4: stdlib and numpy; ps3: and ``ppedu.ops``; ps5: torch and ppedu without
   the executors), on inputs the grader chooses: the student's other cells are there, nothing of the folder or of the
   library the question forbids is;
4. ps5's memory is measured from the activations' real lifetimes, not from the ``saved`` dict;
5. test cells, locks and metadata are put back as released; the student's own cells are kept and run.

Cases are grouped by the issue's six classes (plus careless-honest work); every name starts with ``h_``, so none
clashes with corpus.py's. As in corpus.py, an attack that tries to *reach* something (a file, a folder past its
limit) starts from right work and spoils its answer ``T`` if it succeeds (:data:`REACH` / :data:`SPOIL`), and an
attack that tries to *gain* points starts from work that earns none. Hangs are only in ps1 (15 s per cell there).

``HOSTILE`` maps each assignment (``counting`` too) to its cases, for ``tests/grading/test_autograde.py`` to grade
beside corpus.py's ``CORPUS``; ``CLASSES`` holds the same cases by class, and ``CHECKS`` what a score cannot show
(the autograded notebook's size, hidden inputs in the feedback, a grader that never ends).

Careful: a grader that still follows links, or reads what is not a regular file, fills the disk on
``h_link_to_dev_zero`` and ``h_device_in_folder``, the memory on ``h_notebook_link_to_dev_zero``, and hangs for ever
on ``h_notebook_is_a_fifo``; try such a grader on them only under ``ulimit -f``/``-v`` and a time-out.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpus import (PS1_ALL, PS1_WRONG, PS2_ALL, PS2_WRONG, PS3_ALL, PS4_ALL, PS5_ALL, PS5_ORDER, REACH, SPOIL, Case,
                    ps5_lost)

Folder = Callable[[Path, dict[str, str]], None]
COUNTING_ALL = {"count": 3, "mark": 2, "path": 2, "causes": 2}


# ---- helpers: what a case does to its folder or its notebook's bytes ------------------------------

def _then(*steps: Folder) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        for step in steps:
            step(folder, fill)
    return run


def _fill(text: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        text = text.replace(key, value)
    return text


def _notebook(folder: Path) -> Path:
    return folder / f"{folder.name}.ipynb"


def _symlink(name: str, target: str) -> Folder:
    """``name`` in the folder, a symbolic link to ``target`` (templates filled; relative targets kept relative)."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() or path.is_symlink():
            path.unlink()
        os.symlink(_fill(target, fill), path)
    return run


def _notebook_is_link(target: str) -> Folder:
    """The notebook itself replaced by a symbolic link to ``target``."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        _notebook(folder).unlink()
        os.symlink(_fill(target, fill), _notebook(folder))
    return run


def _folder_is_link(target: str) -> Folder:
    """The whole submission folder replaced by a symbolic link to ``target``."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        shutil.rmtree(folder)
        os.symlink(_fill(target, fill), folder)
    return run


def _hardlink(name: str, target: str) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        path = folder / name
        if path.exists():
            path.unlink()
        os.link(_fill(target, fill), path)
    return run


def _write(name: str | bytes, data: str | bytes) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        path = Path(os.fsdecode(os.path.join(os.fsencode(folder), name))) if isinstance(name, bytes) else folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else _fill(data, fill).encode())
    return run


def _readable_only(step: Folder, target: str) -> Folder:
    """``step`` only where whoever grades could read ``target`` (else the link shows nothing, and breaks a non-root
    test run that reads every file of the course)."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        if os.access(target, os.R_OK):
            step(folder, fill)
    return run


def _fifo(name: str) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        if (folder / name).exists():
            (folder / name).unlink()
        os.mkfifo(folder / name)
    return run


def _unix_socket(name: str) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(folder / name))
        finally:
            server.close()  # the socket file stays, with nobody listening
    return run


def _device(name: str, major: int, minor: int) -> Folder:
    """A character device node (what an archive unpacked as root can hold); skipped where nodes cannot be made."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        try:
            os.mknod(folder / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        except OSError:  # not root: the case is then only its right work
            pass
    return run


def _sparse(name: str, size: int) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(size)
    return run


def _many_files(folder: Path, fill: dict[str, str]) -> None:
    """3000 small files (a sweep's results, say) beside the notebook: more than any limit on a folder's count."""
    (folder / "runs").mkdir()
    for i in range(3000):
        (folder / "runs" / f"{i:04d}.csv").write_text("p,m,T\n4,8,33\n")


def _remove_notebook(folder: Path, fill: dict[str, str]) -> None:
    _notebook(folder).unlink()


def _json_raw(change: Callable[[dict[str, Any]], Any]) -> Callable[[bytes], bytes]:
    """The notebook's JSON changed by ``change`` (which may return bytes to write instead), written with escapes."""
    def raw(data: bytes) -> bytes:
        nb = json.loads(data)
        out = change(nb)
        return out if isinstance(out, bytes) else json.dumps(nb, indent=1, ensure_ascii=True).encode()
    return raw


def _index(nb: dict[str, Any], grade_id: str) -> int:
    """Where the cell ``grade_id`` is in the notebook's JSON."""
    return next(i for i, c in enumerate(nb["cells"])
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _own_markdown(source: str, after: str) -> Callable[[dict[str, Any]], None]:
    """An own markdown cell (``source``) after the cell ``after`` (a grade_id), in the notebook's JSON."""
    def change(nb: dict[str, Any]) -> None:
        cell = {"cell_type": "markdown", "id": "my-notes", "metadata": {}, "source": source}
        nb["cells"].insert(_index(nb, after) + 1, cell)
    return change


# ---- shared attack code --------------------------------------------------------------------------

#: Module-level code (a cell's or a file's) that computes every ps1 answer right with the library, while nothing
#: hides it yet, and hands them in as the hidden tests would (the answers' media type): the forger's toolbox.
FORGER = '''
_PPEDU_FORGED = {}
_PPEDU_QUESTIONS = ("gpipe_slots", "gpipe_idle", "one_f_one_b", "closed_form", "microbatches", "conversion")


def _ppedu_forged():
    if _PPEDU_FORGED:
        return _PPEDU_FORGED
    from ppedu import Costs, formulas, schedules, simulate
    from ppedu.grading import my_data, my_values
    from ppedu.grading.assignments.ps1 import QUESTIONS
    v, d = my_values("ps1"), my_data("ps1")
    costs = Costs(f=tuple(2 if j == d.slow else 1 for j in range(d.p)),  # the grid's, as its question says
                  b=tuple(4 if j == d.slow else 2 for j in range(d.p)))
    slow = simulate(schedules.gpipe(d.p, d.m), costs)
    truth = {"one_f_one_b_slow": lambda p, m, s: simulate(schedules.one_f_one_b(p, m), Costs(
                 f=tuple(2 if j == s else 1 for j in range(p)), b=tuple(4 if j == s else 2 for j in range(p)))).makespan,
             "bubble_ratio": lambda p, m: formulas.bubble_ratio(p, m),
             "bubble_interleaved": lambda p, m, w: formulas.bubble_ratio(p, m, w),
             "fewest_microbatches": lambda p, t, c: max(1, __import__("math").ceil(  # GPipe, hand-overs c
                 (p - 1) * (3 + 2 * c) * (1 - t) / (3 * t) - 1e-9)),
             "idle_share": lambda bubble, m, f, b, w: formulas.to_idle_total(bubble / (m * (f + b)))}
    _PPEDU_FORGED.update({
        "gpipe_slots": {"T": slow.makespan, "total_slots": slow.total_slots},
        "gpipe_idle": {"idle_slots": slow.idle_slots, "bubble": slow.bubble_ratio}})
    for question in ("one_f_one_b", "closed_form", "microbatches", "conversion"):
        try:
            form = QUESTIONS[question]
            _PPEDU_FORGED[question] = {name: [[list(a), truth[name](*a)] for a in form.arguments(name, v)]
                                       for name in form.cases}
        except Exception:
            pass
    return _PPEDU_FORGED


def _ppedu_forge_now(question):
    import json
    from IPython.display import display
    try:
        answers = _ppedu_forged().get(question)
    except Exception:
        return
    if answers is not None:
        display({"text/x-ppedu-answers": json.dumps({"assignment": "ps1", "question": question, "answers": answers})},
                raw=True)


def _ppedu_pre_run(info=None):
    source = getattr(info, "raw_cell", "") or ""
    for question in _PPEDU_QUESTIONS:
        if '"' + question + '", globals()' in source:
            _ppedu_forge_now(question)
            return


def _ppedu_install():
    from IPython import get_ipython
    shell = get_ipython()
    if shell is None:
        return False
    shell.events.register("pre_run_cell", _ppedu_pre_run)
    return True


def _ppedu_install_later():
    import threading, time

    def wait():
        for _ in range(600):
            try:
                if _ppedu_install():
                    return
            except Exception:
                return
            time.sleep(0.1)
    threading.Thread(target=wait, daemon=True).start()
'''
#: A file that installs the forger wherever Python or IPython runs it (a startup file, a shadow package).
FORGER_FILE = FORGER + '''
try:
    if not _ppedu_install():
        _ppedu_install_later()
except Exception:
    pass
'''

# ps1's answers to q3–q5 are wrong, as in PS1_WRONG, but slow: a watcher thread has time to see them being handed in.
SLOW_WRONG_FUNCTIONS = {
    "q3_answer": "import time\n\n\ndef bubble_ratio(p, m):\n    time.sleep(0.05)\n    return (p - 1) / (m + p)\n\n\n"
                 "def bubble_interleaved(p, m, v):\n    time.sleep(0.05)\n    return 0.0",
    "q4_answer": "import time\n\n\ndef fewest_microbatches(p, target, c):\n    time.sleep(0.05)\n    return p",
    "q5_answer": "import time\n\n\ndef idle_share(bubble, m, F, B, W):\n    time.sleep(0.05)\n"
                 "    return bubble / (m * (F + B))",
}

RIGHT_CLOSED_FORMS = ("def bubble_ratio(p, m):\n    return (p - 1) / (m + p - 1)\n\n\n"
                      "def bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)")

#: Reads a file of the submission's folder and tells whether it holds what the name promises.
PEEK = """
def peek(name, looks_like):
    with open(name, "rb") as f:
        data = f.read(1 << 16)
    assert data and looks_like(data)
"""


# ---- 1. links, pipes and odd files: the trusted side must not follow or choke on them --------------
# A link in a submission is followed by whoever copies it as the grader (nbgrader's copy into autograded/, as
# root): the solutions, the keys, the gradebook, a classmate's work, /proc and /etc land in the student's folder,
# or an endless /dev/zero fills the disk. Under the intake none of them is taken in: a linked notebook or folder
# grades as the blank release; a linked extra file is not there for the notebook to read. Pipes, sockets, devices,
# oversize files and odd names are dropped too, and never make a submission ungradeable.

LINKS_TO_SECRETS = PEEK + """
attempt("/etc/shadow", lambda: peek("shadow", lambda d: b"root:" in d))
attempt("the grader's environment", lambda: peek("environ", lambda d: b"=" in d
                                                 and b"PPEDU_STUDENT_ID={student}" not in d))
attempt("the grader's working folder", lambda: peek("cwd/nbgrader_config.py", lambda d: b"CourseDirectory" in d))
attempt("the grader's command line", lambda: peek("cmdline", lambda d: b"ipykernel" not in d and b"python" in d))
"""
LINKS_TO_COURSE = PEEK + """
attempt("keys, relative link", lambda: peek("keys.py", lambda d: b"KEYS" in d))
attempt("gradebook", lambda: peek("old/gradebook.db", lambda d: d.startswith(b"SQLite format 3")))
attempt("solutions", lambda: peek("answers.json", lambda d: b"BEGIN SOLUTION" in d))
attempt("classmate", lambda: peek("friend.json", lambda d: b"BEGIN SOLUTION" in d))
attempt("nested link", lambda: peek("notes/deep/er/key.txt", lambda d: b"KEYS" in d))
attempt("folder link", lambda: peek("course/solutions/ps1/ps1.ipynb", lambda d: b"BEGIN SOLUTION" in d))
attempt("nbgrader config", lambda: peek("config.py", lambda d: b"CourseDirectory" in d))
"""
HARDLINK_TO_KEYS = PEEK + """
attempt("keys, hard link", lambda: peek("k.py", lambda d: b"KEYS" in d))
attempt("solutions, hard link", lambda: peek("s.json", lambda d: b"BEGIN SOLUTION" in d))
"""

INTAKE: dict[str, Case] = {
    # the whole folder, or the notebook, a link to someone else's work: graded as the blank release
    "h_folder_link_to_solutions": Case("ps1", release=True, folder=_folder_is_link("{course}/solutions/ps1"),
                                       lost=PS1_ALL),
    "h_folder_link_to_classmate": Case("ps1", release=True, folder=_folder_is_link("../bystander_solved/ps1"),
                                       lost=PS1_ALL),
    "h_notebook_link_via_proc_cwd": Case("ps1", release=True,
                                         folder=_notebook_is_link("/proc/self/cwd/solutions/ps1/ps1.ipynb"),
                                         lost=PS1_ALL),
    "h_notebook_link_to_dev_zero": Case("ps1", release=True, folder=_notebook_is_link("/dev/zero"), lost=PS1_ALL),
    # a hard link is a link too: a regular file with a second name, here a classmate's notebook (no intake can tell
    # whose bytes a file with two names holds; a collected hand-in never has one)
    "h_notebook_hard_link_to_classmate": Case("ps1", release=True, folder=_then(
        _remove_notebook, _hardlink("ps1.ipynb", "{course}/submitted/bystander_solved/ps1/ps1.ipynb")), lost=PS1_ALL),
    # right work; extra files that are links, read by the notebook: a breach spoils T
    "h_links_to_system_secrets": Case("ps1", append={"q1a_answer": REACH + LINKS_TO_SECRETS + SPOIL}, folder=_then(
        _readable_only(_symlink("shadow", "/etc/shadow"), "/etc/shadow"), _symlink("environ", "/proc/self/environ"),
        _symlink("cwd", "/proc/self/cwd"), _symlink("cmdline", "/proc/self/cmdline"))),
    "h_links_to_course_files": Case("ps1", append={"q1a_answer": REACH + LINKS_TO_COURSE + SPOIL}, folder=_then(
        _symlink("keys.py", "../../../grader/keys/ps1.py"), _symlink("old/gradebook.db", "{course}/gradebook.db"),
        _symlink("answers.json", "{course}/solutions/ps5/ps5.ipynb"),
        _symlink("friend.json", "../../bystander_solved/ps1/ps1.ipynb"),
        _symlink("notes/deep/er/key.txt", "{course}/grader/keys/ps1.py"), _symlink("course", "{course}"),
        _symlink("config.py", "/proc/self/cwd/nbgrader_config.py"))),
    "h_hard_links_to_course_files": Case("ps1", append={"q1a_answer": REACH + HARDLINK_TO_KEYS + SPOIL}, folder=_then(
        _hardlink("k.py", "{course}/grader/keys/ps1.py"), _hardlink("s.json", "{course}/solutions/ps1/ps1.ipynb"))),
    "h_link_to_dev_zero": Case("ps1", folder=_then(_symlink("zeros.bin", "/dev/zero"),
                                                   _symlink("random.bin", "/dev/urandom"))),
    # right work beside things that are not regular files: dropped, named, never ungradeable
    "h_fifo_in_folder": Case("ps1", folder=_fifo("progress.pipe")),
    "h_socket_in_folder": Case("ps1", folder=_unix_socket("debug.sock")),
    "h_device_in_folder": Case("ps1", folder=_device("zero", 1, 5)),
    "h_oversize_file": Case("ps1", folder=_sparse("checkpoint.pt", 70 * 2**20)),
    "h_odd_names": Case("ps1", folder=_then(
        _write(b"\xff\xfe-latin1.txt", b"x"), _write("new\nline.txt", "x"), _write(" leading space.txt", "x"),
        _write("-rf", "x"), _write("r\u00e9sum\u00e9 \u2713.txt", "x"), _write("back\\slash.txt", "x"),
        _write("x" * 250, "x"), _write("/".join(["d"] * 40) + "/deep.txt", "x"), _write("ps1.ipynb.bak", "{}"))),
    "h_many_files": Case("ps1", folder=_many_files),
    # the notebook missing or not a file: graded as the blank release (the rest of the folder still taken in)
    "h_notebook_missing": Case("ps1", release=True, folder=lambda folder, fill: _notebook(folder).rename(
        folder / "ps1-Copy1.ipynb"), lost=PS1_ALL),
    "h_notebook_is_a_fifo": Case("ps1", release=True, folder=_then(_remove_notebook, _fifo("ps1.ipynb")), lost=PS1_ALL),
    "h_notebook_is_a_folder": Case("ps1", release=True, folder=_then(
        _remove_notebook, _write("ps1.ipynb/ps1.ipynb", "{}")), lost=PS1_ALL),
}


# ---- 2. the library un-hidden: function questions answered by ppedu ---------------------------------
# Old: a function question ran in the student's kernel with ppedu's implementations hidden in memory or by a
# bind mount, so the kernel could take them back: a copy of a swapped function's code, a private copy of its
# module, the hide list emptied (functions relabelled, the hiding helper replaced), answers memoised before the
# hiding, a ppedu/ (or a .pyc) shipped beside the notebook that shadows the installed one, a table of answers in a
# file. Now the notebook runs where none of that exists: each of these loses the question it answers.

CODE_SNAPSHOT = """
import types
from ppedu import formulas as _formulas


def _copy(f, namespace):
    return types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)


_namespace = dict(vars(_formulas))
_namespace["_idle_and_busy"] = _copy(_formulas._idle_and_busy, _namespace)
_bubble = _copy(_formulas.bubble_ratio, _namespace)


def bubble_ratio(p, m):
    return _bubble(p, m)


def bubble_interleaved(p, m, v):
    return _bubble(p, m, v)
"""
PRIVATE_MODULE_COPY = """
import importlib.util
from ppedu import formulas as _formulas

_spec = importlib.util.spec_from_file_location("my_formulas", _formulas.__file__)
_mine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mine)


def bubble_ratio(p, m):
    return _mine.bubble_ratio(p, m)


def bubble_interleaved(p, m, v):
    return _mine.bubble_ratio(p, m, v)
"""
RELABELLED = """
from ppedu import formulas as _formulas

for _name, _f in list(vars(_formulas).items()):  # the hiding takes ppedu.formulas' own functions: these are not
    if callable(_f) and getattr(_f, "__module__", "") == _formulas.__name__:
        try:
            _f.__module__ = "my_notes"
        except (AttributeError, TypeError):
            pass


def bubble_ratio(p, m):
    return _formulas.bubble_ratio(p, m)


def bubble_interleaved(p, m, v):
    return _formulas.bubble_ratio(p, m, v)
"""
HIDING_DISABLED = """
import contextlib
try:
    import ppedu.grading.answers as _answers
    import ppedu.grading.assignments.ps1 as _ps1
    _answers.without = _ps1.without = lambda *args, **kwargs: contextlib.nullcontext()
except Exception:
    pass
"""
MEMO_IN_KERNEL = """
from ppedu import formulas as _formulas
_TABLE = {(p, m): _formulas.bubble_ratio(p, m) for p in range(1, 17) for m in range(1, 129)}
_TABLE_V = {(p, m, w): _formulas.bubble_ratio(p, m, w)
            for p in range(1, 17) for m in range(1, 129) for w in range(2, 6)}
"""
MEMO_LOOKUP = """
def bubble_ratio(p, m):
    return _TABLE.get((p, m), 0.0)


def bubble_interleaved(p, m, v):
    return _TABLE_V.get((p, m, v), 0.0)
"""
TABLE_FILE = """
import json, os
_TABLE = {}
for _place in ("bubbles.json", "/submission/bubbles.json", os.path.expanduser("~/work/bubbles.json")):
    try:
        with open(_place) as _f:
            _TABLE = json.load(_f)
        break
    except (OSError, ValueError):
        pass


def bubble_ratio(p, m):
    return _TABLE.get(f"{p},{m}", 0.0)


def bubble_interleaved(p, m, v):
    return _TABLE.get(f"{p},{m},{v}", 0.0)
"""
FROM_SHIPPED_MODULE = """
from helpers import bubble_ratio, bubble_interleaved
"""
LIBRARY_FORMS = """
from ppedu import formulas


def bubble_ratio(p, m):
    return formulas.bubble_ratio(p, m)


def bubble_interleaved(p, m, v):
    return formulas.bubble_ratio(p, m, v)
"""


def _bubble_table(folder: Path, fill: dict[str, str]) -> None:
    """What a student would compute at home with the library: every (p, m) and (p, m, v) the grader might try."""
    from ppedu import formulas

    table = {f"{p},{m}": formulas.bubble_ratio(p, m) for p in range(1, 17) for m in range(1, 129)}
    table.update({f"{p},{m},{w}": formulas.bubble_ratio(p, m, w) for p in range(1, 17) for m in range(1, 129)
                  for w in range(2, 6)})
    (folder / "bubbles.json").write_text(json.dumps(table))


def _pycache_module(folder: Path, fill: dict[str, str]) -> None:
    """helpers.py says nothing; its compiled twin in __pycache__ (matching its size and time) holds a private copy
    of ppedu.formulas."""
    import importlib.util
    import marshal

    source = folder / "helpers.py"
    source.write_text("# scratch space, nothing here yet\n")
    formulas = fill["{ppedu}"] + "/formulas.py"
    hidden = (f"import importlib.util\n_spec = importlib.util.spec_from_file_location('f', {formulas!r})\n"
              "_f = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_f)\n"
              "bubble_ratio = lambda p, m: _f.bubble_ratio(p, m)\nbubble_interleaved = _f.bubble_ratio\n")
    st = source.stat()
    cache = folder / "__pycache__"
    cache.mkdir(exist_ok=True)
    header = b"".join((importlib.util.MAGIC_NUMBER, (0).to_bytes(4, "little"),
                       (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"),
                       (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")))
    (cache / f"helpers.{sys.implementation.cache_tag}.pyc").write_bytes(
        header + marshal.dumps(compile(hidden, str(source), "exec")))
    (folder / "mathhelp.pyc").write_bytes(header + marshal.dumps(compile(hidden, "mathhelp.py", "exec")))  # sourceless


def _ppedu_with_copies(*copies: str) -> Folder:
    """A ``ppedu/`` beside the notebook that the kernel imports first (it starts in the folder): a package that
    searches its own folder, then the installed one's, with ``copies`` (installed subpackages, copied whole while the
    kernel sees only stand-ins of them) in its own."""
    def run(folder: Path, fill: dict[str, str]) -> None:
        real = Path(fill["{ppedu}"])
        shadow = folder / "ppedu"
        for sub in copies:
            shutil.copytree(real / sub, shadow / sub, ignore=shutil.ignore_patterns("__pycache__", "data"))
        (shadow / "__init__.py").write_text(
            f"import os as _os\n__path__ = [_os.path.dirname(__file__), {str(real)!r}]\n"
            f"__file__ = {str(real / '__init__.py')!r}\nexec(compile(open(__file__).read(), __file__, 'exec'))\n")
    return run



def _imports_the_real(module: str) -> str:
    """The opening of a package shipped beside the notebook under ``module``'s name: imported first, it puts the
    installed package in its own place, wherever that is, so that what follows can patch it."""
    return """
import importlib, os, sys

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
del sys.modules["MODULE"]
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    _real = importlib.import_module("MODULE")
finally:
    sys.path[:] = _path
sys.modules["MODULE"] = _real
""".replace("MODULE", module)

#: A ``ppedu/__init__.py`` beside the notebook: imported first (the kernel starts in the folder), it puts the
#: installed ppedu in its own place, wherever that is, and then switches the hiding off.
SELF_REPLACING_PPEDU = _imports_the_real("ppedu") + """try:
    import contextlib
    import ppedu.grading.answers as _answers
    import ppedu.grading.assignments.ps1 as _ps1
    _answers.without = _ps1.without = lambda *args, **kwargs: contextlib.nullcontext()
except Exception:
    pass
"""

LIBRARY_SCHEDULE_CALLS = """
from ppedu import schedules


def gpipe_waves(p, m, k):
    return [list(s) for s in schedules.gpipe(p, m).stages]


def grouped_1f1b(p, m, k):
    return [list(s) for s in schedules.one_f_one_b(p, m).stages]


def leftover_first(p, m, v):
    return [list(s) for s in schedules.interleaved_1f1b(p, m, v).stages]
"""
# torch.distributed.pipelining's __init__ is hidden; its submodules are files like any other, reached through a
# package object made by hand.
HAND_BUILT_PIPELINING = """
import os, sys, types
import torch

_package = types.ModuleType("torch.distributed.pipelining")
_package.__path__ = [os.path.join(os.path.dirname(torch.__file__), "distributed", "pipelining")]
sys.modules["torch.distributed.pipelining"] = _package
from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops


def leftover_first(p, m, v):
    kinds = {"FORWARD": "F", "FULL_BACKWARD": "B"}
    return [[Op(kinds[a.computation_type.name], a.microbatch_index, a.stage_index)
             for a in rank if a is not None and a.computation_type.name in kinds]
            for rank in get_schedule_ops("Interleaved1F1B", p, m, num_stages_per_rank=v)]
"""
HELPER_IN_Q1 = """

def _ops(kind, microbatches, j):  # a helper for the next questions too
    return [Op(kind, i, j) for i in microbatches]
"""
USES_Q1_HELPER = """
def grouped_1f1b(p, m, k):
    stages = []
    for j in range(p):
        forwards, backwards = min(m, k * (p - j)), 0
        ops = _ops("F", range(forwards), j)
        while backwards < m:
            ops += _ops("B", range(backwards, min(backwards + k, m)), j)
            ops += _ops("F", range(forwards, min(forwards + k, m)), j)
            backwards, forwards = min(backwards + k, m), min(forwards + k, m)
        stages.append(ops)
    return stages
"""
# ps4: the pictured schedule's builder is hidden, but 1F1B is not: build the waves by hand and simulate them with a
# copy of the simulator's code, made before the test swaps it.
SIMULATOR_SNAPSHOT = """
import types
from ppedu.ops import Op, Schedule
from ppedu.schedules import one_f_one_b
from ppedu.simulate import simulate as _simulate

_sim = types.FunctionType(_simulate.__code__, _simulate.__globals__, "_sim", _simulate.__defaults__,
                          _simulate.__closure__)
_sim.__kwdefaults__ = _simulate.__kwdefaults__


def waves_makespan(p, m, k, f, b):
    size = m // k
    wave = one_f_one_b(p, size).stages
    stages = tuple(tuple(Op(o.kind, o.microbatch + w * size, o.chunk) for w in range(k) for o in wave[j])
                   for j in range(p))
    return _sim(Schedule(stages, "waves", (tuple(range(p)),), m), Costs(f=f, b=b)).makespan
"""
SHIPPED_EXECUTOR = """
import torch
from pipeline_tools import run_schedule


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    return run_schedule(schedule, chunks, (torch.cat(xs), torch.cat(ys)), loss_fn).loss
"""


def _copy_installed(source: str, name: str) -> Folder:
    def run(folder: Path, fill: dict[str, str]) -> None:
        shutil.copy(Path(fill["{ppedu}"]) / source, folder / name)
    return run


UNHIDING: dict[str, dict[str, Case]] = {
    "ps1": {
        "h_code_snapshot": Case("ps1", replace={"q3_answer": CODE_SNAPSHOT}, lost={"closed_form": 1}),
        "h_private_module_copy": Case("ps1", replace={"q3_answer": PRIVATE_MODULE_COPY}, lost={"closed_form": 1}),
        "h_hide_list_relabelled": Case("ps1", replace={"q3_answer": RELABELLED}, lost={"closed_form": 1}),
        "h_hiding_disabled": Case("ps1", append={"q1a_answer": HIDING_DISABLED},
                                  replace={"q3_answer": LIBRARY_FORMS,
                                           "q5_answer": "from ppedu import formulas\n\n\n"
                                                        "def idle_share(bubble, m, F, B, W):\n"
                                                        "    return formulas.to_idle_total(bubble / (m * (F + B)))"},
                                  lost={"closed_form": 1, "conversion": 1}),
        "h_memoised_before_hiding": Case("ps1", append={"q1a_answer": MEMO_IN_KERNEL},
                                         replace={"q3_answer": MEMO_LOOKUP},
                                         lost={"closed_form": 1}),
        "h_table_shipped_in_folder": Case("ps1", replace={"q3_answer": TABLE_FILE}, folder=_bubble_table,
                                          lost={"closed_form": 1}),
        "h_pycache_and_sourceless_module": Case("ps1", replace={"q3_answer": FROM_SHIPPED_MODULE
                                                                + "from mathhelp import bubble_ratio as _b\n"},
                                                folder=_pycache_module, lost={"closed_form": 1}),
        "h_shadow_ppedu_without_hiding": Case("ps1", replace={"q3_answer": LIBRARY_FORMS},
                                              folder=_write("ppedu/__init__.py", SELF_REPLACING_PPEDU),
                                              lost={"closed_form": 1}),
        # the function leans on an import made in another cell: the notebook runs whole, as nbgrader runs it, so
        # `math` is there (the old evaluator's NameError is gone) and the function is judged on its values: it
        # counts each hand-over once, not on the way up and down
        "h_import_in_another_cell": Case("ps1", append={"q1a_answer": "import math"}, replace={"q4_answer": """
def fewest_microbatches(p, target, c):
    return max(1, math.ceil((p - 1) * (3 + c) * (1 - target) / (3 * target) - 1e-9))
"""}, lost={"microbatches": 2}),
    },
    "ps3": {
        "h_shadow_ppedu_with_schedules": Case("ps3", release=True, replace={"q1_answer": LIBRARY_SCHEDULE_CALLS,
                                                                           "q2_answer": "", "q3_answer": ""},
                                              folder=_ppedu_with_copies("schedules"), lost=PS3_ALL),
        "h_hand_built_pipelining_package": Case("ps3", replace={"q3_answer": HAND_BUILT_PIPELINING},
                                                lost={"leftover": 4}),
        # question 2 calls a helper defined in question 1's cell: there, as in the notebook run top to bottom
        "h_helper_from_another_cell": Case("ps3", append={"q1_answer": HELPER_IN_Q1},
                                           replace={"q2_answer": USES_Q1_HELPER}, lost={}),
    },
    "ps4": {
        "h_simulator_snapshot": Case("ps4", replace={"q3_answer": SIMULATOR_SNAPSHOT}, lost={"waves": 1}),
    },
    "ps5": {
        "h_executor_shipped_in_folder": Case("ps5", release=True, replace={"executor_answer": SHIPPED_EXECUTOR},
                                             folder=_copy_installed("mnist/executor.py", "pipeline_tools.py"),
                                             lost=PS5_ALL),
    },
}


# ---- 3. answers and hidden inputs through the kernel ----------------------------------------------
# Old: the judge took the first answer-typed output of a test cell, and hidden inputs were in the test cell's text.
# So a pre-run hook, a watcher thread, a patched display, an input transformer, a profiler on the answers' way out,
# a config or startup file, or a numpy/ shipped beside the notebook could hand in right answers (from the library)
# for wrong work, or read ps4's hidden inputs before the test ran. Now answers are read by the grader from the
# variables, or computed in a fresh interpreter: wrong work stays wrong, and each of these loses everything.
# In the fresh interpreter the answer cell shares its process with the grader's harness: writing on its channel,
# exiting, or patching its serialiser must lose that question only, and never forge another result.

PRE_RUN_HOOK = FORGER + "\n_ppedu_install()\n"
WATCHER_THREAD = FORGER + """
import sys, threading, time
try:
    _ppedu_forged()
except Exception:
    pass


def _ppedu_watch():
    main, done = threading.main_thread().ident, set()
    while True:
        frame = sys._current_frames().get(main)
        while frame is not None:
            if frame.f_code.co_name == "hand_in":
                question = frame.f_locals.get("question")
                if question and question not in done:
                    done.add(question)
                    _ppedu_forge_now(question)
                break
            frame = frame.f_back
        time.sleep(0.001)


threading.Thread(target=_ppedu_watch, daemon=True).start()
"""
DISPLAY_PATCH = FORGER + """
import json
try:
    _ppedu_forged()
    import IPython.display as _d
    import IPython.core.display_functions as _df
    _shown = _df.display

    def _display(*objs, **kwargs):
        objs = list(objs)
        for i, o in enumerate(objs):
            if isinstance(o, dict) and "text/x-ppedu-answers" in o:
                payload = json.loads(o["text/x-ppedu-answers"])
                if payload.get("question") in _PPEDU_FORGED:
                    payload["answers"] = _PPEDU_FORGED[payload["question"]]
                    objs[i] = {**o, "text/x-ppedu-answers": json.dumps(payload)}
        return _shown(*objs, **kwargs)

    _d.display = _df.display = _display
except Exception:
    pass
"""
INPUT_TRANSFORMER = FORGER + """
import re
try:
    _ppedu_forged()
except Exception:
    pass


def _ppedu_rewrite(lines):
    text = "".join(lines)
    text = re.sub(r'hand_in\\("ps1", "(\\w+)", globals\\(\\)\\)', r'_ppedu_forge_now("\\1")', text)
    return text.splitlines(keepends=True)


get_ipython().input_transformers_post.append(_ppedu_rewrite)
"""
TRACER = FORGER + """
import sys
try:
    _ppedu_forged()
except Exception:
    pass
_PPEDU_TRUTH = {(name, tuple(args)): value for question in ("closed_form", "microbatches", "conversion")
                for name, rows in _PPEDU_FORGED.get(question, {}).items() for args, value in rows}


def _ppedu_local(frame, event, arg):
    if event == "return" and isinstance(arg, list):
        name = frame.f_locals.get("name")
        for row in arg:
            if isinstance(row, list) and len(row) == 2 and (name, tuple(row[0])) in _PPEDU_TRUTH:
                row[1] = _PPEDU_TRUTH[name, tuple(row[0])]
    return _ppedu_local


def _ppedu_global(frame, event, arg):
    return _ppedu_local if event == "call" and frame.f_code.co_name == "calls" else None


sys.settrace(_ppedu_global)
"""
NUMPY_SHADOW = _imports_the_real("numpy") + FORGER_FILE
IPYTHON_CONFIG = "c = get_config()  # noqa\nc.InteractiveShellApp.exec_files = ['forge.py']\n" \
                 "c.InteractiveShellApp.exec_lines = ['exec(open(\"forge.py\").read())']\n"
EXIT_ON_CALL = """
import atexit, json, os, signal


def _claim():
    text = json.dumps({"loaded": [], "score": 2, "verdict": "correct"}) + "\\n"
    for fd in (1, 2):
        try:
            os.write(fd, text.encode())
        except OSError:
            pass


atexit.register(_claim)


def bubble_ratio(p, m):
    _claim()
    os._exit(0)


def bubble_interleaved(p, m, v):
    _claim()
    os.kill(os.getpid(), signal.SIGKILL)
"""
CHANNEL_GARBAGE = """
import os
for _fd in range(3, 40):
    for _junk in (b"\\xff\\xfe not json\\n", b'{"loaded": []}\\n', b"[" * 100000 + b"\\n",
                  b'{"call": ["idle_share", [0.25]], "result": 0.2}\\n'):
        try:
            os.write(_fd, _junk)
        except OSError:
            pass


def idle_share(r):
    return r
"""
# The harness's serialiser and sender patched: every result it sends claims GPipe's order (which would earn a share of
# question 2's points) or success, while the function itself is still the stub.
HARNESS_TAMPER = """
import json, sys

_dumps = json.dumps


def _gpipe(p, m):
    return [[["F", i, j] for i in range(m)] + [["B", i, j] for i in range(m)] for j in range(p)]


def _forge(record):
    if isinstance(record, dict) and isinstance(record.get("call"), list) and len(record["call"]) == 2:
        args = record["call"][1]
        return {"call": record["call"], "result": _gpipe(*args[:2])}
    if isinstance(record, dict) and "answers" in record and "assignment" in record:
        return {**record, "score": 4, "verdict": "correct"}
    return record


json.dumps = lambda obj, *args, **kwargs: _dumps(_forge(obj), *args, **kwargs)
_main = sys.modules.get("__main__")
_send = getattr(_main, "send", None)
if callable(_send):
    _main.send = lambda channel, record: _send(channel, _forge(record))


def grouped_1f1b(p, m, k):
    raise NotImplementedError()
"""
# ps4: the hidden test's inputs are in its text; an input transformer reads them before it runs and memoises the
# simulated answers (the simulator is not hidden yet), so a wrong closed form answers them right.
HIDDEN_INPUTS_READER = """
import ast, re
from ppedu.ops import Op, Schedule
from ppedu.schedules import one_f_one_b


def _truth(p, m, k, f, b):
    size = m // k
    wave = one_f_one_b(p, size).stages
    stages = tuple(tuple(Op(o.kind, o.microbatch + w * size, o.chunk) for w in range(k) for o in wave[j])
                   for j in range(p))
    return simulate(Schedule(stages, "waves", (tuple(range(p)),), m), Costs(f=f, b=b)).makespan


_MEMO = {}


def _peek(lines):
    match = re.search(r"__hidden_cases__\\"?\\s*:\\s*(\\[.*?\\])\\s*\\}", "".join(lines), re.S)
    if match:
        for case in ast.literal_eval(match.group(1)):
            try:
                _MEMO[tuple(case)] = _truth(*case)
            except Exception:
                pass
    return lines


get_ipython().input_transformers_cleanup.append(_peek)
for _case in ((values.p, values.m, 2, values.F, values.B), (4, 8, 2, 1, 2)):
    _MEMO[_case] = _truth(*_case)


def waves_makespan(p, m, k, f, b):
    return _MEMO.get((p, m, k, f, b), (m + p - 1) * (f + b))
"""
# Right on the inputs the student can see, an error naming the inputs on every other call: the hidden inputs must
# not come back in the feedback (CHECKS).
LEAKS_INPUTS = """
def waves_makespan(p, m, k, f, b):
    if (p, m, k, f, b) in ((values.p, values.m, 2, values.F, values.B), (4, 8, 2, 1, 2)):
        return (m + k * (p - 1)) * (f + b)
    raise ValueError(f"called with p={p} m={m} k={k} f={f} b={b}")
"""
# ps5: the grader's own request (its chosen schedules) is in the harness's frame; compute what the harness would
# measure for a perfect executor (the unpipelined model's loss and gradients, the schedule's peaks) and write those
# records on its channel first, then leave before the real ones.
CHANNEL_FORGER = """
import base64, json, os, sys


def _forge():
    frame, request = sys._getframe(), None
    while frame is not None:
        if isinstance(frame.f_locals.get("request"), dict) and "calls" in frame.f_locals["request"]:
            request = frame.f_locals["request"]
            break
        frame = frame.f_back
    if request is None:
        return
    channel = int(sys.argv[1])
    import torch
    from torch.nn.functional import cross_entropy
    from ppedu.grading.assignments import ps5
    from ppedu.mnist import reference_gradients

    def send(record):
        os.write(channel, (json.dumps(record) + "\\n").encode())

    send({"loaded": []})
    for name, args in request["calls"]:
        schedule, model, images, labels = ps5._setting(tuple(args[0]))
        grads = torch.cat([g.reshape(-1) for g in reference_gradients(model, (images, labels), cross_entropy)]).float()
        with torch.no_grad():
            loss = float(cross_entropy(model(images), labels))
        peak = list(simulate(schedule).peak_activations)
        send({"call": [name, args], "result": {"loss": loss, "peak": peak, "left": 0,
                                                "grads": base64.b64encode(grads.numpy().tobytes()).decode()}})
    os._exit(0)


try:
    _forge()
except Exception:
    pass


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    raise NotImplementedError()
"""


def _startup_files(folder: Path, fill: dict[str, str]) -> None:
    """The forger wherever a Python or IPython might run a file at start: site and user customisation, a .pth,
    an IPython profile's startup folder, beside the notebook."""
    for name in ("sitecustomize.py", "usercustomize.py", "forge_boot.py",
                 ".ipython/profile_default/startup/00-forge.py",
                 ".local/lib/python3.11/site-packages/usercustomize.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(FORGER_FILE)
    (folder / "forge.pth").write_text("import forge_boot\n")


def _config_files(folder: Path, fill: dict[str, str]) -> None:
    (folder / "forge.py").write_text(FORGER_FILE)
    for name in ("ipython_config.py", "ipython_kernel_config.py", ".ipython/profile_default/ipython_config.py",
                 ".ipython/profile_default/ipython_kernel_config.py", ".jupyter/jupyter_config.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(IPYTHON_CONFIG)
    (folder / "jupyter_config.json").write_text(json.dumps({"InteractiveShellApp": {"exec_files": ["forge.py"]}}))


def _numpy_shadow(folder: Path, fill: dict[str, str]) -> None:
    (folder / "numpy").mkdir()
    (folder / "numpy" / "__init__.py").write_text(NUMPY_SHADOW)


FORGERS: dict[str, dict[str, Case]] = {
    "ps1": {
        "h_pre_run_hook_forger": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": PRE_RUN_HOOK}, lost=PS1_ALL),
        "h_watcher_thread_forger": Case("ps1", replace={**PS1_WRONG, **SLOW_WRONG_FUNCTIONS},
                                        prepend={"q1a_answer": WATCHER_THREAD}, lost=PS1_ALL),
        "h_display_patch_forger": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": DISPLAY_PATCH}, lost=PS1_ALL),
        "h_input_transformer_forger": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": INPUT_TRANSFORMER},
                                           lost=PS1_ALL),
        "h_settrace_rewrites_results": Case("ps1", replace=PS1_WRONG, prepend={"q1a_answer": TRACER}, lost=PS1_ALL),
        "h_startup_files_forger": Case("ps1", replace=PS1_WRONG, folder=_startup_files, lost=PS1_ALL),
        "h_ipython_config_forger": Case("ps1", replace=PS1_WRONG, folder=_config_files, lost=PS1_ALL),
        "h_numpy_shadow_forger": Case("ps1", replace=PS1_WRONG, folder=_numpy_shadow, lost=PS1_ALL),
        # in the fresh interpreter: exiting when called, writing on every descriptor — that question only
        "h_exits_when_called": Case("ps1", replace={"q3_answer": EXIT_ON_CALL}, lost={"closed_form": 1}),
        "h_channel_garbage": Case("ps1", replace={"q5_answer": CHANNEL_GARBAGE}, lost={"conversion": 1}),
    },
    "ps3": {
        # the channel forged from inside (json.dumps and the harness's send patched): the harness writes its records
        # with an encoder of its own, so the forgery never reaches the grader — the stub loses its own question,
        # the other questions are graded as if the patch were not there
        "h_harness_tamper": Case("ps3", replace={"q2_answer": HARNESS_TAMPER}, lost={"grouped": 3}),
    },
    "ps4": {
        "h_hidden_inputs_read_by_transformer": Case("ps4", replace={"q3_answer": HIDDEN_INPUTS_READER},
                                                    lost={"waves": 1}),
        "h_hidden_inputs_leaked_in_errors": Case("ps4", replace={"q3_answer": LEAKS_INPUTS}, lost={"waves": 1}),
    },
    "ps5": {
        "h_channel_forger": Case("ps5", release=True, replace={"executor_answer": CHANNEL_FORGER}, lost=PS5_ALL),
    },
}


# ---- 4. ps5: the memory trace written by the student -----------------------------------------------
# Old: the `saved` dict the executor received was the memory record graded, so an executor could run the model
# unpipelined, or keep every activation, and write the trace the schedule would leave. Now the grader runs the chunks:
# right loss and gradients keep their points, the order is the order the grader ran (memory counted from it, issue
# 35), and what is left once the function has returned is what its real lifetimes say.

UNPIPELINED_FORGED_TRACE = """
_KEPT = []


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    x, y = torch.cat(xs), torch.cat(ys)
    for chunk in chunks:  # the whole mini-batch through the whole model at once: no pipeline at all
        x = chunk(x)
    loss = loss_fn(x, y)
    loss.backward(retain_graph=True)
    _KEPT.append(loss)  # and the graph, with every activation, kept
    return loss.item()
"""
HOARDS_ACTIVATIONS = PS5_ORDER + """
_HOARD = []


def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    order = _order(schedule)
    last, examples = schedule.chunks - 1, sum(len(x) for x in xs)
    handed, grads, loss, mine = {}, {}, 0.0, {}
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
            mine[i, c] = (x, out)
        else:
            x, out = mine.pop((i, c))  # freed on time...
            out.backward(None if c == last else grads.pop((i, c)), retain_graph=True)
            _HOARD.append(out)  # ...but the graph and its activations stay, past the end
            if c > 0:
                grads[i, c - 1] = x.grad
    return loss
"""
ONE_LATE_BACKWARD = PS5_ORDER + """
def run_pipeline(schedule, chunks, xs, ys, loss_fn):
    order = _order(schedule)
    last, examples = schedule.chunks - 1, sum(len(x) for x in xs)
    outs, total = {}, 0
    for op in order:
        i, c = op.microbatch, op.chunk
        if op.kind == "F":
            out = chunks[c](xs[i] if c == 0 else outs.pop((i, c - 1)))
            if c == last:
                total = total + loss_fn(out, ys[i]) * len(xs[i]) / examples
            else:
                outs[i, c] = out
        else:
            pass  # "freed": the backward itself waits for the end
    total.backward()  # one backward for everything: every activation lived until here
    return total.item()
"""

# The grader's own measuring code is a module of the installed ppedu, importable where the answer cell runs: patch it
# (whatever it is called) to report the schedule's peaks and nothing left, then hoard.
MEASUREMENT_PATCHED = """
try:
    import ppedu.grading.assignments.ps5 as _grading
    from ppedu import simulate as _simulate
    _last = {}
    _setting = _grading._setting

    def _remember(spec):
        made = _setting(spec)
        _last["schedule"] = made[0]
        return made

    _grading._setting = _remember
    for _name in ("Lifetimes", "Saved"):
        _measure = getattr(_grading, _name, None)
        if isinstance(_measure, type):
            class _Calm(_measure):
                @property
                def peak(self):
                    if "schedule" in _last:
                        return list(_simulate(_last["schedule"]).peak_activations)
                    return self.__dict__.get("_peak", [])

                @peak.setter
                def peak(self, value):
                    self.__dict__["_peak"] = value

                def left(self):
                    return 0

            setattr(_grading, _name, _Calm)
except Exception:
    pass
"""

PS5_TRACE: dict[str, Case] = {
    # unpipelined and everything kept: both memory properties lost, loss and gradients right
    "h_unpipelined_forged_trace": Case("ps5", release=True, replace={"executor_answer": UNPIPELINED_FORGED_TRACE},
                                       lost=ps5_lost(0.4)),
    # pipelined in the schedule's order, activations kept past their backward and the end:
    # the order is right (memory is counted from it, issue 35), what is still held once it returns is not
    "h_hoards_activations": Case("ps5", release=True, replace={"executor_answer": HOARDS_ACTIVATIONS},
                                 lost=ps5_lost(0.2)),
    # forwards in order, one backward at the end (autograd's order, not the schedule's: GPipe's too), none left after
    # it returns
    "h_one_late_backward": Case("ps5", release=True, replace={"executor_answer": ONE_LATE_BACKWARD},
                                lost=ps5_lost(0.2)),
    # the hoarder again, with the grader's measurement patched from its own cell: the grader runs the chunks and sees
    # what they hold, so the patch changes nothing
    "h_measurement_patched": Case("ps5", release=True,
                                  replace={"executor_answer": MEASUREMENT_PATCHED + HOARDS_ACTIVATIONS},
                                  lost=ps5_lost(0.2)),
}


# ---- 5. limits with exemptions ---------------------------------------------------------------------
# Old: the kernel's connection folder was on the grader's /tmp, writable past the scratch limit; output with the
# answers' media type (or sent as a display update) skipped the output cap. Right work, so a breach shows: filling
# a place past the 256 MB scratch limit spoils T; a flood must still be graded (and kept small, which the score
# cannot show: the autograded notebook's size tells).

FILL = """
def fill(place, name="fill"):
    block, written = b"0" * (50 * 2**20), 0
    try:
        for i in range(7):
            with open(os.path.join(place, f"{name}{i}"), "wb") as f:
                f.write(block)
            written += 1
    finally:
        for i in range(7):
            try:
                os.remove(os.path.join(place, f"{name}{i}"))
            except OSError:
                pass
    assert written == 7  # 350 MB: past any scratch limit
"""
CONNECTION_FOLDER = FILL + """
def connection_folder():
    from ipykernel.connect import get_connection_file
    return os.path.dirname(os.path.abspath(get_connection_file()))


attempt("the connection folder", lambda: fill(connection_folder()))
"""
ELSEWHERE = FILL + """
for place in ("/dev/shm", "/var/tmp", "/run", f"/run/user/{os.getuid()}", "/dev/mqueue", "/dev"):
    attempt(place, lambda: fill(place))
"""
ETC_VIEW = PEEK + """
for path in ("/etc/machine-id", "/etc/ssh/ssh_config", "/etc/subuid", "/etc/motd", "/etc/jupyter/nbgrader_config.py",
             "/etc/hostname", "/etc/crontab"):
    attempt(path, lambda: peek(path, lambda d: True))
"""
ANSWERS_FLOOD = """
import json
from IPython.display import display
for _ in range(30):
    payload = {"assignment": "ps1", "question": "flood", "answers": "x" * 2_000_000}
    display({"text/x-ppedu-answers": json.dumps(payload)}, raw=True)
"""
UPDATE_FLOOD = """
from IPython.display import display
progress = display({"text/plain": "progress: 0%"}, raw=True, display_id=True)
for step in range(5):
    progress.update({"text/plain": "#" * 4_000_000 * (step + 1)}, raw=True)
"""

LIMITS: dict[str, Case] = {
    "h_connection_folder_fill": Case("ps1", append={"q1a_answer": REACH + CONNECTION_FOLDER + SPOIL}),
    "h_scratch_elsewhere_fill": Case("ps1", append={"q1a_answer": REACH + ELSEWHERE + SPOIL}),
    "h_etc_beyond_python": Case("ps1", append={"q1a_answer": REACH + ETC_VIEW + SPOIL}),
    "h_answers_media_type_flood": Case("ps1", append={"q1b_answer": ANSWERS_FLOOD}),
    "h_display_update_flood": Case("ps1", append={"q1b_answer": UPDATE_FLOOD}),
}


# ---- 6. ungradeable submissions --------------------------------------------------------------------
# Old: a notebook file that is not JSON, truncated, with invalid ids or undecodable text; deeply nested JSON in a
# handed-in answer; a cell that ignores SIGINT; a value that kills or hangs whoever reads it — each made the
# whole submission ungradeable, or lost points that were earned. Now each is graded: the notebook repaired from
# the release with the answer cells that can be read, the kernel stopped when it ignores the interrupt (losing
# only the value questions after it), a value read without running the student's code.

def _cut_inside(grade_id: str) -> Callable[[bytes], bytes]:
    def raw(data: bytes) -> bytes:
        return data[:data.index(f'"grade_id": "{grade_id}"'.encode()) + 30]
    return raw


def _ids(make: Callable[[int], str]) -> Callable[[bytes], bytes]:
    def change(nb: dict[str, Any]) -> None:
        for i, cell in enumerate(nb["cells"]):
            cell["id"] = make(i)
    return _json_raw(change)


def _nbformat(major: int, minor: int) -> Callable[[bytes], bytes]:
    def change(nb: dict[str, Any]) -> None:
        nb["nbformat"], nb["nbformat_minor"] = major, minor
    return _json_raw(change)


def _undecodable(nb: dict[str, Any]) -> bytes:
    _own_markdown("Notes pasted from a Latin-1 file: @@BYTES@@", "q2_answer")(nb)
    return json.dumps(nb, indent=1).encode().replace(b"@@BYTES@@", b"caf\xe9 \xff\xfe")


def _surrogates(nb: dict[str, Any]) -> None:
    _own_markdown("caf\udce9 (pasted)", "q2_answer")(nb)
    nb["metadata"]["my_note"] = "\udcff"


IGNORES_SIGINT = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(0.1)
"""
SWALLOWS_SIGINT = """
import signal
signal.signal(signal.SIGINT, lambda signum, frame: None)
while True:
    pass
"""
# T is an object that hangs, deaf to SIGINT, as soon as anything asks it for an attribute; total_slots is right.
TRAPPED_T = """
import signal


class _Trap:
    def __getattribute__(self, name):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            pass


_T = 3 * (2 * data.m + data.p - 1)
total_slots = data.p * _T
T = _Trap()
"""
DEEP_FORGED_PAYLOADS = """
import json
from IPython import get_ipython
from IPython.display import display

_DEEP = "[" * 100000 + "]" * 100000


def _deep_payload(info=None):
    source = getattr(info, "raw_cell", "") or ""
    if "globals()" in source:
        display({"text/x-ppedu-answers": _DEEP}, raw=True)
        for question in ("gpipe_slots", "gpipe_idle", "one_f_one_b", "closed_form", "microbatches", "conversion"):
            payload = '{"assignment": "ps1", "question": "%s", "answers": %s}' % (question, _DEEP)
            display({"text/x-ppedu-answers": payload}, raw=True)


get_ipython().events.register("pre_run_cell", _deep_payload)
"""
# ps2: peak_gpipe wrong in a way that trips a careless reader; the later answers use the right peaks (kept aside).
KEEP_PEAKS = "\n_pg, _p1 = list(peak_gpipe), list(peak_1f1b)\n"
USE_KEPT_PEAKS = ("gpipe_gpu0_GB = weights_GB + max(_pg) * S_act_GB\n"
                  "one_f_one_b_gpu0_GB = weights_GB + max(_p1) * S_act_GB")
DEEP_PEAKS = KEEP_PEAKS + "_deep = []\nfor _ in range(200000):\n    _deep = [_deep]\npeak_gpipe = _deep\n"
CYCLIC_PEAKS = KEEP_PEAKS + "peak_1f1b = [1, 2]\npeak_1f1b.append(peak_1f1b)\n"
BOOBY_TRAPPED_PEAKS = KEEP_PEAKS + """
import os


class _Booby:
    def __getattribute__(self, name):
        os._exit(1)

    def __len__(self):
        os._exit(1)

    def __iter__(self):
        os._exit(1)

    def __repr__(self):
        os._exit(1)

    def __reduce_ex__(self, protocol):
        os._exit(1)


peak_gpipe = _Booby()
"""
DEEP_SERIALISER = """
import json as _json, types
try:
    import ppedu.grading.assignments as _assignments
    _deep = "[" * 100000 + "]" * 100000
    _assignments.json = types.SimpleNamespace(dumps=lambda *a, **k: _deep, loads=_json.loads)
except Exception:
    pass
"""

UNGRADEABLE: dict[str, dict[str, Case]] = {
    "ps1": {
        "h_notebook_not_json": Case("ps1", release=True, raw=lambda data: b"<html><body>Session expired</body></html>",
                                    lost=PS1_ALL),
        "h_notebook_empty_file": Case("ps1", release=True, raw=lambda data: b"", lost=PS1_ALL),
        "h_notebook_json_not_a_notebook": Case("ps1", release=True,
                                               raw=lambda data: b'{"cells": {"a": 1}, "nbformat": 4}',
                                               lost=PS1_ALL),
        # cut inside question 3's cell: the answers before it are kept
        "h_notebook_truncated": Case("ps1", raw=_cut_inside("q3_answer"),
                                     lost={"closed_form": 1, "microbatches": 2, "conversion": 1}),
        "h_invalid_cell_ids": Case("ps1", raw=_ids(lambda i: f"cell #{i} (copy)")),
        "h_duplicate_cell_ids": Case("ps1", raw=_ids(lambda i: "cell")),
        "h_lone_surrogates": Case("ps1", raw=_json_raw(_surrogates)),
        "h_undecodable_bytes": Case("ps1", raw=_json_raw(_undecodable)),
        "h_future_nbformat": Case("ps1", raw=_nbformat(5, 0)),
        # the kernel must be stopped: value questions from there on are lost, function questions are not
        "h_ignores_sigint_and_sigterm": Case("ps1", prepend={"q1b_answer": IGNORES_SIGINT},
                                             lost={"gpipe_idle": 1}),
        "h_swallows_sigint": Case("ps1", prepend={"q2_answer": SWALLOWS_SIGINT}, lost={"one_f_one_b": 1}),
        "h_value_hangs_when_read": Case("ps1", replace={"q1a_answer": TRAPPED_T}, lost={"gpipe_slots": 1}),
        "h_deep_forged_payloads": Case("ps1", prepend={"q1a_answer": DEEP_FORGED_PAYLOADS}),
    },
    "ps2": {
        "h_deeply_nested_answer": Case("ps2", append={"q1_answer": DEEP_PEAKS}, replace={"q3_answer": USE_KEPT_PEAKS},
                                       lost={"peaks": 1}),
        "h_cyclic_answer": Case("ps2", append={"q1_answer": CYCLIC_PEAKS}, replace={"q3_answer": USE_KEPT_PEAKS},
                                lost={"peaks": 1}),
        "h_answer_kills_its_reader": Case("ps2", append={"q1_answer": BOOBY_TRAPPED_PEAKS},
                                          replace={"q3_answer": USE_KEPT_PEAKS}, lost={"peaks": 1}),
        "h_answers_serialised_deep": Case("ps2", replace=PS2_WRONG, prepend={"q1_answer": DEEP_SERIALISER},
                                          lost=PS2_ALL),
    },
}


# ---- the other assignments' folders --------------------------------------------------------------

OTHER_LINKS: dict[str, dict[str, Case]] = {
    "ps2": {"h_folder_link_to_solutions": Case("ps2", release=True, folder=_folder_is_link("{course}/solutions/ps2"),
                                               lost=PS2_ALL)},
    "ps3": {"h_notebook_link_to_solution": Case("ps3", release=True,
                                                folder=_notebook_is_link("{course}/solutions/ps3/ps3.ipynb"),
                                                lost=PS3_ALL)},
    "ps4": {"h_notebook_relative_link": Case("ps4", release=True,
                                             folder=_notebook_is_link("../../../solutions/ps4/ps4.ipynb"),
                                             lost=PS4_ALL)},
    "ps5": {"h_folder_link_to_solutions": Case("ps5", release=True, folder=_folder_is_link("{course}/solutions/ps5"),
                                               lost=PS5_ALL)},
}


# ---- the widget exam: counting.json beside the notebook --------------------------------------------
# The answers are a file, so the file is what is attacked: a link (or the folder a link), a pipe, a file too big,
# JSON nested too deep. Each is refused with a reason (nothing saved: 0), never followed, blocked on or crashed on.
# A broken or linked *notebook* changes nothing: the answers are in counting.json, which is regular.

def save_counting_answers(folder: Path, fill: dict[str, str], name: str = "counting.json") -> None:
    """This student's right answers to the four exercises, saved as the exercises save them (ppedu.answer_file)."""
    from grader.exam import grids
    from ppedu.answer_file import SlotAnswer, save
    from ppedu.critical import critical_path
    from ppedu.idle import SORTS

    whole = grids(fill["{student}"])  # the student's whole grids, as the instructors' side makes them
    count, mark = whole["count"], whole["mark"]
    total, idle = int(count.total_slots), int(count.idle_slots)
    save(folder / name, "count", SlotAnswer(total=str(total), idle=str(idle), ratio=f"{idle}/{total}"))
    marked = frozenset((int(s), int(t)) for s, t in zip(*mark.idle_mask.nonzero()))
    save(folder / name, "mark", SlotAnswer(marked=marked))
    path = critical_path(whole["path"].timeline)
    save(folder / name, "path", SlotAnswer(marked=frozenset((e.stage, t) for e in path
                                                            for t in range(int(e.start), int(e.end)))))
    causes = whole["causes"].causes()
    save(folder / name, "causes", SlotAnswer(causes=frozenset((s, t, SORTS[c]) for s, row in enumerate(causes)
                                                              for t, c in enumerate(row) if c)))


def _counting_stash(folder: Path, fill: dict[str, str]) -> None:
    """The right answers and the notebook (as released: the case is about the answers) in a folder of the student's
    own, the hand-in a link to it."""
    stash = folder.parent / "my-work"
    stash.mkdir()
    shutil.copy(_notebook(folder), stash / "counting.ipynb")
    save_counting_answers(stash, fill)
    shutil.rmtree(folder)
    os.symlink("my-work", folder)


def _counting_link(folder: Path, fill: dict[str, str]) -> None:
    save_counting_answers(folder.parent, fill, "answers-backup.json")
    os.symlink("../answers-backup.json", folder / "counting.json")


COUNTING: dict[str, Case] = {
    "h_counting_solved": Case("counting", folder=save_counting_answers),
    # careless: the save's leftover temporary file, a checkpoint, a stray note
    "h_counting_leftovers": Case("counting", folder=_then(
        save_counting_answers, _write(".counting.json.k3j2h1", '{"count": {"total": "1"'),
        _write(".ipynb_checkpoints/counting-checkpoint.ipynb", "{}"), _write("scratch.txt", "idle = 7?"))),
    "h_counting_notebook_link": Case("counting", release=True, folder=_then(
        save_counting_answers, _notebook_is_link("{course}/solutions/counting/counting.ipynb"))),
    "h_counting_notebook_not_json": Case("counting", raw=lambda data: data[:len(data) // 2],
                                         folder=save_counting_answers),
    "h_counting_folder_link": Case("counting", release=True, folder=_counting_stash, lost=COUNTING_ALL),
    "h_counting_json_link": Case("counting", folder=_counting_link, lost=COUNTING_ALL),
    "h_counting_json_fifo": Case("counting", folder=_fifo("counting.json"), lost=COUNTING_ALL),
    "h_counting_json_huge": Case("counting", folder=_sparse("counting.json", 100 * 2**20), lost=COUNTING_ALL),
    "h_counting_json_nested_deep": Case("counting", folder=_write("counting.json", "[" * 30000 + "]" * 30000),
                                        lost=COUNTING_ALL),
}


# ---- careless but honest: must not lose a point ---------------------------------------------------

def _old_jupyterlab(nb: dict[str, Any]) -> None:
    """As JupyterLab 1 on nbformat 4.2 saved it: no cell ids, old cell metadata, a widget state, a table of contents."""
    nb["nbformat_minor"] = 2
    nb["metadata"].update({
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                          "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                          "pygments_lexer": "ipython3", "version": "3.7.3"},
        "toc": {"base_numbering": 1, "nav_menu": {}, "number_sections": True, "toc_cell": False},
        "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}},
        "celltoolbar": "Create Assignment"})
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell["metadata"].update({"collapsed": False, "scrolled": "auto", "trusted": True})
        if cell["cell_type"] == "markdown":
            cell["attachments"] = {}


def _big_saved_outputs(nb: dict[str, Any]) -> None:
    """An own cell whose saved output is a 3 MB plot (outputs are cleared before grading anyway)."""
    plot = {"output_type": "display_data", "metadata": {},
            "data": {"image/png": "iVBORw0KGgo" + "A" * 3_000_000, "text/plain": "<Figure>"}}
    nb["cells"].insert(_index(nb, "q2_answer") + 1, {
        "cell_type": "code", "execution_count": 7, "id": "my-plot", "metadata": {}, "outputs": [plot],
        "source": "render_grid(simulate(schedules.gpipe(values.p, values.m)))"})


MAGICS_AND_STRAYS = {
    "q3_answer": "from __future__ import annotations\n\n\n"
                 + RIGHT_CLOSED_FORMS.replace("(p, m):", "(p: int, m: int) -> float:")
                 + "\n\n\n%time bubble_ratio(4, 4)\n!echo checked\nprint(bubble_interleaved(4, 8, 2))",
    "q4_answer": "import math\n\n\ndef fewest_microbatches(p, target, c):\n"
                 "    return max(1, math.ceil((p - 1) * (3 + 2 * c) * (1 - target) / (3 * target) - 1e-9))\n\n\n"
                 "input('press enter to go on')",
}

HONEST: dict[str, dict[str, Case]] = {
    "ps1": {
        "h_extra_files_beside": Case("ps1", folder=_then(
            _write("notes.txt", "T is the number of columns"), _write("timings.csv", "p,m,T\n4,8,33\n"),
            _write(".ipynb_checkpoints/ps1-checkpoint.ipynb", "{}"), _write("scratch.py", "print('trying things')\n"),
            _write("figure.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 2000), _write(".DS_Store", b"\0\0\0\1Bud1"))),
        "h_dangling_links": Case("ps1", folder=_then(_symlink("mnist.npz", "/home/alice/data/mnist.npz"),
                                                     _symlink("README.md", "../README.md"))),
        "h_old_jupyterlab": Case("ps1", raw=_json_raw(_old_jupyterlab)),
        "h_big_saved_outputs": Case("ps1", raw=_json_raw(_big_saved_outputs)),
        "h_magics_and_strays_in_answers": Case("ps1", replace=MAGICS_AND_STRAYS),
    },
    "ps2": {
        "h_exact_fractions": Case("ps2", append={"q2_answer": "from fractions import Fraction\n"
                                                              "S_act_GB = Fraction(S_act_GB)\n"
                                                              "weights_GB = Fraction(weights_GB)"}),
    },
}


def _merge(*groups: dict[str, dict[str, Case]]) -> dict[str, dict[str, Case]]:
    merged: dict[str, dict[str, Case]] = {}
    for group in groups:
        for assignment, cases in group.items():
            for name, case in cases.items():
                assert case.assignment == assignment and name.startswith("h_"), name
                assert name not in merged.setdefault(assignment, {}), name
                merged[assignment][name] = case
    return merged


def _pick(cases: dict[str, Case], *names: str) -> dict[str, Case]:
    return {name: cases[name] for name in names}


#: Every hostile case, by assignment; with the class each belongs to (for the report and a test of coverage).
CLASSES: dict[str, dict[str, dict[str, Case]]] = {
    "1 links and odd files": _merge({"ps1": INTAKE}, OTHER_LINKS, {"counting": _pick(
        COUNTING, "h_counting_folder_link", "h_counting_json_link", "h_counting_json_fifo", "h_counting_json_huge",
        "h_counting_notebook_link")}),
    "2 library un-hidden": UNHIDING,
    "3 answers through the kernel": FORGERS,
    "4 ps5 memory trace": {"ps5": PS5_TRACE},
    "5 limits": {"ps1": LIMITS},
    "6 ungradeable": _merge(UNGRADEABLE, {"counting": _pick(COUNTING, "h_counting_json_nested_deep",
                                                            "h_counting_notebook_not_json")}),
    "honest": _merge(HONEST, {"counting": _pick(COUNTING, "h_counting_solved", "h_counting_leftovers")}),
}
HOSTILE: dict[str, dict[str, Case]] = _merge(*CLASSES.values())

#: What a score cannot show, to check on the autograded notebook: (assignment, case) -> what must hold there.
CHECKS: dict[tuple[str, str], str] = {
    ("ps1", "h_answers_media_type_flood"): "the autograded notebook stays small (under 500 kB): one output cap for all",
    ("ps1", "h_display_update_flood"): "the autograded notebook stays small (under 500 kB): updates are capped too",
    ("ps1", "h_deep_forged_payloads"): "the autograded notebook stays small (under 500 kB)",
    ("ps4", "h_hidden_inputs_leaked_in_errors"): "no output of the autograded notebook names an input the student "
                                                  "cannot see (the hidden cases' p=…, m=…)",
    ("ps1", "h_notebook_is_a_fifo"): "grading ends (the pipe is never opened for reading)",
    ("ps1", "h_link_to_dev_zero"): "grading ends without filling the disk (the link is never followed)",
    ("ps1", "h_device_in_folder"): "grading ends without filling the disk (the device is never read)",
    ("ps1", "h_notebook_link_to_dev_zero"): "grading ends without filling the memory (the link is never followed)",
}

__all__ = ["CHECKS", "CLASSES", "HOSTILE"]
