"""Limits on each user's server on the course's JupyterHub (hub/jupyterhub_config.py): memory, tasks (processes and
threads) and CPU for the server and everything it starts (kernels, terminals, what a student runs in them), so that
one runaway kernel cannot take the machine from the class.

Where the machine lets the hub make control groups (cgroup v2 with the memory, pids and cpu controllers, or v1's
memory, pids and cpu hierarchies, as a container or a machine without systemd often has), each server runs in a group
of its own, ``ppedu-users/<user>`` under the hub's group: the memory limit holds for the server and its kernels
together (past it the kernel's OOM killer stops the group's biggest process, the student's kernel, and no one
else's), the tasks limit stops a fork bomb, and the CPU limit caps the cores the group may use. Elsewhere the same
limits are set per process (``RLIMIT_NPROC`` for the user's tasks, ``RLIMIT_CPU`` for a process's CPU time, and a
lower priority). Every process also gets ``RLIMIT_DATA`` at the memory limit (``RLIMIT_AS`` would count the address
space that shared libraries and torch reserve, far above what they use), so a single allocation past it fails in the
kernel, with the message :func:`load_ipython_extension` gives:

>>> Limits.parse("2G", 512, 1.0).describe()
'2.0 GB of memory, 512 tasks, 1 CPU core'
>>> print(explained("memory", "2.0 GB of memory, 512 tasks, 1 CPU core"))
this cell asked for more memory than your server may use (2.0 GB of memory, 512 tasks, 1 CPU core: the hub's limits \
per user). Free what you no longer need (del a big array), use smaller sizes, or restart the kernel.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: The folder, under the hub's own control group, that holds one group per user.
USERS = "ppedu-users"
#: What the kernel extension reads: the limits a server runs under, as :meth:`Limits.describe` says them.
ENVIRONMENT = "PPEDU_LIMITS"
#: The lower priority of a server where no control group caps its CPU (the hub and its proxy stay at 0).
NICE = 10
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclass(frozen=True)
class Limits:
    """What one user's server may hold: ``memory`` bytes (server and kernels together), ``tasks`` processes and
    threads, ``cpu`` cores; ``cpu_seconds``: a process's CPU time where no control group caps the cores."""

    memory: int
    tasks: int
    cpu: float
    cpu_seconds: int = 6 * 3600

    @classmethod
    def parse(cls, memory: str | int, tasks: int, cpu: float, cpu_seconds: int = 6 * 3600) -> Limits:
        """``memory`` as JupyterHub writes it ("2G", "512M") or in bytes."""
        memory = size(memory)
        if memory <= 0 or tasks <= 0 or cpu <= 0 or cpu_seconds <= 0:
            raise ValueError(f"limits must be positive: {memory}, {tasks}, {cpu}, {cpu_seconds}")
        return cls(int(memory), int(tasks), float(cpu), int(cpu_seconds))

    def describe(self) -> str:
        cores = f"{self.cpu:g} CPU core{'s' if self.cpu != 1 else ''}"
        return f"{self.memory / 2**30:.1f} GB of memory, {self.tasks} tasks, {cores}"


def size(text: str | int) -> int:
    """Bytes, from a size as JupyterHub writes it ("2G", "512M": powers of 1024) or a number of bytes.

    >>> size("1.5G"), size("200M"), size(4096)
    (1610612736, 209715200, 4096)
    """
    if isinstance(text, int):
        return text
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)I?B?\s*", text.upper())
    if not found:
        raise ValueError(f"{text!r} is not a size (2G, 512M)")
    return int(float(found[1]) * _UNITS[found[2]])


