"""``ppedu mnist``: train the lab's model under a schedule on simulated GPUs and report.

Registered in :mod:`ppedu.cli`; bad input raises ``ValueError``, which the CLI prints as one
line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ppedu.schedules import SCHEDULES

if TYPE_CHECKING:
    from ppedu.mnist.executor import StepResult
    from ppedu.mnist.training import TrainResult


def add_parser(commands: Any) -> None:
    """Add the ``mnist`` subcommand to the CLI's subparsers."""
    cmd = commands.add_parser(
        "mnist", help="train a real MNIST model pipelined over simulated GPUs; compare with the simulator",
        description="Each step runs the schedule op by op in one process (one simulated GPU per stage), checks "
        "the first step's gradients against the unpipelined model, and replays the measured op times.")
    cmd.add_argument("--schedule", required=True, metavar="SCHEDULE", help=", ".join(SCHEDULES))
    cmd.add_argument("-p", type=int, required=True, help="pipeline stages (simulated GPUs)")
    cmd.add_argument("-m", type=int, required=True, help="micro-batches per step")
    cmd.add_argument("-v", type=int, default=1, help="model chunks per stage (interleaved only)")
    cmd.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    cmd.add_argument("--model", default="mlp", metavar="MODEL", help="mlp or cnn (default mlp)")
    cmd.add_argument("--batch-size", type=int, default=128, help="examples per step (default 128)")
    cmd.add_argument("--seed", type=int, default=0, help="initialisation and shuffling seed")
    cmd.add_argument("--threads", type=int, default=1,
                     help="torch CPU threads (default 1: the lab's tensors are small, more threads mostly wait)")
    cmd.add_argument("--png", metavar="FILE", help="also draw the last step, predicted against measured, into FILE")
    cmd.add_argument("--json", action="store_true", help="print one JSON object instead of a progress bar and table")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``ppedu mnist``."""
    if args.steps < 1:
        raise ValueError(f"steps must be at least 1 (got {args.steps})")
    if args.threads < 1:
        raise ValueError(f"threads must be at least 1 (got {args.threads})")
    import torch  # here, not at the top: the other commands need no torch

    from ppedu.mnist.training import prepare, train

    torch.set_num_threads(args.threads)
    options = dict(schedule=args.schedule, p=args.p, m=args.m, v=args.v, steps=args.steps, model=args.model,
                   batch_size=args.batch_size, seed=args.seed)
    if args.json:
        result = train(**options)
        print(json.dumps(result.as_dict()))
        _save_png(result, args.png)
        return 0
    prepare(args.schedule, args.p, args.m, args.v, args.model, args.batch_size)  # bad input fails before the bar
    from tqdm import tqdm

    with tqdm(total=args.steps, desc=f"{args.schedule} p={args.p} m={args.m}", unit="step") as bar:
        def advance(step: int, result: StepResult) -> None:
            bar.set_postfix(loss=f"{result.loss:.3f}")
            bar.update()

        result = train(**options, on_step=advance)
    print(render_result(result))
    if args.png:
        _save_png(result, args.png)
        print(f"wrote {args.png}")
    return 0


def _save_png(result: TrainResult, path: str | None) -> None:
    if path:
        from ppedu.mnist.plot import plot_step

        plot_step(result.last_step).savefig(path, dpi=120)


def render_result(result: TrainResult) -> str:
    """The short table ``ppedu mnist`` prints after training.

    >>> from ppedu.mnist.training import train
    >>> print(render_result(train("gpipe", p=2, m=2, steps=1, batch_size=8)))  # doctest: +ELLIPSIS
    loss (first → last)       2.3... → 2.3...
    ...
    """
    d = result.as_dict()
    rows = [
        ("loss (first → last)", f"{d['loss_first']:.4f} → {d['loss_last']:.4f}"),
        ("test accuracy", f"{d['test_accuracy']:.2%}"),
        ("gradients vs unpipelined", f"max |Δ| = {d['max_grad_diff_vs_reference']:.2e} (first step)"),
        ("bubble, predicted", f"{d['predicted_bubble_ratio']:.1%} (simulator, measured mean op times)"),
        ("bubble, measured", f"{d['measured_bubble_ratio']:.1%} (measured op times, GPUs side by side)"),
        ("peak activations", "  ".join(f"GPU {s}: {b / 1024:.0f} KiB" for s, b in enumerate(result.last_step.peak_activation_bytes))),
        ("seconds", f"{d['seconds']:.1f}"),
    ]
    return "\n".join(f"{name:<25} {value}" for name, value in rows)
