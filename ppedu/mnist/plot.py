"""A step drawn: the simulator's prediction and the measured run on one time axis — the executor's
step (with the bytes of saved activations per simulated GPU below) and a run across processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ppedu.mnist.executor import StepResult
from ppedu.plot import MAX_WIDTH, TEXT_PT, DisplayFigure, legend_handles, plot_timeline
from ppedu.simulate import Timeline

if TYPE_CHECKING:
    from ppedu.mnist.processes import ProcessRun


def plot_step(result: StepResult) -> Figure:
    r"""Predicted (top) and measured (middle) spacetime diagrams of ``result`` on one time axis
    in milliseconds, each with its own time scale, and activation memory per GPU (bottom).

    >>> import torch
    >>> from torch.nn.functional import cross_entropy
    >>> from ppedu.schedules import one_f_one_b
    >>> from ppedu.mnist import mlp, run_schedule, split_model
    >>> step = run_schedule(one_f_one_b(2, 4), split_model(mlp(layers=4, hidden=8), 2),
    ...                     (torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))), cross_entropy)
    >>> fig = plot_step(step)
    >>> [ax.get_ylabel() for ax in fig.axes], fig._repr_png_()[:4]
    (['GPU', 'GPU', 'saved activations\n(KiB)'], b'\x89PNG')
    """
    p = result.schedule.p
    fig = DisplayFigure(figsize=(MAX_WIDTH, 2.2 + 0.75 * p), layout="constrained")
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[p, p, 2.2])
    _pair(top, middle, result.predicted, result.measured)
    for s, points in enumerate(result.memory):
        at = {0.0: 0.0, **{t: b / 1024 for t, b in points}}  # the bytes after all that happens at one instant
        bottom.step(list(at), list(at.values()), where="post", label=f"GPU {s}", linewidth=1.8)
    bottom.set_ylabel("saved activations\n(KiB)", fontsize=TEXT_PT)
    bottom.tick_params(labelsize=TEXT_PT)
    bottom.set_xlabel("time (ms)", fontsize=TEXT_PT)
    entries = [*legend_handles(result.predicted), *bottom.get_lines()]
    fig.legend(handles=entries, loc="outside lower center", ncols=len(entries), fontsize=TEXT_PT, frameon=False)
    return fig


def plot_processes(run: ProcessRun) -> Figure:
    """Predicted (top) and measured (bottom) spacetime diagrams of a step run across processes
    (:func:`ppedu.mnist.processes.run_processes`), on one time axis in milliseconds."""
    p = run.schedule.p
    fig = DisplayFigure(figsize=(MAX_WIDTH, 1.2 + 1.1 * p), layout="constrained")  # p = 4 fits a slide at 1.5×, legend too
    top, bottom = fig.subplots(2, 1, sharex=True)
    _pair(top, bottom, run.predicted, run.measured, f" ({run.mode} sends)")
    bottom.set_xlabel("time (ms)", fontsize=TEXT_PT)
    entries = legend_handles(run.predicted)
    fig.legend(handles=entries, loc="outside lower center", ncols=min(len(entries), 4), fontsize=TEXT_PT,
               frameon=False)
    return fig


def _pair(top: Axes, below: Axes, predicted: Timeline, measured: Timeline, how: str = "") -> None:
    """The prediction above the measured run, each with its own time scale in milliseconds (their axis shared)
    and no legend of its own: the figure has one, below."""
    until = max(predicted.makespan, measured.makespan)
    for ax, timeline, what in ((top, predicted, "predicted"), (below, measured, "measured")):
        plot_timeline(timeline, ax=ax, title=f"{what}: {timeline.schedule.name}{how}, bubble {timeline.bubble_ratio:.1%}",
                      until=until)
        if (legend := ax.get_legend()) is not None:
            legend.remove()
        ax.tick_params(labelbottom=True)
        ax.set_xlabel("")
        ax.xaxis.set_major_formatter(lambda t, _: f"{t * 1e3:g}")
