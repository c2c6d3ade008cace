"""A step drawn: the simulator's prediction and the measured run on one time axis — the executor's
step (with the bytes of saved activations per simulated GPU below) and a run across processes."""

from __future__ import annotations

from matplotlib.figure import Figure

from typing import TYPE_CHECKING

from matplotlib.axes import Axes

from ppedu.mnist.executor import StepResult
from ppedu.plot import DisplayFigure, plot_timeline
from ppedu.simulate import Timeline

if TYPE_CHECKING:
    from ppedu.mnist.processes import ProcessRun


def plot_step(result: StepResult) -> Figure:
    """Predicted (top) and measured (middle) spacetime diagrams of ``result`` on one time axis
    in milliseconds, and activation memory per GPU (bottom).

    >>> import torch
    >>> from torch.nn.functional import cross_entropy
    >>> from ppedu.schedules import one_f_one_b
    >>> from ppedu.mnist import mlp, run_schedule, split_model
    >>> step = run_schedule(one_f_one_b(2, 4), split_model(mlp(layers=4, hidden=8), 2),
    ...                     (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))), cross_entropy)
    >>> fig = plot_step(step)
    >>> [ax.get_ylabel() for ax in fig.axes], fig._repr_png_()[:4]
    (['GPU', 'GPU', 'saved activations (KiB)'], b'\x89PNG')
    """
    p = result.schedule.p
    fig = DisplayFigure(figsize=(12, 2.2 + 0.9 * p), layout="constrained")
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[p, p, 2])
    _pair(top, middle, result.predicted, result.measured)
    for s, points in enumerate(result.memory):
        bottom.step([0.0] + [t for t, _ in points], [0.0] + [b / 1024 for _, b in points], where="post", label=f"GPU {s}")
    bottom.set_xlim(0, max(result.predicted.makespan, result.measured.makespan))
    bottom.set_ylabel("saved activations (KiB)")
    bottom.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    middle.set_xlabel("")
    bottom.xaxis.set_major_formatter(lambda t, _: f"{t * 1e3:g}")
    bottom.set_xlabel("time (ms)")
    return fig


def plot_processes(run: ProcessRun) -> Figure:
    """Predicted (top) and measured (bottom) spacetime diagrams of a step run across processes
    (:func:`ppedu.mnist.processes.run_processes`), on one time axis in milliseconds."""
    p = run.schedule.p
    fig = DisplayFigure(figsize=(12, 1.2 + 1.2 * p), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    _pair(top, bottom, run.predicted, run.measured, f" ({run.mode} sends)")
    bottom.xaxis.set_major_formatter(lambda t, _: f"{t * 1e3:g}")
    bottom.set_xlabel("time (ms)")
    return fig


def _pair(top: Axes, below: Axes, predicted: Timeline, measured: Timeline, how: str = "") -> None:
    """The prediction above the measured run, sharing their time axis."""
    for ax, timeline, what in ((top, predicted, "predicted"), (below, measured, "measured")):
        plot_timeline(timeline, ax=ax, title=f"{what}: {timeline.schedule.name}{how}, bubble {timeline.bubble_ratio:.1%}")
    top.set_xlabel("")
    below.set_xlim(0, max(predicted.makespan, measured.makespan))
