"""How fast the ScheduleExplorer redraws after a slider move, beside a matplotlib redraw of the same diagram.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_widgets.py``. One line per case: the explorer's redraw
(simulate + SVG diagram + metrics table, as one slider move triggers it) and, for comparison, the
same diagram drawn with matplotlib and rendered to PNG, the obvious alternative.
Target: every explorer redraw under 100 ms for p ≤ 8, m ≤ 32 on a 2-core machine.
"""

from __future__ import annotations

import io
import os
import statistics
import time

os.environ.setdefault("MPLBACKEND", "Agg")

from ppedu.plot import plot_timeline  # noqa: E402
from ppedu.widgets import ScheduleExplorer  # noqa: E402

TARGET_MS = 100.0


def timed(runs: int, fn) -> tuple[float, float]:
    """Best and median of ``runs`` calls, in ms. The best is the code's own cost (as bench_simulate
    takes it); the median shows what other load on a shared machine adds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000, statistics.median(times) * 1000


def main() -> None:
    explorer = ScheduleExplorer()
    cases = [(name, p, m, 1) for name in ("gpipe", "1f1b", "zb-h1", "dualpipe", "dualpipe-v")
             for p, m in ((4, 8), (8, 16), (8, 32))]
    cases += [("interleaved", p, m, v) for p, m in ((4, 8), (8, 16), (8, 32)) for v in (2, 4)]
    print(f"{'case':<26} {'ops':>5} {'explorer ms (best/median)':>25} {'matplotlib ms':>14} {'ratio':>6}")
    worst = 0.0
    for name, p, m, v in cases:
        explorer.set(schedule=name, p=p, m=m, v=v, w=0.5 if name.startswith(("zb", "dual")) else 0.0)
        # A slider move that keeps the case: nudge a cost and back.
        bump = iter([1.25, 1.0] * 10)
        best, median = timed(20, lambda: explorer.set(f=next(bump)))
        timeline = explorer.timeline

        def with_matplotlib() -> None:
            plot_timeline(timeline).savefig(io.BytesIO(), format="png", dpi=80)

        mpl, _ = timed(3, with_matplotlib)
        worst = max(worst, best)
        print(f"{name + f' p={p} m={m}' + (f' v={v}' if v > 1 else ''):<26} {len(timeline.events):>5} {best:>12.1f} / {median:<10.1f} {mpl:>14.1f} "
              f"{mpl / best:>5.0f}×")
    verdict = "meets" if worst < TARGET_MS else "MISSES"
    print(f"slowest case's best explorer redraw {worst:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")


if __name__ == "__main__":
    main()
