"""The course on Kubernetes (hub/k8s/): Zero to JupyterHub's values, and the course image's Dockerfile.

The values are checked as helm checks them before it renders anything: merged onto the chart's defaults and validated
against the chart's own values.schema.json (hub/k8s/chart/, chart 4.4.0). The image cannot be built here (no Docker
daemon): its install step is compared with the one `make hub` runs, and the files it copies are built into the
course's wheel, which must hold the library and none of the grader's files."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from jsonschema import Draft7Validator
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "hub" / "k8s"
SCHEMA = json.loads((K8S / "chart" / "values.schema.json").read_text())
DEFAULTS = json.loads((K8S / "chart" / "values.json").read_text())
VALUES = yaml.safe_load((K8S / "values.yaml").read_text())
DOCKERFILE = (K8S / "Dockerfile").read_text()


def merged(defaults, values):
    """The values helm validates: ``values`` deep-merged onto the chart's ``defaults`` (maps merge, anything else
    replaces, null removes the key)."""
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def problems(values):
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft7Validator(SCHEMA).iter_errors(merged(DEFAULTS, values))]


def test_the_chart_s_own_defaults_pass_its_schema():
    assert problems({}) == []


def test_the_course_values_pass_the_chart_s_schema():
    assert problems(VALUES) == []


@pytest.mark.parametrize("path, value, said", [
    (("singleuser", "imag"), {"name": "x"}, "Additional properties"),
    (("hub", "db", "type"), "postgresql", "is not one of"),
    (("cull", "timeout"), "1h", "is not of type 'integer'"),
])
def test_a_mistake_in_the_values_is_caught(path, value, said):
    wrong = copy.deepcopy(VALUES)
    *where, key = path
    node = wrong
    for part in where:
        node = node[part]
    node[key] = value
    assert any(said in p for p in problems(wrong)), problems(wrong)


def test_the_values_name_the_course_image_the_postgresql_gradebook_and_the_exchange():
    single, hub = VALUES["singleuser"], VALUES["hub"]
    assert single["image"]["name"] and isinstance(single["image"]["tag"], str)
    mounts = {m["name"]: m["mountPath"] for m in single["storage"]["extraVolumeMounts"]}
    volumes = {v["name"]: v for v in single["storage"]["extraVolumes"]}
    exchange = re.search(r"^ENV PPEDU_EXCHANGE=(\S+)$", DOCKERFILE, re.M)[1]
    assert mounts["exchange"] == exchange and "nfs" in volumes["exchange"]
    assert hub["db"]["type"] == "postgres" and hub["extraEnv"]["PPEDU_DB_URL"]["valueFrom"]["secretKeyRef"]
    assert "PPEDU_DB_URL" not in json.dumps(single)


def _hub(user_id, name, *groups):
    """A spawner of the hub's, as the hook sees it: its user's id in the hub's database, name and hub groups."""
    user = SimpleNamespace(id=user_id, name=name, groups=[SimpleNamespace(name=g) for g in groups])
    return SimpleNamespace(user=user, environment={})


@pytest.fixture
def hook(monkeypatch):
    """hub.extraConfig's ppedu-users run as the chart runs it: in the hub's config, with ``c`` its Config."""
    monkeypatch.setenv("PPEDU_DB_URL", "postgresql+psycopg://grader:secret@db/ppedu")
    config = Config()
    exec(compile(VALUES["hub"]["extraConfig"]["ppedu-users"], "extraConfig", "exec"), {"c": config})
    return config.KubeSpawner


def _pod(kube, spawner):
    """What KubeSpawner puts in the pod's security context for ``spawner`` (it calls each setting that is callable
    with the spawner), after the pre-spawn hook."""
    kube.pre_spawn_hook(spawner)
    ids = {k: (v(spawner) if callable(v) else v) for k, v in
           (("runAsUser", kube.uid), ("runAsGroup", kube.gid), ("fsGroup", kube.fs_gid),
            ("supplementalGroups", kube.supplemental_gids))}
    return ids, spawner.environment


def test_every_user_runs_as_a_uid_of_their_own_kept_by_the_hub(hook):
    """uid = 100000 + the user's id in the hub's database: distinct users, distinct uids, the same uid every time
    (and across hub restarts: the id is the database's); no student shares a group with another or with the
    instructors, whose shared group owns the submissions (nbgrader's inbound/ is 2733)."""
    alice, bob = _hub(1, "alice", "nbgrader-ppedu"), _hub(2, "bob", "nbgrader-ppedu")
    ines, ivan = _hub(3, "ines", "formgrade-ppedu"), _hub(40, "ivan", "formgrade-ppedu", "nbgrader-ppedu")
    pods = {who.user.name: _pod(hook, who) for who in (alice, bob, ines, ivan)}
    assert {n: p[0]["runAsUser"] for n, p in pods.items()} == {"alice": 100001, "bob": 100002, "ines": 100003,
                                                               "ivan": 100040}
    assert _pod(hook, _hub(1, "alice", "nbgrader-ppedu"))[0] == pods["alice"][0]  # stable
    assert pods["alice"][0] == {"runAsUser": 100001, "runAsGroup": 100001, "fsGroup": 100001, "supplementalGroups": []}
    assert pods["bob"][0]["runAsGroup"] == pods["bob"][0]["fsGroup"] == 100002
    assert {p[0]["runAsGroup"] for n, p in pods.items() if n in ("ines", "ivan")} == {99999}
    assert 99999 not in {pods[s][0]["runAsGroup"] for s in ("alice", "bob")}


