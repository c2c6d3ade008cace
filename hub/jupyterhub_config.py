"""The course's JupyterHub: one course on one Linux machine, its users the machine's own (PAM), each student's server
started as that student, all of them importing from one shared environment (the course installed once).

``hub/deploy.py`` (``make hub``) sets the machine up and writes the settings this file reads (a JSON file named by
``PPEDU_HUB_SETTINGS``, by default /srv/ppedu/hub/ppedu-hub.json); the hub runs as root with this file copied
beside them. Who is who comes from two Unix groups: the instructors' (hub group ``formgrade-<course>``, which reaches
the formgrader service) and the students' (``nbgrader-<course>``, which nbgrader's JupyterHubAuthPlugin reads as
enrolment); membership is read at every log-in, so ``usermod -aG <group> <user>`` takes effect at the next one.

Each user's server runs under limits (memory, tasks, CPU: ``ppedu.limits``), in a control group of its own where
the machine lets the hub make one, else with per-process limits; the settings ``mem_limit``, ``tasks_limit`` and
``cpu_limit`` change them. A student also gets a quota on the exchange where ``make hub`` gave it a file system of its
own (``exchange_quota``): one student filling it stops no one else from submitting.

The formgrader runs as a hub service named after the course (nbgrader's convention: /services/<course>/), as the
grader account that owns the course folder; only the instructors' group may reach it. Students' servers run without
nbgrader's instructor extensions (Formgrader, Create Assignment, Courses), and with the exchange, the course id and
the JupyterHub course list set for every user (config/ beside this file, copied to the data folder).
"""

import json
import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from tornado import web

from ppedu import limits
from ppedu.grading.homes import members, open_homes, private, refusal

settings = json.loads(Path(os.environ.get("PPEDU_HUB_SETTINGS", "/srv/ppedu/hub/ppedu-hub.json")).read_text())
prefix, data, course = Path(settings["prefix"]), Path(settings["data"]), settings["course_id"]
config = data / "config"
INSTRUCTORS, STUDENTS = f"formgrade-{course}", f"nbgrader-{course}"  # nbgrader's names for the two hub groups


def groups_from_unix(authenticator, handler, authentication):
    """At every log-in, the user's hub groups are their Unix groups' (instructors, students)."""
    name = authentication["name"]
    authentication["groups"] = [hub for unix, hub in ((settings["instructors"], INSTRUCTORS),
                                                      (settings["students"], STUDENTS))
                                if name in {user.pw_name for user in members(unix)}]
    return authentication


def role(spawner) -> str:
    names = {group.name for group in spawner.user.groups}
    return "instructors" if INSTRUCTORS in names else "students"


def environment(role: str) -> dict[str, str]:
    """What every server of one role runs with: the shared environment's programs first (kernels, terminals and
    nbgrader's own subprocesses find them), the role's Jupyter settings, the exchange, and git's settings
    (hub/deploy.py's gitconfig): the release's repository (owned by the grader account) trusted for nbgitpuller, and
    notebooks merged cell by cell."""
    return {"PATH": f"{prefix / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": os.pathsep.join([str(config / role), str(config / "common")]),
            "PPEDU_EXCHANGE": settings["exchange"], "GIT_CONFIG_SYSTEM": str(config / "gitconfig")}


def refused(message: str) -> web.HTTPError:
    """A spawn refused with ``message`` on the user's spawn page (JupyterHub shows an HTTPError's own message; any
    other exception as "500: Unhandled error starting server")."""
    error = web.HTTPError(403, message)
    error.jupyterhub_message = message
    return error


