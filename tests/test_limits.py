"""The limits on each user's hub server (ppedu/limits.py), outside a hub: per process (the machine without control
groups), in control groups where this machine lets a test make them (cgroup v1 or v2, as root), and the message a
kernel gives. tests/grading/test_hub.py holds a class to them on the documented defaults."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from ppedu import limits

SMALL = limits.Limits.parse("400M", 64, 0.5, cpu_seconds=2)
GROW = "parts = []\nfor i in range(40):\n    parts.append(bytearray(b'x') * (25 * 2**20))\nprint('grew', flush=True)\n"


def _run(code, groups=None, user="ppedu-test", **kwargs):
    return subprocess.run([sys.executable, "-c", code], preexec_fn=limits.confine(groups, user, SMALL),
                          capture_output=True, text=True, timeout=120, **kwargs)


def test_without_control_groups_each_process_has_the_limits():
    said = _run("import resource, os\nprint(resource.getrlimit(resource.RLIMIT_DATA)[0],"
                " resource.getrlimit(resource.RLIMIT_CPU), os.nice(0))\n" + GROW)
    first = said.stdout.split("\n")[0]
    assert first == f"{400 * 2**20} (2, 62) {limits.NICE}", said.stdout
    assert said.returncode == 1 and "MemoryError" in said.stderr and "grew" not in said.stdout


def test_a_busy_process_without_control_groups_stops_at_its_cpu_time():
    said = _run("while True: pass")
    assert said.returncode == -24  # SIGXCPU, two CPU-seconds in


def test_a_kernel_explains_the_limit_it_reached():
    """A kernel of a limited server (PPEDU_LIMITS, the IPython extension): the cell's error names the limit, and the
    kernel lives on."""
    env = {**os.environ, limits.ENVIRONMENT: SMALL.describe()}
    manager, client = start_new_kernel(env=env, preexec_fn=limits.confine(None, "ppedu-test", SMALL))
    try:
        client.execute_interactive("get_ipython().extension_manager.load_extension('ppedu.limits')", timeout=60)
        errors = []
        client.execute_interactive("big = bytearray(2 * 2**30)", timeout=60,
                                   output_hook=lambda m: errors.append(m["content"]) if m["msg_type"] == "error" else 0)
        assert errors[0]["ename"] == "MemoryError", errors
        assert errors[0]["evalue"] == limits.explained("memory", "0.4 GB of memory, 64 tasks, 0.5 CPU cores")
        said = []
        client.execute_interactive("print(6 * 7)", timeout=60,
                                   output_hook=lambda m: said.append(m["content"].get("text", "")))
        assert "42" in "".join(said)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_extension_does_nothing_in_a_kernel_that_is_not_limited(monkeypatch):
    monkeypatch.delenv(limits.ENVIRONMENT, raising=False)
    seen = []
    limits.load_ipython_extension(type("Shell", (), {"set_custom_exc": lambda self, *a: seen.append(a)})())
    assert seen == []


@pytest.fixture
def groups():
    found = limits.discover() if os.geteuid() == 0 else None
    if found is None:
        pytest.skip("no control groups this test may make (needs root, and cgroup v1's or v2's memory, pids, cpu)")
    name = f"ppedu-test-{os.getpid()}"
    found.make(name, SMALL)
    yield found, name
    found.remove(name)
    assert not any(folder.exists() for folder in found.folders(name))


def test_in_a_control_group_the_processes_together_are_held_to_the_memory_limit(groups):
    """Two processes of 250 MB each, under the per-process limit but together past the group's 400 MB: the kernel's OOM
    killer ends one of them, and nothing outside the group."""
    found, name = groups
    hog = "import time\nb = bytearray(b'x') * (250 * 2**20)\ntime.sleep(5)\n"
    said = _run(f"import subprocess, sys\nps = [subprocess.Popen([sys.executable, '-c', {hog!r}]) for _ in range(2)]\n"
                "print(sorted(p.wait() for p in ps))", found, name)
    assert said.stdout.strip() == "[-9, 0]", said.stdout + said.stderr
    assert found.oom_kills(name) >= 1


def test_in_a_control_group_a_fork_bomb_stops_at_the_tasks_limit(groups):
    found, name = groups
    forks = ("import os, time\nfor n in range(200):\n    try:\n        child = os.fork()\n    except OSError as error:\n"
             "        print('refused the process', n + 1, error)\n        break\n    if child == 0:\n"
             "        time.sleep(2)\n        os._exit(0)\n")
    said = _run(forks, found, name)
    refused = re.search(r"refused the process (\d+) \[Errno 11\] Resource temporarily unavailable", said.stdout)
    assert refused and int(refused[1]) <= SMALL.tasks, said.stdout + said.stderr


def test_in_a_control_group_busy_loops_run_under_the_cpu_limit(groups):
    found, name = groups
    _run("import subprocess, sys\nloop = 'import time\\nend = time.time() + 2\\nwhile time.time() < end: pass'\n"
         "[p.wait() for p in [subprocess.Popen([sys.executable, '-c', loop]) for _ in range(2)]]", found, name)
    cpu = found.parents["cpu"] / name
    stat = (cpu / "cpu.stat").read_text()
    if found.version == 1:
        assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "50000"
    # the group ran under its quota (how often it was held back depends on what else runs on the machine)
    assert int(stat.split("nr_periods ")[1].split()[0]) > 0, stat


def test_stopping_a_group_ends_what_was_left_in_it(groups):
    found, name = groups
    subprocess.Popen(["sleep", "600"], preexec_fn=limits.confine(found, name, SMALL), start_new_session=True)
    assert len(found.members(name)) == 1
    found.remove(name)
    assert found.members(name) == []


def test_cgroup_v2_is_found_under_the_process_s_own_group_and_given_the_controllers(tmp_path):
    """cgroup v2 (this machine's kernel offers its controllers to v1 only): discover() on a tree shaped as the kernel
    shows it, the hub's processes moved to a leaf before its group hands the controllers down."""
    root = tmp_path / "cgroup"
    own = root / "system.slice" / "ppedu-hub.service"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.procs").write_text("41\n42\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(f"30 23 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw\n")
    (proc / "cgroup").write_text("0::/system.slice/ppedu-hub.service\n")
    found = limits.discover(proc)
    assert found.version == 2 and set(found.parents.values()) == {own / limits.USERS}
    assert (own / "hub" / "cgroup.procs").read_text() == "42\n"  # each pid written in turn (the kernel moves each)
    assert (own / "cgroup.subtree_control").read_text() == "+memory +pids +cpu\n"
    assert (own / limits.USERS / "cgroup.subtree_control").read_text() == "+memory +pids +cpu\n"
    found.make("alice", SMALL)
    alice = own / limits.USERS / "alice"
    assert {f: (alice / f).read_text() for f in ("memory.max", "pids.max", "cpu.max")} == {
        "memory.max": f"{400 * 2**20}\n", "pids.max": "64\n", "cpu.max": "50000 100000\n"}


def test_no_groups_where_the_machine_offers_none(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text("")
    (proc / "cgroup").write_text("0::/\n")
    assert limits.discover(proc) is None
    assert limits.discover(tmp_path / "nowhere") is None


def test_sizes_are_read_as_jupyterhub_writes_them():
    assert [limits.size(s) for s in ("2G", "512M", "1.5g", "100K", "2GiB", 7)] == [2**31, 2**29, 3 * 2**29, 102400,
                                                                                   2**31, 7]
    with pytest.raises(ValueError, match="not a size"):
        limits.size("two gigs")
    with pytest.raises(ValueError, match="positive"):
        limits.Limits.parse("2G", 0, 1)
