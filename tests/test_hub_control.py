"""The hub's lifecycle where systemd runs the machine (hub/control.py, hub/deploy.py's unit): this machine has no
systemd running, so tests/grading/test_hub.py runs the other path (the hub in the background) for real; here the unit
`make hub` installs is checked by systemd's own verifier, and `ppedu-hub` is shown to hand each command to
systemctl (a systemctl on PATH that records what it was asked)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
import control  # noqa: E402
import deploy  # noqa: E402


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_the_unit_make_hub_installs_passes_systemds_verifier(tmp_path):
    prefix, state = tmp_path / "opt", tmp_path / "hub"
    (prefix / "bin").mkdir(parents=True)
    state.mkdir()
    for program in ("ppedu-hub", "jupyterhub"):
        (prefix / "bin" / program).write_text("#!/bin/sh\n")
        (prefix / "bin" / program).chmod(0o755)
    unit = tmp_path / "ppedu-hub.service"
    unit.write_text(deploy.UNIT.format(settings=state / "ppedu-hub.json", state=state, prefix=prefix))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    text = unit.read_text()
    assert "Delegate=yes" in text and f"ExecStartPre={prefix}/bin/ppedu-hub mount" in text


@pytest.mark.parametrize("command, systemctl", [("start", ["start", "ppedu-hub"]), ("stop", ["stop", "ppedu-hub"]),
                                                ("restart", ["restart", "ppedu-hub"]),
                                                ("status", ["status", "--no-pager", "ppedu-hub"])])
def test_ppedu_hub_hands_each_command_to_systemctl_where_systemd_runs_the_hub(tmp_path, monkeypatch, command,
                                                                             systemctl):
    said = tmp_path / "said"
    fake = tmp_path / "bin" / "systemctl"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {said}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(control.Hub, "systemd", property(lambda self: True))
    hub = control.Hub({"data": str(tmp_path), "exchange": str(tmp_path / "exchange"), "bind_url": "http://:8000",
                       "prefix": str(tmp_path)}, tmp_path / "ppedu-hub.json")
    assert getattr(hub, command)() == 0
    assert said.read_text().split() == systemctl
