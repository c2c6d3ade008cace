"""Running a student's code in a bubblewrap sandbox (Linux): the system and the Python environment
read-only, a minimal ``/etc``, a ``ppedu`` of the grader's choosing first on the import path, no
network, private size-limited ``/tmp``, home and connection folder, and limits on CPU time, memory,
processes, open files and file size.

Two kinds of process run in one: a notebook's kernel (:class:`SandboxedKernelManager`, over a private
copy of the notebook's folder) and a one-off interpreter that is handed its work on standard input
(the autograder's evaluator). A kernel's sockets live in the sandbox's own memory-backed folder;
the grading process reaches them through ``/proc/<pid>/root`` (TCP would not cross the sandbox's
network namespace, and a folder shared with the host would be space the kernel could fill).

>>> isinstance(unavailable(), (str, type(None)))
True
"""

from __future__ import annotations

import asyncio
import errno
import functools
import json
import os
import platform
import select
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.utils import ensure_async
from traitlets import Instance

import ppedu

#: Inside the sandbox: the folder's copy (read-only), the working directory the kernel starts in (a
#: copy of that in the home folder), the ``ppedu`` it imports, and the kernel's connection folder. The library's
#: folder is one no Python environment lives under (the course's hub installs in /opt/ppedu, bound read-only
#: here: a mount point inside it could not be made).
FOLDER = "/submission"
HOME = "/home/student"
WORK = f"{HOME}/work"
LIBRARY = "/grader-library"
RUN = "/run/ppedu"
#: When the grader is root, each sandbox runs as a user id no sandbox had before on this machine (see :func:`_user_id`),
#: counted up from this base in a folder only root can make: systemd's unused range, above the ones it gives containers
#: (524288–1879048191) and below the ids many tools read as negative.
SANDBOX_UIDS = 0x7000_0000
LAST_SANDBOX_UID = 0x7FFF_FFFF
UID_LOCKS = Path("/run/ppedu-sandbox-uids")
#: The system calls no sandbox may make, per architecture (the audit architecture, their numbers, the x32 bit): the
#: kernel's keyrings (add_key, request_key, keyctl), which it keeps per user id, beyond the processes that made them,
#: and which no namespace of bubblewrap's separates (keyrings(7)); and bpf (objects that can outlive a process). They
#: fail with EPERM, as in Docker's default profile. Elsewhere no call is filtered (each sandbox's user id is new
#: anyway).
BLOCKED_CALLS = {"x86_64": (0xC000_003E, (248, 249, 250, 321), 0x4000_0000),
                 "aarch64": (0xC000_00B7, (217, 218, 219, 280), 0)}
