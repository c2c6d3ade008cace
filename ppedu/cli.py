"""``ppedu``: the course's command line, a thin layer over the library.

Bad input exits with status 2 and one line naming the rule broken, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from ppedu import mnist
from ppedu.cluster import GPUS, MODELS
from ppedu.cluster import cli as plan_cli
from ppedu.costs import Costs, PerChunk, _is_matrix
from ppedu.grading import cli as grading_cli
from ppedu.mnist import cli as mnist_cli
from ppedu.ops import Schedule
from ppedu.partition import partition
from ppedu.schedules import GROUPED, SCHEDULES, VIRTUAL, build
from ppedu.simulate import Timeline, simulate
from ppedu.text import columns
from ppedu.validate import numbers, one_of


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        status = args.run(args)
        sys.stdout.flush()  # inside the try: a reader that has gone shows here, not at exit
        return status
    except ValueError as error:
        parser.exit(2, f"ppedu: error: {error}\n")
    except BrokenPipeError:  # `ppedu simulate … | head`: the reader has gone, as it may
        # Python flushes stdout once more at exit; point it at /dev/null so that flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE  # what a shell reports for a command a closed pipe stopped
    except ModuleNotFoundError as error:  # a light install has no torch: say so in one line
        if error.name != "torch":
            raise
        parser.exit(2, f"ppedu: error: {mnist.NO_TORCH}\n")


def _simulate(args: argparse.Namespace) -> int:
    schedule = build(args.schedule, args.p, args.m, args.v, args.group)
    timeline = simulate(schedule, _costs(args))
    wrote = _export(schedule, timeline, args)
    if args.json:
        bidirectional = len(schedule.placement) > 1
        print(json.dumps({
            "schedule": schedule.name,
            "stages": schedule.p,
            "microbatches": schedule.microbatches,
            "virtual": schedule.virtual,
            "costs": timeline.costs.as_dict(),
            **timeline.metrics(),
            "idle_causes": timeline.idle_causes().as_dict(),
            "events": [e.as_dict(with_direction=bidirectional) for e in timeline.events],
        }))
    elif args.png:
        from ppedu.plot import plot_timeline

        plot_timeline(timeline).savefig(args.png, dpi=150)
        print("\n".join(f"wrote {name}" for name in (*wrote, args.png)))
    else:
        from ppedu.text import render_grid, render_metrics

        if timeline.makespan <= _MAX_TEXT_STEPS:
            print(render_grid(timeline))
        else:
            print(f"(grid of {timeline.makespan:g} time steps not drawn; use --png or --json)")
        print()
        print(render_metrics(timeline))
        for name in wrote:
            print(f"wrote {name}")
    return 0


def _export(schedule: Schedule, timeline: Timeline, args: argparse.Namespace) -> list[str]:
    """Write the ``--csv`` and ``--trace`` files asked for; their names, in that order."""
    from ppedu.export import chrome_trace, torch_csv

    files = []
    if args.csv:
        text = torch_csv(schedule)  # before opening: a two-direction schedule leaves no empty file
        with open(args.csv, "w", encoding="utf-8") as out:
            out.write(text)
        files.append(args.csv)
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as out:
            json.dump(chrome_trace(timeline), out)
        files.append(args.trace)
    return files


def _compare(args: argparse.Namespace) -> int:
    from ppedu.text import render_comparison

    costs = _costs(args)
    if args.schedules:
        schedules = [_build_shared(n, args) for n in args.schedules]
    else:  # every schedule that accepts this p, m and v
        schedules = [s for n in SCHEDULES if (s := _build_or_none(n, args))]
    # Costs are given per stage; a schedule that cuts the model v times finer pays 1/v per chunk.
    # Unless named, a schedule the costs do not fit (per-chunk values, a per-link chain) is left out.
    timelines = [t for s in schedules if (t := _simulate_or_none(s, costs.per_chunk(s.virtual), args.schedules))]
    if args.json:
        print(json.dumps([{"schedule": t.schedule.name, "virtual": t.schedule.virtual, **t.metrics()} for t in timelines]))
    else:
        print(render_comparison(timelines))
    return 0


def _search(args: argparse.Namespace) -> int:
    from ppedu.search import search

    bar = None

    def progress(tried: int, best: float) -> None:
        nonlocal bar
        if args.json:
            return
        if bar is None:  # made at the first candidate, so that bad input prints only its one line
            from tqdm import tqdm

            bar = tqdm(desc="searching", unit=" orders", file=sys.stderr, leave=False)
        bar.update(tried - bar.n)
        bar.set_postfix(best=f"{best:g}", refresh=False)

    costs = _costs(args)
    # PyTorch's CSV names a chunk by its index alone: an order to write as one must have one direction.
    one_direction = args.one_direction or bool(args.csv)
    try:
        found = search(args.p, args.m, costs, args.memory, activation_bytes=args.activation_bytes,
                       one_direction=one_direction, cut=args.cut, seconds=args.seconds, seed=args.seed, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    wrote = _export(found.schedule, found.timeline, args)
    if args.json:
        print(json.dumps({"p": args.p, "m": args.m, "costs": costs.as_dict(), **found.as_dict()}))
        return 0
    if args.png:
        from ppedu.plot import plot_timeline

        plot_timeline(found.timeline).savefig(args.png, dpi=150)
    named = found.best_named
    print(f"best order found: makespan {found.makespan:g} ({found.family}), "
          f"{found.gap:.1%} above the lower bound {found.lower_bound:g}"
          + (" — every order with one chunk per GPU tried" if found.exact else ""))
    if named is not None:
        print(f"best named schedule within the limit: {named.schedule.name} (v={named.schedule.virtual}), "
              f"makespan {named.makespan:g}")
    print(f"peak activations per GPU (stage units): {' '.join(f'{x:g}' for x in found.timeline.peak_stage_activations)}")
    if found.timeline.makespan <= _MAX_TEXT_STEPS and not args.png:
        from ppedu.text import render_grid

        print(render_grid(found.timeline))
    for name in (*wrote, *([args.png] if args.png else [])):
        print(f"wrote {name}")
    return 0


def _build_shared(name: str, args: argparse.Namespace) -> Schedule:
    """``name`` on the shared p and m; ``v`` and ``group`` go to the schedules that take them,
    the others keep their own cut."""
    return build(name, args.p, args.m, args.v if name in VIRTUAL else 1, args.group if name in GROUPED else None)


def _simulate_or_none(schedule: Schedule, costs: Costs, named: bool) -> Timeline | None:
    try:
        return simulate(schedule, costs)
    except ValueError:
        if named:
            raise
        return None


def _build_or_none(name: str, args: argparse.Namespace) -> Schedule | None:
    try:
        return _build_shared(name, args)
    except ValueError:
        return None


_MAX_TEXT_STEPS = 240


def _costs(args: argparse.Namespace) -> Costs:
    """The cost model the flags describe; with ``--per-chunk`` a list gives one value per chunk."""
    f, b, w = ((PerChunk(x) if args.per_chunk and isinstance(x, tuple) else x) for x in (args.f, args.b, args.w))
    comm = args.comm
    if args.per_chunk and isinstance(comm, tuple) and not _is_matrix(comm):
        comm = PerChunk(comm)
    return Costs(f=f, b=b, w=w, comm=comm, fb=args.fb)


def _cost(text: str) -> float | tuple[float, ...]:
    """A cost: one number, or one per stage separated by commas (``1,1,2,1``)."""
    values = numbers(text)
    return values[0] if len(values) == 1 else values


def _comm(text: str) -> float | tuple:
    """A hand-over cost: one number, one per link (``1,1,5``), or matrix rows split by ``;``."""
    if ";" in text:
        return tuple(numbers(row) for row in text.split(";"))
    return _cost(text)


def _add_shape_and_costs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", type=int, required=True, help="pipeline stages (GPUs)")
    parser.add_argument("-m", type=int, required=True, help="micro-batches per step")
    parser.add_argument("-v", type=int, default=1, help=f"model chunks per stage ({', '.join(sorted(VIRTUAL))})")
    parser.add_argument("--group", type=int, default=None,
                        help="micro-batches per chunk in turn, Megatron's microbatch_group_size_per_vp_stage "
                        f"({', '.join(sorted(GROUPED))}; default: the smallest Megatron-LM accepts, p when m is a multiple of p)")
    _add_costs(parser)


def _add_costs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--f", type=_cost, default=1.0, help="forward time of one chunk (or one per stage: 1,1,2,1)")
    parser.add_argument("--b", type=_cost, default=1.0, help="backward time (input-gradient part if W is split)")
    parser.add_argument("--w", type=_cost, default=0.0, help="weight-gradient time")
    parser.add_argument("--comm", type=_comm, default=0.0,
                        help="latency of a hand-over between GPUs: one number, one per link (p-1), "
                        "or a p × p matrix with rows split by ';' (0,1;1,0)")
    parser.add_argument("--per-chunk", action="store_true",
                        help="lists in --f/--b/--w give one value per model chunk (p·v), --comm one per chunk boundary")
    parser.add_argument("--fb", type=_cost, default=None,
                        help="time of an overlapped forward-and-backward pair (DualPipe); default: F plus B")


def _add_exports(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--csv", metavar="FILE",
                        help="also write the order as PyTorch's schedule CSV (for _PipelineScheduleRuntime._load_csv "
                        "and python -m ppedu.mnist.distributed --csv)")
    parser.add_argument("--trace", metavar="FILE",
                        help="also write the run as a Chrome/Perfetto trace (chrome://tracing, ui.perfetto.dev)")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (with a pointer to ``--help``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ppedu", description="Pipeline-parallel schedules, simulated.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    sim = commands.add_parser("simulate", help="simulate a schedule and show its spacetime grid and metrics")
    sim.add_argument("schedule", choices=list(SCHEDULES), metavar="SCHEDULE", help=", ".join(SCHEDULES))
    _add_shape_and_costs(sim)
    out = sim.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--png", metavar="FILE", help="draw the spacetime diagram into FILE")
    _add_exports(sim)
    sim.set_defaults(run=_simulate)
    _add_partition(commands)
    plan_cli.add_parser(commands)

    cmp = commands.add_parser(
        "compare", help="simulate several schedules of the same model on the same GPUs, side by side",
        description="Costs here are per stage (a 1/p slice of the model); schedules with v chunks per stage "
        "pay 1/v of them per chunk, so every schedule runs the same model.")
    cmp.add_argument("schedules", nargs="*", metavar="SCHEDULE",
                     help="which to compare (default: every schedule that accepts p, m and v)")
    _add_shape_and_costs(cmp)
    cmp.add_argument("--json", action="store_true", help="print a JSON list, one object per schedule")
    cmp.set_defaults(run=_compare)
    find = commands.add_parser(
        "search", help="search for the fastest order under a memory limit, and how far it is from a lower bound",
        description="Costs are per stage, as in compare; the search tries the named schedules, a list scheduler "
        "on several placements and a local search, and reports the gap to a lower bound (the busiest GPU's work).")
    find.add_argument("-p", type=int, required=True, help="pipeline stages (GPUs)")
    find.add_argument("-m", type=int, required=True, help="micro-batches per step")
    _add_costs(find)
    find.add_argument("--memory", type=float, default=None,
                      help="most activations a GPU may hold, in one stage's activations for one micro-batch "
                      "(1F1B needs p), or in bytes with --activation-bytes")
    find.add_argument("--activation-bytes", type=float, default=None,
                      help="bytes of one stage's activations for one micro-batch (--memory is then in bytes)")
    find.add_argument("--one-direction", action="store_true",
                      help="leave out DualPipe and Chimera (two parameter copies; PyTorch's runtime cannot run them); "
                      "--csv implies it")
    find.add_argument("--cut", type=int, default=None, metavar="V",
                      help="keep to V chunks per GPU, chunk c on GPU c mod p (default: try several cuts)")
    find.add_argument("--seconds", type=float, default=2.0, help="time for the local search (default 2)")
    find.add_argument("--seed", type=int, default=0)
    found_out = find.add_mutually_exclusive_group()
    found_out.add_argument("--json", action="store_true", help="print one JSON object, with the order")
    found_out.add_argument("--png", metavar="FILE", help="draw the best order's spacetime diagram into FILE")
    _add_exports(find)
    find.set_defaults(run=_search)
    grading_cli.add_parser(commands)
    mnist_cli.add_parser(commands)
    update = commands.add_parser(
        "update", help="bring the course's newest release into your copy, keeping your work (a laptop's clone)",
        description="Merges the newest release into the clone of the course's release you are in, as the course's "
        "JupyterHub links do (nbgitpuller's rules): your changes are committed (no git identity needed) and kept "
        "where you and the release changed the same lines; notebooks are merged cell by cell (your cells and the "
        "release's new ones all kept; where both changed a cell, yours, the release's notebook saved beside as "
        "NAME.release.ipynb), none is left unreadable, and it says what it kept.")
    update.add_argument("--folder", default=".", metavar="DIR", help="your copy of the course (default: here)")
    update.set_defaults(run=_update)
    return parser


def _update(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ppedu.update import update

    try:
        print(update(Path(args.folder)).summary())
    except RuntimeError as error:
        print(f"ppedu update: {error}", file=sys.stderr)
        return 1
    return 0


# --- ppedu partition -------------------------------------------------------------------------


def _add_partition(commands: argparse._SubParsersAction) -> None:
    """Register ``ppedu partition`` on the sub-command table."""
    cmd = commands.add_parser("partition", help="cut a model's layers into p balanced pipeline stages",
                              description="Exact contiguous partition minimising the slowest stage.")
    what = cmd.add_mutually_exclusive_group(required=True)
    what.add_argument("--layers", type=numbers, help="per-layer costs, comma-separated: 1,2,2,1")
    what.add_argument("--model", help="a model preset of ppedu.cluster (7b, 13b, 70b, 405b): its embedding, "
                      "blocks and output layer, costed in ms of F+B+W on --gpu")
    cmd.add_argument("--gpu", default="h100-80gb", help="GPU preset that costs --model's layers (default h100-80gb)")
    cmd.add_argument("-p", type=int, required=True, help="pipeline stages (GPUs)")
    cmd.add_argument("--speeds", type=numbers, default=None, help="per-GPU relative speeds, comma-separated")
    cmd.add_argument("--json", action="store_true", help="print one JSON object")
    cmd.set_defaults(run=_partition)


def _partition(args: argparse.Namespace) -> int:
    layers = args.layers or _model_layers(args.model, args.gpu)
    part = partition(layers, args.p, args.speeds)
    if args.json:
        print(json.dumps({"bounds": list(part.bounds), "sizes": list(part.sizes), "stage_costs": list(part.stage_costs),
                          "speeds": list(part.speeds), "bottleneck": part.bottleneck}))
        return 0
    rows = [("stage", "layers", "count", "speed", "cost")] + [
        (str(s), f"{r.start}–{r.stop - 1}", str(len(r)), f"{part.speeds[s]:g}", f"{part.stage_costs[s]:g}")
        for s in range(part.p) for r in [part.layers(s)]
    ]
    print(columns(rows))
    ideal = sum(layers) / sum(part.speeds)
    print(f"\nbottleneck {part.bottleneck:g} (stage {part.stage_costs.index(part.bottleneck)}); "
          f"a perfect split would give {ideal:g}")
    if args.model:
        print(f"(layer 0 is the embedding, 1–{len(layers) - 2} the blocks, {len(layers) - 1} the output layer; "
              f"costs in ms of F+B+W on {args.gpu})")
    return 0


def _model_layers(name: str, gpu: str) -> list[float]:
    """A preset model's units, each costed as its forward, backward and weight-gradient ms on ``gpu``."""
    one_of("preset", name, MODELS)
    one_of("preset", gpu, GPUS)
    return [3 * GPUS[gpu].seconds(x) * 1e3 for x in MODELS[name].layer_flops()]


if __name__ == "__main__":
    sys.exit(main())
