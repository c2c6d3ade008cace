"""Set up the course's JupyterHub on this Linux machine, as root (``make hub`` runs it; docs/instructor.md, "Running a
class on JupyterHub").

What it makes, each step skipped where it is done already (run it again after an update):

* the shared environment ``--prefix`` (/opt/ppedu): the course installed once for every user, not linked to any
  private folder, with JupyterHub, nbgitpuller, the idle culler and the proxy (configurable-http-proxy, from npm),
  PyTorch's CPU build where its index can be reached (``--light``: no torch); ``bin/ppedu-hub``, which starts, stops
  and restarts the hub (hub/control.py); and, for login shells (SSH, ``su -``), /etc/profile.d/ppedu.sh: the course's
  programs on PATH and the hub's git settings;
* the Unix groups of instructors and students, and the grader account that owns the course; it refuses to go on
  while a student's home can be read by others (:mod:`ppedu.grading.homes`), and so does the hub when it starts;
* under ``--data`` (/srv/ppedu): ``course/``, a git clone of this repository (the instructors' clone ``make hub`` runs
  in) closed to everyone but the grader account (answer keys, solutions, submissions, the gradebook); run again, it
  commits what was edited on the hub and merges this clone's newest commit in; ``exchange/``, nbgrader's exchange
  (1777) on a file system of its own (``exchange.img``), with a quota per student where the kernel has quotas;
  ``release/``, the student release as a git repository, for nbgitpuller links, rebuilt from the course;
  ``config/``, the Jupyter settings of each role and the users' git settings (the release trusted, notebooks merged
  cell by cell); ``hub/``, root's: the hub's database, secrets, settings, log and pid files, and its copy of
  hub/jupyterhub_config.py;
* a systemd service, ``ppedu-hub``, where systemd runs the machine; the hub is started (by systemd, or in the
  background by ``ppedu-hub start``) unless it runs already.

Standard library only: it runs before the environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the course's own ppedu (standard library only where this imports it)
sys.path.insert(0, str(HERE))  # hub/control.py
from ppedu.grading.homes import members, open_homes, refusal  # noqa: E402
from ppedu.limits import size  # noqa: E402
from control import mount_exchange  # noqa: E402
from ppedu.update import define_driver  # noqa: E402

COURSE = "ppedu"
PROXY = "configurable-http-proxy@5.3.0"
UNIT = """[Unit]
Description=JupyterHub of the ppedu course
After=network.target

[Service]
Environment=PPEDU_HUB_SETTINGS={settings}
WorkingDirectory={state}
# the exchange's own file system, mounted again after a reboot
ExecStartPre={prefix}/bin/ppedu-hub mount
ExecStart={prefix}/bin/jupyterhub -f {state}/jupyterhub_config.py
Restart=on-failure
# the hub makes a control group per user's server under its own (ppedu.limits)
Delegate=yes

[Install]
WantedBy=multi-user.target
"""
#: For login shells (SSH, su -): the course's programs, and the hub's git settings (the release trusted).
PROFILE = """# Written by ppedu's `make hub`: the course's programs (nbgrader, ppedu) in login shells, first for users
# and after the system's for root, and the hub's git settings (the release at {release} trusted for a local clone).
if [ "$(id -u)" -eq 0 ]; then PATH="$PATH:{prefix}/bin"; else PATH="{prefix}/bin:$PATH"; fi
GIT_CONFIG_SYSTEM={gitconfig}
export PATH GIT_CONFIG_SYSTEM
"""
#: Every kernel of the shared environment reads this (IPython's config for an environment): in a limited server's
#: kernels, a limit reached is explained (ppedu.limits).
KERNEL_CONFIG = """# Written by ppedu's `make hub`.
import os

if os.environ.get("PPEDU_LIMITS"):
    c.InteractiveShellApp.extensions.append("ppedu.limits")
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
    parser.add_argument("--no-start", action="store_true", help="do not start the hub")
    parser.add_argument("--exchange-size", default="4G", help="the exchange's own file system (a sparse image; "
                        "default 4G)")
    parser.add_argument("--exchange-quota", default="200M", help="what each student may hold in the exchange, where "
                        "the kernel has quotas (default 200M)")
    return parser


