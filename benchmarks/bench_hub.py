"""A class on the course's JupyterHub under load (not a test): ``make hub`` on its documented defaults (as
tests/grading/test_hub.py does: /opt/ppedu, /srv/ppedu, port 8000 reached on loopback, the hub started by make hub),
N students (default 30) made as Unix users, all logging in, starting their servers, pulling the release (nbgitpuller)
and fetching and submitting ps1 at once (at most CONCURRENT at a time), each then running chapter 1 in a kernel; the
instructor collecting and grading the class; the hub stopped with ``ppedu-hub stop``; all in this one run.

Run as root: ``.venv/bin/python benchmarks/bench_hub.py [N] [CONCURRENT]``. Prints the time to spawn the class and
per server (against one server started alone: the slowdown of a class arriving together), to submit, and to
grade the class with the formgrader's per-submission button against ``ppedu grade --jobs 2`` in its terminal (the
same submissions); the memory of an idle server and of a working one (its kernel having run chapter 1: proportional
set size, each shared page divided among the processes that map it, as the machine pays for it), the disk each
student takes (home, exchange, the course's copies), the failures, the machine's load and how long the hub takes to
stop with the class's servers running. Everything it made is removed at the end but the shared environment (a second
``make hub`` reuses it); it refuses a machine whose /srv/ppedu holds a class.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hub"))
from trial import User, _execute, deployed_as_documented, terminal  # noqa: E402

SOLVED = nbformat.read(ROOT / "solutions" / "ps1" / "ps1.ipynb", as_version=4)
CHAPTER = "\n".join(c.source for c in nbformat.read(ROOT / "notebooks" / "01-bubble-problem.ipynb", as_version=4).cells
                    if c.cell_type == "code")
FAILURES: list[str] = []


def timed(work, *args):
    began = time.monotonic()
    work(*args)
    return time.monotonic() - began


def spread(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds):.1f} s, slowest {max(seconds):.1f} s"


def attempt(what: str, work, *args):
    """``work(*args)``, a failure counted (and the class goes on) rather than raised."""
    try:
        return work(*args)
    except Exception as error:  # noqa: BLE001 (a benchmark reports every failure)
        FAILURES.append(f"{what}: {type(error).__name__}: {str(error)[:200]}")
        return None


def work_on(student: User, link: str) -> None:
    student.pull(link)
    student.act("fetch", "ps1")
    student.save("ps1/ps1.ipynb", SOLVED)
    student.act("submit", "ps1")


def pss(names: list[str]) -> list[float]:
    """Each user's processes' proportional set size, MB."""
    sizes = []
    for name in names:
        total = 0
        for pid in subprocess.run(["pgrep", "-u", name], capture_output=True, text=True).stdout.split():
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
        sizes.append(total / 1024)
    return sizes


def du(path: Path) -> float:
    """MB on disk."""
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()[0]) / 1024


def chapter_in_a_kernel(student: User) -> None:
    """Chapter 1's code run in a kernel of the student's server, left running (a working server)."""
    kernel = student.server("POST", "api/kernels", body={"name": "python3"})["id"]
    url = f"{student.hub.replace('http://', 'ws://')}/user/{student.name}/api/kernels/{kernel}/channels"
    seen = asyncio.run(_execute(url, student.token, CHAPTER, 600))
    if seen["error"] or seen["status"] != "idle":
        raise RuntimeError(f"chapter 1 in {student.name}'s kernel: {seen['error'] or seen['status']}")


def main(n: int = 30, concurrent: int = 10) -> None:
    print(f"bench_hub.py, {date.today()}: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
          f"{platform.platform()}; load before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    began = time.monotonic()
    with deployed_as_documented(ROOT) as hub:
        print(f"make hub: {time.monotonic() - began:.0f} s")
        ines = hub.add("ines", "instructors")
        people = [hub.add(f"s{i:03d}", "students") for i in range(n)]
        names = [name for name, _ in people]
        running = hub.hub()
        url = running.url
        link = next(line.split("<hub>", 1)[1] for line in hub.output.splitlines() if "git-pull?" in line)
        instructor = User(url, *ines)
        instructor.formgrader("POST", "assignment/ps1/assign")
        instructor.formgrader("POST", "assignment/ps1/release")
        with ThreadPoolExecutor(concurrent) as pool:
            t = time.monotonic()
            students = [s for s in pool.map(lambda person: attempt("log-in", User, url, *person), people) if s]
            print(f"{n} log-ins through the form (PAM), {concurrent} at a time: {time.monotonic() - t:.1f} s")
            alone = students[0].start()
            t = time.monotonic()
            spawns = [s for s in pool.map(lambda s: attempt("start", s.start), students[1:]) if s is not None]
            spawn_wall = time.monotonic() - t
            print(f"one server alone: {alone:.1f} s; the other {n - 1} at once: {spawn_wall:.1f} s "
                  f"({spread(spawns)}); per server, together ÷ alone: {statistics.median(spawns) / alone:.2f}")
            idle = pss(names)
            print(f"an idle student server: {statistics.mean(idle):.0f} MB (PSS; largest {max(idle):.0f} MB)")
            t = time.monotonic()
            submits = [s for s in pool.map(lambda s: attempt("pull, fetch, submit", timed, work_on, s, link),
                                           students) if s is not None]
            print(f"pull, fetch, save and submit, {n} students: {time.monotonic() - t:.1f} s ({spread(submits)})")
            t = time.monotonic()
            load = os.getloadavg()[0]
            list(pool.map(lambda s: attempt("chapter 1", chapter_in_a_kernel, s), students))
            working = pss(names)
            print(f"chapter 1 in every student's kernel: {time.monotonic() - t:.1f} s; a working server (its kernel "
                  f"having run chapter 1): {statistics.mean(working):.0f} MB (PSS; largest {max(working):.0f} MB); "
                  f"load meanwhile {max(load, os.getloadavg()[0]):.1f}")
        homes = [du(Path(f"/home/{name}")) for name in names]
        print(f"disk per student: home {statistics.mean(homes):.1f} MB (the release's clone, ps1), exchange "
              f"{du(Path(hub.settings['exchange'])) / n:.2f} MB")
        print(instructor.formgrader("POST", "assignment/ps1/collect")["log"].count("Collecting"), "collected")
        t = time.monotonic()
        for name in names:
            attempt(f"autograde {name}", lambda: instructor.formgrader("POST", f"submission/ps1/{name}/autograde"))
        button = time.monotonic() - t
        t = time.monotonic()
        said = terminal(f"{url}/services/ppedu", instructor.token, "ppedu grade ps1 --jobs 2", seconds=3600)
        jobs = time.monotonic() - t
        if f"done: {n} graded" not in said:
            FAILURES.append(f"ppedu grade: {said[-500:]}")
        print(f"grading the class: the formgrader's button one by one {button:.0f} s ({button / n:.1f} s each); "
              f"ppedu grade --jobs 2 {jobs:.0f} s; ratio {button / jobs:.2f}")
        course = Path(hub.settings["course"])
        graded = sum(du(course / part) for part in ("submitted", "autograded", "intake") if (course / part).exists())
        print(f"the course's copies of the class's work: {graded / n:.2f} MB per student per assignment")
        scores = {instructor.formgrader("GET", f"submission/ps1/{name}")["code_score"] for name in names}
        print(f"every student's autograded score: {sorted(scores)}")
        t = time.monotonic()
        stopped = hub.ctl("stop")
        print(f"ppedu-hub stop with {n} working servers: {time.monotonic() - t:.1f} s; {stopped.stdout.strip()}")
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; failures: {len(FAILURES)}")
    for failure in FAILURES:
        print("  ", failure)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