def test_the_hook_names_each_pods_user_and_gives_the_gradebook_to_instructors_only(hook):
    (_, student), (_, teacher) = _pod(hook, _hub(5, "alice", "nbgrader-ppedu")), _pod(hook, _hub(6, "ines",
                                                                                               "formgrade-ppedu"))
    assert student == {"USER": "alice", "LOGNAME": "alice"}  # nbgrader's student id, with no name for the uid
    assert teacher["USER"] == "ines" and teacher["PPEDU_DB_URL"].startswith("postgresql+psycopg://")


def test_a_hub_user_id_with_no_uid_is_refused(hook):
    with pytest.raises(ValueError, match="no uid"):
        hook.uid(_hub(2**31, "mallory"))


def test_the_values_leave_no_shared_uid_to_the_chart():
    """The chart's own singleuser.uid (1000) and fsGid (100) are removed (null), so only the hook's apply."""
    single = merged(DEFAULTS, VALUES)["singleuser"]
    assert DEFAULTS["singleuser"]["uid"] == 1000 and "uid" not in single and "fsGid" not in single


def _copied():
    """The Dockerfile's COPY lines: (sources, destination)."""
    return [(line.split()[1:-1], line.split()[-1]) for line in DOCKERFILE.splitlines() if line.startswith("COPY ")]


def test_the_image_installs_the_course_as_make_hub_does():
    install = re.search(r"^RUN python3 (\S+)/student/install\.py (.*?) &&", DOCKERFILE, re.M)
    deploy = (ROOT / "hub" / "deploy.py").read_text()
    made = re.search(r'ROOT / "student" / "install.py", "--venv", prefix, (.*?)\*\(', deploy, re.S)[1]
    as_make_hub = re.findall(r'"([^"]+)"', made)
    assert install and install[2].split()[2:] == as_make_hub, (install and install[2], as_make_hub)
    assert install[2].split()[:2] == ["--venv", "/opt/ppedu"]


def test_the_image_holds_the_library_and_none_of_the_grader_s_files(tmp_path):
    sources = [src for srcs, dest in _copied() if dest.startswith("/tmp/ppedu") for src in srcs]
    for src in sources:
        assert (ROOT / src).exists(), src
        assert src.split("/")[0] not in {"solutions", "grader", "tests", "exercises", ".", "nbgrader_config.py"}, src
    context = tmp_path / "ppedu"
    for srcs, dest in _copied():
        if dest.startswith("/tmp/ppedu"):
            for src in srcs:
                target = context / Path(dest).relative_to("/tmp/ppedu") / (Path(src).name if dest.endswith("/") else "")
                target.parent.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, target)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp_path / "wheel"), str(context)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    names = zipfile.ZipFile(next((tmp_path / "wheel").glob("ppedu-*.whl"))).namelist()
    assert "ppedu/grading/__init__.py" in names and "ppedu/reference_orders.json" in names
    assert not [n for n in names if n.split("/")[0] in {"solutions", "grader", "tests"}]
    configs = [src for srcs, dest in _copied() if dest == "/etc/jupyter/" for src in srcs]
    assert configs and all((ROOT / src).is_dir() for src in configs)


def test_the_image_s_git_merges_notebooks_cell_by_cell(tmp_path):
    """The image defines the notebook merge driver system-wide, before its user loses root, with its own python; the
    line's command run here, into a system config of this test's, defines the driver git then runs."""
    run = re.search(r"^RUN /opt/ppedu/bin/python -c '(.+)'$", DOCKERFILE, re.M)
    assert run and DOCKERFILE.index(run[0]) < DOCKERFILE.index("USER 1000")
    config = tmp_path / "gitconfig"
    subprocess.run([sys.executable, "-c", run[1]], env={**os.environ, "GIT_CONFIG_SYSTEM": str(config)}, check=True)
    defined = subprocess.run(["git", "config", "--file", config, "merge.ppedu-notebook.driver"], capture_output=True,
                             text=True, check=True).stdout
    assert defined.startswith(f"{sys.executable} -m ppedu.update %O %A %B %P")