#: Files of a notebook's folder copied into its sandbox at most (its bytes are held to the scratch space's size).
FOLDER_FILES = 500
#: The largest message a kernel may send (a bigger one closes its connection: the cell then stops the kernel).
MAX_MESSAGE = 128 * 2**20
#: What importing a package that a sandbox must not have says.
ABSENT = "not available here: while your answer is checked, this package is not installed"
#: What of /etc a Python program needs (the dynamic linker's cache, time zone, the links Debian keeps there);
#: the rest — users, hosts, the machine's configuration — stays out of view.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "mime.types", "fonts")


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use: CPU seconds, address space, processes, bytes per file written,
    open files, and the size of each private memory-backed folder (/tmp, home, connection folder)."""

    cpu_seconds: int = 900
    memory_bytes: int = 2 * 2**30
    processes: int = 64
    file_bytes: int = 64 * 2**20
    open_files: int = 512
    scratch_bytes: int = 256 * 2**20
    run_bytes: int = 2**20


@dataclass(frozen=True)
class Sandbox:
    """One sandbox: ``base`` is the grading side's private folder for it (the copy of the notebook's
    folder, the connection file, the user list); ``library`` is the ``ppedu`` package it imports
    (bound at :data:`LIBRARY`); ``absent`` are package folders of the host that, inside, only raise
    ImportError (:data:`ABSENT`)."""

    base: Path
    library: Path
    workdir: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    limits: Limits = Limits()
    uid: int = SANDBOX_UIDS

    @property
    def connection_file(self) -> Path:
        return self.base / "kernel.json"

    def wrap(self, argv: Sequence[str], info_fd: int | None = None) -> list[str]:
        """``argv`` as a command that runs it inside the sandbox (``info_fd``: where bubblewrap writes
        the sandboxed process's id)."""
        bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
        # As root, no user namespace: the process then drops to a real user id of its own (see _LAUNCH).
        args = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--clearenv", *([] if os.geteuid() == 0 else ["--unshare-user"])]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        if os.path.isdir("/usr"):
            args += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        args += ["--perms", "0755", "--dir", "/etc"]
        for name in ETC:
            if os.path.exists(f"/etc/{name}"):
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind", str(self.base / "passwd"), "/etc/passwd", "--ro-bind", str(self.base / "group"), "/etc/group"]
        size, run = str(self.limits.scratch_bytes), str(self.limits.run_bytes)
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                 "--perms", "0755", "--dir", "/home", "--perms", "1777", "--size", size, "--tmpfs", HOME]
        # After the private /tmp and home, so that an environment installed under either is still seen.
        for path in _environment():
            args += [*_parents(path), "--ro-bind", path, path]
        for path in self.absent:  # a package that only says it is not there, over what this sandbox must not have
            args += ["--ro-bind", str(self.base / "absent"), path]
        args += [*_parents(f"{LIBRARY}/ppedu"), "--ro-bind", str(self.library), f"{LIBRARY}/ppedu",
                 "--perms", "0755", "--dir", "/run", "--perms", "1777", "--size", run, "--tmpfs", RUN]
        if self.connection_file.exists():
            args += ["--ro-bind", str(self.connection_file), f"{RUN}/kernel.json"]
        if self.workdir is not None:
            args += ["--ro-bind", str(self.workdir), FOLDER]
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "USER": "student",
               "LOGNAME": "student", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
               # the grader's ppedu first; never the notebook's folder (a `ppedu/` shipped there would shadow it)
               "PYTHONPATH": LIBRARY, "PYTHONSAFEPATH": "1", "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": "/tmp/matplotlib",
               "PYDEVD_DISABLE_FILE_VALIDATION": "1", **self.env}
        for name, value in env.items():
            args += ["--setenv", name, value]
        return [*args, "--chdir", "/", "--", sys.executable, "-I", "-c", _LAUNCH,
                repr((self.uid, self._rlimits(), self.workdir is not None, syscall_filter())), *argv]

    def _rlimits(self) -> tuple[tuple[str, int], ...]:
        lim = self.limits
        return (("RLIMIT_CPU", lim.cpu_seconds), ("RLIMIT_AS", lim.memory_bytes), ("RLIMIT_FSIZE", lim.file_bytes),
                ("RLIMIT_NOFILE", lim.open_files), ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", lim.processes))


#: Run inside the sandbox before the real program: set the limits, leave root, leave the keyring session it was started
#: in (for one of its own) and filter its system calls (:data:`BLOCKED_CALLS`), copy the folder, become the program.
_LAUNCH = f"""
import ast, ctypes, os, resource, shutil, sys
uid, limits, copy, program = ast.literal_eval(sys.argv[1])
for name, value in limits:
    resource.setrlimit(getattr(resource, name), (value, value))
if os.getuid() == 0:
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
if program:
    keyctl, code = program
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(keyctl, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a new, empty session
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    buffer = ctypes.create_string_buffer(code, len(code))
    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    filters = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(38, 1, None, 0, 0) or libc.prctl(22, 2, ctypes.addressof(filters), 0, 0):
        sys.exit("the sandbox's filter of system calls could not be set")
if copy:
    shutil.copytree("{FOLDER}", "{WORK}", symlinks=True)
    os.chdir("{WORK}")
os.execv(sys.argv[2], sys.argv[2:])
"""


@functools.cache
def syscall_filter() -> tuple[int, bytes] | None:
    """keyctl's number and the seccomp program (classic BPF) that makes every call of :data:`BLOCKED_CALLS` fail with
    EPERM on this machine's architecture (any other architecture's calls, such as 32-bit ones, fail alike); ``None``
    where the architecture is not listed."""
    known = BLOCKED_CALLS.get(platform.machine())
    if known is None:
        return None
    arch, numbers, x32 = known
    load, equal, at_least, give = 0x20, 0x15, 0x35, 0x06
    code: list[tuple[int, int | str, int | str, int]] = [(load, 0, 0, 4), (equal, 0, "deny", arch), (load, 0, 0, 0)]
    if x32:
        code.append((at_least, "deny", 0, x32))
    code += [(equal, "deny", 0, n) for n in numbers]
    code += [(give, 0, 0, 0x7FFF_0000), (give, 0, 0, 0x0005_0000 | errno.EPERM)]
    deny = len(code) - 1
    program = b"".join(struct.pack("=HBBI", op, *(deny - i - 1 if j == "deny" else j for j in (jt, jf)), k)
                       for i, (op, jt, jf, k) in enumerate(code))
    return numbers[2], program


def _parents(path: str | Path) -> list[str]:
    """bwrap arguments that make ``path``'s folders (which bwrap would make root-only) readable."""
    args = []
    for parent in reversed(Path(path).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _environment() -> list[str]:
    """The Python installation and the environment: read-only in the sandbox (ppedu is bound apart)."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    return sorted(p for p in paths if not any(p != q and p.startswith(q + os.sep) for q in paths))


def installed_ppedu() -> Path:
    """The folder of the ppedu package this process runs (the one every sandbox it starts imports)."""
    return Path(ppedu.__file__).resolve().parent


def hidden_copies() -> tuple[str, ...]:
    """ppedu's own folder, where a sandbox would otherwise see it (a non-editable install lies inside the
    environment): shown empty, so that only the library bound at :data:`LIBRARY` can be imported."""
    own = str(installed_ppedu())
    return tuple(own for root in _environment() if own.startswith(root + os.sep))


def _own_folder(path: Path) -> Path:
    """``path``, a folder only this user can open, made if missing; an error if it is anything else (a link, or a
    folder someone else made or can open), never followed."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise RuntimeError(f"{path} is not the grader's own folder (a link, or a folder others made or can open): "
                           "remove it and grade again")
    return path


