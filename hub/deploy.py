"""Set up the course's JupyterHub on this Linux machine, as root (``make hub`` runs it; docs/instructor.md, "Running a
class on JupyterHub").

What it makes, each step skipped where it is done already (run it again after an update):

* the shared environment ``--prefix`` (/opt/ppedu): the course installed once for every user, not linked to any
  private folder, with JupyterHub, nbgitpuller, the idle culler and the proxy (configurable-http-proxy, from npm),
  PyTorch's CPU build where its index can be reached (``--light``: no torch);
* the Unix groups of instructors and students, and the grader account that owns the course; it refuses to go on
  while a student's home can be read by others (:mod:`ppedu.grading.homes`), and so does the hub when it starts;
* under ``--data`` (/srv/ppedu): ``course/``, a copy of this repository closed to everyone but the grader account
  (answer keys, solutions, submissions, the gradebook); ``exchange/``, nbgrader's exchange (1777); ``release/``, the
  student release as a git repository, for nbgitpuller links; ``config/``, the Jupyter settings of each role and
  the users' git settings (the release trusted, notebooks merged cell by cell);
  ``hub/``, root's: the hub's database and secrets, its settings and its copy of hub/jupyterhub_config.py;
* a systemd service, ``ppedu-hub``, where systemd runs the machine (else it prints the command that starts the hub).

Standard library only: it runs before the environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the course's own ppedu (standard library only where this imports it)
from ppedu.grading.homes import open_homes, refusal  # noqa: E402
from ppedu.update import define_driver  # noqa: E402

COURSE = "ppedu"
PROXY = "configurable-http-proxy@5.3.0"
#: What the hub's copy of the course leaves out: environments, build outputs, this machine's class data.
NOT_COPIED = (".venv", ".git", "build", "submitted", "autograded", "feedback", "intake", "downloaded", "gradebook.db",
              "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "*.csv")
UNIT = """[Unit]
Description=JupyterHub of the ppedu course
After=network.target

[Service]
Environment=PPEDU_HUB_SETTINGS={settings}
WorkingDirectory={state}
ExecStart={prefix}/bin/jupyterhub -f {state}/jupyterhub_config.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if os.geteuid() != 0 or sys.platform != "linux":
            raise SystemExit("deploy.py: run it as root on Linux (`sudo make hub`): it creates accounts and folders")
        for tool in ("git", "npm", "bwrap"):
            if not shutil.which(tool):
                raise SystemExit(f"deploy.py: {tool} is not installed (`make hub` installs it)")
        deploy(args)
    except subprocess.CalledProcessError as error:
        print(f"deploy.py: {' '.join(map(str, error.cmd))} failed:\n{(error.stderr or '')[-2000:]}", file=sys.stderr)
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deploy.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", default="/opt/ppedu", help="the shared environment (default /opt/ppedu)")
    parser.add_argument("--data", default="/srv/ppedu", help="course, exchange, release, hub state (default /srv/ppedu)")
    parser.add_argument("--python", default="/usr/bin/python3", help="an interpreter every user may run")
    parser.add_argument("--light", action="store_true", help="no torch (all but the MNIST lab and ps5)")
    parser.add_argument("--instructors", default="ppedu-instructors", help="the instructors' Unix group")
    parser.add_argument("--students", default="ppedu-students", help="the students' Unix group")
    parser.add_argument("--grader", default=f"grader-{COURSE}", help="the account that owns the course and runs "
                        "the formgrader")
    parser.add_argument("--bind-url", default="http://:8000", help="where the hub listens (put TLS in front of it)")
    parser.add_argument("--hub-port", type=int, default=8081, help="the hub's API, on loopback")
    parser.add_argument("--proxy-api-port", type=int, default=8001, help="the proxy's API, on loopback")
    parser.add_argument("--formgrader-port", type=int, default=9999, help="the formgrader service, on loopback")
    parser.add_argument("--no-service", action="store_true", help="install no systemd service")
    return parser


def run(*argv: str | Path, **kwargs) -> str:
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kwargs).stdout


def as_user(user: str, *argv: str | Path) -> str:
    home = run("getent", "passwd", user).split(":")[5]
    return run("runuser", "-u", user, "--", "env", f"HOME={home}", *argv)


def readable_by_all(path: Path) -> bool:
    """Whether every user can run ``path`` (the interpreter a venv links to must not sit under /root, say)."""
    real = path.resolve()
    folders_open = all(p.stat().st_mode & stat.S_IXOTH for p in real.parents)
    return folders_open and bool(real.stat().st_mode & stat.S_IXOTH)