class Groups:
    """The control groups of the users' servers, under the hub's own group: one folder per hierarchy
    (cgroup v2: one; v1: memory, pids and cpu), each holding a folder per user."""

    def __init__(self, version: int, parents: dict[str, Path]) -> None:
        self.version, self.parents = version, parents

    def __repr__(self) -> str:
        return f"Groups(v{self.version}: {', '.join(map(str, sorted(set(self.parents.values()))))})"

    def folders(self, user: str) -> list[Path]:
        return [parent / user for parent in dict.fromkeys(self.parents.values())]

    def make(self, user: str, limits: Limits) -> None:
        """A fresh group for ``user`` with ``limits`` (what an earlier server of theirs left behind is ended)."""
        self.remove(user)
        for folder in self.folders(user):
            folder.mkdir()
        quota, period = max(int(limits.cpu * 100_000), 1000), 100_000
        if self.version == 2:
            folder = self.parents["memory"] / user
            _write(folder / "memory.max", limits.memory)
            _write(folder / "memory.swap.max", 0, optional=True)
            _write(folder / "pids.max", limits.tasks)
            _write(folder / "cpu.max", f"{quota} {period}")
        else:
            memory = self.parents["memory"] / user
            _write(memory / "memory.limit_in_bytes", limits.memory)
            _write(memory / "memory.memsw.limit_in_bytes", limits.memory, optional=True)  # no swapping past it
            _write(self.parents["pids"] / user / "pids.max", limits.tasks)
            _write(self.parents["cpu"] / user / "cpu.cfs_period_us", period)
            _write(self.parents["cpu"] / user / "cpu.cfs_quota_us", quota)

    def join(self, user: str) -> None:
        """Put the calling process in ``user``'s group (run in the server's process before it becomes the user)."""
        for folder in self.folders(user):
            _write(folder / "cgroup.procs", os.getpid())

    def members(self, user: str) -> list[int]:
        try:
            return [int(pid) for pid in (self.folders(user)[0] / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def oom_kills(self, user: str) -> int:
        """How many of the group's processes the OOM killer stopped."""
        folder = self.parents["memory"] / user
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            found = re.search(r"^oom_kill (\d+)$", (folder / name).read_text(), re.M)
        except FileNotFoundError:
            return 0
        return int(found[1]) if found else 0

    def remove(self, user: str, seconds: float = 10) -> None:
        """End what is left in ``user``'s group (a process started in the background in a terminal); remove it."""
        deadline = time.monotonic() + seconds
        while pids := self.members(user):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{user}'s control group still holds {pids}")
            time.sleep(0.05)
        for folder in self.folders(user):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass


def _write(path: Path, value: object, optional: bool = False) -> None:
    try:
        path.write_text(f"{value}\n")
    except FileNotFoundError:
        if not optional:
            raise


def _mounts(mountinfo: str) -> list[tuple[str, set[str], Path, str]]:
    """(file system type, options, mount point, root in the hierarchy) of each control-group mount."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, (kind, _, options) = left.split(), right.split()[:3]
        if kind in ("cgroup", "cgroup2"):
            found.append((kind, set(options.split(",")), Path(fields[4]), fields[3]))
    return found


def _inside(mountpoint: Path, root: str, path: str) -> Path:
    relative = path[len(root):] if root != "/" and path.startswith(root) else path
    return mountpoint / relative.lstrip("/")


def discover(proc: Path = Path("/proc/self")) -> Groups | None:
    """The users' groups under this process's control group (made here), or None where the machine does not let
    this process make them with the memory, pids and cpu controllers (not root, a read-only or foreign hierarchy)."""
    try:
        mounts = _mounts((proc / "mountinfo").read_text())
        mine = {}
        for line in (proc / "cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                mine[controller] = path
    except OSError:
        return None
    for make in (_v2, _v1):
        try:
            groups = make(mounts, mine)
        except OSError:
            continue
        if groups:
            return groups
    return None


def _v2(mounts, mine) -> Groups | None:
    unified = next((m for m in mounts if m[0] == "cgroup2"), None)
    if unified is None or "" not in mine:
        return None
    own = _inside(unified[2], unified[3], mine[""])
    if not {"memory", "pids", "cpu"} <= set((own / "cgroup.controllers").read_text().split()):
        return None
    parent = own / USERS
    if not parent.is_dir():
        # A group with processes cannot hand controllers to its children: the hub's processes move to a leaf.
        if (own / "cgroup.procs").read_text().split():
            leaf = own / "hub"
            leaf.mkdir(exist_ok=True)
            for pid in (own / "cgroup.procs").read_text().split():
                _write(leaf / "cgroup.procs", pid)
        _write(own / "cgroup.subtree_control", "+memory +pids +cpu")
        parent.mkdir()
        _write(parent / "cgroup.subtree_control", "+memory +pids +cpu")
    return Groups(2, dict.fromkeys(("memory", "pids", "cpu"), parent))


def _v1(mounts, mine) -> Groups | None:
    parents = {}
    for controller in ("memory", "pids", "cpu"):
        mount = next((m for m in mounts if m[0] == "cgroup" and controller in m[1]), None)
        if mount is None or controller not in mine:
            return None
        parent = _inside(mount[2], mount[3], mine[controller]) / USERS
        parent.mkdir(exist_ok=True)
        parents[controller] = parent
    return Groups(1, parents)


def confine(groups: Groups | None, user: str, limits: Limits) -> Callable[[], None]:
    """What a server's process runs as root before it becomes ``user``: it joins the user's group (made beforehand
    with :meth:`Groups.make`) where there are groups, and takes the per-process limits."""

    def enter() -> None:
        if groups:
            groups.join(user)
        else:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.tasks, limits.tasks))
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 60))
            os.nice(NICE)
        resource.setrlimit(resource.RLIMIT_DATA, (limits.memory, limits.memory))

    return enter


def explained(what: str, limits: str) -> str:
    """The message a student reads when their kernel reaches a limit (``what``: "memory" or "cpu")."""
    if what == "memory":
        return (f"this cell asked for more memory than your server may use ({limits}: the hub's limits per user). "
                "Free what you no longer need (del a big array), use smaller sizes, or restart the kernel.")
    return (f"this kernel has used all the CPU time one process may use ({limits}: the hub's limits per user). "
            "Save your work and restart the kernel.")


class ResourceLimitReached(Exception):
    """A kernel reached one of the hub's limits."""


def load_ipython_extension(shell) -> None:
    """In a kernel of a limited server (``PPEDU_LIMITS`` set; /opt/ppedu/etc/ipython loads it): an allocation past
    the memory limit shows :func:`explained`'s message instead of a bare MemoryError (torch's allocator says it with a
    RuntimeError), and so does the CPU time running out where no control group caps the cores."""
    limits = os.environ.get(ENVIRONMENT)
    if not limits:
        return

    def memory(self, etype, value, tb, tb_offset=None):
        if etype is MemoryError or "can't allocate memory" in str(value):
            return self.showtraceback((MemoryError, MemoryError(explained("memory", limits)), tb), tb_offset)
        return self.showtraceback((etype, value, tb), tb_offset)

    def cpu(signum, frame):
        raise ResourceLimitReached(explained("cpu", limits))

    shell.set_custom_exc((MemoryError, RuntimeError), memory)
    signal.signal(signal.SIGXCPU, cpu)
