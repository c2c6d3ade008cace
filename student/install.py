"""Set up the course without ``make`` (Windows, or anywhere): ``python install.py``, then ``python install.py --lab``.

It creates ``.venv`` beside the course, installs PyTorch's CPU build where PyTorch's CPU index can be reached (on
Linux PyPI's default build brings several GB of CUDA libraries the course never uses; on macOS and Windows PyPI's
build is the CPU one), then the course, and says what it installed and how much disk it takes. ``--light`` leaves
torch out: chapters 1-6, the formula sheet, the practice set, ``counting`` and ps1-ps4 need none of it (the MNIST
lab, chapter 7, and ps5 do). ``--lab`` starts JupyterLab on the course with the environment's tools (``nbgrader``,
``ppedu``) on the PATH of its terminals. ``make lab`` and ``make install`` run this same script.

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The course: this folder in the students' release, its parent in the instructors' repository (student/install.py).
COURSE = HERE if (HERE / "pyproject.toml").is_file() else HERE.parent
TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Written last, so that an interrupted install is done again (the Makefile's target).
STAMP = ".installed"
#: Set in every server a JupyterHub starts: the course is installed on the hub already.
HUB_VARIABLE = "JUPYTERHUB_API_TOKEN"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    venv = Path(args.venv).resolve()
    if os.environ.get(HUB_VARIABLE):
        if args.lab:
            print("install.py: this is a server on the course's JupyterHub, where the course is installed and "
                  "JupyterLab runs already: open the notebooks from its file browser (a second JupyterLab started "
                  "here cannot be reached)", file=sys.stderr)
            return 2
        print("install.py: the course's JupyterHub has the course installed already; this makes a second copy",
              file=sys.stderr)
    try:
        if args.lab:
            return lab(venv, args)
        install(venv, args)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"install.py: {error}", file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="install.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=str(COURSE / ".venv"), help="the environment to create (default: .venv)")
    parser.add_argument("--light", action="store_true", help="no torch (all but the MNIST lab and ps5)")
    parser.add_argument("--torch", default=TORCH, metavar="SPEC", help=f"the torch to install (default {TORCH})")
    parser.add_argument("--extras", default="", help="more of the course's pip extras, comma-separated")
    parser.add_argument("--no-editable", action="store_true", help="copy the course into the environment (a "
                        "shared environment, where the course folder is private) instead of linking to it")
    parser.add_argument("--lab", action="store_true", help="start JupyterLab on the course (after installing)")
    parser.add_argument("--host", default="127.0.0.1", help="where JupyterLab listens (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--no-browser", action="store_true", help="open no browser (a server without a screen)")
    return parser


def scripts(venv: Path) -> Path:
    """The environment's folder of programs (``bin``, or ``Scripts`` on Windows)."""
    return venv / ("Scripts" if os.name == "nt" else "bin")


def python(venv: Path) -> Path:
    return scripts(venv) / ("python.exe" if os.name == "nt" else "python")


