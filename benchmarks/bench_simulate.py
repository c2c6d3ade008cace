"""How fast ppedu simulates big schedules, side by side with PyTorch's own simulator on the same orders.

Run: ``.venv/bin/python benchmarks/bench_simulate.py``. Prints one line per case: ops, ppedu's wall
and CPU seconds (a fresh schedule record each run, so the bulk validation is timed too), PyTorch's
``_simulate_comms_compute`` on the same per-rank orders, and the ratio of CPU seconds (wall-clock
ratios swing with whatever else a shared machine runs at the time).
Targets: at least 10× PyTorch on every case it runs; p = 64, m = 1024, v = 4 (524,288 ops) under
0.5 s on this 2-core machine (about 1 µs an op). On a shared machine the CPU column is the steadier
figure, so the verdicts, printed last, are judged on CPU seconds.
"""

from __future__ import annotations

import time
from dataclasses import replace

from torch.distributed.pipelining.schedules import _add_send_recv, _simulate_comms_compute

from ppedu import Costs, simulate
from ppedu.reference import to_torch_actions
from ppedu.schedules import build

TORCH_MAX_OPS = 150_000  # PyTorch's simulator takes minutes beyond this
RUNS = 9  # ppedu's best of this many: a shared machine's bursts of other work pass between runs
TARGET_RATIO = 10.0  # at least this many times PyTorch's CPU seconds, on every case it runs
BIG, TARGET_BIG_S = ("interleaved", 64, 1024, 4), 0.5  # this case under this many CPU seconds


def best_of(runs: int, fn) -> tuple[float, float]:
    """The best wall and CPU seconds of ``runs`` calls."""
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main() -> None:
    print(f"{'case':<30} {'ops':>8} {'ppedu s':>8} {'cpu s':>7} {'µs/op':>6} {'torch s':>8} {'cpu s':>7} {'torch/ppedu':>12}")
    ratios: list[float] = []
    cases = [("interleaved", 32, 256, 4), ("1f1b", 64, 1024, 1), BIG]
    big_cpu = None
    for name, p, m, v in cases:
        schedule = build(name, p, m, v)
        ops = sum(len(s) for s in schedule.stages)
        # A fresh record each run: its columns (the bulk validation and dependency lookup) are timed too.
        wall, cpu = best_of(RUNS, lambda: simulate(replace(schedule), Costs(f=1, b=2, comm=0.1)).bubble_ratio)
        if (name, p, m, v) == BIG:
            big_cpu = cpu
        if ops <= TORCH_MAX_OPS:
            to_rank = lambda stage, p=p: stage % p  # noqa: E731
            actions = _add_send_recv(to_torch_actions(schedule), to_rank, schedule.chunks)
            theirs, their_cpu = best_of(1, lambda: _simulate_comms_compute(actions, to_rank, schedule.chunks))
            ratios.append(their_cpu / cpu)
            column = f"{theirs:>8.3f} {their_cpu:>7.3f} {ratios[-1]:>11.1f}×"
        else:
            column = f"{'skipped':>8} {'':>7} {'':>12}"
        print(f"{f'{name} p={p} m={m} v={v}':<30} {ops:>8} {wall:>8.3f} {cpu:>7.3f} {cpu / ops * 1e6:>6.2f} {column}")
    name, p, m, v = BIG
    print(f"target: at least {TARGET_RATIO:.0f}× PyTorch on every case it ran ({len(ratios)} of {len(cases)}; "
          f"skipped over {TORCH_MAX_OPS:,} ops): slowest {min(ratios):.1f}×, "
          + ("met" if min(ratios) >= TARGET_RATIO else "MISSED"))
    print(f"target: {name} p={p} m={m} v={v} under {TARGET_BIG_S} s CPU: {big_cpu:.3f} s, "
          + ("met" if big_cpu is not None and big_cpu < TARGET_BIG_S else "MISSED"))

if __name__ == "__main__":
    main()
