"""The browser edition as a student meets it: `make lite`'s site served by `python -m http.server`, opened in
Chromium with every request to any other host refused, each notebook run with Run ▸ Run All Cells.

Each notebook must run without an error and draw its figures as SVG; its widgets must show, the explorers redraw
when a slider moves, and the counting exercises (the chapters' and the counting practice's) answer a wrong and then
a right attempt with ppedu's own feedback, computed here by ppedu with numpy from the same call. The site's Python
has no numpy, matplotlib or PyTorch, so this is also the proof that the core gives the same answers without them.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from ppedu.practice import CountingPractice
from ppedu.widgets import SlotCountingExercise

from .conftest import CHROMIUM_ARGS, ROOT, SCREENSHOTS, JupyterLab
from .test_chapters import DRIVE, PARTS, ROOT_CLASS, text, widget_calls

sys.path.insert(0, str(ROOT / "lite"))
from edition import CHAPTERS, KERNEL  # noqa: E402

NOTEBOOKS = [*CHAPTERS, "counting-practice"]
#: What must be driven, at least: an explorer's slider and a counting exercise, and the practice's exercises.
MUST_DRIVE = {"01-bubble-problem": {"ScheduleExplorer", "SlotCountingExercise"},
              "counting-practice": {"SlotCountingExercise"}}
SITE_BUILD_S = 900
KERNEL_NAME = KERNEL["display_name"]


@pytest.fixture(scope="module")
def site(chromium, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make lite`'s build, into a folder of its own (the downloads are reused from build/lite-cache)."""
    if shutil.which("npm") is None:
        pytest.skip("browser edition skipped: no npm to bring Pyodide's core (`make test` installs Debian's npm)")
    out = tmp_path_factory.mktemp("lite") / "site"
    done = subprocess.run([sys.executable, str(ROOT / "lite" / "build.py"), str(out)], capture_output=True, text=True,
                          timeout=SITE_BUILD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site behind `python -m http.server` on a free loopback port, in a sub-folder as GitHub Pages serves a
    project (`/<repository>/`): its URL. A request outside that folder counts as one outside the site."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                               str(site.parent)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/{site.name}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=15)


@pytest.fixture(scope="module")
def offline_browser(playwright, chromium) -> Iterator[object]:
    """Chromium that cannot resolve any host but this machine: a request elsewhere fails in the browser itself,
    from a page, a worker or a service worker alike."""
    rules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
    browser = playwright.chromium.launch(executable_path=str(chromium), headless=True, args=[*CHROMIUM_ARGS, rules])
    try:
        yield browser
    finally:
        browser.close()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_runs_in_the_browser_edition_with_no_request_outside_the_site(offline_browser, served, site,
                                                                              name, request):
    context = offline_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    outside: list[str] = []

    def only_the_site(route) -> None:  # every request is seen here; any other host is refused
        if route.request.url.startswith(served):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_site)
    context.on("requestfailed", lambda r: None if r.url.startswith(served) else outside.append(r.url))
    page = context.new_page()
    lab = JupyterLab(page, server=None)  # the page-only steps: no Jupyter server behind a static site
    try:
        page.goto(f"{served}lab/index.html?path={name}.ipynb")
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first
        panel.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
        wait_for_the_kernel(lab, panel)
        lab.run_all(panel)
        assert lab.errors(panel) == []
        code = [c for c in nbformat.read(site / "files" / f"{name}.ipynb", as_version=4).cells if c.cell_type == "code"]
        cells = panel.locator(".jp-CodeCell")
        assert cells.count() == len(code)
        driven = []
        for cell, source in zip((cells.nth(i) for i in range(len(code))), (c.source for c in code)):
            if re.search(r"\bplot_(timeline|memory)\(", source):
                assert cell.locator(".jp-OutputArea-output svg").count(), f"no SVG figure for {source[:60]!r}"
            for widget, twin in widget_calls(source):
                root = cell.locator(f".{ROOT_CLASS[widget]}").first
                root.wait_for(timeout=20_000)
                for part in PARTS[widget]:
                    assert root.locator(part).count(), f"{widget} shows no {part}"
                if twin is None and widget == "SlotCountingExercise" and name == "counting-practice":
                    twin = practice_twin(panel, source)
                if twin is not None and widget in DRIVE:
                    DRIVE[widget](lab, panel, root, twin)
                    driven.append(widget)
        lab.screenshot(panel, f"lite-{name}")
        assert MUST_DRIVE.get(name, set()) <= set(driven)
        print(f"{name}: drove {driven or 'no widget'}")
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"FAILED-lite-{name}.png"))
        raise
    finally:
        context.close()
    assert outside == [], f"requests outside the site: {outside[:5]}"


def wait_for_the_kernel(lab: JupyterLab, panel) -> None:
    """Wait until the notebook has its Pyodide kernel, started and idle (the toolbar reads "idle" for a moment
    before a kernel exists: the kernel's name shows only once it does)."""
    name = panel.locator(".jp-Toolbar-kernelName").first
    deadline = time.monotonic() + lab.KERNEL_IDLE_S
    while text(name) != KERNEL_NAME or lab.kernel_status() != "idle":
        if time.monotonic() > deadline:
            raise TimeoutError(f"no idle Pyodide kernel within {lab.KERNEL_IDLE_S} s (toolbar: {text(name)!r})")
        lab.page.wait_for_timeout(250)


def practice_twin(panel, source: str) -> SlotCountingExercise | None:
    """The practice exercise a cell makes, built here from the random student id the page drew (the setup cell
    shows it), so its answers can be checked against ppedu with numpy."""
    shown = " ".join(panel.locator(".jp-OutputArea-output").all_text_contents())
    seed = re.search(r"counting practice, seed (\d+)", shown)
    assert seed, "the practice's setup shows no seed"
    grids = CountingPractice.draw(int(seed[1]))
    for mode in ("path", "causes"):
        if f"mode='{mode}'" in source or f'mode="{mode}"' in source:
            return SlotCountingExercise(grids.read, mode=mode)
    if "mode='mark'" in source or 'mode="mark"' in source:
        return SlotCountingExercise(grids.mark, mode="mark")
    return SlotCountingExercise(grids.count)


def test_cells_run_while_the_kernel_starts_run_once_it_is_ready(offline_browser, served):
    """A student who does not wait: two code cells run (Shift+Enter) as soon as the notebook shows, while Python is
    still loading; both run, in order, once the kernel is ready (before, the first was silently dropped)."""
    context = offline_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    lab = JupyterLab(page, server=None)
    try:
        page.goto(f"{served}lab/index.html?path=01-bubble-problem.ipynb")
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first
        code = panel.locator(".jp-CodeCell")
        code.first.wait_for(timeout=60_000)
        assert lab.kernel_status() != "idle" or text(panel.locator(".jp-Toolbar-kernelName").first) != KERNEL_NAME
        for i in (0, 1):
            code.nth(i).locator(".jp-InputPrompt").click()
            page.keyboard.press("Shift+Enter")
        wait_for_the_kernel(lab, panel)
        lab.wait_kernel_idle()
        prompts = [text(code.nth(i).locator(".jp-InputPrompt")) for i in (0, 1)]
        assert prompts == ["[1]:", "[2]:"], prompts
        assert lab.errors(panel) == [] or all("did not run" in e for e in lab.errors(panel))
    finally:
        context.close()
