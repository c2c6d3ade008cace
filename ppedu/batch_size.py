"""How large a batch pays: the gradient noise scale, measured on real MNIST, and what a batch buys in steps and
costs in examples — beside what it does to a pipeline's bubble.

McCandlish, Kaplan, Amodei et al. ("An Empirical Model of Large-Batch Training", 2018): a batch of ``B`` examples
estimates the true gradient ``G`` with noise of covariance ``Σ/B``. While ``B`` is below the **noise scale**
``B_simple = tr(Σ)/|G|²`` a larger batch removes noise and each step goes further, almost in proportion; above it a
step goes little further and the extra examples are wasted. To reach a given loss a run takes ``S`` steps and ``E``
examples with ``S/S_min = 1 + B_noise/B`` and ``E/E_min = 1 + B/B_noise``: the critical batch ``B_crit = E_min/S_min``
is about ``B_noise``, where both cost twice their minimum. The noise scale grows as the loss falls.

Both estimates come from per-example gradients: with ``gᵢ`` the gradient of example ``i`` of ``n`` and ``ḡ`` their
mean, ``tr(Σ) ≈ Σ|gᵢ − ḡ|²/(n − 1)`` and ``|G|² ≈ |ḡ|² − tr(Σ)/n`` (both unbiased). For softmax regression the
per-example gradient is the outer product ``(pᵢ − yᵢ)·xᵢᵀ``, whose squared norm is ``|pᵢ − yᵢ|²·|xᵢ|²``.

>>> rows = steps_and_examples(1000.0, (250, 1000, 4000))
>>> [(r.batch, r.steps_over_min, r.examples_over_min) for r in rows]
[(250, 5.0, 1.25), (1000, 2.0, 2.0), (4000, 1.25, 5.0)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppedu.formulas import bubble_ratio
from ppedu.lesson import Table
from ppedu.rounding import rounded
from ppedu.validate import whole


@dataclass(frozen=True)
class NoiseRow:
    """The noise scale of softmax regression on MNIST after ``step`` steps of SGD, with the loss there."""

    step: int
    loss: float
    b_simple: float


def noise_scale(residuals: Any, inputs: Any) -> float:
    """``B_simple = tr(Σ)/|G|²`` from per-example gradients ``(pᵢ − yᵢ)·xᵢᵀ`` given as ``residuals`` (``n × classes``,
    ``pᵢ − yᵢ``) and ``inputs`` (``n × features``), without forming them (numpy arrays).

    >>> import numpy as np
    >>> r, x = np.array([[1.0], [3.0]]), np.array([[1.0], [1.0]])  # gradients 1 and 3: mean 2, variance 2
    >>> noise_scale(r, x)  # tr Σ = 2, |G|² = 4 − 2/2 = 3
    0.6666666666666666
    """
    n = len(residuals)
    if n < 2:
        raise ValueError("the noise scale needs the gradients of at least 2 examples")
    mean = residuals.T @ inputs / n
    squares = float(((residuals ** 2).sum(axis=1) * (inputs ** 2).sum(axis=1)).sum())
    mean_square = float((mean ** 2).sum())
    trace = (squares - n * mean_square) / (n - 1)
    signal = mean_square - trace / n
    if signal <= 0:
        return float("inf")  # the gradient is lost in its noise: any batch is below the noise scale
    return trace / signal


def mnist_noise_scales(steps: Sequence[int] = (0, 100, 1000, 3000), batch: int = 64, lr: float = 0.1,
                       sample: int = 10000, seed: int = 0) -> Table[NoiseRow]:
    """Train softmax regression on the shipped MNIST subset with SGD (batches of ``batch``, rate ``lr``, seeded)
    and measure the noise scale on ``sample`` training images at each of ``steps``."""
    import numpy as np

    from ppedu.mnist.data import mnist_arrays

    whole("batch", batch), whole("sample", sample)
    images, labels = mnist_arrays("train")
    x = np.hstack([images.reshape(len(images), -1) / 255.0, np.ones((len(images), 1))])  # with a bias input
    y = np.eye(10)[labels]
    w = np.zeros((x.shape[1], 10))
    rng = np.random.default_rng(seed)
    probe = rng.choice(len(x), size=min(sample, len(x)), replace=False)

    def residuals(rows: Any) -> Any:
        z = x[rows] @ w
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True) - y[rows]

    rows, done = [], 0
    for target in sorted(steps):
        for _ in range(target - done):
            pick = rng.choice(len(x), size=batch, replace=False)
            w -= lr * x[pick].T @ residuals(pick) / batch
        done = target
        r = residuals(probe)
        right = (r + y[probe])[np.arange(len(probe)), labels[probe]]  # the probability of the right digit
        loss = float(-np.log(np.maximum(right, 1e-12)).mean())
        rows.append(NoiseRow(target, round(loss, 4), round(noise_scale(r, x[probe]), 1)))
    return Table(tuple(rows))


@dataclass(frozen=True)
class BatchRow:
    """A global batch against the noise scale: steps and examples to a given loss, each over its minimum; and, for
    a pipeline of ``p`` stages in each of ``d`` replicas, its micro-batches ``m`` and GPipe/1F1B bubble."""

    batch: int
    steps_over_min: float
    examples_over_min: float
    m: int | None = None
    bubble: float | None = None


def steps_and_examples(b_noise: float, batches: Sequence[int], p: int | None = None, d: int = 1,
                       microbatch: int = 1) -> Table[BatchRow]:
    """For each global batch: ``S/S_min = 1 + B_noise/B`` and ``E/E_min = 1 + B/B_noise``; with a pipeline of ``p``
    stages replicated ``d`` times, ``m = B/(d·microbatch)`` and the bubble ``(p − 1)/(m + p − 1)``."""
    if not b_noise > 0:
        raise ValueError(f"the noise scale is a positive number of examples (got {b_noise!r})")
    rows = []
    for b in batches:
        whole("batch", b)
        m = b // (d * microbatch) if p else None
        rows.append(BatchRow(b, rounded(1 + b_noise / b), rounded(1 + b / b_noise), m,
                             rounded(bubble_ratio(p, m)) if p and m else None))
    return Table(tuple(rows))
