"""How fast ppedu simulates big schedules, side by side with PyTorch's own simulator on the same orders.

Run: ``.venv/bin/python benchmarks/bench_simulate.py``. Prints one line per case and the ratio.
Target: p = 64, m = 1024 in under 1 s on a 2-core machine, and faster than PyTorch's simulator.
"""

from __future__ import annotations

import time

from torch.distributed.pipelining.schedules import _add_send_recv, _simulate_comms_compute

from ppedu import Costs, simulate
from ppedu.reference import to_torch_actions
from ppedu.schedules import build


def best_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{'case':<34} {'ops':>8} {'ppedu s':>9} {'torch s':>9} {'torch/ppedu':>12}")
    for name, p, m, v in [("interleaved", 32, 256, 4), ("1f1b", 64, 1024, 1), ("interleaved", 64, 1024, 4)]:
        schedule = build(name, p, m, v)
        ops = sum(len(s) for s in schedule.stages)
        ours = best_of(3, lambda: simulate(schedule, Costs(f=1, b=2, comm=0.1)).bubble_ratio)
        if ops <= 150_000:
            to_rank = lambda stage, p=p: stage % p  # noqa: E731
            actions = _add_send_recv(to_torch_actions(schedule), to_rank, schedule.chunks)
            theirs = best_of(1, lambda: _simulate_comms_compute(actions, to_rank, schedule.chunks))
            column = f"{theirs:>9.3f} {theirs / ours:>11.1f}×"
        else:
            column = f"{'skipped':>9} {'':>12}"
        print(f"{f'{name} p={p} m={m} v={v}':<34} {ops:>8} {ours:>9.3f} {column}")


if __name__ == "__main__":
    main()
