"""Issue 35, round three: a red-team author's new attempts on the grader (none in hostile.py, hostile_classes.py,
hostile_round_two.py or corpus.py), written as data in the style of hostile_round_two.py and graded end to end by
``tests/grading/run_attack_round_three.py`` (``ppedu grade``, ``nbgrader zip_collect``, ``ppedu check``). Each case
says what a grader that keeps issue 35's principles must give (``lost`` and the reason words); the findings table
(/work/reviews/grader-attack.md) says what the grader on branch ``grader`` gave.

Templates as in corpus.py (``{student}`` is the submission's own id, ``{course}`` the course folder).
"""

from __future__ import annotations

import io
import json
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

from corpus import PS1_ALL, Case
from hostile_classes import Expect
from hostile_round_two import function_points

#: The mark an attack of class 1 makes of an input it was not shown, wherever the grader might show it.
LEAK = "LEAK3_"
#: The digits a returned number starts with when it spells a hidden input.
SPELL = "9797"


# ---- 1. nothing a student's code chooses comes back for an input they were not shown ------------------------------
# Round two wrapped a function so that it raised (or returned) something named after a hidden input *on that input*.
# Here the hidden inputs are remembered and carried out on an input the student *was* shown, whose errors and values
# the feedback repeats in full: the remembered inputs ride out in the message (or the digits) of a shown call of a
# later question.

_STASH = '''
import builtins as _builtins, functools as _functools
_builtins.__dict__.setdefault("_stash3", [])


def _stashing(_function, _shown, _how):
    @_functools.wraps(_function)
    def _wrapped(*args):
        if list(args) not in _shown:
            _builtins._stash3.append(list(args))
            return _function(*args)
        if _builtins._stash3:
            _spelt = "_".join(str(a).replace(".", "p").replace("-", "m") for a in _builtins._stash3[0])
            if _how == "raise":
                raise ValueError("LEAK3_" + _spelt + " " + repr(_builtins._stash3[:20]))
            return float("{spell}" + "".join(ch for ch in _spelt if ch.isdigit())[:10])
        return _function(*args)
    return _wrapped


{name} = _stashing({name}, {shown!r}, {how!r})
'''.replace("{spell}", SPELL)


def stashing(assignment: str, student: str, how: str) -> Callable[[Any], None]:
    """Before each function question's test cell: its functions wrapped as :data:`_STASH` says."""
    from ppedu.grading.assignments import load, my_values

    forms = {q: f for q, f in load(assignment).QUESTIONS.items() if hasattr(f, "code")}
    values = my_values(assignment, student)
    shown = {q: {name: json.loads(json.dumps(list(cases))) for name, cases in f.calls(values).items()}
             for q, f in forms.items()}

    def edit(nb: Any) -> None:
        for question, functions in shown.items():
            at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == question)
            nb.cells[at:at] = [nbformat.v4.new_code_cell(_STASH.replace("{name}", name).replace(
                "{shown!r}", repr(cases)).replace("{how!r}", repr(how))) for name, cases in functions.items()]
    return edit


# A cell after a function question's test runs, in the harness, after the hidden calls; what it raises is shown
# verbatim when the kernel raised the very same there, as "an error" otherwise: one bit of a hidden input per cell.
ONE_BIT = '''
import builtins as _builtins
_seen3 = getattr(_builtins, "_stash3", None)
if _seen3 and any(a and isinstance(a[0], (int, float)) and a[0] > 4 for a in _seen3):
    raise ValueError("BIT3_one")
raise ValueError("BIT3_one" if _seen3 is None else "BIT3_zero")
'''
ONE_BIT_RECORDER = '''
import builtins as _builtins, functools as _functools
_builtins._stash3 = []
_plain_ratio = bubble_ratio


@_functools.wraps(_plain_ratio)
def bubble_ratio(p, m):
    _builtins._stash3.append([p, m])
    return _plain_ratio(p, m)
'''


def _one_bit(nb: Any) -> None:
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "closed_form")
    nb.cells.insert(at, nbformat.v4.new_code_cell(ONE_BIT_RECORDER))
    nb.cells.insert(at + 2, nbformat.v4.new_code_cell(ONE_BIT))


def class_1() -> dict[str, Expect]:
    points = function_points("ps1")
    later = {q: p for q, p in points.items() if q != "slow_form"}
    return {
        # hidden inputs remembered, carried out in the message of an error raised on a shown input of a later question
        "y1_hidden_inputs_out_through_a_shown_error": Expect(Case(
            "ps1", edit=stashing("ps1", "y1_hidden_inputs_out_through_a_shown_error", "raise"), lost=later)),
        # … in the digits of a number returned on a shown input
        "y1_hidden_inputs_out_through_a_shown_value": Expect(Case(
            "ps1", edit=stashing("ps1", "y1_hidden_inputs_out_through_a_shown_value", "return"), lost=later)),
        # one bit per cell: the same error as the kernel's (shown verbatim) or another (shown as "an error")
        # (a cell that raises loses nothing of the questions after it: full marks, and nothing of the run told)
        "y1_one_bit_per_cell_after_the_test": Expect(Case("ps1", edit=_one_bit)),
    }


