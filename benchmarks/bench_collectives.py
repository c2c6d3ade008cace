"""Collectives measured on this machine beside chapter 12's α–β model (the scale lab, chapter 15).

Run: ``.venv/bin/python benchmarks/bench_collectives.py [--world 2] [--trials 5]``.
Starts ``--world`` ranks (:func:`ppedu.ranks.run_ranks`: gloo between CPU processes, NCCL where every rank has a GPU),
times all-reduce, all-gather, reduce-scatter and all-to-all from 4 KB to 16 MB much as NVIDIA's nccl-tests do, and
prints, measured side by side in one run:

- every size's time, algbw and busbw (nccl-tests' definitions, ``doc/PERFORMANCE.md``);
- α and β fitted to the all-reduces (chapter 12's ``steps·α + sent·β``, least squares on relative error), and to
  all four collectives together;
- each measured time over the fitted ring's: near 1 where the model holds; on gloo, expect the reduce-scatter well
  above 1 (PyTorch runs it as an all-reduce of a copy) and the all-gather above it too (gloo passes each piece in two
  halves, and PyTorch copies the gathered buffer out of a temporary) — the printed ratios say by how much;
- the busbw at the largest size over the fitted bandwidth, per collective.

One GPU is no cluster: NCCL needs a GPU per rank, so on a machine with fewer GPUs than ranks this measures gloo.
"""

from __future__ import annotations

import argparse

from ppedu.ranks import against_model, backend_for, fit, measure, table
from ppedu.ranks.timing import KINDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    print(backend_for(args.world))
    rows = measure(args.world, trials=args.trials)
    print(table(rows))
    ring_fit, all_fit = fit(rows), fit(rows, KINDS)
    print(f"\nfitted to the all-reduces: alpha = {ring_fit.alpha * 1e6:.1f} us, beta = {ring_fit.beta * 1e9:.3f} ns/B "
          f"(B = {ring_fit.bandwidth / 1e9:.3f} GB/s), {ring_fit.points} sizes")
    print(f"fitted to all four:        alpha = {all_fit.alpha * 1e6:.1f} us, beta = {all_fit.beta * 1e9:.3f} ns/B "
          f"(B = {all_fit.bandwidth / 1e9:.3f} GB/s), {all_fit.points} sizes\n")
    print(against_model(rows, ring_fit))
    print("\nbusbw at the largest size / fitted bandwidth (1 where chapter 12's ring holds):")
    largest = max(r.nbytes for r in rows)
    for r in rows:
        if r.nbytes == largest:
            print(f"  {r.kind:15s} {r.busbw / 1e9:7.3f} GB/s  {r.busbw / ring_fit.bandwidth:5.2f}")


if __name__ == "__main__":
    main()
