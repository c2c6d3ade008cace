"""Where pipelining sits in 3D parallelism: ``t``-way tensor, ``p``-way pipeline and ``d``-way data
parallel on ``t·p·d`` GPUs, and why the global batch caps the number of micro-batches.

Each of the ``d`` pipeline replicas trains ``global_batch / d`` sequences per step, cut into
micro-batches of ``microbatch`` sequences, so ``m = global_batch / (d · microbatch)``. The global
batch is fixed by what converges well, not by the hardware: adding replicas at a fixed batch
lowers ``m`` and raises the bubble, and a micro-batch of one sequence is as small as it gets.

>>> row = layout(gpus=64, t=8, p=4, global_batch=64)
>>> row.d, row.m, row.idle_total
(2, 32, '8.57 %')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ppedu.costs import Costs
from ppedu.lesson import Table
from ppedu.schedules import one_f_one_b
from ppedu.simulate import simulate
from ppedu.validate import whole


@dataclass(frozen=True)
class Layout:
    """One way to lay ``gpus`` out, with the micro-batches each pipeline then runs and its bubble
    (1F1B, equal costs, simulated)."""

    gpus: int
    t: int
    p: int
    d: int
    global_batch: int
    microbatch: int
    m: int
    idle_total: str
    bubble_ideal: str

    def _repr_markdown_(self) -> str:
        return Table((self,))._repr_markdown_()


def layout(gpus: int, t: int, p: int, global_batch: int, microbatch: int = 1) -> Layout:
    """Lay ``gpus`` out as ``t × p × d`` and derive ``m``; raise ``ValueError`` naming the rule a
    layout breaks (``t·p`` must divide the GPUs, ``d·microbatch`` the global batch)."""
    for name, value in (("gpus", gpus), ("t", t), ("p", p), ("global_batch", global_batch), ("microbatch", microbatch)):
        whole(name, value)
    if gpus % (t * p):
        raise ValueError(f"t·p = {t * p} must divide the {gpus} GPUs (d = gpus / (t·p) replicas)")
    d = gpus // (t * p)
    if global_batch % (d * microbatch):
        raise ValueError(f"d · microbatch = {d * microbatch} must divide the global batch of {global_batch} sequences")
    m = global_batch // (d * microbatch)
    timeline = simulate(one_f_one_b(p, m), Costs(f=1, b=2))
    return Layout(gpus, t, p, d, global_batch, microbatch, m, f"{timeline.bubble_ratio:.2%}".replace("%", " %"),
                  f"{timeline.bubble_over_ideal:.2%}".replace("%", " %"))


def scale_out(t: int, p: int, global_batch: int, replicas: Iterable[int], microbatch: int = 1) -> Table[Layout]:
    """The same pipeline replicated ``d`` times for each ``d`` in ``replicas``, at a fixed global
    batch: more GPUs, fewer micro-batches per pipeline, a larger bubble.

    >>> [r.m for r in scale_out(8, 8, 512, (1, 4, 16, 64))]
    [512, 128, 32, 8]
    """
    return Table(tuple(layout(t * p * d, t, p, global_batch, microbatch) for d in replicas))


def deeper(gpus: int, t: int, global_batch: int, depths: Iterable[int], microbatch: int = 1) -> Table[Layout]:
    """A fixed number of GPUs and global batch, the pipeline made deeper (fewer replicas): ``m``
    grows with ``p``, but the bubble does not vanish — it tends to ``1 / (1 + c)`` with
    ``c = global_batch · t / (gpus · microbatch)``.

    >>> [r.m for r in deeper(512, 8, 256, (4, 16, 64))]
    [16, 64, 256]
    """
    return Table(tuple(layout(gpus, t, p, global_batch, microbatch) for p in depths))
