"""The executor's overhead: one pipelined training step against plain training of the same model.

Run: ``.venv/bin/python benchmarks/bench_mnist.py [--threads 1] [--repeats 30] [--no-accuracy]``.
Prints, measured side by side in one run (the timings alternate, so a noisy machine hurts
both alike), the median step time of

- ``plain``: the unpipelined model, one forward and backward over the whole mini-batch;
- ``accumulate``: the unpipelined model over the same m micro-batches, gradients accumulated
  (the same arithmetic as the pipeline: the physical limit for one process);
- ``chunked``: the same chunks and micro-batches with no schedule, no timing and no counting:
  a forward through the chunks, then one backward call per chunk (the autograd calls every
  pipeline makes; the gap to ``accumulate`` is the price of cutting the model at all);
- ``executor``: ppedu's ``run_schedule`` (1F1B, p = 4, m = 8 on the MLP), which also times
  every op, counts saved bytes and replays the timeline through the simulator;

and the ratios. Target: executor / accumulate < 1.3 for the MLP at p = 4, m = 8 (shown at
batch 128 and 512: micro-batches of 16 or 64). Then each
model's test accuracy after training through the executor, and how long that took (target:
> 90 % in under a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.nn.functional import cross_entropy

from ppedu.mnist import run_schedule, split_model
from ppedu.mnist.training import initial_model, optimizer_for, train, training_batches
from ppedu.schedules import build


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def overhead(model_name: str, p: int, m: int, repeats: int, batch_size: int = 128) -> None:
    model = initial_model(model_name)
    optimizer = optimizer_for(list(model.parameters()))
    schedule = build("1f1b", p, m)
    chunks = split_model(model, schedule.chunks)
    x, y = next(training_batches(1, batch_size))

    def plain() -> None:
        optimizer.zero_grad(set_to_none=True)
        cross_entropy(model(x), y).backward()
        optimizer.step()

    def accumulate() -> None:
        optimizer.zero_grad(set_to_none=True)
        for xs, ys in zip(torch.tensor_split(x, m), torch.tensor_split(y, m)):
            (cross_entropy(model(xs), ys) * (len(xs) / len(x))).backward()
        optimizer.step()

    def chunked() -> None:
        optimizer.zero_grad(set_to_none=True)
        for xs, ys in zip(torch.tensor_split(x, m), torch.tensor_split(y, m)):
            inputs, outputs, out = [], [], xs
            for c, chunk in enumerate(chunks):
                out = out.detach().requires_grad_(c > 0)
                inputs.append(out)
                out = chunk(out)
                outputs.append(out)
            outputs[-1] = cross_entropy(outputs[-1], ys) * (len(xs) / len(x))
            grad = None
            for c in reversed(range(len(chunks))):
                params = list(chunks[c].parameters())
                torch.autograd.backward(outputs[c], grad, inputs=[inputs[c], *params] if c else params)
                grad = inputs[c].grad
        optimizer.step()

    def executor() -> None:
        run_schedule(schedule, chunks, (x, y), cross_entropy)
        optimizer.step()

    runs = {"plain": plain, "accumulate": accumulate, "chunked": chunked, "executor": executor}
    for fn in runs.values():  # warm up
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            times[name].append(timed(fn))
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"{model_name} p={p} m={m} batch={batch_size}: " + ", ".join(f"{n} {t * 1e3:.1f} ms" for n, t in median.items()))
    print(f"  executor / accumulate = {median['executor'] / median['accumulate']:.2f}×  (target < 1.3×)")
    print(f"  executor / chunked    = {median['executor'] / median['chunked']:.2f}×  (the executor's own bookkeeping)")
    print(f"  chunked / accumulate  = {median['chunked'] / median['accumulate']:.2f}×  (one backward call per chunk)")
    print(f"  executor / plain      = {median['executor'] / median['plain']:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-accuracy", action="store_true", help="skip the training-to-accuracy runs")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads: {args.threads}")
    overhead("mlp", 4, 8, args.repeats)
    overhead("mlp", 4, 8, args.repeats, batch_size=512)
    overhead("cnn", 3, 6, max(5, args.repeats // 3))
    if not args.no_accuracy:
        for model, steps in [("mlp", 240), ("cnn", 120)]:
            result = train("1f1b", p=2, m=4, steps=steps, model=model, batch_size=128)
            print(f"{model}: {steps} steps of 128 through the executor (1F1B, p=2, m=4): test accuracy "
                  f"{result.test_accuracy:.2%} in {result.seconds:.1f} s (target > 90 % in < 60 s)")


if __name__ == "__main__":
    main()