def run(*argv: str | Path, **kwargs) -> str:
    return subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True, **kwargs).stdout


def as_user(user: str, *argv: str | Path) -> str:
    """``argv`` run as ``user``, in their home (the folder make hub runs in may be closed to them)."""
    return run("runuser", "-u", user, "--", "env", f"HOME={_home(user)}", *argv, cwd=_home(user))


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
    uncommitted = changes(ROOT)
    environment(prefix, args)
    grader = accounts(args, data)
    if homes := open_homes(args.students):
        raise SystemExit(f"deploy.py: {refusal(homes)}")
    course = data / "course"
    merged = course_clone(ROOT, course, grader)
    course.chmod(0o700)  # `make private`: answer keys, solutions, submissions and the gradebook are the grader's
    state = data / "hub"
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    written = state / "ppedu-hub.json"  # settings added by hand (the spawner, limits) stay
    kept = json.loads(written.read_text()) if written.is_file() else {}
    exchange = data / "exchange"
    quota = exchange_filesystem(data, exchange, kept.get("exchange_size") or args.exchange_size, args.students,
                                kept.get("exchange_quota") or args.exchange_quota)
    release = data / "release"  # the grader's, who rebuilds it: make student-release STUDENT_RELEASE=<this>
    release.mkdir(exist_ok=True)
    run("chown", f"{grader}:{grader}", release)
    as_user(grader, prefix / "bin" / "python", course / "student" / "build.py", release)
    config = data / "config"
    shutil.copytree(HERE / "config", config, dirs_exist_ok=True)
    gitconfig(config / "gitconfig", release, prefix / "bin" / "python")
    login_shells(prefix, release, config / "gitconfig")
    shutil.copy(HERE / "jupyterhub_config.py", state / "jupyterhub_config.py")
    settings = {"course_id": COURSE, "prefix": str(prefix), "data": str(data), "course": str(course),
                "exchange": str(exchange), "release": str(release), "grader": grader, "instructors": args.instructors,
                "students": args.students, "bind_url": args.bind_url,
                "hub_bind_url": f"http://127.0.0.1:{args.hub_port}",
                "proxy_api_url": f"http://127.0.0.1:{args.proxy_api_port}", "formgrader_port": args.formgrader_port}
    settings = {**kept, **settings, "exchange_quota": quota}
    written.write_text(json.dumps(settings, indent=2) + "\n")
    control(prefix, written)
    if not args.no_service:
        service(prefix, state)
    print(summary(settings, merged, uncommitted, quota, started=_start(prefix, args.no_start)))
    return settings


def changes(clone: Path) -> list[str]:
    """The files changed in the instructors' clone but not committed, which the hub's course does not get."""
    if not (clone / ".git").exists():
        raise SystemExit(f"deploy.py: {clone} is not a git clone: run make hub in a clone of the course's repository "
                         "(the hub's course is a clone of it, updated by the next make hub)")
    said = run("git", "-c", "safe.directory=*", "-C", clone, "status", "--porcelain", "--untracked-files=all")
    return [line[3:] for line in said.splitlines()]


