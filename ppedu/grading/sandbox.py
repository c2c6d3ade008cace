"""Running a notebook's kernel in a bubblewrap sandbox (Linux): the system, the Python environment
and ppedu read-only, a private copy of one assignment folder as the only writable place besides a
private ``/tmp`` and home, no network, and limits on CPU time, memory, processes and file size.

The kernel talks to the notebook runner over Unix sockets in a folder shared with the sandbox
(ZeroMQ's ``ipc`` transport): TCP would not cross the sandbox's own network namespace. Used by the
autograder (the course's nbgrader configuration) and by ``ppedu check``.

>>> isinstance(unavailable(), (str, type(None)))
True
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from traitlets import Instance

import ppedu

#: Inside the sandbox: the folder's copy (read-only), and the working directory the kernel starts
#: in, a copy of that in the home folder (memory with a size limit, as /tmp is).
FOLDER = "/submission"
WORK = "/home/student/work"
HOME = "/home/student"
#: When the grader is root, each kernel runs as a user of its own (this base + the grading
#: process's id), so that the per-user process limit counts only that kernel's processes.
SANDBOX_UIDS = 200_000


@dataclass(frozen=True)
class Limits:
    """What one kernel may use: CPU seconds, address space, processes, bytes per file written."""

    cpu_seconds: int = 900
    memory_bytes: int = 2 * 2**30
    processes: int = 64
    file_bytes: int = 64 * 2**20
    open_files: int = 512
    scratch_bytes: int = 256 * 2**20  # each of /tmp and the home folder


@dataclass(frozen=True)
class Sandbox:
    """One kernel's sandbox: ``workdir`` is bound read-only at :data:`FOLDER` and copied to
    :data:`WORK`, where the kernel starts; ``rundir`` holds the kernel's connection file and
    sockets; ``hidden`` maps paths of ppedu's files to stand-ins bound over them (the
    implementations an answer must not call)."""

    workdir: Path
    rundir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    hidden: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = Limits()
    uid: int = SANDBOX_UIDS

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` (a kernel's command line) as a command that runs it inside the sandbox."""
        bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
        # As root, no user namespace: the kernel then drops to a real user id of its own (see _LAUNCH).
        args = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--clearenv", *([] if os.geteuid() == 0 else ["--unshare-user"])]
        for top in ("/usr", "/etc"):
            if os.path.isdir(top):
                args += ["--ro-bind", top, top]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        size = str(self.limits.scratch_bytes)
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                 "--perms", "0755", "--dir", "/home", "--perms", "1777", "--size", size, "--tmpfs", HOME]
        # After the private /tmp and home, so that an environment installed under either is still seen.
        for path in _readable():
            args += [*_parents(path), "--ro-bind", path, path]
        for target, stand_in in self.hidden.items():
            args += ["--ro-bind", stand_in, target]
            cache = Path(target).parent / "__pycache__"
            if cache.is_dir():  # the compiled original would still be readable there
                args += ["--tmpfs", str(cache)]
        args += ["--ro-bind", str(self.workdir), FOLDER,
                 *_parents(self.rundir), "--bind", str(self.rundir), str(self.rundir), "--chdir", "/"]
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": HOME,
               "LANG": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
               "MPLCONFIGDIR": "/tmp/matplotlib", "PYDEVD_DISABLE_FILE_VALIDATION": "1", **self.env}
        for name, value in env.items():
            args += ["--setenv", name, value]
        return [*args, "--", sys.executable, "-I", "-c", _LAUNCH, repr((self.uid, self._rlimits())), *argv]

    def _rlimits(self) -> tuple[tuple[str, int], ...]:
        lim = self.limits
        return (("RLIMIT_CPU", lim.cpu_seconds), ("RLIMIT_AS", lim.memory_bytes), ("RLIMIT_FSIZE", lim.file_bytes),
                ("RLIMIT_NOFILE", lim.open_files), ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", lim.processes))


#: Run inside the sandbox before the kernel: set the limits, leave root, become the kernel.
_LAUNCH = f"""
import ast, os, resource, shutil, sys
uid, limits = ast.literal_eval(sys.argv[1])
for name, value in limits:
    resource.setrlimit(getattr(resource, name), (value, value))
if os.getuid() == 0:
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
shutil.copytree("{FOLDER}", "{WORK}", symlinks=True)
os.chdir("{WORK}")
os.execv(sys.argv[2], sys.argv[2:])
"""


def _parents(path: str | Path) -> list[str]:
    """bwrap arguments that make ``path``'s folders (which bwrap would make root-only) readable."""
    args = []
    for parent in reversed(Path(path).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _readable() -> list[str]:
    """The Python installation, the environment and ppedu: read-only in the sandbox."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix),
             os.path.realpath(Path(ppedu.__file__).parent)}
    return sorted(p for p in paths if not any(p != q and p.startswith(q + os.sep) for q in paths))


@functools.cache
def unavailable() -> str | None:
    """Why no sandbox can be had here (one line), or ``None`` if bubblewrap works."""
    if sys.platform != "linux":
        return f"bubblewrap sandboxes need Linux (this is {sys.platform})"
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)
        box = Sandbox(Path(tmp), Path(tmp))
        try:
            run = subprocess.run(box.wrap([sys.executable, "-c", "pass"]), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap cannot start a sandbox: {error}"
    if run.returncode:
        return "bubblewrap cannot start a sandbox here: " + (run.stderr.strip().splitlines() or ["no reason given"])[-1]
    return None


def stand_in(source: str, names: Sequence[str] | None, why: str) -> str:
    """``source`` (a module's text) with the bodies of the top-level functions ``names`` (empty: all) replaced
    by ``raise ImportError(why)``: the module still imports, those functions are not there. ``None``: the
    module itself does not import."""
    if names is None:
        return f"raise ImportError({why!r})\n"
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not names or node.name in names):
            node.body = [ast.parse(f"raise ImportError({why!r})").body[0]]
    return ast.unparse(tree) + "\n"


@contextmanager
def prepared(folder: Path, hide: Mapping[str, Sequence[str] | None] = {}, why: str = "",
             env: Mapping[str, str] = {}) -> Iterator[Sandbox]:
    """A sandbox over a private copy of ``folder``; ``hide`` maps modules (dotted names) to the
    functions in them to take away (empty: all of them; ``None``: the whole module). Everything is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="ppedu-sandbox-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        work, run = base / "work", base / "run"
        shutil.copytree(folder, work, symlinks=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        run.mkdir()
        hidden = {}
        for module, names in hide.items():
            spec = importlib.util.find_spec(module)
            if spec is None or spec.origin is None:  # not installed: nothing to take away
                continue
            original = Path(spec.origin)
            replacement = base / f"{module}.py"
            replacement.write_text(stand_in(original.read_text(), names, why))
            hidden[str(original.resolve())] = str(replacement)
        uid = SANDBOX_UIDS + os.getpid() % 100_000
        if os.geteuid() == 0:
            os.lchown(run, uid, uid)
            for path in (work, *work.rglob("*")):  # readable by the kernel, whatever the submission's modes
                path.chmod(0o755 if path.is_dir() and not path.is_symlink() else 0o644) if not path.is_symlink() else None
        yield Sandbox(work, run, dict(env), hidden, uid=uid)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager that starts its kernel inside :attr:`sandbox` (``None``: as usual)."""

    sandbox = Instance(Sandbox, allow_none=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.sandbox is not None:
            self.transport = "ipc"
            self.ip = str(self.sandbox.rundir / "kernel")
            self.connection_file = str(self.sandbox.rundir / "kernel.json")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        return cmd if self.sandbox is None else self.sandbox.wrap(cmd)

    async def _async_pre_start_kernel(self, **kw: Any) -> tuple[list[str], dict[str, Any]]:
        if self.sandbox is not None:
            kw.pop("cwd", None)  # the sandbox chooses the working directory
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.sandbox is not None and os.geteuid() == 0:
            os.chmod(self.connection_file, 0o644)  # the kernel, not root, reads it
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if self.sandbox is not None:  # what the kernel process writes itself is nobody's output
            kw.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await super()._async_launch_kernel(kernel_cmd, **kw)

    async def interrupt_kernel(self) -> None:  # type: ignore[override]
        """By message: a signal would reach bubblewrap, which dies of it, not the kernel."""
        if self.sandbox is None:
            return await super().interrupt_kernel()
        self._connect_control_socket()
        self.session.send(self._control_socket, self.session.msg("interrupt_request", content={}))
