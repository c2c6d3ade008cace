"""Release and collect through nbgrader's exchange, as a class would: the instructor releases, a
student fetches and submits, the instructor collects into submitted/."""

import os
import subprocess

from nbgrader.apps.api import NbGraderAPI
from traitlets.config.loader import PyFileConfigLoader

from conftest import BIN


def test_release_fetch_submit_collect(course, tmp_path, monkeypatch):
    exchange, student = tmp_path / "exchange", tmp_path / "student"
    exchange.mkdir(mode=0o777)
    student.mkdir()
    monkeypatch.setenv("PPEDU_EXCHANGE", str(exchange))  # nbgrader_config.py reads it
    monkeypatch.chdir(course)
    api = NbGraderAPI(config=PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
    assert api.release_assignment("ps1")["success"]
    assert (exchange / "ppedu" / "outbound" / "ps1" / "ps1.ipynb").is_file()
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"]}
    for command in ("fetch_assignment", "submit"):
        subprocess.run(["nbgrader", command, "ps1", "--course", "ppedu", f"--Exchange.root={exchange}"],
                       cwd=student, env=env, check=True, capture_output=True, timeout=300)
    assert (student / "ps1" / "ps1.ipynb").is_file()
    assert api.collect("ps1")["success"]
    me = __import__("getpass").getuser()
    assert (course / "submitted" / me / "ps1" / "ps1.ipynb").is_file()
