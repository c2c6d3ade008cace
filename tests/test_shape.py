"""The package's shape: imports run one way (no cycles), and only the command line imports the command line."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ppedu"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The ppedu modules ``name`` imports anywhere in its body (late imports too), except for type checking."""
    tree = ast.parse(MODULES[name].read_text())
    for node in ast.walk(tree):  # drop `if TYPE_CHECKING:` blocks
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                      for a in node.names}
    return {m for m in found if m in MODULES and m != name}


def is_cli(name: str) -> bool:
    return name.split(".")[-1] in ("cli", "__main__")


def test_no_import_cycles():
    graph = {name: imports(name) for name in MODULES}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " → ".join(path[path.index(nxt):] + [node, nxt]) if nxt in path
                            else f"import cycle through {node} → {nxt}")
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def test_no_library_module_imports_the_command_line():
    for name in MODULES:
        if not is_cli(name):
            assert not {m for m in imports(name) if is_cli(m)}, f"{name} imports the command line"


def test_widgets_and_lessons_do_not_import_grading():
    for name in MODULES:
        if name.startswith("ppedu.widgets") or name == "ppedu.lesson":
            assert not {m for m in imports(name) if m.startswith("ppedu.grading")}, name
