"""One executor step drawn: the simulator's prediction and the measured run, side by side,
and the bytes of saved activations per simulated GPU over the measured run."""

from __future__ import annotations

from matplotlib.figure import Figure

from ppedu.mnist.executor import StepResult
from ppedu.plot import MAX_WIDTH, TEXT_PT, DisplayFigure, legend_handles, plot_timeline


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
    for ax, timeline, what in ((top, result.predicted, "predicted"), (middle, result.measured, "measured")):
        plot_timeline(timeline, ax=ax, title=f"{what}: {timeline.schedule.name}, bubble {timeline.bubble_ratio:.1%}")
        ax.get_legend().remove()  # one legend for the figure, below
        ax.tick_params(labelbottom=True)  # each diagram keeps its time scale
        ax.set_xlabel("")
    for s, points in enumerate(result.memory):
        at = {0.0: 0.0, **{t: b / 1024 for t, b in points}}  # the bytes after all that happens at one instant
        bottom.step(list(at), list(at.values()), where="post", label=f"GPU {s}", linewidth=1.8)
    bottom.set_xlim(0, max(result.predicted.makespan, result.measured.makespan))
    bottom.set_ylabel("saved activations\n(KiB)", fontsize=TEXT_PT)
    bottom.tick_params(labelsize=TEXT_PT)
    for ax in (top, middle, bottom):
        ax.xaxis.set_major_formatter(lambda t, _: f"{t * 1e3:g}")
    bottom.set_xlabel("time (ms)", fontsize=TEXT_PT)
    entries = [*legend_handles(result.predicted), *bottom.get_lines()]
    fig.legend(handles=entries, loc="outside lower center", ncols=len(entries), fontsize=TEXT_PT, frameon=False)
    return fig