# ---- 3. nothing survives a submission: a process that outlives its cell -------------------------------------------
# A child that leaves its session, ignores SIGHUP and SIGTERM and sleeps for an hour under a name of its own; with it
# a spinner that burns a core so that the next submission's cells run over their time limit.
ORPHAN_MARK = 987_653
ORPHAN = f'''
import os as _os, signal as _signal
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            for _s in (_signal.SIGHUP, _signal.SIGTERM, _signal.SIGINT):
                _signal.signal(_s, _signal.SIG_IGN)
            try:
                _os.execv("/bin/sleep", ["sleep", "{ORPHAN_MARK}"])
            except OSError:
                while True:
                    pass
    finally:
        _os._exit(0)
if _os.fork() == 0:
    _os.setsid()
    while True:
        pass
'''
CLASS_3: dict[str, Expect] = {
    "y3_orphan_and_spinner_outlive_the_cell": Expect(Case("ps1", append={"q1a_answer": ORPHAN})),
    "zz3_honest_after_the_orphan": Expect(Case("ps1")),
}


# ---- 4. `ppedu check` and the grade agree, on the notebook as written ---------------------------------------------
# An honest student's habits: a helper module of their own beside the notebook, `%matplotlib inline` and a plot in a
# function's cell, an answer cell turned into a raw cell by a stray key press (its code retyped in a cell of their
# own), top-level `await` in a function's cell.
HELPER_MODULE = "def ratio(p, m):\n    return (p - 1) / (m + p - 1)\n"


def _helper_beside(target: Path, fill: dict[str, str]) -> None:
    (target / "myhelpers.py").write_text(HELPER_MODULE)


def _raw_answer(nb: Any) -> None:
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "q1a_answer")
    at = nb.cells.index(cell)
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(cell.source))
    cell.cell_type = "raw"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)


PLOT_IN_FUNCTION_CELL = '''%matplotlib inline
import matplotlib.pyplot as plt


def bubble_ratio(p, m):
    return (p - 1) / (m + p - 1)


def bubble_interleaved(p, m, v):
    return (p - 1) / (v * m + p - 1)


plt.plot([bubble_ratio(4, m) for m in range(1, 17)])
plt.show()'''
AWAIT_IN_FUNCTION_CELL = '''import asyncio
await asyncio.sleep(0)


def bubble_ratio(p, m):
    return (p - 1) / (m + p - 1)


def bubble_interleaved(p, m, v):
    return (p - 1) / (v * m + p - 1)'''
CLASS_4: dict[str, Expect] = {
    "y4_helper_module_beside_the_notebook": Expect(Case("ps1", replace={"q3_answer": (
        "from myhelpers import ratio\n\n\ndef bubble_ratio(p, m):\n    return ratio(p, m)\n\n\n"
        "def bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)")}, folder=_helper_beside)),
    "y4_plot_with_inline_magic_in_a_function_cell": Expect(Case("ps1", replace={"q3_answer": PLOT_IN_FUNCTION_CELL})),
    "y4_answer_cell_turned_raw_and_retyped": Expect(Case("ps1", edit=_raw_answer)),
    "y4_top_level_await_in_a_function_cell": Expect(Case("ps1", replace={"q3_answer": AWAIT_IN_FUNCTION_CELL})),
}


# ---- 5. one odd value costs at most its own question --------------------------------------------------------------
TYPE_NAME_FORGES = '''
bubble = type("x\\n\\u2713 gpipe_idle: right <img src=x onerror=alert(3)>", (), {})()
'''
OBJECT_ARRAY = '''
import numpy as _np


class _Agrees:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

    def __float__(self):
        return float(_T)


_T = T
T = _np.array(_Agrees(), dtype=object)
'''
META_TENSOR = "import torch as _torch\nbubble = _torch.empty((), device='meta')"
DECIMAL_SNAN = ("from decimal import Decimal\n\n\ndef idle_share(bubble, m, F, B, W):\n"
                "    return Decimal('sNaN')")
FRACTION_HUGE = ("from fractions import Fraction\n\n\ndef bubble_ratio(p, m):\n    return Fraction(10**400 + 1, 10**400)"
                 "\n\n\ndef bubble_interleaved(p, m, v):\n    return (p - 1) / (v * m + p - 1)")
