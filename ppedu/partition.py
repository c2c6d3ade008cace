"""Layer partitioning: cut a model's layers into contiguous pipeline stages so that the slowest
stage, which sets the pipeline's pace, is as fast as it can be."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppedu.validate import require_counts


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