def deploy(args: argparse.Namespace) -> dict:
    prefix, data = Path(args.prefix).resolve(), Path(args.data).resolve()
    if not readable_by_all(Path(args.python)):
        raise SystemExit(f"deploy.py: {Path(args.python).resolve()} cannot be run by other users: give --python an "
                         "interpreter every user may run (/usr/bin/python3)")
    environment(prefix, args)
    grader = accounts(args, data)
    if homes := open_homes(args.students):
        raise SystemExit(f"deploy.py: {refusal(homes)}")
    course = data / "course"
    if not course.exists():
        shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
        run("chown", "-R", f"{grader}:{grader}", course)
    course.chmod(0o700)  # `make private`: answer keys, solutions, submissions and the gradebook are the grader's
    exchange = data / "exchange"
    exchange.mkdir(parents=True, exist_ok=True)
    exchange.chmod(0o1777)  # nbgrader's exchange: everyone writes, the sticky bit keeps each one's own
    release = data / "release"  # the grader's, who rebuilds it: make student-release STUDENT_RELEASE=<this>
    release.mkdir(exist_ok=True)
    run("chown", f"{grader}:{grader}", release)
    as_user(grader, prefix / "bin" / "python", course / "student" / "build.py", release)
    config = data / "config"
    shutil.copytree(HERE / "config", config, dirs_exist_ok=True)
    gitconfig(config / "gitconfig", release, prefix / "bin" / "python")
    state = data / "hub"
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copy(HERE / "jupyterhub_config.py", state / "jupyterhub_config.py")
    settings = {"course_id": COURSE, "prefix": str(prefix), "data": str(data), "course": str(course), "exchange": str(exchange),
                "release": str(release), "grader": grader, "instructors": args.instructors, "students": args.students,
                "bind_url": args.bind_url, "hub_bind_url": f"http://127.0.0.1:{args.hub_port}",
                "proxy_api_url": f"http://127.0.0.1:{args.proxy_api_port}", "formgrader_port": args.formgrader_port}
    written = state / "ppedu-hub.json"  # settings added by hand (the spawner, limits) stay
    kept = json.loads(written.read_text()) if written.is_file() else {}
    settings = {**kept, **settings}
    written.write_text(json.dumps(settings, indent=2) + "\n")
    started = service(prefix, state) if not args.no_service else False
    print(summary(settings, state, started))
    return settings


def gitconfig(path: Path, release: Path, python: Path) -> None:
    """The git settings the hub gives its users (GIT_CONFIG_SYSTEM), the machine's own kept too. nbgitpuller clones
    the release as each student: git refuses a repository someone else owns unless the system config trusts it. Its
    merges take notebooks cell by cell with the shared environment's ppedu (the release's .gitattributes names the
    driver; ppedu.update)."""
    path.write_text(f"[include]\n\tpath = /etc/gitconfig\n[safe]\n\tdirectory = {release}\n"
                    f"\tdirectory = {release}/.git\n")
    define_driver(str(python), "--file", str(path))


def environment(prefix: Path, args: argparse.Namespace) -> None:
    """The shared environment: the course (copied in, not linked to the private course folder) and the proxy. Run
    again, it installs this course anew and keeps every package that still fits (pip's own rule), torch included."""
    subprocess.run([args.python, ROOT / "student" / "install.py", "--venv", prefix, "--no-editable",
                    "--extras", "hub", *(["--light"] if args.light else [])], check=True)
    proxy = prefix / "bin" / "configurable-http-proxy"
    if not proxy.exists():
        run("npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", prefix / "lib" / "proxy", PROXY)
        proxy.symlink_to(prefix / "lib" / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")


def accounts(args: argparse.Namespace, data: Path) -> str:
    """The two groups and the grader account (a system user whose home is under the data folder)."""
    for group in (args.instructors, args.students):
        if subprocess.run(["getent", "group", group], capture_output=True).returncode:
            run("groupadd", group)
    if subprocess.run(["id", args.grader], capture_output=True).returncode:
        data.mkdir(parents=True, exist_ok=True)
        run("useradd", "--system", "--user-group", "--create-home", "--home-dir", data / "grader", "--shell",
            "/bin/bash", args.grader)
    return args.grader


def service(prefix: Path, state: Path) -> bool:
    """A systemd service that starts the hub with the machine; False where systemd does not run the machine."""
    if not Path("/run/systemd/system").is_dir():
        return False
    unit = Path("/etc/systemd/system/ppedu-hub.service")
    unit.write_text(UNIT.format(settings=state / "ppedu-hub.json", state=state, prefix=prefix))
    run("systemctl", "daemon-reload")
    run("systemctl", "enable", "--now", "ppedu-hub")
    return True


def summary(settings: dict, state: Path, started: bool) -> str:
    start = ("started: systemctl status ppedu-hub" if started else
             f"start it: PPEDU_HUB_SETTINGS={state}/ppedu-hub.json {settings['prefix']}/bin/jupyterhub "
             f"-f {state}/jupyterhub_config.py")
    link = "/hub/user-redirect/git-pull?" + urlencode({
        "repo": f"file://{settings['release']}", "branch": "main", "targetpath": "ppedu-course",
        "urlpath": "lab/tree/ppedu-course/notebooks/01-bubble-problem.ipynb"})
    return "\n".join([
        f"The course's JupyterHub is set up; {start}.",
        f"  listens on {settings['bind_url']}; users: the groups {settings['instructors']} and "
        f"{settings['students']} (usermod -aG GROUP USER)",
        f"  the formgrader, for instructors: <hub>/services/{COURSE}/formgrader",
        f"  the course for students (nbgitpuller): <hub>{link}",
    ])


if __name__ == "__main__":
    sys.exit(main())
