"""``ppedu``: the course's command line, a thin layer over the library.

Bad input exits with status 2 and one line naming the rule broken, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from ppedu.costs import Costs
from ppedu.schedules import SCHEDULES, build
from ppedu.simulate import simulate


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ValueError as error:
        parser.exit(2, f"ppedu: error: {error}\n")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    schedule = build(args.schedule, args.p, args.m, args.v)
    timeline = simulate(schedule, Costs(f=args.f, b=args.b, w=args.w, comm=args.comm, fb=args.fb))
    if args.json:
        bidirectional = len(schedule.placement) > 1
        print(json.dumps({
            "schedule": schedule.name,
            "stages": schedule.p,
            "microbatches": schedule.microbatches,
            "virtual": schedule.virtual,
            "costs": timeline.costs.as_dict(),
            **timeline.metrics(),
            "events": [e.as_dict(with_direction=bidirectional) for e in timeline.events],
        }))
    elif args.png:
        from ppedu.plot import plot_timeline

        plot_timeline(timeline).savefig(args.png, dpi=150)
        print(f"wrote {args.png}")
    else:
        from ppedu.text import render_grid, render_metrics

        print(render_grid(timeline))
        print()
        print(render_metrics(timeline))
    return 0


def _cost(text: str) -> float | tuple[float, ...]:
    """A cost: one number, or one per stage separated by commas (``1,1,2,1``)."""
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or comma-separated numbers: {text!r}") from None
    return values[0] if len(values) == 1 else values


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (with a pointer to ``--help``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ppedu", description="Pipeline-parallel schedules, simulated.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    sim = commands.add_parser("simulate", help="simulate a schedule and show its spacetime grid and metrics")
    sim.add_argument("schedule", choices=list(SCHEDULES), metavar="SCHEDULE", help=", ".join(SCHEDULES))
    sim.add_argument("-p", type=int, required=True, help="pipeline stages (GPUs)")
    sim.add_argument("-m", type=int, required=True, help="micro-batches per step")
    sim.add_argument("-v", type=int, default=1, help="model chunks per stage (interleaved only)")
    sim.add_argument("--f", type=_cost, default=1.0, help="forward time of one chunk (or one per stage: 1,1,2,1)")
    sim.add_argument("--b", type=_cost, default=1.0, help="backward time (input-gradient part if W is split)")
    sim.add_argument("--w", type=_cost, default=0.0, help="weight-gradient time")
    sim.add_argument("--comm", type=float, default=0.0, help="latency of a hand-over between GPUs")
    sim.add_argument("--fb", type=_cost, default=None,
                     help="time of an overlapped forward-and-backward pair (DualPipe); default: F plus B")
    out = sim.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--png", metavar="FILE", help="draw the spacetime diagram into FILE")
    sim.set_defaults(run=_simulate)
    return parser


if __name__ == "__main__":
    sys.exit(main())