def cpu_index_reachable(timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{CPU_INDEX}/torch/", method="HEAD"), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def install(venv: Path, args: argparse.Namespace) -> None:
    pip = [str(python(venv)), "-m", "pip", "install", "--quiet"]
    if not python(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    extras = [e for e in args.extras.split(",") if e.strip()]
    torch_from = None
    if not args.light:
        extras.append("torch")
        # On Linux PyPI's torch is the CUDA build; PyTorch's own index has the CPU one. Elsewhere PyPI's is the CPU one.
        torch_from = CPU_INDEX if platform.system() == "Linux" and cpu_index_reachable() else "the default index"
        subprocess.run([*pip, *args.torch.split(), *(["--index-url", CPU_INDEX] if torch_from == CPU_INDEX else [])],
                       check=True)
    target = f"{COURSE}[{','.join(extras)}]" if extras else str(COURSE)
    # -qq: pip's errors only, not setuptools' notes on how editable installs work, which are not the student's business
    subprocess.run([*pip, "--quiet", *([] if args.no_editable else ["-e"]), target], check=True)
    # jupyterlab-rise's slide page cannot load the widget manager, so its slides show dead widgets; lecture mode is
    # jupyterlab-slideshow's deck instead. Take it out of an environment made before.
    subprocess.run([*pip[:3], "uninstall", "--quiet", "--yes", "jupyterlab-rise"], capture_output=True)
    terminals_config(venv)
    no_news(venv)
    lecture_extension(venv)
    print(report(venv, torch_from))
    (venv / STAMP).write_text("made by install.py\n")


def terminals_config(venv: Path) -> None:
    """JupyterLab's terminals with the environment's programs first on PATH. Started without a terminal of its own
    (by JupyterHub, or in the background), Jupyter runs a login shell, whose /etc/profile sets PATH anew: here the
    login shell runs first, then the environment's folder goes in front, then the user's own shell."""
    if os.name == "nt":
        return
    path = venv / "etc" / "jupyter" / "jupyter_server_config.json"  # the environment's own (the .d folder is for
    settings = json.loads(path.read_text()) if path.is_file() else {}  # enabling extensions only)
    command = f'PATH="{scripts(venv)}:$PATH"; export PATH; exec "${{SHELL:-/bin/sh}}" -i'
    settings.setdefault("ServerApp", {})["terminado_settings"] = {"shell_command": ["/bin/sh", "-lc", command]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")


#: JupyterLab's news and update check (a pop-up asking to fetch Jupyter's news, over the deck's arrows on a slide).
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"


def no_news(venv: Path) -> None:
    """JupyterLab in the environment without its news pop-up and update check: students and lecturers never see it
    (in the environment's own ``labconfig``, which every JupyterLab started from it reads, the hub's included)."""
    path = venv / "etc" / "jupyter" / "labconfig" / "page_config.json"
    settings = json.loads(path.read_text()) if path.is_file() else {}
    settings.setdefault("disabledExtensions", {})[ANNOUNCEMENTS] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")


#: The course's JupyterLab extension for lecture mode (a clicker's keys, a presenter view): prebuilt in the library.
LECTURE_EXTENSION = Path("ppedu") / "labextension"


def lecture_extension(venv: Path) -> None:
    """The lecture extension where the environment's JupyterLab finds it. A copied install (``--no-editable``, the
    hub) has it from pip already (pyproject's data-files); an editable one does not (setuptools leaves data files out
    of editable installs), so it gets a link to the course's own copy, which follows the course's updates."""
    target = venv / "share" / "jupyter" / "labextensions" / "ppedu-lecture"
    source = COURSE / LECTURE_EXTENSION
    if target.exists() or not (source / "package.json").is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():  # a link to a course folder that moved
        target.unlink()
    try:
        target.symlink_to(source, target_is_directory=True)
    except OSError:  # Windows without the right to make links
        import shutil

        shutil.copytree(source, target)


#: Run by the environment's own Python: what is installed there, and its size on disk.
_SIZES = r"""
import json, sys
from importlib.metadata import distributions
sizes = {}
for dist in distributions():
    size = sum(f.size or 0 for f in dist.files or ())
    sizes[dist.metadata["Name"].lower()] = [dist.version, size]
print(json.dumps(sizes))
"""


def installed(venv: Path) -> dict[str, tuple[str, int]]:
    """Each distribution in the environment: (version, bytes on disk)."""
    done = subprocess.run([str(python(venv)), "-c", _SIZES], check=True, capture_output=True, text=True)
    return {name: (version, size) for name, (version, size) in json.loads(done.stdout).items()}


def disk_use(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_symlink() and p.is_file())


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def report(venv: Path, torch_from: str | None) -> str:
    """What was installed, in words: which torch (CPU build or CUDA libraries) and the environment's size."""
    dists = installed(venv)
    nvidia = {name: size for name, (_, size) in dists.items() if name.startswith("nvidia-") or name == "triton"}
    lines = [f"The course is installed in {venv} ({_size(disk_use(venv))} on disk, {len(dists)} packages)."]
    if "torch" not in dists:
        lines.append("No torch (a light install): chapters 1-6, the formula sheet, the practice set, counting and "
                     "ps1-ps4 run; the MNIST lab (chapter 7) and ps5 need torch (install again without --light).")
    else:
        version, size = dists["torch"]
        if nvidia:
            lines.append(f"torch {version} is the CUDA build: with it came {len(nvidia)} NVIDIA CUDA packages "
                         f"({_size(sum(nvidia.values()))}), which the course never uses. "
                         + ("PyTorch's CPU index could not be reached from here; "
                            if torch_from != CPU_INDEX else "")
                         + "`--light` leaves torch out (everything but the MNIST lab and ps5).")
        else:
            lines.append(f"torch {version} ({_size(size)}): the CPU build"
                         + (f", from {torch_from}." if torch_from else "."))
    return "\n".join(lines)


def lab(venv: Path, args: argparse.Namespace) -> int:
    if not (venv / STAMP).exists():
        install(venv, args)
    no_news(venv)  # an environment installed before the course switched the news off
    lecture_extension(venv)  # or before it had its lecture extension
    env = {**os.environ, "PATH": f"{scripts(venv)}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [str(scripts(venv) / "jupyter"), "lab", f"--ServerApp.ip={args.host}", f"--ServerApp.port={args.port}",
               f"--ServerApp.open_browser={not args.no_browser}", f"--ServerApp.root_dir={COURSE}",
               "--ServerApp.default_url=/lab/tree/notebooks"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # as root, JupyterLab refuses to start without it
    if os.name == "nt":
        return subprocess.run(command, env=env).returncode
    os.execve(command[0], command, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
