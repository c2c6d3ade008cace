"""A PostgreSQL server of the test's own: a cluster made with ``initdb`` in a temporary folder, started and stopped with
``pg_ctl`` (Debian's postgresql-15, which `make test` installs), owned by the ``postgres`` user (PostgreSQL refuses to
run as root), listening on a free port of 127.0.0.1 with a password, as a gradebook server on another machine would."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

OWNER = "postgres"


def server_bin() -> Path | None:
    """The newest PostgreSQL server programs installed (``initdb``, ``pg_ctl``), or ``None``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def unavailable() -> str | None:
    """Why no server can be started here (one line), or ``None``."""
    if server_bin() is None:
        return "PostgreSQL's server is not installed (make test installs Debian's postgresql-15)"
    if os.geteuid() != 0:
        return "starting PostgreSQL as its own user needs root"
    try:
        pwd.getpwnam(OWNER)
    except KeyError:
        return f"no {OWNER} user (Debian's postgresql package makes it)"
    return None


class Postgres:
    """``with Postgres() as db:`` a running server with an empty database ``ppedu``; ``db.url`` reaches it."""

    def __init__(self) -> None:
        self.bin = server_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="ppedu-postgres-"))
        self.data = self.folder / "data"
        self.password = secrets.token_hex(12)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgresql+psycopg://ppedu:{self.password}@127.0.0.1:{self.port}/ppedu"

    def _as_owner(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["runuser", "-u", OWNER, "--", *command], capture_output=True, text=True, timeout=120,
                              cwd=self.folder)

    def _check(self, done: subprocess.CompletedProcess[str]) -> None:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:] + self.log()

    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text()[-3000:] if path.is_file() else ""

    def __enter__(self) -> Postgres:
        shutil.chown(self.folder, OWNER)
        secret = self.folder / "password"
        secret.write_text(self.password + "\n")
        shutil.chown(secret, OWNER)
        self._check(self._as_owner(str(self.bin / "initdb"), "-D", str(self.data), "-U", "ppedu", f"--pwfile={secret}",
                                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8"))
        secret.unlink()
        self.start()
        self._check(self._as_owner(str(self.bin.parent / "bin" / "createdb"), "-h", str(self.folder), "-p",
                                   str(self.port), "-U", "ppedu", "ppedu"))
        return self

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder}"
        self._check(self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "server.log"),
                                   "-o", options, "-w", "start"))

    def stop(self, mode: str = "fast") -> None:
        """``immediate``: as a crash (no shutdown, the next start recovers from its log)."""
        self._check(self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"))

    def running(self) -> bool:
        return self._as_owner(str(self.bin / "pg_ctl"), "-D", str(self.data), "status").returncode == 0

    def __exit__(self, *exc: object) -> None:
        if self.running():
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
