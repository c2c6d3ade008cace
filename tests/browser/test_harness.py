"""The harness itself, on a tiny notebook of its own: what the chapter tests call a failure is seen.

These prove that the chapter tests can fail: a traceback, a figure left as text and the cells a traceback
stopped are each reported, a warning is not; and a widget counts as shown only when its cell shows it.
"""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ppedu import lecture

from .conftest import EXCEPTION
from .test_chapters import present, widget_calls


def _write(server, name, *sources):
    folder = server.root / "harness"
    folder.mkdir(exist_ok=True)
    cells = [new_markdown_cell("# " + name)] + [new_code_cell(s) for s in sources]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, folder / f"{name}.ipynb")
    return f"harness/{name}.ipynb"


def test_an_error_an_undrawn_figure_and_the_cells_an_error_stopped_are_seen(lab, server):
    path = _write(
        server, "broken", "import warnings; warnings.warn('only a warning')",
        "from matplotlib.figure import Figure\nFigure().add_subplot().figure",
        "raise ValueError('the harness must see this')", "print('not reached')",
    )
    panel = lab.open(path)
    # A clean JupyterLab: only this notebook's tab (no workspace restored), no news or update pop-up.
    assert [t.strip() for t in lab.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab").all_inner_texts()] == ["broken.ipynb"]
    assert lab.page.locator(".Toastify__toast").count() == 0
    lab.run_all(panel)
    errors = lab.errors(panel)
    assert len(errors) == 3, errors
    assert "the harness must see this" in errors[0]
    assert errors[1].startswith("a figure shown as text") and "code cell 4 did not run" in errors[2]


# What the deck test must see on a slide: an output cut off inside a scroll box, a table too small to read, a diagram
# block without its label, labels that run together in a diagram a fraction of the slide wide ("W3W7"), and something
# over the deck's arrows (the news pop-up was such a thing).
FLAWED_SLIDES = [
    "from IPython.display import HTML\nfrom ppedu import Costs, schedules, simulate\nfrom ppedu.svg import render_svg",
    "HTML('<div style=\"overflow:auto;width:300px\"><div style=\"width:900px\">a line that runs off</div></div>')",
    "HTML('<table style=\"font-size:10px\"><tr><td>tiny</td></tr></table>')",
    "HTML(render_svg(simulate(schedules.gpipe(2, 2), Costs(f=(1, 0.001), b=1))))",
    "HTML('<svg width=\"60\" height=\"20\" viewBox=\"0 0 60 20\"><text x=\"4\" y=\"15\" font-size=\"13\">W3</text>'\n"
    "     '<text x=\"20\" y=\"15\" font-size=\"13\">W7</text></svg>')",
]


def test_the_deck_checks_see_what_a_lecturer_would_miss(lab, server):
    nb = new_notebook(cells=[new_markdown_cell("# Flawed slides"), *map(new_code_cell, FLAWED_SLIDES)],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    folder = server.root / "harness"
    folder.mkdir(exist_ok=True)
    nbformat.write(lecture.lecture(nb)[0], folder / "flawed.ipynb")
    panel = lab.open("harness/flawed.ipynb")
    lab.run_all(panel)
    lab.page.evaluate("""() => { const cover = document.createElement('div');  // a pop-up in the corner
      cover.style.cssText = 'position:fixed;right:0;bottom:0;width:320px;height:90px;background:#eee;z-index:10000';
      document.body.append(cover); }""")
    with pytest.raises(AssertionError) as seen:
        present(lab, panel, "flawed")
    said = str(seen.value)
    assert "cuts off 600 px across" in said.replace("601", "600").replace("599", "600"), said
    assert f'td writes "tiny" at {10 * lecture.DRAWN_ZOOM:.1f} px' in said and "diagram blocks without a label" in said, said
    assert "buttons lie under or over div" in said, said
    assert 'glyphs of a diagram\'s labels run into others ("3W")' in said and "a diagram spans" in said, said


def test_an_exception_line_tells_a_traceback_from_a_warning():
    assert EXCEPTION.search("  Cell In[1], line 1\n    x =\n        ^\nSyntaxError: invalid syntax")
    assert EXCEPTION.search("KeyboardInterrupt: ")
    assert not EXCEPTION.search("/tmp/a.py:1: UserWarning: only a warning\n  warnings.warn('only a warning')")


def test_a_widget_counts_as_shown_only_when_its_cell_shows_it():
    shown = "from ppedu import schedules\nexercise = SlotCountingExercise(schedules.gpipe(3, 2))\nexercise"
    assert [(name, twin.grid.total_slots) for name, twin in widget_calls(shown)] == [("SlotCountingExercise", 24)]
    assert widget_calls("b = ScheduleBuilder(p=2, m=1)\nb.place(0, 0, 'F0')") == []
    assert [(n, t) for n, t in widget_calls("SlotCountingExercise(t)")] == [("SlotCountingExercise", None)]
    assert [n for n, _ in widget_calls("display(ScheduleExplorer())\nx = 1")] == ["ScheduleExplorer"]
    assert [n for n, _ in widget_calls("%matplotlib inline\nScheduleExplorer()")] == ["ScheduleExplorer"]
