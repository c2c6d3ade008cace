"""The project's set-up: conda and pip users get the same dependencies; the README's two commands."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch"}


def _split(spec: str) -> tuple[str, str]:
    name, version = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", spec).groups()
    return name.lower(), version.replace(" ", "")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = dict(_split(s) for s in project["dependencies"] + extras["torch"] + extras["test"])
    wanted = {CONDA_NAMES.get(k, k): v for k, v in wanted.items()}
    conda = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:"):].splitlines():
        if m := re.match(r"\s+- ([A-Za-z][^:#]*)$", line):
            name, version = _split(m.group(1).strip())
            if name not in {"python", "pip", "-e"}:
                conda[name] = version
    assert conda == wanted


def test_torch_is_optional_and_pyproject_admits_the_pinned_one():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch" not in dict(_split(s) for s in project["dependencies"])  # install.py --light: no torch
    spec = dict(_split(s) for s in project["optional-dependencies"]["torch"])["torch"]
    pinned = re.search(r'TORCH = "torch==([\d.]+)"', (ROOT / "student" / "install.py").read_text()).group(1)
    from packaging.specifiers import SpecifierSet

    assert pinned in SpecifierSet(spec) and "<" in spec  # a closed range: no surprise CUDA build


def test_readme_gives_exactly_the_two_setup_commands_and_ci_runs_one():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "make test"
