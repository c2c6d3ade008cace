"""JupyterLab in a real browser: a server on a temporary copy of the course, Debian's Chromium driven by Playwright.

The server is the project's own (this interpreter's `jupyter lab`), on 127.0.0.1 with a free port and a token; its
config, data and runtime folders are temporary, so no workspace tabs are restored. Otherwise it is JupyterLab as the
course sets it up for students and lecturers (the environment's own settings, such as no news pop-up), so a test sees
what they see. It is stopped (with its kernels) when the session ends, failed tests included.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("PPEDU_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = ROOT / "build" / "screenshots"
# The flags that let Chromium run headless as root on a machine without a network beyond loopback.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
COURSE_IGNORED = shutil.ignore_patterns(
    ".venv", ".git", "build", "__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ipynb_checkpoints"
)
SERVER_START_S = 90
UNDRAWN = re.compile(r"<Figure size \d+x\d+ with \d+ Axes>")
EXCEPTION = re.compile(r"Traceback \(most recent call last\)|^\s*\w*(Error|Exception|Interrupt)\b", re.M)
# User settings for the temporary JupyterLab: every cell stays in the DOM (no virtual scrolling), so what the
# tests look for is there whether or not it has been scrolled into view.
USER_SETTINGS = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Server:
    """A running JupyterLab: where it listens, its token and the folder it serves."""

    url: str
    token: str
    root: Path

    def api(self, path: str, method: str = "GET"):
        """A call to the server's REST API, with the token; the decoded JSON reply (None when empty)."""
        request = urllib.request.Request(
            f"{self.url}api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None


def _start(root: Path, home: Path) -> tuple[subprocess.Popen[bytes], Server]:
    config = home / "config"
    for name, settings in USER_SETTINGS.items():
        (config / "lab" / "user-settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (config / "lab" / "user-settings" / name).write_text(json.dumps(settings))
    # The kernels get a student's environment: not the test suite's MPLBACKEND=Agg, which hides figures.
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"} | {
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "PPEDU_FAST": "1",
    }
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")  # as root, jupyter lab exits without it
    log = (home / "server.log").open("wb")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}/", token, root)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            server.api("status")
            return process, server
        except OSError:
            time.sleep(0.5)
    _stop(process)
    raise RuntimeError(f"JupyterLab did not start within {SERVER_START_S} s:\n{(home / 'server.log').read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and everything it started (kernels), by its process group."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # kernels left behind by a server that would not stop
    except ProcessLookupError:
        pass
    process.wait(timeout=15)


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests skipped: no Chromium at {CHROMIUM} (`make test` installs Debian's chromium)")
    return CHROMIUM


@pytest.fixture(scope="session")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary copy of the course, so nothing a test runs writes into the repository."""
    root = tmp_path_factory.mktemp("course") / "ppedu"
    shutil.copytree(ROOT, root, ignore=COURSE_IGNORED)
    return root


# The server and browser end with the browser tests: Playwright's sync API leaves its event loop marked as
# running in this thread while it lives, and tests after these ones run asyncio loops of their own.
@pytest.fixture(scope="package")
def server(chromium: Path, course: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    process, server = _start(course, tmp_path_factory.mktemp("jupyter"))
    try:
        yield server
    finally:
        _stop(process)


# One Playwright for the package: a second sync_playwright() while the first lives finds the first's loop running.
@pytest.fixture(scope="package")
def playwright(chromium: Path) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="package")
def browser(playwright, chromium: Path) -> Iterator[object]:
    browser = playwright.chromium.launch(executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture
def lab(browser, server: Server, request: pytest.FixtureRequest) -> Iterator[JupyterLab]:
    """A fresh browser tab on the running JupyterLab; a failed test leaves a screenshot of what it saw."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield JupyterLab(page, server)
    finally:
        failed = SCREENSHOTS / f"FAILED-{request.node.name}.png"
        failed.unlink(missing_ok=True)
        if request.node.stash.get(FAILED, False):
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(failed))
        context.close()
        for session in server.api("sessions"):  # each test's kernels end with it
            server.api(f"sessions/{session['id']}", method="DELETE")


class JupyterLab:
    """What a person does in JupyterLab, as Playwright steps, each bounded by a timeout."""

    KERNEL_IDLE_S = 120

    def __init__(self, page, server: Server) -> None:
        self.page, self.server = page, server

    def open(self, path: str, view: str = "lab/tree"):
        """Open a notebook (path relative to the served folder) with a reset workspace, once its kernel is ready."""
        self.page.goto(f"{self.server.url}{view}/{path}?reset&token={self.server.token}")
        panel = self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first
        panel.locator(".jp-Notebook .jp-Cell").first.wait_for()
        # The toolbar may read "idle" before a kernel exists: first wait for the server's own session.
        deadline = time.monotonic() + self.KERNEL_IDLE_S
        while not any(
            s["path"] == path and s["kernel"]["execution_state"] == "idle" for s in self.server.api("sessions")
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no idle kernel for {path} within {self.KERNEL_IDLE_S} s")
            time.sleep(0.25)
        self.wait_kernel_idle()
        return panel

    def command(self, label: str) -> None:
        """Run a command by its label from the command palette (Ctrl+Shift+C), as a keyboard user would."""
        self.page.keyboard.press("Control+Shift+C")
        search = self.page.locator(".lm-CommandPalette-input")
        search.fill(label)
        self.page.locator(".lm-CommandPalette-item", has_text=label).first.click()

    def menu(self, *labels: str) -> None:
        """Click through the menu bar: menu('Run', 'Run All Cells')."""
        first, *rest = labels
        self.page.locator(".lm-MenuBar-itemLabel", has_text=first).first.click()
        for label in rest:
            self.page.locator(".lm-Menu-itemLabel", has_text=label).first.click()

    def kernel_status(self) -> str | None:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator").first.get_attribute(
            "data-status"
        )

    def wait_kernel_idle(self, timeout_s: float | None = None) -> None:
        """Wait until the notebook's kernel is idle and no cell is queued or running ([*])."""
        deadline = time.monotonic() + (timeout_s or self.KERNEL_IDLE_S)
        while time.monotonic() < deadline:
            busy = self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputPrompt", has_text="*").count()
            if not busy and self.kernel_status() == "idle":
                return
            self.page.wait_for_timeout(250)
        raise TimeoutError(f"the kernel did not go idle within {timeout_s or self.KERNEL_IDLE_S} s")

    def run_all(self, panel) -> None:
        self.menu("Run", "Run All Cells")
        # The first cell's prompt leaves "[ ]" once execution reaches it; then wait for the whole run.
        panel.locator(".jp-CodeCell .jp-InputPrompt", has_text="[*]").or_(
            panel.locator(".jp-CodeCell .jp-InputPrompt", has_text="[1]")
        ).first.wait_for()
        self.wait_kernel_idle()

    def widget(self, panel, kind: str, description: str):
        """The ipywidgets control of a kind ('slider', 'text', ...) whose description label reads exactly so."""
        label = self.page.locator(".widget-label", has_text=re.compile(rf"^\s*{re.escape(description)}\s*$"))
        return panel.locator(f".widget-{kind}").filter(has=label).first

    def slider(self, panel, description: str):
        """A slider's handle, focused, ready for the arrow keys."""
        handle = self.widget(panel, "slider", description).locator(".noUi-handle").first
        handle.focus()
        return handle

    @staticmethod
    def errors(panel) -> list[str]:
        """What went wrong in a run: each error output's text, and each code cell that did not run.

        JupyterLab renders a traceback as a stderr output, like a warning; an exception line tells them apart. A
        matplotlib figure that Jupyter cannot draw shows as its text repr only.
        A code cell left without an execution count after Run All means the run stopped before it.
        """
        found = []
        stderr = panel.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        for text in stderr.all_inner_texts():
            if EXCEPTION.search(text):
                found.append(text[:2000])
        found += [text[:500] for text in panel.locator(".jp-OutputArea-output", has_text="Error displaying widget").all_inner_texts()]
        plain = panel.locator(".jp-OutputArea-output[data-mime-type='text/plain']")
        found += [f"a figure shown as text, not drawn: {t}" for t in plain.all_inner_texts() if UNDRAWN.fullmatch(t.strip())]
        cells = panel.locator(".jp-CodeCell")
        for i in range(cells.count()):
            cell = cells.nth(i)
            prompt = cell.locator(".jp-InputPrompt").inner_text().strip()
            source = cell.locator(".jp-InputArea-editor").inner_text().strip()
            if source and not re.fullmatch(r"\[\d+\]:", prompt):
                found.append(f"code cell {i + 1} did not run (prompt {prompt!r}): {source[:80]!r}")
        return found

    def screenshot(self, panel, name: str) -> Path:
        """The whole notebook, top to bottom, written to build/screenshots/NAME.png."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        notebook, scroller = panel.locator(".jp-Notebook").first, panel.locator(".jp-WindowedPanel-outer").first
        viewport = self.page.viewport_size
        hidden = scroller.evaluate("e => e.scrollHeight - e.clientHeight")
        # A window tall enough to show every cell at once (capped), then back to the usual size.
        self.page.set_viewport_size({"width": viewport["width"], "height": min(viewport["height"] + hidden, 16_000)})
        try:
            scroller.evaluate("e => { e.scrollTop = 0; }")
            self.page.wait_for_timeout(300)
            notebook.screenshot(path=str(path), animations="disabled")
        finally:
            self.page.set_viewport_size(viewport)
        return path

    @staticmethod
    def shoot(locator, name: str) -> Path:
        """One element (a widget, a figure), written to build/screenshots/NAME.png."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        locator.screenshot(path=str(path), animations="disabled")
        return path