INFINITY = "T = float('inf')"
RECURSIVE_LIST = "_loop = []\n_loop.append(_loop)\nT = _loop"
CLASS_5: dict[str, Expect] = {
    "y5_type_name_forges_a_feedback_line": Expect(Case("ps1", append={"q1b_answer": TYPE_NAME_FORGES},
                                                       lost={"gpipe_idle": 1})),
    "y5_object_array_that_agrees": Expect(Case("ps1", append={"q1a_answer": OBJECT_ARRAY}, lost={"gpipe_slots": 1})),
    "y5_meta_tensor": Expect(Case("ps1", append={"q1b_answer": META_TENSOR}, lost={"gpipe_idle": 1})),
    "y5_decimal_signalling_nan": Expect(Case("ps1", replace={"q5_answer": DECIMAL_SNAN}, lost={"conversion": 1})),
    "y5_fraction_past_a_float": Expect(Case("ps1", replace={"q3_answer": FRACTION_HUGE},
                                            lost={"closed_form": function_points("ps1")["closed_form"]})),
    "y5_infinity": Expect(Case("ps1", append={"q1a_answer": INFINITY}, lost={"gpipe_slots": 1})),
    "y5_list_that_holds_itself": Expect(Case("ps1", append={"q1a_answer": RECURSIVE_LIST}, lost={"gpipe_slots": 1})),
}


# ---- 6. every trusted step is bounded by the submission's size ----------------------------------------------------

def _deep_metadata(raw: bytes) -> bytes:
    """A cell of the student's own whose metadata nests 200,000 lists deep (400 kB): a JSON reader recurses."""
    nb = json.loads(raw)
    nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {"deep": "PLACEHOLDER"}, "source": "notes"})
    return json.dumps(nb).encode().replace(b'"PLACEHOLDER"', b"[" * 200_000 + b"]" * 200_000)


def _one_char_lines(raw: bytes) -> bytes:
    """A markdown cell of the student's own whose source is 3,000,000 one-character strings (about 15 MB)."""
    nb = json.loads(raw)
    nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": "PLACEHOLDER"})
    return json.dumps(nb).encode().replace(b'"PLACEHOLDER"', b"[" + b",".join([b'"a"'] * 3_000_000) + b"]")


def _many_attachments(nb: Any) -> None:
    """A text cell of the student's own with 60,000 pasted pictures (attachments now reach the instructor)."""
    from hostile_round_two import PICTURE

    cell = nbformat.v4.new_markdown_cell("pictures")
    cell["attachments"] = {f"p{i}.png": {"image/png": PICTURE} for i in range(60_000)}
    nb.cells.insert(1, cell)


CLASS_6: dict[str, Expect] = {
    "y6_metadata_nested_deep": Expect(Case("ps1", raw=_deep_metadata)),
    "y6_three_million_one_character_lines": Expect(Case("ps1", raw=_one_char_lines)),
    "y6_sixty_thousand_attachments": Expect(Case("ps1", edit=_many_attachments)),
}


# ---- 7. hand-ins behave as their tools do -------------------------------------------------------------------------
# Each a function of (archive folder, release bytes, solution bytes, victim's id) that writes hand-ins; what each
# student's collected notebook must be (``"solved"``, ``"release"`` or ``None``: not collected), as unzip/GNU tar
# would leave it.

def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w") -> None:
    with tarfile.open(path, mode) as tarred:
        for info, data in members:
            info.mtime = int(time.time())
            tarred.addfile(info, io.BytesIO(data) if info.isreg() else None)


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, hard: bool) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = (tarfile.LNKTYPE if hard else tarfile.SYMTYPE), target
    return info, b""


