"""Build the zero-install edition (``make lite``): a static JupyterLite site in ``build/lite/`` whose Python is
Pyodide in the student's browser, with ppedu installed in every kernel from the first cell.

Everything comes from the package registries, never from a CDN: JupyterLite's build tools and the browser's
pure-Python wheels from PyPI (``lite/requirements*.txt``, pinned), Pyodide's core (the WebAssembly interpreter,
its standard library) from npm, and ppedu's own wheel built here. The site's Pyodide lock file lists only those
wheels, and the kernel is told never to fall back to PyPI, so the site asks nothing of any host but its own.
Downloads and the build tools are kept in ``build/lite-cache/`` and reused.

    python lite/build.py [OUT]      # default: build/lite
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from edition import browser_notebooks  # noqa: E402

CACHE = ROOT / "build" / "lite-cache"
#: The Pyodide that jupyterlite-pyodide-kernel (lite/requirements-build.txt) was released against, from npm.
PYODIDE = "314.0.6"
#: Pyodide's files the site serves as npm has them: the interpreter, the loader (no console pages, no maps); its
#: standard library (python_stdlib.zip) is served compiled.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "package.json")
#: What every kernel loads as it starts (with what they need): the kernel itself and the course.
PRELOADED = ("pyodide-kernel", "ipykernel", "piplite", "micropip", "comm", "ipython", "jedi", "ppedu")
#: ppedu's dependencies that do not run in the browser, and why; any other that is missing stops the build.
ABSENT = {
    "numpy": "Pyodide's build of numpy is served only from Pyodide's CDN: ppedu runs on plain Python here",
    "matplotlib": "Pyodide's build of matplotlib is served only from Pyodide's CDN: figures are drawn as SVG",
    "torch": "PyTorch has no build for the browser: the MNIST lab and PyTorch's reference orders are left out",
    "jupyterlab": "the site is JupyterLab",
    "jupyterlab-slideshow": "no slides in this edition",
    "nbgrader": "nothing is graded in this edition",
    "jsonschema": "pinned only to start nbgrader and JupyterLab sooner; nothing in the browser checks a schema",
    "tqdm": "only the command line's progress bars use it",
    "nbgitpuller": "a browser edition has no clone to update: ppedu update is for the hub and laptops",
    "nbdime": "ppedu update's cell-by-cell merge runs in a clone, never in the browser",
}
MARK = ".ppedu-lite"


def run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise ValueError(f"{Path(str(command[0])).name} {' '.join(map(str, command[1:3]))} failed: {' / '.join(tail)}")
    return done.stdout


def tools() -> Path:
    """JupyterLite's build tools and the widgets' front ends, in a virtual environment of their own (reused while
    lite/requirements-build.txt is unchanged). Its Python."""
    venv, wanted = CACHE / "tools", (HERE / "requirements-build.txt").read_text()
    stamp = venv / "requirements-build.txt"
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "-r", HERE / "requirements-build.txt")
        stamp.write_text(wanted)
    python = venv / "bin" / "python"
    expected = run(python, "-c", "from jupyterlite_pyodide_kernel.constants import PYODIDE_VERSION as v; print(v)").strip()
    if expected != PYODIDE:
        raise ValueError(f"jupyterlite-pyodide-kernel expects Pyodide {expected}, this build pins {PYODIDE}: "
                         "pin the version npm serves for it (npm view pyodide versions)")
    return python


def pyodide() -> Path:
    """Pyodide's core from npm (``npm pack``, kept in the cache), unpacked: its folder."""
    folder = CACHE / f"pyodide-{PYODIDE}"
    if not (folder / "pyodide-lock.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            raise ValueError("the browser edition needs npm (for Pyodide's core): install Node.js and npm")
        (CACHE / "npm").mkdir(parents=True, exist_ok=True)
        name = run(npm, "pack", f"pyodide@{PYODIDE}", "--pack-destination", CACHE / "npm", "--silent").split()[-1]
        shutil.rmtree(folder, ignore_errors=True)
        with tarfile.open(CACHE / "npm" / name) as archive:
            archive.extractall(CACHE / "npm" / "unpacked", filter="data")
        (CACHE / "npm" / "unpacked" / "package").rename(folder)
    return folder


def wheels(tools_python: Path) -> list[Path]:
    """Every wheel the browser's Python may load: lite/requirements.txt's (from PyPI, for Pyodide's Python, pure
    Python only), the kernel's own (shipped inside jupyterlite-pyodide-kernel) and ppedu's, built afresh."""
    folder = CACHE / "wheels"
    pinned = [line.split("#")[0].strip() for line in (HERE / "requirements.txt").read_text().splitlines()]
    pinned = [line for line in pinned if line]
    have = {_name(w): w for w in folder.glob("*.whl")}
    if any(_normal(spec.split("==")[0]) not in have for spec in pinned):
        run(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--dest", folder,
            "--python-version", "3.14", "--implementation", "py", "--abi", "none", "--platform", "any",
            "-r", HERE / "requirements.txt")
    found = sorted(folder.glob("*.whl"))
    kernel_wheels = run(tools_python, "-c", "import sys, pathlib; print(*sorted((pathlib.Path(sys.prefix) / 'share/jupyter/"
                        "labextensions/@jupyterlite/pyodide-kernel-extension/static/pypi').glob('*.whl')), sep='\\n')")
    kernel = [Path(p) for p in kernel_wheels.split()]
    kernel = [w for w in kernel if not w.name.startswith("widgetsnbextension-3")]  # ipywidgets 8 takes 4.x
    # ppedu's wheel, from a clean copy of its sources (a build in the work tree would leave build/lib behind).
    source, own = CACHE / "ppedu-source", CACHE / "ppedu-wheel"
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(own, ignore_errors=True)
    # (not the MNIST lab's data: 1.9 MB the browser would fetch and unpack at every start, for a lab it leaves out)
    shutil.copytree(ROOT / "ppedu", source / "ppedu", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.gz"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", own, source)
    return [*found, *kernel, *own.glob("ppedu-*.whl")]


def compiled(core: Path, found: list[Path]) -> list[Path]:
    """``found`` (wheels, and Pyodide's standard library as npm ships it, sources only) with their Python compiled to
    the browser's Python's bytecode (``lite/compile.mjs``, Pyodide in Node): the kernel then imports the standard
    library, IPython and ppedu without compiling them at every start (seconds, on a laptop). Kept in the cache by each
    archive's hash."""
    node = shutil.which("node")
    if node is None:
        raise ValueError("the browser edition needs Node.js (it comes with npm) to compile its wheels")
    result, todo = [], []
    for archive in found:
        target = CACHE / "compiled" / hashlib.sha256(archive.read_bytes()).hexdigest()[:16] / archive.name
        result.append(target)
        if not target.exists():
            todo.append((archive, target))
    if todo:
        work = CACHE / "compiling"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        run(node, HERE / "compile.mjs", core, work, *(archive for archive, _ in todo))
        for archive, target in todo:
            target.parent.mkdir(parents=True, exist_ok=True)
            (work / archive.name).rename(target)
    return result


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _name(wheel: Path) -> str:
    return _normal(wheel.name.split("-")[0])


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        info = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        return Parser().parsestr(z.read(info).decode())


def _imports(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        tops = {n.split("/")[0] for n in z.namelist() if "/" in n}
    return sorted(t for t in tops if not t.endswith((".dist-info", ".data")) and t.isidentifier())


def lock(core: Path, found: list[Path], out: Path) -> list[str]:
    """Write Pyodide's lock file into ``out`` (beside the wheels, copied there) for ``found`` alone, each wheel's
    dependencies as Pyodide's Python (Emscripten, Python 3.14) reads its metadata. Returns what the kernel preloads."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    upstream = json.loads((core / "pyodide-lock.json").read_text())
    python = upstream["info"]["python"]
    environment = default_environment() | {
        "sys_platform": "emscripten", "platform_system": "Emscripten", "platform_machine": "wasm32", "os_name": "posix",
        "python_version": ".".join(python.split(".")[:2]), "python_full_version": python,
        "implementation_name": "cpython", "platform_python_implementation": "CPython",
    }
    by_name = {_name(w): w for w in found}
    packages, missing = {}, []
    for name, wheel in sorted(by_name.items()):
        meta = _metadata(wheel)
        depends = []
        for text in meta.get_all("Requires-Dist") or []:
            need = Requirement(text)
            if need.marker and not need.marker.evaluate(environment | {"extra": ""}):
                continue
            if _normal(need.name) in by_name:
                depends.append(_normal(need.name))
            elif name == "ppedu" and _normal(need.name) in ABSENT:
                continue
            else:
                missing.append(f"{name} needs {need.name}")
        shutil.copy2(wheel, out / wheel.name)
        packages[name] = {
            "name": name, "version": meta["Version"], "file_name": wheel.name, "install_dir": "site",
            "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "package_type": "package",
            "imports": _imports(wheel), "depends": sorted(depends), "unvendored_tests": False,
        }
    if missing:
        raise ValueError("the browser lacks a dependency: " + "; ".join(missing) + " (add it to lite/requirements.txt,"
                         " or to lite/build.py's ABSENT if it must not run in the browser)")
    (out / "pyodide-lock.json").write_text(json.dumps({"info": upstream["info"], "packages": packages}, indent=1))
    return [p for p in PRELOADED if p in packages]


def stage(tools_python: Path) -> Path:
    """The JupyterLite project the site is built from: Pyodide with its wheels, the settings, the notebooks."""
    lite_dir = CACHE / "stage"
    shutil.rmtree(lite_dir, ignore_errors=True)
    target = lite_dir / "static" / "pyodide"
    target.mkdir(parents=True)
    core = pyodide()
    for name in PYODIDE_FILES:
        shutil.copy2(core / name, target / name)
    stdlib, *found = compiled(core, [core / "python_stdlib.zip", *wheels(tools_python)])
    shutil.copy2(stdlib, target / stdlib.name)
    preload = lock(core, found, target)
    settings = {"pyodideUrl": "./static/pyodide/pyodide.mjs", "disablePyPIFallback": True,
                "loadPyodideOptions": {"packages": preload}}  # the lock file beside pyodide.mjs is the site's own
    config = {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
        "appName": "ppedu (in the browser)",
        "litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": settings},
        "disabledExtensions": ["@jupyterlab/apputils-extension:announcements"],
    }}
    (lite_dir / "jupyter-lite.json").write_text(json.dumps(config, indent=1))
    # Every cell stays rendered (the notebooks are short): a widget scrolled out of view keeps its drawing, and a
    # notebook's text is all there for the browser's find and a screen reader.
    (lite_dir / "overrides.json").write_text(json.dumps({"@jupyterlab/notebook-extension:tracker": {
        "windowingMode": "none"}}, indent=1))
    browser_notebooks(ROOT, lite_dir / "files")
    return lite_dir


def build(out: Path) -> Path:
    """Build the site into ``out`` (replacing an earlier site there) and return it."""
    if out.exists() and any(out.iterdir()) and not (out / MARK).exists():
        raise ValueError(f"{out} is not empty and not an earlier browser edition: give an empty or new folder")
    tools_python = tools()
    lite_dir = stage(tools_python)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # The course's own JupyterLab extension: here, a cell run while Python starts runs once it is ready.
    run(tools_python, "-m", "jupyterlite_core", "build", "--lite-dir", lite_dir, "--contents", lite_dir / "files",
        "--output-dir", out, "--apps", "lab", "--apps", "notebooks", "--no-sourcemaps", "--no-unused-shared-packages",
        f"--LiteBuildConfig.federated_extensions={ROOT / 'ppedu' / 'labextension'}", cwd=lite_dir)
    # After the build, which empties its output folder first: the next build knows the folder for its own.
    (out / MARK).write_text("made by `make lite`; serve this folder as it is (python -m http.server)\n")
    return out


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print("usage: python lite/build.py [OUT]", file=sys.stderr)
        return 2
    began = time.perf_counter()
    try:
        out = build(Path(argv[0]).resolve() if argv else ROOT / "build" / "lite")
    except ValueError as error:
        print(f"browser edition: {error}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"browser edition in {out}: {size / 2**20:.0f} MiB, built in {time.perf_counter() - began:.0f} s; "
          f"serve it with: python -m http.server --directory {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
