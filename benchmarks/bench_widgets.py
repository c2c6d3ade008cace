"""How fast the ScheduleExplorer redraws after a slider move, beside a matplotlib redraw of the same diagram.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_widgets.py``. One line per case: the explorer's redraw
(simulate + SVG diagram + metrics table, as one slider move triggers it) and, for comparison, the
same diagram drawn with matplotlib and rendered to PNG, the obvious alternative.
Target: every explorer redraw under 20 ms for p ≤ 8, m ≤ 32 on a 2-core machine (judged on the best CPU time,
which other load on a shared machine inflates least; the wall-clock best and median are printed beside it).
"""

from __future__ import annotations

import io
import os
import statistics
import time

os.environ.setdefault("MPLBACKEND", "Agg")

from ppedu.plot import plot_timeline  # noqa: E402
from ppedu.widgets import ScheduleExplorer  # noqa: E402

TARGET_MS = 20.0


def timed(runs: int, fn) -> tuple[float, float, float]:
    """Best and median wall time and best CPU time of ``runs`` calls, in ms. The best is the code's
    own cost (as bench_simulate takes it); the median shows what other load on a shared machine adds."""
    times, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(times) * 1000, statistics.median(times) * 1000, min(cpu) * 1000


def main() -> None:
    explorer = ScheduleExplorer()
    cases = [(name, p, m, 1) for name in ("gpipe", "1f1b", "zb-h1", "dualpipe", "dualpipe-v")
             for p, m in ((4, 8), (8, 16), (8, 32))]
    cases += [("interleaved", p, m, v) for p, m in ((4, 8), (8, 16), (8, 32)) for v in (2, 4)]
    print(f"{'case':<26} {'ops':>5} {'explorer ms (best/median)':>25} {'cpu ms':>7} {'matplotlib ms':>14} {'ratio':>6}")
    worst = 0.0
    for name, p, m, v in cases:
        explorer.set(schedule=name, p=p, m=m, v=v, w=0.5 if name.startswith(("zb", "dual")) else 0.0)
        # A slider move that keeps the case: nudge a cost and back.
        bump = iter([1.25, 1.0] * 10)
        best, median, cpu = timed(20, lambda: explorer.set(f=next(bump)))
        timeline = explorer.timeline

        def with_matplotlib() -> None:
            plot_timeline(timeline).savefig(io.BytesIO(), format="png", dpi=80)

        mpl, _, _ = timed(3, with_matplotlib)
        worst = max(worst, cpu)
        print(f"{name + f' p={p} m={m}' + (f' v={v}' if v > 1 else ''):<26} {len(timeline.events):>5} {best:>12.1f} / {median:<10.1f} "
              f"{cpu:>7.1f} {mpl:>14.1f} {mpl / best:>5.0f}×")
    verdict = "meets" if worst < TARGET_MS else "MISSES"
    print(f"slowest case's best explorer redraw {worst:.1f} ms CPU: {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
