"""How long the browser edition (``make lite``) takes to start, cold and warm, split by phase.

A student opens chapter 1 of the JupyterLite site and runs its first cell. Timed in Debian's Chromium (headless), the
site served by ``python -m http.server`` on this machine, as `tests/browser/test_lite.py` serves it:

- **cold**: a browser profile never used (nothing cached, no service worker);
- **warm**: the same profile opened again (the browser's cache and the site's service worker as a first visit left
  them), as a student returning to the site.

Phases, from the moment the page is asked for (each the time at its end, and its share of the start):

- ``page``: JupyterLab's page shows the notebook;
- ``pyodide``: the Python interpreter and its standard library are in (``pyodide.asm.wasm``, ``python_stdlib.zip``);
- ``packages``: the last of the wheels the kernel loads has arrived;
- ``kernel``: the kernel reports idle (its packages unpacked, IPython and the kernel imported);
- ``first cell``: chapter 1's first cell (``import ppedu`` …) has run, pressed with Shift+Enter as soon as the notebook
  showed (a student who does not wait; the press must not be lost).

The same steps are then timed with no browser and no JupyterLab (``benchmarks/lite_boot.mjs``: the site's Pyodide in
Node, its preloaded wheels, the kernel's import, the first cell's imports), wall and CPU seconds: the floor under the
site's start on this machine, whatever the page and the browser add.

Run: ``python benchmarks/bench_lite.py [SITE [BASELINE]]`` (default build/lite; ``make lite`` builds it); with a
BASELINE site too (an earlier build), both are timed in the same run and compared. Prints one table.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK = "01-bubble-problem.ipynb"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
PHASES = ("page", "pyodide", "packages", "kernel", "first cell")
NODE_PHASES = PHASES[1:]


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """The site on a free loopback port, in a sub-folder as GitHub Pages serves a project."""
    handler = functools.partial(_Quiet, directory=str(site.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/{site.name}/"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def start(playwright, profile: Path, url: str) -> dict[str, float]:
    """Open the chapter in a browser with ``profile``; each phase's end, in seconds from the request for the page."""
    context = playwright.chromium.launch_persistent_context(str(profile), executable_path=str(CHROMIUM),
                                                            headless=True, args=ARGS)
    ends: dict[str, float] = {}
    try:
        page = context.new_page()
        began = time.perf_counter()
        seen: dict[str, float] = {}

        def arrived(response) -> None:
            name = response.url.rsplit("/", 1)[-1]
            if name.endswith((".wasm", ".zip", ".whl")):
                seen[name] = time.perf_counter() - began

        context.on("response", arrived)
        page.goto(f"{url}lab/index.html?path={NOTEBOOK}")
        cell = page.locator(".jp-NotebookPanel .jp-CodeCell").first
        cell.wait_for(timeout=120_000)
        ends["page"] = time.perf_counter() - began
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Escape")
        page.keyboard.press("Shift+Enter")  # at once, while the kernel starts
        prompt = cell.locator(".jp-InputPrompt")
        status = page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator").first
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if "kernel" not in ends and status.get_attribute("data-status") == "idle" and seen.get("pyodide.asm.wasm"):
                ends["kernel"] = time.perf_counter() - began
            if prompt.inner_text().strip().startswith("[1]"):
                ends["first cell"] = time.perf_counter() - began
                break
            page.wait_for_timeout(50)
        ends["pyodide"] = max(seen.get("pyodide.asm.wasm", 0.0), seen.get("python_stdlib.zip", 0.0))
        ends["packages"] = max((t for n, t in seen.items() if n.endswith(".whl")), default=0.0)
        ends.setdefault("kernel", ends.get("first cell", float("nan")))
        ends.setdefault("first cell", float("nan"))  # the press was lost: the cell never ran
    finally:
        context.close()
    return ends


def floor(site: Path) -> dict[str, dict[str, float]]:
    """The kernel's start and the first cell's imports in Node (``lite_boot.mjs``): each phase's end, wall and CPU."""
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    packages = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]
    cell = next(c for c in json.loads((site / "files" / NOTEBOOK).read_text())["cells"] if c["cell_type"] == "code")
    imports = [m[1] for m in re.finditer(r"^(?:%load_ext|import|from) ([\w.]+)", "".join(cell["source"]), re.M)]
    done = subprocess.run(["node", str(ROOT / "benchmarks" / "lite_boot.mjs"), str(site / "static" / "pyodide"),
                           json.dumps(packages["packages"]), json.dumps(imports)], capture_output=True, text=True,
                          check=True, timeout=600)
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str]) -> int:
    sites = [Path(a) for a in argv] or [ROOT / "build" / "lite"]
    for site in sites:
        if not (site / "lab" / "index.html").exists():
            print(f"bench_lite: no site in {site}: run `make lite` first", file=sys.stderr)
            return 2
    if not CHROMIUM.exists():
        print(f"bench_lite: no Chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    if shutil.which("node") is None:
        print("bench_lite: no Node.js (it comes with npm, which `make lite` needs too)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as playwright:
        for site in sites:
            server, url = serve(site.resolve())
            profile = Path(tempfile.mkdtemp(prefix="ppedu-lite-profile-"))
            try:
                results[site] = {"cold": start(playwright, profile, url), "warm": start(playwright, profile, url)}
            finally:
                server.shutdown()
                shutil.rmtree(profile, ignore_errors=True)
    floors = {site: floor(site.resolve()) for site in sites}
    # A site's folder names it, or its parent's and its own where two share a name (build/lite against old/lite).
    label = {site: site.name if [s.name for s in sites].count(site.name) == 1 else f"{site.parent.name}/{site.name}"
             for site in sites}
    print(f"JupyterLite start, {NOTEBOOK}: seconds from the page's request to the end of each phase")
    print(f"{'':24}" + "".join(f"{p:>12}" for p in PHASES))
    for site, runs in results.items():
        for name, ends in runs.items():
            print(f"{label[site] + ', ' + name:24}" + "".join(f"{ends[p]:12.2f}" for p in PHASES))
    print("The same start in Node, no browser, no JupyterLab: each phase's end, wall seconds (CPU seconds)")
    print(f"{'':24}" + "".join(f"{p:>16}" for p in NODE_PHASES))
    for site, ends in floors.items():
        print(f"{label[site]:24}" + "".join(f"{ends[p]['wall']:8.2f} ({ends[p]['cpu']:5.2f})" for p in NODE_PHASES))
    first = list(results.values())
    for site, runs in results.items():
        print(f"{label[site]}: warm / cold, first cell run: {runs['warm']['first cell'] / runs['cold']['first cell']:.2f}")
    if len(first) == 2:  # a site against a baseline, side by side
        for run in ("cold", "warm"):
            print(f"{label[sites[0]]} / {label[sites[1]]}, {run} first cell: "
                  f"{first[0][run]['first cell'] / first[1][run]['first cell']:.2f}")
        cpu = [floors[site]["first cell"]["cpu"] for site in sites]
        print(f"{label[sites[0]]} / {label[sites[1]]}, first cell in Node, CPU: {cpu[0] / cpu[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
