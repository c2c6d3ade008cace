"""A class on a deployed hub, driven from a script, over loopback only: real Unix users (made and removed here, as
root), logged in through the hub's log-in form, each working in their own server through its REST API the way
JupyterLab's Assignments panel and Validate button do, and instructors through the formgrader service's API.

tests/grading/test_hub.py runs a class of four with it; benchmarks/bench_hub.py a class of thirty.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

COURSE = "ppedu"


def _check_loopback(url: str) -> None:
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError(f"{url}: a trial talks to loopback only")


#: How the guide makes a student's or an instructor's account: a private home (0700), in the course's group.
ADD_USER = "useradd --create-home --key HOME_MODE=0700 --shell /bin/bash --groups {group} {name}"


@dataclass
class Accounts:
    """Unix users made for a trial, each with a password, removed (with their homes) at the end; their homes under
    ``home`` (else the system's default place)."""

    home: Path | None = None
    made: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, group: str) -> str:
        password = secrets.token_urlsafe(12)
        command = ADD_USER.format(group=group, name=name).split()  # as the guide says
        where = ["--home-dir", str(self.home / name)] if self.home else []
        subprocess.run([*command[:-1], *where, name], check=True, capture_output=True)
        self.made[name] = password
        subprocess.run(["chpasswd"], input=f"{name}:{password}", text=True, check=True, capture_output=True)
        return password

    def remove(self) -> None:
        for name in self.made:
            for pid in subprocess.run(["ps", "-o", "pid=", "-u", name], capture_output=True, text=True).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)  # a server the hub did not stop: this trial's own user's
                except ProcessLookupError:
                    pass
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        self.made.clear()


#: The guide's places (``make hub``'s defaults), and a file that marks a data folder a trial made.
PREFIX, DATA = Path("/opt/ppedu"), Path("/srv/ppedu")
TRIAL_MARK = ".made-by-a-trial"
PROFILE = Path("/etc/profile.d/ppedu.sh")
#: SIGINT's bit in /proc/PID/status's SigIgn mask.
SIGINT_IGNORED = 1 << (signal.SIGINT - 1)


def instructors_clone(root: Path, where: Path) -> Path:
    """The instructors' clone a trial runs ``make hub`` in: a git repository holding ``root``'s working tree as it is
    (its uncommitted changes committed), so that a change committed there later is one the hub can take."""
    clone = where / "ppedu"
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (root / name).is_file() or (root / name).is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, clone / name, follow_symlinks=False)
    for argv in (["init", "-q", "--initial-branch=main"], ["add", "-A"],
                 ["-c", "user.name=Instructor", "-c", "user.email=ines@example.org", "commit", "-qm", "The course"]):
        subprocess.run(["git", "-C", str(clone), *argv], check=True, capture_output=True)
    return clone


