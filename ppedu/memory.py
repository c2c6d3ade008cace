"""The memory model: when a micro-batch's activations on a chunk are released.

A forward allocates its chunk's activations when it starts; a full backward frees them all when
it ends. Where a schedule splits the backward into B (input gradient) and W (weight gradient),
W still needs the layer inputs, so what B may free is a choice, stated here once and used by the
simulator and the MNIST executor alike: ``kept_for_w`` is the fraction W holds until it ends.

>>> FREE_AT_W.released("B", split=True), FREE_AT_W.released("W", split=True)
(0.0, 1.0)
>>> zero_bubble_split(0.25).released("B", split=True)
0.75
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True)
class MemoryModel:
    """When activations die: a full backward frees all of them; with W split off, B frees
    ``1 - kept_for_w`` of them and W the rest. ``kept_for_w = 1`` (the default, :data:`FREE_AT_W`)
    is what a framework does when W reruns autograd on the saved graph (PyTorch's
    ``stage_backward_input`` keeps it for ``stage_backward_weight``, ``torch/distributed/pipelining/_backward.py``;
    ``tests/test_frameworks.py`` watches a layer's input live from B until W); ``0`` frees everything
    at B (:data:`FREE_AT_B`, W's inputs counted elsewhere); in between is the Zero Bubble paper's
    split, where W keeps only the layer inputs (:func:`zero_bubble_split`)."""

    kept_for_w: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.kept_for_w <= 1.0:
            raise ValueError(f"kept_for_w is a fraction between 0 and 1 (got {self.kept_for_w!r})")

    def released(self, kind: str, split: bool) -> float:
        """The fraction of its chunk's activations an op of ``kind`` frees when it ends."""
        if kind == "F":
            return 0.0
        if not split:
            return 1.0 if kind == "B" else 0.0
        return self.kept_for_w if kind == "W" else 1.0 - self.kept_for_w


FREE_AT_W = MemoryModel(1.0)
FREE_AT_B = MemoryModel(0.0)


def zero_bubble_split(kept_for_w: float) -> MemoryModel:
    """The Zero Bubble paper's accounting: B frees what only the input gradient needed, and W
    holds ``kept_for_w`` of the activations (the layer inputs) until it ends."""
    return MemoryModel(kept_for_w)


def profile(stage: Sequence[int], kind: Sequence[int], split: Sequence[bool], owner: Sequence[int],
            start: Sequence[float], end: Sequence[float], weight: Sequence[float], stages: int,
            model: MemoryModel) -> tuple[tuple[list[float], list[float]], ...]:
    """Per stage, ``(times, alive)``: the activations alive from ``times[i]`` on. Sequences are per op:
    its stage, kind code (0 F, 1 B, 2 W), whether its backward is split, the index of the F whose
    activations it frees (``owner``), its start and end, and ``weight`` per op of what its F
    allocates. At equal times a free comes first, as a framework frees before it allocates."""
    rates = {(k, s): model.released(name, bool(s)) for k, name in enumerate("FBW") for s in (0, 1)}
    changes: list[list[tuple[float, float]]] = [[] for _ in range(stages)]
    for i, (s, k) in enumerate(zip(stage, kind)):
        if k == 0:
            changes[s].append((start[i], weight[i]))
        elif rate := rates[k, split[i]]:
            changes[s].append((end[i], -rate * weight[owner[i]]))
    out = []
    for row in changes:
        row.sort()
        out.append(([t for t, _ in row], list(accumulate(d for _, d in row))))
    return tuple(out)