def course_clone(clone: Path, course: Path, grader: str) -> str:
    """The hub's course: a git clone of the instructors' ``clone``, the grader account's. The first time it is cloned;
    after that, what was changed on the hub (the formgrader's edits) is committed there, and ``clone``'s newest
    commit is merged in (both sides' commits kept). A course copied in before the hub kept it in git becomes a clone
    whose first commit holds what differed. Returns what happened, in a line."""
    git = ("git", "-c", "safe.directory=*", "-C", course)
    if not course.exists():
        run("git", "-c", "safe.directory=*", "clone", "--quiet", "--no-hardlinks", clone, course)
        run("chown", "-R", f"{grader}:{grader}", course)
        identity(grader)
        return f"the course cloned from {clone} ({run(*git, 'rev-parse', '--short', 'HEAD').strip()})"
    identity(grader)
    if not (course / ".git").exists():
        run(*git, "init", "--quiet", "--initial-branch=main")
    run(*git, "fetch", "--quiet", clone, "HEAD")
    run("chown", "-R", f"{grader}:{grader}", course / ".git")
    mine = ("git", "-C", course)
    if subprocess.run([*git, "rev-parse", "--verify", "--quiet", "HEAD"], capture_output=True).returncode:
        as_user(grader, *mine, "reset", "--quiet", "FETCH_HEAD")  # the copy's files as they are, on the clone's history
    if as_user(grader, *mine, "status", "--porcelain"):
        as_user(grader, *mine, "add", "--all")
        as_user(grader, *mine, "commit", "--quiet", "-m", "Edits made on the hub (the formgrader, its terminal)")
    before = run(*git, "rev-parse", "HEAD").strip()
    merge = subprocess.run(["runuser", "-u", grader, "--", "env", f"HOME={_home(grader)}", *mine, "merge",
                            "--no-edit", "-m", f"Merge the instructors' clone ({clone})", "FETCH_HEAD"],
                           capture_output=True, text=True, cwd=_home(grader))
    if merge.returncode and (course / ".git" / "MERGE_HEAD").exists():
        as_user(grader, *mine, "merge", "--abort")
        raise SystemExit(f"deploy.py: the hub's course and {clone} both changed the same lines; nothing was changed "
                         f"on the hub. Merge by hand: as {grader} in {course}: git pull {clone} HEAD, then make hub "
                         f"again.\n{merge.stdout[-1500:]}")
    if merge.returncode:  # git stopped before merging (files in the way, unrelated histories): its own words
        raise SystemExit(f"deploy.py: git could not merge {clone} into the hub's course {course}:\n"
                         f"{(merge.stderr or merge.stdout)[-1500:]}")
    after = run(*git, "rev-parse", "HEAD").strip()
    if after == before:
        return f"the course is up to date with {clone}"
    count = run(*git, "rev-list", "--count", f"{before}..FETCH_HEAD").strip()  # the clone's, not the merge
    return f"the course took {count} new commit(s) from {clone} ({after[:7]})"


def identity(grader: str) -> None:
    """The grader account's git identity: what the instructors commit in the formgrader's terminal is theirs."""
    if subprocess.run(["runuser", "-u", grader, "--", "env", f"HOME={_home(grader)}", "git", "config", "--global",
                       "user.email"], capture_output=True, cwd=_home(grader)).returncode:
        as_user(grader, "git", "config", "--global", "user.name", f"{COURSE} course on {socket.gethostname()}")
        as_user(grader, "git", "config", "--global", "user.email", f"{grader}@{socket.gethostname()}")


