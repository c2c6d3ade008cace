"""How good the search's orders are, side by side with the best named schedule and the lower bound.

Run: ``.venv/bin/python benchmarks/bench_search.py``. One line per case: the searched makespan,
÷ the best named schedule's within the same memory limit (below 1: the search wins), ÷ the
lower bound (the busiest GPU's work; 1 would be provably optimal), and the seconds it took.
Target: p = 8, m = 32 in seconds, never worse than the best named schedule.
"""

from __future__ import annotations

from ppedu import Costs
from ppedu.search import search

CASES = [
    # (p, m, costs per stage, memory limit in stage-activations, what the case shows)
    (4, 8, Costs(f=1, b=1, w=1), 4, "equal F, B, W at 1F1B's memory"),
    (4, 8, Costs(f=1, b=2, w=1, comm=0.2), None, "no limit, slow links"),
    (8, 32, Costs(f=1, b=1, w=1), 8, "p=8 at 1F1B's memory"),
    (8, 32, Costs(f=1, b=2, w=1, comm=0.1), 8, "p=8, B twice F, links"),
    (8, 32, Costs(f=1, b=2, w=1, comm=0.1), 4, "p=8 at half 1F1B's memory"),
    (8, 32, Costs(f=(1, 1, 1, 2, 1, 1, 1, 1), b=(2, 2, 2, 4, 2, 2, 2, 2), w=1), 8, "a slow GPU"),
]


def main() -> None:
    print(f"{'case':<42} {'limit':>5} {'search':>8} {'named':>18} {'÷named':>7} {'÷bound':>7} {'s':>5}")
    for p, m, costs, limit, what in CASES:
        found = search(p, m, costs, limit, one_direction=True, seconds=2.0)
        named = found.best_named
        name = f"{named.schedule.name} {named.makespan:g}" if named else "none fits"
        ratio = f"{found.makespan / named.makespan:>7.3f}" if named else f"{'-':>7}"
        print(f"{f'p={p} m={m} {what}':<42} {limit if limit else '-':>5} {found.makespan:>8.2f} {name:>18} "
              f"{ratio} {found.makespan / found.lower_bound:>7.3f} {found.seconds:>5.1f}")


if __name__ == "__main__":
    main()
