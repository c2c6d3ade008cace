"""Layer partitioning: cut a model's layers into contiguous pipeline stages so that the slowest
stage, which sets the pipeline's pace, is as fast as it can be."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.schedules._rules import require_counts
from ppedu.text import columns


@dataclass(frozen=True)
class Partition:
    """A cut of ``n`` layers into ``p`` contiguous stages: stage ``s`` holds layers
    ``bounds[s]`` up to (not including) ``bounds[s+1]``; ``stage_costs[s]`` is their summed cost
    divided by the speed of the GPU that runs them.

    >>> part = partition([1, 2, 3, 4, 5, 6], p=3)
    >>> part.bounds, part.stage_costs, part.bottleneck
    ((0, 3, 5, 6), (6.0, 9.0, 6.0), 9.0)
    >>> part.apply([10, 10, 10, 10, 10, 10])  # another per-layer quantity, summed the same way
    (30.0, 20.0, 10.0)
    """

    bounds: tuple[int, ...]
    stage_costs: tuple[float, ...]
    speeds: tuple[float, ...]

    @property
    def p(self) -> int:
        return len(self.stage_costs)

    @property
    def sizes(self) -> tuple[int, ...]:
        """How many layers each stage holds."""
        return tuple(b - a for a, b in zip(self.bounds, self.bounds[1:]))

    @property
    def bottleneck(self) -> float:
        """The slowest stage's cost: in steady state, the pipeline runs at its pace."""
        return max(self.stage_costs)

    def layers(self, stage: int) -> range:
        return range(self.bounds[stage], self.bounds[stage + 1])

    def apply(self, layer_values: Sequence[float]) -> tuple[float, ...]:
        """Per stage, the sum of ``layer_values`` over its layers divided by its GPU's speed (for
        instance the forward times when the cut was made on whole-layer times)."""
        return tuple(x / speed for x, speed in zip(self.totals(layer_values), self.speeds))

    def totals(self, layer_values: Sequence[float]) -> tuple[float, ...]:
        """Per stage, the plain sum of ``layer_values`` over its layers (parameters, bytes: what
        a GPU's speed does not change)."""
        if len(layer_values) != self.bounds[-1]:
            raise ValueError(f"{len(layer_values)} layer values for a partition of {self.bounds[-1]} layers")
        return tuple(sum(float(x) for x in layer_values[a:b]) for a, b in zip(self.bounds, self.bounds[1:]))


def partition(layer_costs: Sequence[float], p: int, speeds: Sequence[float] | None = None) -> Partition:
    """Cut ``layer_costs`` into ``p`` contiguous, non-empty stages minimising the slowest stage.

    ``speeds[s]`` is GPU ``s``'s relative speed (a stage's cost is its layers' sum divided by
    it); default all 1. Exact: dynamic programming over (stages, layers), O(p·n²). Among equally
    good cuts it keeps the early stages light, which is where 1F1B holds the most activations.

    >>> partition([4, 4, 4, 4], p=2).bounds
    (0, 2, 4)
    >>> partition([4, 4, 4, 4], p=2, speeds=[3, 1]).bounds  # GPU 0 three times as fast
    (0, 3, 4)
    """
    require_counts(p=p)
    costs = [_non_negative(x) for x in layer_costs]
    n = len(costs)
    if n < p:
        raise ValueError(f"cannot cut {n} layers into {p} non-empty stages")
    speeds = tuple(float(s) for s in speeds) if speeds is not None else (1.0,) * p
    if len(speeds) != p:
        raise ValueError(f"{len(speeds)} speeds for {p} stages")
    if any(not s > 0 for s in speeds):
        raise ValueError(f"speeds must be positive numbers (got {speeds})")
    prefix = [0.0]
    for x in costs:
        prefix.append(prefix[-1] + x)
    # best[k][i]: the least bottleneck of the first i layers on the first k + 1 stages.
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(p)]
    cut = [[0] * (n + 1) for _ in range(p)]
    for i in range(1, n - p + 2):
        best[0][i] = prefix[i] / speeds[0]
    for k in range(1, p):
        for i in range(k + 1, n - p + k + 2):
            for j in range(k, i):
                value = max(best[k - 1][j], (prefix[i] - prefix[j]) / speeds[k])
                if value < best[k][i]:  # `<`: among ties, the earliest cut keeps earlier stages light
                    best[k][i], cut[k][i] = value, j
    bounds = [n]
    for k in range(p - 1, 0, -1):
        bounds.append(cut[k][bounds[-1]])
    bounds.append(0)
    bounds.reverse()
    stage_costs = tuple((prefix[b] - prefix[a]) / s for a, b, s in zip(bounds, bounds[1:], speeds))
    return Partition(tuple(bounds), stage_costs, speeds)


def _non_negative(x: object) -> float:
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise ValueError(f"layer costs must be finite non-negative numbers (got {x!r})")
    return value


# --- ppedu partition -------------------------------------------------------------------------


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``ppedu partition`` on the CLI's sub-command table."""
    from ppedu.cli import numbers  # late: the CLI imports this module

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
    cmd.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
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
    from ppedu.cluster import GPUS, MODELS  # the cluster module builds on this one

    for preset, table in ((name, MODELS), (gpu, GPUS)):
        if preset not in table:
            raise ValueError(f"unknown preset {preset!r} (choose from {', '.join(table)})")
    return [3 * GPUS[gpu].seconds(x) * 1e3 for x in MODELS[name].layer_flops()]
