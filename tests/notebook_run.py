"""A course notebook run once per test session, headless, by whichever test (on whichever xdist worker) asks first:
the chapter tests read its outputs and figures, the static-deck tests build their decks from the same run, so no
chapter runs twice for them."""

import contextlib
import fcntl
import os
import traceback
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# The lab's tiny ops run fastest on one thread; on a shared 2-core machine more threads only contend.
ENVIRONMENT = {"PPEDU_FAST": "1", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}

# A spacetime diagram's blocks without a label: the filled patches between the idle background (zorder 0) and the
# labels (2), each of which must hold a text's anchor (a chapter's figures draw no other such patches).
COUNT_UNLABELLED = """
def _unlabelled(figure):
    missing = 0
    for ax in figure.axes:
        at = [t.get_position() for t in ax.texts if t.get_text().strip()]
        for block in ax.patches:
            if block.get_fill() and 0 < block.get_zorder() < 2:
                x0, y0, x1, y1 = block.get_x(), block.get_y(), block.get_x() + block.get_width(), block.get_y() + block.get_height()
                missing += not any(x0 <= x <= x1 and y0 <= y <= y1 for x, y in at)
    return missing
"""
# Run first in the kernel: every matplotlib figure the notebook draws is read as it is drawn (ppedu.plot.texts) and
# written to figures.jsonl beside it: the width of the picture shown (cropped as Jupyter crops it), each text, and
# how many blocks carry no label.
READ_FIGURES = COUNT_UNLABELLED + """
import json as _json
from matplotlib.backend_bases import FigureCanvasBase as _Canvas
from ppedu.plot import texts as _texts

def _read(print_figure):
    def printed(canvas, *args, **kwargs):
        done = print_figure(canvas, *args, **kwargs)
        figure = canvas.figure
        width = figure.get_tightbbox().width * figure.dpi
        with open("figures.jsonl", "a") as out:
            out.write(_json.dumps({"width": width, "texts": [w.__dict__ for w in _texts(figure)],
                                   "unlabelled": _unlabelled(figure)}) + "\\n")
        return done
    return printed

_Canvas.print_figure = _read(_Canvas.print_figure)
"""


def run(name: str, root: Path) -> tuple[nbformat.NotebookNode, Path]:
    """``notebooks/<name>.ipynb`` run top to bottom in ``root/ran/<name>/`` (where the files it writes land, and
    figures.jsonl), its widgets' state kept; the first call runs it, the others wait for that run and share it.
    Raises AssertionError with the run's error if it stopped."""
    folder = root / "ran" / name
    folder.mkdir(parents=True, exist_ok=True)
    done, failed = folder / f"{name}.ipynb", folder / "stopped.txt"
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists() and not failed.exists():
            nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
            nb.cells.insert(0, nbformat.v4.new_code_cell(READ_FIGURES))
            try:
                with _environment(ENVIRONMENT):
                    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                                   resources={"metadata": {"path": str(folder)}}).execute()
            except Exception:
                failed.write_text(traceback.format_exc())
            else:
                del nb.cells[0]  # the reader of figures is the test's, not the chapter's
                nbformat.write(nb, done)
    if failed.exists():
        raise AssertionError(f"{name} stopped:\n{failed.read_text()[-4000:]}")
    return nbformat.read(done, as_version=4), folder


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)  # the kernel inherits this process's environment
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
