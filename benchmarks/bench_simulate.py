"""How fast ppedu simulates big schedules, side by side with PyTorch's own simulator on the same orders.

Run: ``.venv/bin/python benchmarks/bench_simulate.py``. Prints one line per case: ops, ppedu's wall
and CPU seconds (a fresh schedule record each run, so the bulk validation is timed too), PyTorch's
``_simulate_comms_compute`` on the same per-rank orders, and the ratio.
Targets: at least 10× PyTorch on every case; p = 64, m = 1024, v = 4 (524,288 ops) under 0.5 s on
this 2-core machine (about 1 µs an op). On a shared machine the CPU column is the steadier figure.
"""

from __future__ import annotations

import time
from dataclasses import replace

from torch.distributed.pipelining.schedules import _add_send_recv, _simulate_comms_compute

from ppedu import Costs, simulate
from ppedu.reference import to_torch_actions
from ppedu.schedules import build

TORCH_MAX_OPS = 150_000  # PyTorch's simulator takes minutes beyond this


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
    print(f"{'case':<30} {'ops':>8} {'ppedu s':>8} {'cpu s':>7} {'µs/op':>6} {'torch s':>8} {'torch/ppedu':>12}")
    for name, p, m, v in [("interleaved", 32, 256, 4), ("1f1b", 64, 1024, 1), ("interleaved", 64, 1024, 4)]:
        schedule = build(name, p, m, v)
        ops = sum(len(s) for s in schedule.stages)
        # A fresh record each run: its columns (the bulk validation and dependency lookup) are timed too.
        wall, cpu = best_of(3, lambda: simulate(replace(schedule), Costs(f=1, b=2, comm=0.1)).bubble_ratio)
        if ops <= TORCH_MAX_OPS:
            to_rank = lambda stage, p=p: stage % p  # noqa: E731
            actions = _add_send_recv(to_torch_actions(schedule), to_rank, schedule.chunks)
            theirs, _ = best_of(1, lambda: _simulate_comms_compute(actions, to_rank, schedule.chunks))
            column = f"{theirs:>8.3f} {theirs / wall:>11.1f}×"
        else:
            column = f"{'skipped':>8} {'':>12}"
        print(f"{f'{name} p={p} m={m} v={v}':<30} {ops:>8} {wall:>8.3f} {cpu:>7.3f} {cpu / ops * 1e6:>6.2f} {column}")


if __name__ == "__main__":
    main()
