"""An SFTP server of the test's own, and the users' sshfs mounts of it: OpenSSH's ``sshd`` (Debian's openssh-server,
which `make test` installs with sshfs) started as root in a temporary folder with its own configuration and host key,
listening on a free port of 127.0.0.1, public keys only (each user's key authorised in the test's own folder), SFTP
served by ``internal-sftp``; stopped after, with every session it opened. A user who logs in writes on the server as
themselves: the files they make there are theirs, whatever they claim.

Each user mounts with ``sshfs`` as themselves (FUSE, through the setuid ``fusermount3``), and unmounts with
``fusermount3 -u``."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

SSHD, SSHFS, FUSERMOUNT = "/usr/sbin/sshd", "sshfs", "fusermount3"


def unavailable() -> str | None:
    """Why no server can be started and mounted here (one line), or ``None``."""
    if not (Path(SSHD).is_file() and shutil.which(SSHFS) and shutil.which(FUSERMOUNT)):
        return "sshd, sshfs or fusermount3 is not installed (make test installs Debian's openssh-server and sshfs)"
    if os.geteuid() != 0:
        return "starting sshd and making the users who mount it needs root"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse: this kernel (or container) offers no FUSE, so nobody can mount with sshfs"
    return None


@contextmanager
def fuse_open_to_users() -> Iterator[None]:
    """``/dev/fuse`` readable and writable by every user while the block runs, as Debian's udev makes it (``0666``):
    libfuse opens it as the user who mounts before it asks ``fusermount3``, and a container may leave it ``0600``.
    Its mode is put back after."""
    device = Path("/dev/fuse")
    mode = stat.S_IMODE(device.stat().st_mode)
    if mode & 0o006 != 0o006:
        device.chmod(mode | 0o666)
    try:
        yield
    finally:
        device.chmod(mode)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """``with Sshd() as server:`` a running sshd; ``server.authorize(user, public_key)`` lets ``user`` in with that
    key; ``server.known_host`` is the line a client's known_hosts needs; ``server.stop()`` ends it and every session
    it opened, as a server going down would."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ppedu-sshd-"))
        self.keys = self.folder / "authorized"
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Sshd:
        self.folder.chmod(0o755)
        self.keys.mkdir(mode=0o755)
        host = self.folder / "host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host)], check=True,
                       capture_output=True)
        self.known_host = f"[127.0.0.1]:{self.port} " + " ".join(host.with_suffix(".pub").read_text().split()[:2])
        config = self.folder / "sshd_config"
        # StrictModes no: the keys are in this folder, under /tmp, which anyone may write in (sticky), and sshd's
        # strict modes refuse a key file below such a folder; the folder and the files are root's, 0755 and 0644.
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {host}", f"PidFile {self.folder / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.keys}/%u", "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "PermitRootLogin no",
            "AllowTcpForwarding no", "X11Forwarding no", "MaxStartups 100", "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp", ""]))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation folder (Debian's unit makes it)
        self.process = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(self.folder / "sshd.log")],
                                        start_new_session=True)
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        self.__exit__()
        raise AssertionError(f"sshd did not start:\n{self.log()}")

    def authorize(self, user: str, public_key: str) -> None:
        path = self.keys / user
        path.write_text(public_key)
        path.chmod(0o644)

    def log(self) -> str:
        path = self.folder / "sshd.log"
        return path.read_text()[-3000:] if path.is_file() else ""

    def _sessions(self) -> list[int]:
        """The processes sshd started for its sessions (each connection's monitor and its user's process)."""
        found, todo = [], [self.process.pid] if self.process else []
        while todo:
            children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(todo.pop())], capture_output=True,
                                      text=True).stdout.split()
            found += [int(c) for c in children]
            todo += children
        return found

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """sshd and every session it opened ended: each client's connection is cut."""
        if not self.running():
            return
        sessions = self._sessions()
        self.process.terminate()
        self.process.wait(timeout=30)
        for pid in sessions:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def mount(run_as, server: Sshd, user: str, home: Path, remote: Path, mountpoint: Path) -> None:
    """``user`` (whose home is ``home``) makes a key, is authorised with it, trusts the server's host key and mounts
    ``remote`` on the server at ``mountpoint`` with sshfs, each step as themselves: ``run_as(user, command)`` runs a
    command as ``user`` and returns its CompletedProcess."""
    ssh = home / ".ssh"
    for command in (["mkdir", "-p", "-m", "700", str(ssh)], ["mkdir", "-p", str(mountpoint)],
                    ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / "id_ed25519")],
                    ["sh", "-c", f"printf '%s\\n' '{server.known_host}' > {ssh / 'known_hosts'}"]):
        done = run_as(user, command)
        assert done.returncode == 0, f"{user}: {command}: {done.stderr}"
    server.authorize(user, (ssh / "id_ed25519.pub").read_text())
    options = ",".join([f"IdentityFile={ssh / 'id_ed25519'}", f"UserKnownHostsFile={ssh / 'known_hosts'}",
                        "StrictHostKeyChecking=yes", "BatchMode=yes", "ServerAliveInterval=5",
                        "ServerAliveCountMax=2"])
    done = run_as(user, [SSHFS, "-p", str(server.port), f"{user}@127.0.0.1:{remote}", str(mountpoint), "-o", options])
    assert done.returncode == 0, f"{user}: sshfs: {done.stdout}{done.stderr}\n{server.log()}"


def unmount(mountpoint: Path) -> None:
    """``mountpoint`` unmounted (lazily where it is busy, or its server gone); nothing where it is not mounted."""
    if str(mountpoint) in Path("/proc/mounts").read_text():
        subprocess.run([FUSERMOUNT, "-u", "-z", str(mountpoint)], capture_output=True)
