"""Start, stop, restart and look at the course's JupyterHub, as root: ``ppedu-hub start|stop|restart|status``
(``make hub`` installs this file as /opt/ppedu/bin/ppedu-hub; docs/instructor.md, "Running a class on JupyterHub").

Where systemd runs the machine and ``make hub`` installed its service, each command is systemctl's on ``ppedu-hub``
(the log: ``journalctl -u ppedu-hub``). Elsewhere the hub runs in the background, in a session of its own, its output
appended to ``<data>/hub/jupyterhub.log``, its pid in ``<data>/hub/jupyterhub.pid`` (the proxy's beside it):
``start`` returns once the hub answers; ``stop`` ends it with SIGTERM (JupyterHub then stops every user's server, its
services and its proxy) and then ends, and names, any process the hub left behind: of its session, or in a user's
control group. ``mount`` mounts the exchange's own file system (``start`` does it too).

Standard library only (``make hub`` imports it before the environment exists).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

UNIT = "ppedu-hub"
USERS = "ppedu-users"  # ppedu.limits' folder of the users' control groups
LOG, PID = "jupyterhub.log", "jupyterhub.pid"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ppedu-hub", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("start", "stop", "restart", "status", "mount"))
    parser.add_argument("--settings", default=os.environ.get("PPEDU_HUB_SETTINGS", "/srv/ppedu/hub/ppedu-hub.json"),
                        help="the hub's settings (make hub's; default /srv/ppedu/hub/ppedu-hub.json)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.exit(2, "ppedu-hub: run it as root (sudo)\n")
    try:
        settings = json.loads(Path(args.settings).read_text())
    except (OSError, ValueError) as error:
        parser.exit(2, f"ppedu-hub: {args.settings}: {error} (has `make hub` run?)\n")
    hub = Hub(settings, Path(args.settings))
    return {"start": hub.start, "stop": hub.stop, "restart": hub.restart, "status": hub.status,
            "mount": hub.mount}[args.command]()


def local_url(bind_url: str) -> str:
    """Where this machine reaches a hub that listens on ``bind_url`` (every interface: loopback's address)."""
    return re.sub(r"^http://(0\.0\.0\.0)?:", "http://127.0.0.1:", bind_url.rstrip("/"))


def mount_exchange(settings: dict) -> bool:
    """Mount the exchange's own file system (``<data>/exchange.img``, made by ``make hub``) where it is not; whether
    the exchange is on it."""
    exchange, image = Path(settings["exchange"]), Path(settings["data"]) / "exchange.img"
    if not image.is_file():
        return False
    for options in ("loop,nosuid,nodev,usrquota", "loop,nosuid,nodev"):  # user quotas where the kernel has them
        if os.path.ismount(exchange):
            return True
        subprocess.run(["mount", "-o", options, str(image), str(exchange)], capture_output=True)
    if not os.path.ismount(exchange):
        raise RuntimeError(f"{image} could not be mounted at {exchange}")
    return True


class Hub:
    def __init__(self, settings: dict, path: Path) -> None:
        self.settings, self.path = settings, path
        self.state = Path(settings["data"]) / "hub"
        self.log, self.pid_file = self.state / LOG, self.state / PID
        self.url = local_url(settings["bind_url"])

    @property
    def systemd(self) -> bool:
        return Path("/run/systemd/system").is_dir() and Path(f"/etc/systemd/system/{UNIT}.service").is_file()

    def pid(self) -> int | None:
        """The running hub's process id, if it runs."""
        try:
            pid = int(self.pid_file.read_text())
            running = "jupyterhub" in Path(f"/proc/{pid}/cmdline").read_text()
        except (OSError, ValueError):
            return None
        return pid if running else None

    def mount(self) -> int:
        if mount_exchange(self.settings):
            print(f"the exchange {self.settings['exchange']} is on its own file system")
        return 0

    def start(self) -> int:
        self.mount()
        if self.systemd:
            return subprocess.run(["systemctl", "start", UNIT]).returncode
        if pid := self.pid():
            print(f"the hub runs already (pid {pid}): ppedu-hub restart to take a change of its settings")
            return 0
        with self.log.open("ab") as out:
            hub = subprocess.Popen([str(Path(self.settings["prefix"]) / "bin" / "jupyterhub"), "-f",
                                    str(self.state / "jupyterhub_config.py")], cwd=self.state, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "PPEDU_HUB_SETTINGS": str(self.path)},
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 180
        while not _answers(f"{self.url}/hub/api/"):
            if hub.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                print(f"ppedu-hub: the hub did not start; the end of {self.log}:\n{tail}", file=sys.stderr)
                if hub.poll() is None:
                    self._end(hub.pid)
                return 1
            time.sleep(0.5)
        print(f"the hub runs (pid {hub.pid}) at {self.settings['bind_url']}; its log: {self.log}")
        return 0

    def stop(self) -> int:
        if self.systemd:
            return subprocess.run(["systemctl", "stop", UNIT]).returncode
        pid = self.pid()
        if pid is None:
            print("the hub is not running")
        else:
            self._end(pid)
        deadline = time.monotonic() + 15  # what the hub stopped last (its proxy) may still be exiting
        while (left := [p for p in self.leftovers(pid) if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.2)
        named = [f"{p} ({_command(p)})" for p in left]
        for other in left:
            _kill(other, signal.SIGKILL)
        if left:
            print(f"ended {len(left)} process(es) the hub left behind: {', '.join(named)}")
        for name in (PID, "jupyterhub-proxy.pid"):
            (self.state / name).unlink(missing_ok=True)
        folders = [procs.parent for procs in self._groups()]  # the users' control groups, empty now, and their parents
        for folder in folders + sorted(Path("/sys/fs/cgroup").glob(f"**/{USERS}")):
            try:
                folder.rmdir()
            except OSError:
                pass
        print("the hub is stopped" if pid else "nothing of the hub runs")
        return 0

    def restart(self) -> int:
        if self.systemd:
            return subprocess.run(["systemctl", "restart", UNIT]).returncode
        self.stop()
        return self.start()

    def status(self) -> int:
        if self.systemd:
            return subprocess.run(["systemctl", "status", "--no-pager", UNIT]).returncode
        pid = self.pid()
        if pid is None:
            print(f"the hub is not running; its log: {self.log}")
            return 3  # as systemctl status says "inactive"
        servers = len({procs.parent.name for procs in self._groups() if procs.read_text().strip()})
        answers = "answers" if _answers(f"{self.url}/hub/api/") else "does not answer"
        print(f"the hub runs (pid {pid}) and {answers} at {self.settings['bind_url']}; {servers} user server(s) in "
              f"control groups; its log: {self.log}")
        return 0

    def _end(self, pid: int, seconds: float = 120) -> None:
        """SIGTERM, then, after ``seconds``, SIGKILL for the hub and its session."""
        _kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + seconds
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            print(f"the hub did not stop in {seconds:.0f} s: killed", file=sys.stderr)
            _kill(-pid, signal.SIGKILL)

    def _groups(self):
        """The users' control groups (ppedu.limits) under the hub's, as the hub found them."""
        return sorted(procs for procs in Path("/sys/fs/cgroup").glob(f"**/{USERS}/*/cgroup.procs")
                      if procs.parent.parent.parent.name != USERS)

    def leftovers(self, pid: int | None) -> list[int]:
        """Processes the hub left running: of its session (the proxy, a service), or in a user's control group."""
        found = set()
        for procs in self._groups():
            found |= {int(p) for p in procs.read_text().split()}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if pid and int(fields[3]) == pid:  # the session the hub led
                found.add(int(stat.parent.name))
        return sorted(p for p in found if p != os.getpid())


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return status != "Z"


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()[:200]
    except OSError:
        return "gone"


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main())
