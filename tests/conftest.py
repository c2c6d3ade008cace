"""The suite runs in parallel (`make test`: pytest-xdist, two workers, ``--dist loadgroup``) without any test having
to know: a test runs on whichever worker is free, except that

* the tests of a module (or class) that share a fixture of that scope run on one worker, one after the other, so the
  fixture is made once (a session-scoped fixture is made once per worker);
* tests that use one resource of the machine run on one worker, one after the other, whatever their module: those
  marked ``@pytest.mark.system("name")`` with the same name (Unix users or folders of fixed names, fixed ports,
  /srv/ppedu, /etc/jupyter), and those of :data:`SYSTEM` (the browser tests, which share Chromium, the CPU their
  timings need and folders of build/).
"""

import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

#: Folders and files whose every test uses one resource of the machine: the browser tests' Chromium, and the folders
#: of build/ they share with tests elsewhere (reveal.js installed into build/test-slides).
SYSTEM = {"tests/browser/": "browser", "tests/widgets/test_slides.py": "browser"}


def pytest_configure(config):
    config.addinivalue_line("markers", "system(name): uses a resource of the machine that no other test with the "
                                       "same name may use at the same time (tests/conftest.py)")


def group(item) -> str | None:
    """The xdist group ``item`` runs in, or None (any worker)."""
    marker = item.get_closest_marker("system")
    if marker:
        return f"system:{marker.args[0]}"
    where = item.nodeid.replace(os.sep, "/")
    for folder, name in SYSTEM.items():
        if where.startswith(folder):
            return f"system:{name}"
    info = getattr(item, "_fixtureinfo", None)
    scopes = {d.scope for defs in (info.name2fixturedefs.values() if info else ()) for d in defs}
    if scopes & {"module", "package"}:
        return item.nodeid.split("::")[0]
    if "class" in scopes:
        return item.nodeid.rsplit("::", 1)[0]
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = group(item)
        if name:
            item.add_marker(pytest.mark.xdist_group(name))
    result = yield
    # xdist 3.8 puts a test's group into its id by rewriting ``item._nodeid``, which pytest 9 no longer reads (the id
    # is ``item._id``): without this every group was split across the workers and each made the module's fixtures.
    if getattr(config.option, "loadgroup", False) and items and hasattr(items[0], "_id"):
        from _pytest.nodeid import coerce_node_id

        for item in items:
            if (name := group(item)) and "@" not in item.nodeid:
                item._id = coerce_node_id(f"{item.nodeid}@{name}")
    return result


@pytest.fixture(scope="session")
def ran(tmp_path_factory):
    """``ran(name)``: the course notebook ``name`` run once for the whole session, shared by the xdist workers
    (tests/notebook_run.py): its run and the folder it ran in."""
    from notebook_run import run

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # pytest-N/, above each popen-gwN/
    return lambda name: run(name, shared)
