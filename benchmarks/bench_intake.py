"""The grader's own steps on a submission, before its notebook runs — taking it in (the cells read in their bounded
process, :mod:`grader.reading`) and rebuilding it on its release (:mod:`grader.restore`) — on ps1's solution as a
student hands it in, and on the same notebook with 100,000 cells of the student's own added (a 6 MB file), in this
one run: seconds and the grading process's memory for each, and the ratios.

Issue 35: those steps took 130 s and 500 MB on the 100,000-cell notebook, outside any budget. They are bounded by the
submission's size, not its shape: target, the large notebook within 10 × the plain one's time (what is read is at most
2,000 cells) and under 300 MB.

Run: ``.venv/bin/python benchmarks/bench_intake.py [CELLS]``.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.intake import take_in  # noqa: E402
from grader.restore import restore  # noqa: E402


def trusted_steps(folder: Path, release: Path) -> tuple[float, float, int]:
    """Seconds and peak MB (Python's allocations) of taking ``folder`` in and rebuilding it; the cells it kept."""
    tracemalloc.start()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as area:
        take_in(folder, Path(area) / "ps1", release)
        rebuilt, _ = restore(nbformat.read(Path(area) / "ps1" / "ps1.ipynb", as_version=4),
                             nbformat.read(release / "ps1.ipynb", as_version=4))
        nbformat.write(rebuilt, Path(area) / "rebuilt.ipynb")
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, len(rebuilt.cells)


def main(cells: int = 100_000) -> None:
    release = ROOT / "exercises" / "ps1"
    solution = nbformat.read(ROOT / "solutions" / "ps1" / "ps1.ipynb", as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        plain, large = Path(tmp) / "plain", Path(tmp) / "large"
        plain.mkdir()
        large.mkdir()
        nbformat.write(solution, plain / "ps1.ipynb")
        solution.cells[1:1] = [nbformat.v4.new_code_cell("x = 1") for _ in range(cells)]
        nbformat.write(solution, large / "ps1.ipynb", version=4)
        size = (large / "ps1.ipynb").stat().st_size / 2**20
        results = {"plain": trusted_steps(plain, release),
                   f"{cells:,} cells ({size:.0f} MB)": trusted_steps(large, release)}
    for name, (seconds, peak, kept) in results.items():
        print(f"{name:>24}: {seconds:6.2f} s, {peak:6.1f} MB at most, {kept} cells graded")
    (plain_s, plain_mb, _), (large_s, large_mb, _) = results.values()
    print(f"ratio: {large_s / plain_s:.1f} × the time, {large_mb / max(plain_mb, 1e-9):.1f} × the memory "
          f"(the process's peak resident size: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
