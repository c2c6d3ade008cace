"""Matplotlib renderings: the spacetime diagram and activation memory over time.

Colours are :mod:`ppedu.palette`'s (Okabe and Ito's colour-blind-safe palette); F, B and W also
differ by hatching, so a diagram reads in greyscale and on a washed-out projector; a GPU's later
chunks are darker. Idle time is hatched grey. A label is drawn only where it fits its block.
"""

from __future__ import annotations

import io

import numpy as np

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ppedu.grid import label
from ppedu.palette import IDLE_STYLE, NAMES, STYLE, drawn_kinds, ink, laps, op_colour, shade
from ppedu.simulate import Timeline

__all__ = ["DisplayFigure", "IDLE_STYLE", "STYLE", "plot_memory", "plot_timeline"]
_FONT = 8  # label size in points
_STEPS = ("-", "--", ":", "-.")  # memory lines differ by dash as well as colour


class DisplayFigure(Figure):
    """A figure that draws itself in Jupyter even where pyplot, and with it matplotlib's IPython hook, was
    never imported: a plain ``Figure`` shows there only as the text ``<Figure size … with 1 Axes>``.

    >>> DisplayFigure(figsize=(1, 1))._repr_png_()[:4]
    b'\\x89PNG'
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()


def plot_timeline(timeline: Timeline, ax: Axes | None = None, title: str | None = None,
                  xlabel: str | None = None) -> Figure:
    """Draw ``timeline`` as a spacetime diagram (GPU 0 at the bottom) and return its figure.

    ``xlabel`` defaults to "time step" when every op starts and ends on a whole step, else "time".

    >>> from ppedu import schedules, simulate
    >>> fig = plot_timeline(simulate(schedules.one_f_one_b(4, 8)))
    >>> fig.axes[0].get_ylabel(), fig.axes[0].get_xlabel()
    ('GPU', 'time step')
    """
    ax = ax or _new_axes(timeline)
    p, end = timeline.p, timeline.makespan or 1.0
    for s in range(p):
        ax.add_patch(Rectangle((0, s - 0.4), end, 0.8, facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1],
                               edgecolor="#BBBBBB", linewidth=0, zorder=0))
    for e in timeline.events:
        ax.add_patch(Rectangle((e.start, e.stage - 0.4), e.duration, 0.8, facecolor=op_colour(e.op, timeline.schedule),
                               hatch=STYLE[e.op.kind, e.op.direction][1], edgecolor="black", linewidth=0.6, zorder=1))
    ax.set_xlim(0, end)
    ax.set_ylim(-0.6, p - 0.4)
    ax.set_yticks(range(p), [str(s) for s in range(p)])
    whole = all(float(t).is_integer() for e in timeline.events for t in (e.start, e.end))
    ax.set_xlabel(xlabel or ("time step" if whole else "time"))
    ax.set_ylabel("GPU")
    ax.set_title(title or _title(timeline))
    handles = [Patch(facecolor=STYLE[k][0], hatch=STYLE[k][1], edgecolor="black",
                     label=NAMES[k[0]] + (" (second direction)" if k[1] else "")) for k in drawn_kinds(timeline)]
    if laps(timeline.schedule)[1] > 1:
        handles.append(Patch(facecolor=shade(STYLE["F", 0][0], 1, 2), edgecolor="black", label="a GPU's later chunk"))
    handles.append(Patch(facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1], edgecolor="#BBBBBB", label="idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    _label_blocks(ax, timeline)
    return ax.figure  # type: ignore[return-value]


def _label_blocks(ax: Axes, timeline: Timeline) -> None:
    """Each block's micro-batch and chunk where they fit its width, else its micro-batch, else nothing."""
    figure = ax.get_figure(root=True)
    assert figure is not None
    figure.draw_without_rendering()  # lays the figure out, so a block's width on screen is known
    (x0, _), (x1, _) = ax.transData.transform([(0, 0), (1, 0)])
    pixels_per_unit = abs(x1 - x0)
    char = 0.62 * _FONT * figure.dpi / 72  # a digit's width in pixels, roughly
    for e in timeline.events:
        short = label(e.op, timeline).lstrip("FBW")
        width = e.duration * pixels_per_unit
        fits = [t for t in (short, short.split("c")[0] + ("'" if e.op.direction else "")) if width >= char * len(t) + 3]
        if fits:
            colour = op_colour(e.op, timeline.schedule)
            ax.text(e.start + e.duration / 2, e.stage, fits[0], ha="center", va="center", fontsize=_FONT,
                    color=ink(colour), zorder=2, clip_on=True,
                    bbox=dict(boxstyle="square,pad=0.05", facecolor=colour, edgecolor="none"))


def outline_pairs(figure: Figure, timeline: Timeline) -> int:
    """Draw a shared black border around each overlapped forward-and-backward pair of
    ``timeline`` (DualPipe's F&B), as DeepSeek's figure does; return how many were outlined.

    >>> from ppedu import schedules, simulate
    >>> t = simulate(schedules.dualpipe(4, 8))
    >>> outline_pairs(plot_timeline(t), t) == len(t.schedule.overlapped)
    True
    """
    ax = figure.axes[0]
    at = {e.op: e for e in timeline.events}
    count = 0
    for s, ops in enumerate(timeline.schedule.stages):
        for before, op in zip(ops, ops[1:]):
            if op in timeline.schedule.overlapped:
                start, end = at[before].start, at[op].end
                ax.add_patch(Rectangle((start, s - 0.45), end - start, 0.9, fill=False, edgecolor="black",
                                       linewidth=2.2, zorder=3))
                count += 1
    return count


def plot_memory(timeline: Timeline, ax: Axes | None = None) -> Figure:
    """Chunk-activations alive per GPU over time, one step line per GPU (told apart by dash
    pattern as well as colour, and named at its peak)."""
    if ax is None:
        fig = DisplayFigure(figsize=(8, 3), layout="constrained")
        ax = fig.add_subplot()
    for s in range(timeline.p):
        times, counts = timeline.activations(s)
        (line,) = ax.step([0.0, *times], [0, *counts], where="post", label=f"GPU {s}",
                          linestyle=_STEPS[s % len(_STEPS)], linewidth=1.5)
        if len(counts):
            peak = int(np.argmax(counts))
            ax.annotate(f"GPU {s}", (times[peak], counts[peak]), xytext=(2, 2), textcoords="offset points",
                        fontsize=7, color=line.get_color())
    ax.set_xlim(0, timeline.makespan or 1.0)
    whole = all(float(t).is_integer() for e in timeline.events for t in (e.start, e.end))
    ax.set_xlabel("time step" if whole else "time")
    ax.set_ylabel("activations alive")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return ax.figure  # type: ignore[return-value]


def _new_axes(timeline: Timeline) -> Axes:
    width = min(16.0, 4 + 0.25 * timeline.makespan)
    fig = DisplayFigure(figsize=(width, 1 + 0.45 * timeline.p), layout="constrained")
    return fig.add_subplot()


def _title(t: Timeline) -> str:
    s = t.schedule
    v = f", v={s.virtual}" if s.virtual > 1 else ""
    return f"{s.name}: p={t.p}, m={s.microbatches}{v} — bubble {t.bubble_ratio:.1%} of {t.p}×{t.makespan:g} slots"
