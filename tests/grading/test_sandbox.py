"""The sandbox, tried from inside: what a sandboxed process can see, write and import. Each test runs a real
process in bubblewrap (skipped where none can start)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppedu.grading.sandbox import ABSENT, HOME, LIBRARY, RUN, Limits, Sandbox, _environment, prepared, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")


def inside(code, folder=None, **kw):
    """What ``code`` prints inside a sandbox (``python -c``), and its exit status."""
    with prepared(folder, **kw) as box:
        run = subprocess.run(box.wrap([sys.executable, "-c", code]), capture_output=True, text=True, timeout=120)
    return run.returncode, run.stdout + run.stderr


def test_an_environment_installed_under_tmp_or_home_is_not_covered_by_the_private_ones(tmp_path):
    # A clone in /tmp (as CI's may be) has its .venv there: the private /tmp must not hide it.
    (tmp_path / "passwd").touch()
    args = Sandbox(tmp_path, tmp_path).wrap(["python"])
    private = max(i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] in ("/tmp", HOME))
    for path in _environment():
        bound = [i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == path]
        assert bound and min(bound) > private, f"{path} is bound before the private /tmp and home"


def test_etc_shows_only_what_python_needs_and_no_user_but_the_sandboxs():
    status, out = inside("import os, pwd; print(sorted(os.listdir('/etc'))); print([u.pw_name for u in pwd.getpwall()])")
    assert status == 0, out
    assert "shadow" not in out and "hosts" not in out and "hostname" not in out and "machine-id" not in out
    assert "['root', 'student']" in out


def test_every_private_folder_is_size_limited_the_connection_folder_included(tmp_path):
    limits = Limits(scratch_bytes=2**20, run_bytes=2**20)
    code = ("import errno\nfor folder in ('/tmp', '{home}', '{run}'):\n    try:\n        open(folder + '/fill', 'wb')"
            ".write(b'0' * 3 * 2**20)\n        print(folder, 'FILLED')\n    except OSError as e:\n"
            "        print(folder, errno.errorcode[e.errno])").format(home=HOME, run=RUN)
    before = set(os.listdir(tmp_path.parent))
    status, out = inside(code, limits=limits)
    assert status == 0 and out.count("ENOSPC") == 3 and "FILLED" not in out, out
    assert set(os.listdir(tmp_path.parent)) == before  # nothing of it on the host


def test_a_ppedu_shipped_in_the_folder_does_not_shadow_the_graders(tmp_path):
    (tmp_path / "ppedu").mkdir()
    (tmp_path / "ppedu" / "__init__.py").write_text("raise SystemExit('the shipped copy ran')")
    (tmp_path / "sitecustomize.py").write_text("raise SystemExit('sitecustomize ran')")
    status, out = inside("import os, ppedu; print(os.getcwd(), ppedu.__file__)", tmp_path)
    assert status == 0 and f"{LIBRARY}/ppedu/__init__.py" in out and "ran" not in out, out


def test_absent_packages_say_so_when_imported():
    tqdm = str(Path(__import__("tqdm").__file__).parent)
    assert inside("import numpy, tqdm")[0] == 0
    status, out = inside("import numpy; import tqdm", absent=(tqdm,))
    assert status != 0 and ABSENT in out


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user, every sandbox runs with that user's id")
def test_sandboxes_at_once_run_as_different_users_and_never_as_root():
    with prepared() as one, prepared() as two:
        assert one.uid != two.uid and one.uid > 0 and two.uid > 0
    status, out = inside("import os; print(os.getuid(), os.getgid(), os.getgroups())")
    assert status == 0 and not out.startswith("0 "), out


def test_no_network_and_no_view_of_the_graders_processes():
    code = ("import os, socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); print('NET')\n"
            "except OSError:\n    pass\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    status, out = inside(code)
    assert status == 0 and "NET" not in out
    assert max(eval(out.strip().splitlines()[-1])) < 10  # only the sandbox's own few processes
