"""The harness itself, on tiny notebooks of its own: it runs cells through the UI, sees widgets, and sees errors.

These prove that the chapter tests can fail: a notebook that raises is reported, one that does not is clean.
"""

import nbformat
from conftest import EXCEPTION
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def _write(server, name, *sources):
    folder = server.root / "harness"
    folder.mkdir(exist_ok=True)
    cells = [new_markdown_cell("# " + name)] + [new_code_cell(s) for s in sources]
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, folder / f"{name}.ipynb")
    return f"harness/{name}.ipynb"


def test_a_clean_notebook_runs_and_its_widget_renders_and_moves(lab, server):
    path = _write(
        server,
        "clean",
        "import ipywidgets as w\nout = w.HTML('<b class=\"harness-out\">0</b>')\n"
        "s = w.IntSlider(value=2, min=0, max=9, description='m')\n"
        "s.observe(lambda c: setattr(out, 'value', f'<b class=\"harness-out\">{c.new * 10}</b>'), 'value')\n"
        "w.VBox([s, out])",
        "print(sum(range(10)))",
    )
    panel = lab.open(path)
    lab.run_all(panel)
    assert lab.errors(panel) == []
    assert panel.locator(".jp-OutputArea-output", has_text="45").count() == 1
    before = panel.locator(".harness-out").inner_text()
    lab.slider(panel, "m").press("ArrowRight")
    panel.locator(".harness-out", has_text="30").wait_for()
    assert before == "0"
    shot = lab.screenshot(panel, "harness")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 1000
    shot.unlink()


def test_an_error_an_undrawn_figure_and_the_cells_an_error_stopped_are_seen(lab, server):
    path = _write(
        server, "broken", "import warnings; warnings.warn('only a warning')",
        "from matplotlib.figure import Figure\nFigure().add_subplot().figure",
        "raise ValueError('the harness must see this')", "print('not reached')",
    )
    panel = lab.open(path)
    lab.run_all(panel)
    errors = lab.errors(panel)
    assert len(errors) == 3, errors
    assert "the harness must see this" in errors[0]
    assert errors[1].startswith("a figure shown as text") and "code cell 4 did not run" in errors[2]


def test_an_exception_line_tells_a_traceback_from_a_warning():
    assert EXCEPTION.search("  Cell In[1], line 1\n    x =\n        ^\nSyntaxError: invalid syntax")
    assert EXCEPTION.search("KeyboardInterrupt: ")
    assert not EXCEPTION.search("/tmp/a.py:1: UserWarning: only a warning\n  warnings.warn('only a warning')")