def zip_symlink(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A zip whose ps1.ipynb is a link (unzip makes a link) to a classmate's collected notebook."""
    with zipfile.ZipFile(archive / "ps1+y7_zip_symlink.zip", "w") as z:
        info = zipfile.ZipInfo("ps1.ipynb")
        info.create_system, info.external_attr = 3, (0o120777 << 16)
        z.writestr(info, f"../{victim}/ps1.ipynb")


def tar_hardlink_out(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A tar whose ps1.ipynb is a hard link to a path outside it (a classmate's hand-in in the submitted folder)."""
    _tar(archive / "ps1+y7_tar_hardlink_out.tar",
         [_link("ps1.ipynb", f"../../submitted/{victim}/ps1/ps1.ipynb", hard=True)])


def tar_hardlink_inside(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A tar whose notebook is a file under another name and ps1.ipynb a hard link to it (GNU tar: both files)."""
    _tar(archive / "ps1+y7_tar_hardlink_inside.tar", [_file("work/draft.ipynb", solved),
                                                       _link("ps1.ipynb", "work/draft.ipynb", hard=True)])


def zip_traversal(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A zip with a member that climbs out into a classmate's folder (a blank notebook over theirs)."""
    with zipfile.ZipFile(archive / "ps1+y7_zip_traversal.zip", "w") as z:
        z.writestr("ps1.ipynb", solved)
        z.writestr(f"../{victim}/ps1.ipynb", release)


def zip_twice(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A zip appended to (`zip -u` of a changed file writes a new member): two members ps1.ipynb, the later solved."""
    with zipfile.ZipFile(archive / "ps1+y7_zip_twice.zip", "w") as z:
        z.writestr("ps1.ipynb", release)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(archive / "ps1+y7_zip_twice.zip", "a") as z:
            z.writestr("ps1.ipynb", solved)


def timestamp_inside(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A tar with its own timestamp.txt, long before the due date."""
    _tar(archive / "ps1+y7_timestamp_inside.tar",
         [_file("ps1.ipynb", solved), _file("timestamp.txt", b"2000-01-01 00:00:00.000000 UTC")])


def case_folded(archive: Path, release: bytes, solved: bytes, victim: str) -> None:
    """A tar.gz whose only folder is PS1/ holding PS1.ipynb (a Windows or macOS student): not ps1.ipynb."""
    _tar(archive / "ps1+y7_case_folded.tar.gz", [_file("PS1/PS1.ipynb", solved)], "w:gz")


#: student → (writer, what the collected ps1.ipynb must be: "solved", "release", None (not collected), or "victim"
#: for the victim's own hand-in, untouched).
CLASS_7: dict[str, tuple[Callable[[Path, bytes, bytes, str], None], str | None]] = {
    "y7_zip_symlink": (zip_symlink, None),
    "y7_tar_hardlink_out": (tar_hardlink_out, None),
    "y7_tar_hardlink_inside": (tar_hardlink_inside, "solved"),
    "y7_zip_traversal": (zip_traversal, "solved"),
    "y7_zip_twice": (zip_twice, "solved"),
    "y7_timestamp_inside": (timestamp_inside, "solved"),
    "y7_case_folded": (case_folded, None),
}
VICTIM = "zz7_victim"


# ---- 8. the owner's question data ---------------------------------------------------------------------------------

def _questions(mutate: Callable[[dict[str, Any], int], Any]) -> Callable[[Path, dict[str, str]], None]:
    """The submission's questions.json rewritten: ``mutate(pool, variant)`` (``None``: the file removed)."""
    def folder(target: Path, fill: dict[str, str]) -> None:
        from ppedu.grading.assignments import my_values

        path = target / "questions.json"
        pool = json.loads(path.read_text())
        student = target.parent.name
        out = mutate(pool, my_values("ps1", student)["variant"])
        if out is None:
            path.unlink()
        else:
            path.write_text(json.dumps(out))
    return folder


def _odd_variant(pool: dict[str, Any], k: int) -> Any:
    entries = pool.get("variants", pool) if isinstance(pool, dict) else pool
    if isinstance(entries, list):
        entries[k] = [1, 2, 3]
    elif isinstance(entries, dict):
        entries[str(k)] = [1, 2, 3]
    return pool


def _grid_not_a_picture(pool: dict[str, Any], k: int) -> Any:
    entries = pool.get("variants", pool) if isinstance(pool, dict) else pool
    entry = entries[k] if isinstance(entries, list) else entries[str(k)]
    for name, value in entry.items():
        if isinstance(value, dict) and "rows" in value:
            entry[name] = {"rows": "not rows", "legend": None}
    return pool


def _easiest(pool: dict[str, Any], k: int) -> Any:
    """Every variant's entries the same: variant 0's (a classmate's grid, handed in as one's own)."""
    entries = pool.get("variants", pool) if isinstance(pool, dict) else pool
    if isinstance(entries, list):
        entries[:] = [entries[0 if k else 1]] * len(entries)
    return pool


CLASS_8: dict[str, Expect] = {
    # the honest solution, which computes from `data`; its folder's question data removed, damaged or another
    # variant's: the grader hands the kernel the owner's entries, whatever the folder holds (full marks, honestly)
    "y8_questions_json_removed": Expect(Case("ps1", folder=_questions(lambda pool, k: None))),
    "y8_questions_json_variant_not_a_dict": Expect(Case("ps1", folder=_questions(_odd_variant))),
    "y8_questions_json_grid_not_a_picture": Expect(Case("ps1", folder=_questions(_grid_not_a_picture))),
    "y8_questions_json_a_classmates_variant": Expect(Case("ps1", folder=_questions(_easiest))),
}

#: The ps1 cases graded together by ``ppedu grade``.
PS1_CASES = {**CLASS_3, **CLASS_4, **CLASS_5, **CLASS_8}
#: Graded apart (their time is measured).
SIZE_CASES = CLASS_6