def exchange_filesystem(data: Path, exchange: Path, capacity: str, students: str, quota: str) -> str | None:
    """nbgrader's exchange (1777: everyone writes, the sticky bit keeps each one's own) on a file system of its own, a
    sparse image (``data``/exchange.img, ``capacity``) mounted at ``exchange``: a student who fills the machine's disk
    (their home, /tmp) stops no one submitting, nor does a full exchange stop the hub or the gradebook. Where the
    kernel has user quotas, each student may hold ``quota`` in it; returns that quota, or None without quotas. Where
    no loop device can be had, the exchange stays a folder."""
    image = data / "exchange.img"
    exchange.mkdir(parents=True, exist_ok=True)
    if not image.exists() and shutil.which("mkfs.ext4"):
        made = None
        for features in (["-O", "quota", "-E", "quotatype=usrquota"], []):  # a kernel without quotas mounts neither
            run("truncate", "-s", capacity, image)
            run("mkfs.ext4", "-q", "-F", "-m", "0", *features, image)
            trial = Path(tempfile.mkdtemp(prefix="exchange-", dir=data))
            options = "loop,nosuid,nodev" + (",usrquota" if features else "")
            if not subprocess.run(["mount", "-o", options, image, trial], capture_output=True).returncode:
                made = bool(features)
                run("cp", "-a", f"{exchange}/.", trial)  # what an exchange before it held
                (trial / "lost+found").rmdir()
                run("umount", trial)
                trial.rmdir()
                break
            trial.rmdir()
            image.unlink()
        if made is None:
            print("deploy.py: no loop device: the exchange stays a folder of this file system", file=sys.stderr)
        else:
            shutil.rmtree(exchange)
            exchange.mkdir()
    on_its_own = mount_exchange({"exchange": str(exchange), "data": str(data), "exchange_quota": quota})
    exchange.chmod(0o1777)
    features = run("dumpe2fs", "-h", image).split("Filesystem features:", 1)[-1].splitlines()[0] if on_its_own else ""
    if "quota" not in features.split():  # made where the kernel has no quotas
        return None
    for user in members(students):
        kib = str(size(quota) // 1024)
        run("setquota", "-u", user.pw_name, kib, kib, "0", "0", exchange)
    return quota


def login_shells(prefix: Path, release: Path, gitconfig: Path) -> None:
    """nbgrader and ppedu on the PATH of a login shell (SSH, su -), and the hub's git settings there."""
    Path("/etc/profile.d/ppedu.sh").write_text(PROFILE.format(prefix=prefix, release=release, gitconfig=gitconfig))
    kernels = prefix / "etc" / "ipython" / "ipython_kernel_config.py"
    kernels.parent.mkdir(parents=True, exist_ok=True)
    kernels.write_text(KERNEL_CONFIG)


def control(prefix: Path, settings: Path) -> None:
    """``ppedu-hub`` (hub/control.py) in the environment's bin/, for root."""
    script = settings.parent / "control.py"
    shutil.copy(HERE / "control.py", script)
    command = prefix / "bin" / "ppedu-hub"
    command.write_text(f"#!/bin/sh\nexec {prefix / 'bin' / 'python'} {script} --settings {settings} \"$@\"\n")
    command.chmod(0o755)


def _start(prefix: Path, no_start: bool) -> str:
    if no_start:
        return "not started (--no-start): ppedu-hub start"
    said = subprocess.run([prefix / "bin" / "ppedu-hub", "start"], capture_output=True, text=True)
    if said.returncode:
        raise SystemExit(f"deploy.py: the hub did not start:\n{said.stdout}{said.stderr}")
    return said.stdout.strip().splitlines()[-1]


def _home(user: str) -> str:
    return run("getent", "passwd", user).split(":")[5]


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
    home = Path(_home(args.grader))
    if not home.is_dir():  # the account outlived its data folder (removed by hand): its home made as useradd makes it
        home.mkdir(parents=True)
        run("chown", f"{args.grader}:{args.grader}", home)
        home.chmod(0o755)
    return args.grader


def service(prefix: Path, state: Path) -> None:
    """A systemd service that starts the hub with the machine, where systemd runs the machine (ppedu-hub then
    starts, stops and restarts it through systemctl)."""
    if not Path("/run/systemd/system").is_dir():
        return
    unit = Path("/etc/systemd/system/ppedu-hub.service")
    unit.write_text(UNIT.format(settings=state / "ppedu-hub.json", state=state, prefix=prefix))
    run("systemctl", "daemon-reload")
    run("systemctl", "enable", "ppedu-hub")


def summary(settings: dict, merged: str, uncommitted: list[str], quota: str | None, started: str) -> str:
    link = "/hub/user-redirect/git-pull?" + urlencode({
        "repo": f"file://{settings['release']}", "branch": "main", "targetpath": "ppedu-course",
        "urlpath": "lab/tree/ppedu-course/notebooks/01-bubble-problem.ipynb"})
    left = (f"  not on the hub, not committed in {ROOT} (commit them, then make hub again): "
            f"{', '.join(uncommitted[:8])}{' …' if len(uncommitted) > 8 else ''}" if uncommitted else None)
    bound = (f"each student may hold {quota} in it" if quota else "no quota per student (this kernel has none)")
    lines = [
        f"The course's JupyterHub is set up; {started}.",
        f"  manage it with {settings['prefix']}/bin/ppedu-hub start|stop|restart|status (as root)",
        f"  {merged}; the release: {settings['release']}",
        *([left] if left else []),
        f"  the exchange: {settings['exchange']}, on a file system of its own; {bound}",
        f"  listens on {settings['bind_url']}; users: the groups {settings['instructors']} and "
        f"{settings['students']} (usermod -aG GROUP USER)",
        f"  the formgrader, for instructors: <hub>/services/{COURSE}/formgrader",
        f"  the course for students (nbgitpuller): <hub>{link}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
