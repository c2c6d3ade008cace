"""A class on the course's JupyterHub under load (not a test): ``make hub`` on its documented defaults (as
tests/grading/test_hub.py does: /opt/ppedu, /srv/ppedu, port 8000 reached on loopback), N
students (default 30) made as Unix users, all logging in, starting their servers and fetching and submitting ps1
at once (at most CONCURRENT at a time), then the instructor collecting and grading the class, all in this one run.

Run as root: ``.venv/bin/python benchmarks/bench_hub.py [N] [CONCURRENT]``. Prints the time to spawn the class and
per server (against one server started alone: the slowdown of a class arriving together), to submit, and to
grade the class with the formgrader's per-submission button against ``ppedu grade --jobs 2`` in its terminal (the
same submissions), the memory an idle student server holds, and how long the hub takes to stop with the class's
servers running. Everything it made is removed at the end but the shared environment (a second ``make hub`` reuses
it); it refuses a machine whose /srv/ppedu holds a class.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
from trial import User, deployed_as_documented, running_hub, terminal  # noqa: E402

SOLVED = nbformat.read(ROOT / "solutions" / "ps1" / "ps1.ipynb", as_version=4)


def timed(work, *args):
    began = time.monotonic()
    work(*args)
    return time.monotonic() - began


def spread(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds):.1f} s, slowest {max(seconds):.1f} s"


def work_on(student: User) -> None:
    student.act("fetch", "ps1")
    student.save("ps1/ps1.ipynb", SOLVED)
    student.act("submit", "ps1")


def idle_memory(names: list[str]) -> float:
    """Mean resident memory (MB) of the students' processes: their servers, started and idle."""
    rss = [int(v) for name in names for v in subprocess.run(["ps", "-o", "rss=", "-u", name], capture_output=True,
                                                            text=True).stdout.split()]
    return sum(rss) / 1024 / len(names)


def main(n: int = 30, concurrent: int = 10) -> None:
    began = time.monotonic()
    with deployed_as_documented(ROOT) as hub:
        print(f"make hub: {time.monotonic() - began:.0f} s")
        ines = hub.add("ines", "instructors")
        people = [hub.add(f"s{i:03d}", "students") for i in range(n)]
        with running_hub(hub.settings_file, hub.base / "hub.log") as running:
            url = running.url
            instructor = User(url, *ines)
            instructor.formgrader("POST", "assignment/ps1/assign")
            instructor.formgrader("POST", "assignment/ps1/release")
            with ThreadPoolExecutor(concurrent) as pool:
                t = time.monotonic()
                students = list(pool.map(lambda person: User(url, *person), people))
                print(f"{n} log-ins through the form (PAM), {concurrent} at a time: {time.monotonic() - t:.1f} s")
                alone = students[0].start()
                t = time.monotonic()
                spawns = list(pool.map(User.start, students[1:]))
                spawn_wall = time.monotonic() - t
                print(f"one server alone: {alone:.1f} s; the other {n - 1} at once: {spawn_wall:.1f} s "
                      f"({spread(spawns)}); per server, together ÷ alone: {statistics.median(spawns) / alone:.2f}")
                print(f"an idle student server holds {idle_memory([name for name, _ in people]):.0f} MB")
                t = time.monotonic()
                submits = list(pool.map(lambda s: timed(work_on, s), students))
                print(f"fetch, save and submit, {n} students: {time.monotonic() - t:.1f} s ({spread(submits)})")
            print(instructor.formgrader("POST", "assignment/ps1/collect")["log"].count("Collecting"), "collected")
            t = time.monotonic()
            for name, _ in people:
                assert instructor.formgrader("POST", f"submission/ps1/{name}/autograde")["success"]
            button = time.monotonic() - t
            t = time.monotonic()
            said = terminal(f"{url}/services/ppedu", instructor.token, "ppedu grade ps1 --jobs 2", seconds=3600)
            jobs = time.monotonic() - t
            assert f"done: {n} graded" in said, said[-2000:]
            print(f"grading the class: the formgrader's button one by one {button:.0f} s ({button / n:.1f} s each); "
                  f"ppedu grade --jobs 2 {jobs:.0f} s; ratio {button / jobs:.2f}")
            scores = {instructor.formgrader("GET", f"submission/ps1/{name}")["code_score"] for name, _ in people}
            print(f"every student's autograded score: {sorted(scores)}")
        print(f"stopping the hub (SIGTERM) with {n} servers running: {running.stop_seconds:.1f} s"
              f"{', then killed' if running.killed else ''}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
