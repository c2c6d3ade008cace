"""Matplotlib renderings: the spacetime diagram and activation memory over time.

Colours are Okabe and Ito's colour-blind-safe palette; F, B and W also differ by hatching, so
a diagram reads in greyscale and on a washed-out projector. Idle time is hatched grey.
"""

from __future__ import annotations

import io

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ppedu.grid import label
from ppedu.simulate import Timeline

#: (face colour, hatch) per (kind, direction).
STYLE = {
    ("F", 0): ("#0072B2", ""),
    ("B", 0): ("#E69F00", "//"),
    ("W", 0): ("#009E73", ".."),
    ("F", 1): ("#56B4E9", ""),
    ("B", 1): ("#D55E00", "//"),
    ("W", 1): ("#CC79A7", ".."),
}
IDLE_STYLE = ("#F2F2F2", "xx")
_NAMES = {"F": "forward", "B": "backward", "W": "weight gradient"}


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


def plot_timeline(timeline: Timeline, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Draw ``timeline`` as a spacetime diagram (GPU 0 at the bottom) and return its figure.

    >>> from ppedu import schedules, simulate
    >>> fig = plot_timeline(simulate(schedules.one_f_one_b(4, 8)))
    >>> fig.axes[0].get_ylabel()
    'GPU'
    """
    ax = ax or _new_axes(timeline)
    p, end = timeline.p, timeline.makespan or 1.0
    for s in range(p):
        ax.add_patch(Rectangle((0, s - 0.4), end, 0.8, facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1],
                               edgecolor="#BBBBBB", linewidth=0, zorder=0))
    labelled = timeline.events if len(timeline.events) <= 600 else ()
    for e in timeline.events:
        colour, hatch = STYLE[e.op.kind, e.op.direction]
        ax.add_patch(Rectangle((e.start, e.stage - 0.4), e.duration, 0.8, facecolor=colour, hatch=hatch,
                               edgecolor="black", linewidth=0.6, zorder=1))
    for e in labelled:
        ax.text(e.start + e.duration / 2, e.stage, label(e.op, timeline).lstrip("FBW"), ha="center",
                va="center", fontsize=8, color="white" if e.op.kind == "F" else "black", zorder=2, clip_on=True)
    ax.set_xlim(0, end)
    ax.set_ylim(-0.6, p - 0.4)
    ax.set_yticks(range(p), [str(s) for s in range(p)])
    ax.set_xlabel("time step")
    ax.set_ylabel("GPU")
    ax.set_title(title or _title(timeline))
    kinds = sorted({(e.op.kind, e.op.direction) for e in timeline.events}, key=lambda k: (k[1], "FBW".index(k[0])))
    handles = [Patch(facecolor=STYLE[k][0], hatch=STYLE[k][1], edgecolor="black",
                     label=_NAMES[k[0]] + (" (second direction)" if k[1] else "")) for k in kinds]
    handles.append(Patch(facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1], edgecolor="#BBBBBB", label="idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return ax.figure  # type: ignore[return-value]


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
    """Chunk-activations alive per GPU over time, one step line per GPU."""
    if ax is None:
        fig = DisplayFigure(figsize=(8, 3), layout="constrained")
        ax = fig.add_subplot()
    for s in range(timeline.p):
        times, counts = timeline.activations(s)
        ax.step([0.0, *times], [0, *counts], where="post", label=f"GPU {s}")
    ax.set_xlim(0, timeline.makespan or 1.0)
    ax.set_xlabel("time step")
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