def make_hub(clone: Path) -> subprocess.CompletedProcess:
    """``sudo make hub`` in ``clone`` (as root), as a script in the background runs it: SIGINT ignored, which the hub
    it starts must not inherit."""
    make = ["sudo", "make"] if shutil.which("sudo") else ["make"]
    return subprocess.run([*make, "--no-print-directory", "hub"], cwd=clone, capture_output=True, text=True,
                          timeout=1800, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


@dataclass
class Deployment:
    """A hub deployed and started by ``make hub`` for a trial (:func:`deployed_as_documented`), the instructors'
    clone it came from, and its people."""

    tag: str
    base: Path
    settings: dict
    accounts: Accounts
    output: str
    clone: Path

    def add(self, who: str, role: str) -> tuple[str, str]:
        """A person of the trial (role: "instructors" or "students"); their login name and password."""
        name = f"{self.tag}-{who}"
        return name, self.accounts.add(name, self.settings[role])

    @property
    def settings_file(self) -> Path:
        return Path(self.settings["data"]) / "hub" / "ppedu-hub.json"

    @property
    def url(self) -> str:
        return local_url(self.settings["bind_url"])

    def ctl(self, command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """``ppedu-hub COMMAND`` as the guide says it (as root), from ``cwd``."""
        return subprocess.run([str(Path(self.settings["prefix"]) / "bin" / "ppedu-hub"), command], cwd=cwd,
                              capture_output=True, text=True, timeout=600)

    def hub(self) -> RunningHub:
        pid = int((Path(self.settings["data"]) / "hub" / "jupyterhub.pid").read_text())
        wait_for(f"{self.url}/hub/api/", seconds=120)
        return RunningHub(self.url, pid)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def deployed_as_documented(root: Path) -> Iterator[Deployment]:
    """``make hub`` as the guide says it (``sudo make hub`` where there is sudo, as root) in an instructors' clone of
    ``root``: the default environment, data folder, groups, grader account and ports; the hub started. Refuses
    (RuntimeError) a machine whose /srv/ppedu a trial did not make. At the end the hub is stopped as the guide says
    (``ppedu-hub stop``), and the data folder (its exchange unmounted), the groups, grader and users the trial made
    are removed; the environment stays (a second ``make hub`` reuses it)."""
    if DATA.exists() and not (DATA / TRIAL_MARK).exists():
        raise RuntimeError(f"{DATA} holds a class: a trial on the documented defaults would replace it")
    existing = {name for name in ("ppedu-instructors", "ppedu-students", "grader-ppedu")
                if not subprocess.run(["getent", "group", name], capture_output=True).returncode}
    grader_existed = not subprocess.run(["id", "grader-ppedu"], capture_output=True).returncode
    profile_existed = PROFILE.exists()
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / TRIAL_MARK).write_text("made by hub/trial.py\n")
    accounts = Accounts()
    where = Path(tempfile.mkdtemp(prefix="ppedu-hub-trial-"))
    try:
        clone = instructors_clone(root, where)
        made = make_hub(clone)
        if made.returncode:
            raise RuntimeError(f"make hub failed:\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}")
        settings = json.loads((DATA / "hub" / "ppedu-hub.json").read_text())
        yield Deployment(f"p{secrets.token_hex(2)}", DATA, settings, accounts, made.stdout, clone)
    finally:
        log = DATA / "hub" / "jupyterhub.log"
        if sys.exc_info()[0] and log.exists():  # what the hub said, before it goes with the data folder
            print(f"the end of the hub's log:\n{log.read_text(errors='replace')[-6000:]}", file=sys.stderr)
        ppedu_hub = PREFIX / "bin" / "ppedu-hub"
        if ppedu_hub.exists() and (DATA / "hub" / "ppedu-hub.json").exists():
            subprocess.run([str(ppedu_hub), "stop"], capture_output=True, timeout=600)
        accounts.remove()
        if not grader_existed:
            subprocess.run(["userdel", "grader-ppedu"], capture_output=True)
        for group in {"ppedu-instructors", "ppedu-students", "grader-ppedu"} - existing:
            subprocess.run(["groupdel", group], capture_output=True)
        if os.path.ismount(DATA / "exchange"):
            subprocess.run(["umount", str(DATA / "exchange")], capture_output=True)
        shutil.rmtree(DATA, ignore_errors=True)
        shutil.rmtree(where, ignore_errors=True)
        if not profile_existed:
            PROFILE.unlink(missing_ok=True)


def local_url(bind_url: str) -> str:
    """Where a trial reaches a hub that listens on ``bind_url`` (every interface: loopback's address)."""
    return re.sub(r"^http://(0\.0\.0\.0)?:", "http://127.0.0.1:", bind_url.rstrip("/"))


@dataclass
class RunningHub:
    """A hub a trial found running: its public URL and its process id."""

    url: str
    pid: int

    def ignoring_interrupt(self) -> list[str]:
        """The commands of the processes the hub started (proxy, services, servers) that ignore SIGINT, the first
        signal JupyterHub stops each of them with."""
        found = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
                if int(fields["PPid"]) == self.pid and int(fields["SigIgn"], 16) & SIGINT_IGNORED:
                    found.append((status.parent / "cmdline").read_text().replace("\0", " ").strip())
            except (OSError, KeyError, ValueError):
                continue  # a process that ended meanwhile
        return found

    def session(self) -> list[str]:
        """The commands of the processes still in the session the hub led (none once it is stopped)."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                state, _, _, session = stat.read_text().rsplit(")", 1)[1].split()[:4]
                if int(session) == self.pid and state != "Z":  # a zombie runs nothing
                    found.append((stat.parent / "cmdline").read_text().replace("\0", " ").strip())
            except (OSError, ValueError, IndexError):
                continue
        return found


def wait_for(url: str, token: str | None = None, seconds: float = 90, alive: Callable[[], bool] = lambda: True) -> None:
    """Poll ``url`` until it answers 200 (while ``alive()`` holds)."""
    _check_loopback(url)
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"token {token}"} if token else {}
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if not alive() or time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer in {seconds} s") from None
            time.sleep(0.5)


class HTTPError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body[:500]}")
        self.status = status


class User:
    """One person at the hub: logged in through the form (PAM checks the password), then working with an API token
    of their own, as JupyterLab does."""

    def __init__(self, hub: str, name: str, password: str) -> None:
        _check_loopback(hub)
        self.hub, self.name = hub, name
        jar = http.cookiejar.CookieJar()
        self._browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page = self._browser.open(f"{hub}/hub/login", timeout=60).read().decode()
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page)[1]
        form = urllib.parse.urlencode({"username": name, "password": password, "_xsrf": xsrf}).encode()
        # to the hub's home page, not the default spawn page: servers start when the trial says so
        try:
            self._browser.open(urllib.request.Request(f"{hub}/hub/login?next=%2Fhub%2Fhome", data=form), timeout=120)
        except urllib.error.HTTPError as error:  # a wrong password: the form again, with 403
            raise HTTPError(error.code, f"{name} could not log in") from None
        xsrf = next(c.value for c in jar if c.name == "_xsrf")  # the logged-in session's own
        made = self._browser.open(urllib.request.Request(
            f"{hub}/hub/api/users/{name}/tokens", data=json.dumps({"note": "trial"}).encode(), method="POST",
            headers={"X-XSRFToken": xsrf, "Content-Type": "application/json"}), timeout=60)
        self.token = json.loads(made.read())["token"]

    def call(self, method: str, path: str, body: Any = None, form: dict | None = None, timeout: float = 600) -> Any:
        """A request to the hub's origin with this user's token; the JSON answer (or text)."""
        data = json.dumps(body).encode() if body is not None else urllib.parse.urlencode(form).encode() if form else None
        kind = "application/json" if body is not None else "application/x-www-form-urlencoded"
        request = urllib.request.Request(f"{self.hub}{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}", "Content-Type": kind})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise HTTPError(error.code, error.read().decode(errors="replace")) from None
        try:
            return json.loads(text) if text else None
        except ValueError:
            return text

    # ---- their own server -------------------------------------------------------------------------------------

    def start(self, seconds: float = 300) -> float:
        """Start this user's server and wait until it answers; the seconds it took."""
        began = time.monotonic()
        try:
            self.call("POST", f"/hub/api/users/{self.name}/server")
        except HTTPError as error:
            if error.status != 400:  # 400: already running
                raise
        while not (self.call("GET", f"/hub/api/users/{self.name}").get("servers", {}).get("", {}).get("ready")):
            if time.monotonic() - began > seconds:
                raise TimeoutError(f"{self.name}'s server did not start in {seconds} s")
            time.sleep(0.5)
        return time.monotonic() - began

    def spawn_page(self) -> tuple[int, str]:
        """What the browser shows at the hub's spawn page (where "Start My Server" leads): its status and text."""
        try:
            with self._browser.open(f"{self.hub}/hub/spawn/{self.name}", timeout=120) as page:
                return page.status, page.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def run_code(self, code: str, seconds: float = 120) -> dict:
        """``code`` run in a new kernel of this user's server, as a notebook's cell runs: the kernel's outputs
        (``stream``: the text printed, ``error``: (ename, evalue)) and its ``status`` when the cell ended ("idle", or
        "restarting"/"dead" where the kernel died)."""
        kernel = self.server("POST", "api/kernels", body={"name": "python3"})["id"]
        try:
            url = f"{self.hub.replace('http://', 'ws://')}/user/{self.name}/api/kernels/{kernel}/channels"
            return asyncio.run(_execute(url, self.token, code, seconds))
        finally:
            try:
                self.server("DELETE", f"api/kernels/{kernel}")
            except HTTPError:
                pass

    def server(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.call(method, f"/user/{self.name}/{path.lstrip('/')}", **kwargs)

    def pull(self, link: str, seconds: float = 300) -> str:
        """What following nbgitpuller's ``link`` (``…/git-pull?repo=…``) does: clone the repository the first time,
        merge it in later; its log."""
        query = link.split("git-pull?", 1)[1]
        stream = self.server("GET", f"git-pull/api?{query}", timeout=seconds)
        if '"phase": "error"' in stream or '"phase":"error"' in stream:
            raise RuntimeError(f"nbgitpuller failed for {self.name}: {stream[-2000:]}")
        return stream

    def assignments(self) -> list[dict]:
        answer = self.server("GET", f"assignments?course_id={COURSE}")
        if not answer.get("success"):
            raise RuntimeError(f"{self.name}'s assignment list: {answer.get('value')}")
        return answer["value"]

    def act(self, action: str, assignment: str) -> Any:
        """Fetch, submit or fetch the feedback of an assignment, as the Assignments panel's buttons do."""
        answer = self.server("POST", f"assignments/{action}", form={"course_id": COURSE, "assignment_id": assignment})
        if isinstance(answer, dict) and answer.get("success") is False:
            raise RuntimeError(f"{self.name}: {action} {assignment}: {answer.get('value')}")
        return answer

    def validate(self, path: str) -> dict:
        return self.server("POST", "assignments/validate", form={"path": path})

    def save(self, path: str, notebook: dict) -> None:
        self.server("PUT", f"api/contents/{urllib.parse.quote(path)}",
                    body={"type": "notebook", "format": "json", "content": notebook})

    def read(self, path: str) -> Any:
        return self.server("GET", f"api/contents/{urllib.parse.quote(path)}")["content"]

    # ---- the formgrader service ---------------------------------------------------------------------------------

    def formgrader(self, method: str, path: str, body: Any = None, timeout: float = 900) -> Any:
        return self.call(method, f"/services/{COURSE}/formgrader/api/{path}", body=body, timeout=timeout)


# ---- terminals ---------------------------------------------------------------------------------------------

def terminal(base: str, token: str, command: str, seconds: float = 60) -> str:
    """What ``command`` prints in a new terminal of the Jupyter server at ``base`` (``http://127.0.0.1:PORT/prefix``),
    typed as a student types it."""
    _check_loopback(base)
    headers = {"Authorization": f"token {token}"}
    request = urllib.request.Request(f"{base}/api/terminals", data=b"", method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        name = json.loads(response.read())["name"]
    try:
        return asyncio.run(_type(f"{base.replace('http://', 'ws://')}/terminals/websocket/{name}", token, command,
                                 seconds))
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{base}/api/terminals/{name}", method="DELETE",
                                                      headers=headers), timeout=60).close()


async def _execute(url: str, token: str, code: str, seconds: float) -> dict:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    socket_ = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    msg_id = secrets.token_hex(8)
    await socket_.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "trial", "session": msg_id,
                   "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False}}))
    seen: dict = {"stream": "", "error": None, "status": None}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(socket_.read_message(), timeout=max(deadline - time.monotonic(), 0.1))
        except asyncio.TimeoutError:
            break
        if message is None:
            break
        if isinstance(message, bytes):
            continue
        msg = json.loads(message)
        kind, content = msg.get("msg_type") or msg["header"]["msg_type"], msg.get("content", {})
        if kind == "status" and content.get("execution_state") in ("restarting", "dead"):
            seen["status"] = content["execution_state"]  # the server's word: the kernel died
            break
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if kind == "stream":
            seen["stream"] += content["text"]
        elif kind == "error":
            seen["error"] = (content["ename"], content["evalue"])
        elif kind == "status" and content.get("execution_state") == "idle":
            seen["status"] = "idle"
            break
    socket_.close()
    return seen


async def _type(url: str, token: str, command: str, seconds: float) -> str:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    socket_ = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    marker = "ppedu-done"
    # the marker is printed in two pieces joined by the shell, so the echo of the typed line does not match it
    await socket_.write_message(json.dumps(["stdin", f"{command}; echo ppedu-''done\r"]))
    seen, deadline = "", time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = await asyncio.wait_for(socket_.read_message(), timeout=max(deadline - time.monotonic(), 0.1))
        if message is None:
            break
        kind, *rest = json.loads(message)
        if kind == "stdout":
            seen += rest[0]
            if f"\n{marker}" in seen.replace("\r", ""):
                break
    socket_.close()
    return seen.replace("\r", "")