def before_spawn(spawner) -> None:
    home = pwd.getpwnam(spawner.user.name)
    if role(spawner) == "students" and not private(home):  # a student added since the hub started
        raise refused(f"Your server cannot start: your home {home.pw_dir} can be read by others. Ask your "
                      f"instructor to run: chmod 0700 {home.pw_dir}")
    if role(spawner) == "students" and settings.get("exchange_quota"):  # a student added since make hub
        quota = str(limits.size(settings["exchange_quota"]) // 1024)  # in KiB
        subprocess.run(["setquota", "-u", spawner.user.name, quota, quota, "0", "0", settings["exchange"]], check=True,
                       capture_output=True)
    spawner.environment = {**spawner.environment, **environment(role(spawner))}


class LimitedSpawner(LocalProcessSpawner):
    """The machine's own spawner, each server (and all it starts) held to the hub's limits: in a control group of its
    own where :data:`GROUPS` found them, else with per-process limits (``ppedu.limits``)."""

    def limits(self) -> limits.Limits:
        return limits.Limits.parse(self.mem_limit, settings.get("tasks_limit", 512), self.cpu_limit)

    def make_preexec_fn(self, name):
        enter, become = limits.confine(GROUPS, name, self.limits()), super().make_preexec_fn(name)

        def preexec() -> None:
            enter()
            become()

        return preexec

    def get_env(self):
        return {**super().get_env(), limits.ENVIRONMENT: self.limits().describe()}

    async def start(self):
        if GROUPS:
            GROUPS.make(self.user.name, self.limits())
        return await super().start()

    async def stop(self, now=False):
        await super().stop(now)
        if GROUPS:  # and whatever the student left running in the background
            GROUPS.remove(self.user.name)


def token_scopes(spawner) -> list[str]:
    """The server's own token: nbgrader asks the hub which courses its user is in (and, for an instructor, where
    the formgrader is)."""
    scopes = ["users:activity!user", "access:servers!server", "read:users:name!user", "read:users:groups!user"]
    return scopes + (["list:services", "read:services"] if role(spawner) == "instructors" else [])


if homes := open_homes(settings["students"]):  # a class whose answers classmates could read does not start
    print(f"jupyterhub_config.py: {refusal(homes)}", file=sys.stderr)
    sys.exit(2)

GROUPS = limits.discover() if settings.get("cgroups", True) else None
kind = f"in control groups: {GROUPS!r}" if GROUPS else "per process (no control groups this hub may make)"
print(f"jupyterhub_config.py: users' servers limited {kind}", file=sys.stderr)

# A hub started in the background by a shell without job control (`jupyterhub ... &` in a script) has SIGINT ignored,
# and JupyterHub starts the proxy and its services before it takes SIGINT over: they would inherit it ignored, and
# stopping the hub, which interrupts each service in turn, would wait its interrupt_timeout on each (about 1 min).
signal.signal(signal.SIGINT, signal.default_int_handler)

c = get_config()  # noqa: F821 (JupyterHub provides it)

c.JupyterHub.bind_url = settings["bind_url"]
c.JupyterHub.hub_bind_url = settings["hub_bind_url"]
c.ConfigurableHTTPProxy.api_url = settings["proxy_api_url"]
c.ConfigurableHTTPProxy.command = [str(prefix / "bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(data / "hub" / "jupyterhub-proxy.pid")  # not in whatever folder it started in
c.JupyterHub.db_url = f"sqlite:///{data / 'hub' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(data / "hub" / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(data / "hub" / "jupyterhub.pid")

c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {settings["instructors"], settings["students"]}
c.PAMAuthenticator.open_sessions = False
c.Authenticator.manage_groups = True
c.Authenticator.post_auth_hook = groups_from_unix

spawner = settings.get("spawner", "limited")  # or another spawner's name ("systemd": jupyterhub-systemdspawner's)
c.JupyterHub.spawner_class = LimitedSpawner if spawner == "limited" else spawner
c.Spawner.cmd = [str(prefix / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.pre_spawn_hook = before_spawn
c.Spawner.server_token_scopes = token_scopes
c.Spawner.mem_limit = settings.get("mem_limit", "2G")  # for the server and its kernels together
c.Spawner.cpu_limit = float(settings.get("cpu_limit", 1))  # cores
c.Spawner.start_timeout = c.Spawner.http_timeout = 300  # a whole class logging in at the start of a lab
c.JupyterHub.concurrent_spawn_limit = settings.get("concurrent_spawns", 50)

c.JupyterHub.load_roles = [
    {"name": f"{course}-instructors", "groups": [INSTRUCTORS],
     "scopes": [f"access:services!service={course}", "list:services", "read:services"]},
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]
grader = pwd.getpwnam(settings["grader"])
c.JupyterHub.services = [
    {
        "name": course,  # the formgrader: https://<hub>/services/<course>/formgrader
        "url": f"http://127.0.0.1:{settings['formgrader_port']}",
        "command": [str(prefix / "bin" / "jupyterhub-singleuser"), "--ServerApp.default_url=/formgrader"],
        "user": settings["grader"],
        "cwd": settings["course"],
        "environment": {**environment("formgrader"), "HOME": grader.pw_dir},
        "oauth_no_confirm": True,
    },
    {
        "name": "idle-culler",  # stops servers an hour idle: 200 idle servers would hold the machine's memory
        "command": [str(prefix / "bin" / "python"), "-m", "jupyterhub_idle_culler",
                    f"--timeout={settings.get('idle_timeout', 3600)}"],
    },
]