def _user_id() -> int:
    """The user id one sandbox runs as: as root, one no sandbox had before on this machine (what the kernel keeps per
    user id beyond a process — keyrings, quotas, anything still to be found — then belongs to no later submission),
    and nobody's (not in the user list, nor a range /etc/subuid or /etc/subgid gives containers); else ours."""
    if os.geteuid() != 0:
        return os.geteuid()
    import fcntl  # here: ppedu's check runs on Windows too, without a sandbox

    fd = os.open(_own_folder(UID_LOCKS) / "next", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        uid = max(int(text) if text.isdigit() else 0, SANDBOX_UIDS)
        given = _subordinate_ranges()
        while _someones(uid, given):
            uid += 1
        if uid > LAST_SANDBOX_UID:
            raise RuntimeError(f"every sandbox user id has been used ({UID_LOCKS}/next)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(uid + 1).encode(), 0)
        return uid
    finally:
        os.close(fd)


def _subordinate_ranges() -> list[range]:
    """The ids /etc/subuid and /etc/subgid give users' containers."""
    ranges = []
    for name in ("/etc/subuid", "/etc/subgid"):
        try:
            lines = Path(name).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                ranges.append(range(int(fields[1]), int(fields[1]) + int(fields[2])))
    return ranges


def _someones(uid: int, given: Sequence[range]) -> bool:
    import grp
    import pwd

    if any(uid in r for r in given):
        return True
    try:
        pwd.getpwuid(uid)
    except KeyError:
        try:
            grp.getgrgid(uid)
        except KeyError:
            return False
    return True


@contextmanager
def prepared(folder: Path | None = None, library: Path | None = None, absent: Sequence[str] = (),
             env: Mapping[str, str] = {}, limits: Limits = Limits()) -> Iterator[Sandbox]:
    """A sandbox over a private copy of ``folder`` (``None``: no folder) importing the ``ppedu`` at
    ``library`` (by default this process's own). Everything is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="ppedu-sandbox-") as tmp:
        base, uid = Path(tmp), _user_id()  # 0700: only the grader opens it; the sandbox sees what is bound from it
        (base / "passwd").write_text(f"root:x:0:0::/root:/bin/false\nstudent:x:{uid}:{uid}::{HOME}:/bin/false\n")
        (base / "group").write_text(f"root:x:0:\nstudent:x:{uid}:\n")
        (base / "absent").mkdir(mode=0o755)
        (base / "absent" / "__init__.py").write_text(f"raise ImportError({ABSENT!r})\n")
        work = None
        if folder is not None:
            work = base / "work"
            _copy_plain(Path(folder), work, [limits.scratch_bytes, FOLDER_FILES], skip=base)
        yield Sandbox(base, library or installed_ppedu(), work, dict(env), (*hidden_copies(), *absent), limits, uid)


def _copy_plain(source: Path, target: Path, budget: list[int], skip: Path, depth: int = 0) -> None:
    """``source``'s folders and regular files into ``target`` (readable by any sandbox user: ``target`` lies in the
    grader's own folder), within ``budget`` ([bytes, files], spent as it goes); links, sockets, devices, pipes,
    ``skip`` and checkpoints are left out, as is what the budget does not reach."""
    target.mkdir(mode=0o755)
    try:
        entries = sorted(os.scandir(source), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if budget[1] <= 0 or entry.name == ".ipynb_checkpoints" or Path(entry.path) == skip:
            continue
        if entry.is_dir(follow_symlinks=False) and depth < 8:
            _copy_plain(Path(entry.path), target / entry.name, budget, skip, depth + 1)
        elif entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_size <= budget[0]:
            try:
                shutil.copyfile(entry.path, target / entry.name, follow_symlinks=False)
            except OSError:
                continue
            (target / entry.name).chmod(0o644)
            budget[0] -= entry.stat(follow_symlinks=False).st_size
            budget[1] -= 1


@functools.cache
def unavailable() -> str | None:
    """Why no sandbox can be had here (one line), or ``None`` if bubblewrap works."""
    if sys.platform != "linux":
        return f"bubblewrap sandboxes need Linux (this is {sys.platform})"
    if not shutil.which("bwrap"):
        return "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"
    with prepared() as box:
        try:
            run = subprocess.run(box.wrap([sys.executable, "-c", "import ppedu"]), capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap cannot start a sandbox: {error}"
    if run.returncode:
        return "a sandbox cannot start here: " + (run.stderr.strip().splitlines() or ["no reason given"])[-1]
    return None


def sandbox_pid(info: int, timeout: float = 30) -> int:
    """The id (on this side) of the sandboxed process, as bubblewrap writes it to the pipe ``info``."""
    deadline, data = time.monotonic() + timeout, b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([info], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(info, 4096) if ready else b""
        data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except ValueError:
            if ready and not chunk:
                break
    raise RuntimeError("the sandbox did not start (bubblewrap gave no process id)")


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager that starts its kernel inside :attr:`sandbox` (``None``: as usual)."""

    sandbox = Instance(Sandbox, allow_none=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.sandbox is not None:
            self.transport = "ipc"
            self.ip = f"{RUN}/kernel"  # the kernel's view; ours is set once it runs (_async_launch_kernel)
            self.connection_file = str(self.sandbox.connection_file)
            self._info: tuple[int, int] | None = None
            self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)  # no message of the kernel's is read whole if larger
        self._pins: list[int] = []

    def client(self, **kwargs: Any) -> Any:
        client = super().client(**kwargs)
        if self.sandbox is not None:  # its channels, made later, read no message of the kernel's whole if larger
            client.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        return client

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox is None:
            return cmd
        cmd = [f"{RUN}/kernel.json" if arg == self.connection_file else arg for arg in cmd]
        self._info = os.pipe()
        return self.sandbox.wrap(cmd, info_fd=self._info[1])

    async def _async_pre_start_kernel(self, **kw: Any) -> tuple[list[str], dict[str, Any]]:
        if self.sandbox is not None:
            kw.pop("cwd", None)  # the sandbox chooses the working directory
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.sandbox is not None and os.geteuid() == 0:
            os.chown(self.connection_file, self.sandbox.uid, self.sandbox.uid)  # the kernel, not root, reads it
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if self.sandbox is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        assert self._info is not None
        read, write = self._info
        # what the kernel process writes itself is nobody's output
        kw.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write,))
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
            os.close(write)
            self.ip = await self._pinned(sandbox_pid(read))
        finally:
            os.close(read)

    async def _pinned(self, pid: int, timeout: float = 60) -> str:
        """Where this side connects to the kernel's sockets: links, in the grader's own folder, to descriptors of the
        very sockets the kernel made (opened without following a link, checked to be sockets). The kernel can
        replace its socket files later (with a link to a socket of the host, say): nothing here looks at them
        again, and a reconnection reaches the same sockets or none."""
        inside = f"/proc/{pid}/root{RUN}"
        names = [f"kernel-{getattr(self, f'{c}_port')}" for c in ("shell", "iopub", "stdin", "control", "hb")]
        deadline = time.monotonic() + timeout
        while not all(os.path.lexists(f"{inside}/{n}") for n in names):
            if time.monotonic() > deadline or not await ensure_async(self.is_alive()):
                raise RuntimeError("the sandboxed kernel did not open its sockets")
            await asyncio.sleep(0.02)
        assert self.sandbox is not None
        pins = Path(self.sandbox.base) / "sockets"
        pins.mkdir(mode=0o700, exist_ok=True)
        for name in names:
            fd = os.open(f"{inside}/{name}", os.O_PATH | os.O_NOFOLLOW)
            self._pins.append(fd)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise RuntimeError(f"the sandboxed kernel's {name} is not a socket")
            (pins / name).symlink_to(f"/proc/self/fd/{fd}")
        return str(pins / "kernel")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        for fd in self._pins:
            os.close(fd)
        self._pins.clear()

    async def interrupt_kernel(self) -> None:  # type: ignore[override]
        """By message: a signal would reach bubblewrap, which dies of it, not the kernel."""
        if self.sandbox is None:
            return await super().interrupt_kernel()
        self._connect_control_socket()
        self.session.send(self._control_socket, self.session.msg("interrupt_request", content={}))
