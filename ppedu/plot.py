"""Matplotlib renderings: the spacetime diagram and activation memory over time.

Colours are :mod:`ppedu.palette`'s (Okabe and Ito's colour-blind-safe palette); F, B and W also
differ by hatching, so a diagram reads in greyscale and on a washed-out projector; a GPU's later
chunks are darker. Idle time is hatched grey.

Sized for a projector: every text is :data:`TEXT_PT` points at 100 dpi (16.7 px) and a figure is at most
:data:`MAX_WIDTH` inches wide, so shown whole in a notebook column (about 880 px) its text keeps 12 px, and on a
slide at 1080p (pictures ppedu.lecture.PICTURE_ZOOM times as large) 25 px. A block's label runs along it where it
fits, up it where only that fits (a long diagram's narrow blocks); :func:`texts` lists what a figure writes, where and
how large.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from ppedu.grid import label
from ppedu.palette import IDLE_STYLE, NAMES, STYLE, drawn_kinds, ink, laps, op_colour, shade, time_axis
from ppedu.simulate import Timeline

__all__ = ["DisplayFigure", "IDLE_STYLE", "STYLE", "plot_memory", "plot_timeline", "texts"]
#: The size of every text in a figure, in points (at the figures' 100 dpi, 16.7 px).
TEXT_PT = 12
#: The widest figure, in inches (1120 px at 100 dpi: a 1080p slide, live or static, shows it whole, half as large
#: again, not shrunk).
MAX_WIDTH = 11.2
_STEPS = ("-", "--", ":", "-.")  # memory lines differ by dash as well as colour
_DIGIT = 0.64  # a digit's width in ems (DejaVu Sans, matplotlib's default font)


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
                  xlabel: str | None = None, until: float | None = None) -> Figure:
    """Draw ``timeline`` as a spacetime diagram (GPU 0 at the bottom) and return its figure.

    ``xlabel`` defaults to "time (steps)" when every op starts and ends on a whole step (the ticks are then whole
    steps), else "time (cost units)". A new figure has its legend below the diagram; on an ``ax`` given, to its right.
    The time axis ends at the makespan, or at ``until`` (diagrams that share one axis: their labels are fitted to it).

    >>> from ppedu import schedules, simulate
    >>> fig = plot_timeline(simulate(schedules.one_f_one_b(4, 8)))
    >>> fig.axes[0].get_ylabel(), fig.axes[0].get_xlabel()
    ('GPU', 'time (steps)')
    """
    new = ax is None
    ax = ax or _new_axes(timeline)
    p, end = timeline.p, timeline.makespan or 1.0
    for s in range(p):
        ax.add_patch(Rectangle((0, s - 0.4), end, 0.8, facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1],
                               edgecolor="#BBBBBB", linewidth=0, zorder=0))
    for e in timeline.events:
        ax.add_patch(Rectangle((e.start, e.stage - 0.4), e.duration, 0.8, facecolor=op_colour(e.op, timeline.schedule),
                               hatch=STYLE[e.op.kind, e.op.direction][1], edgecolor="black", linewidth=0.6, zorder=1))
    ax.set_xlim(0, until or end)
    ax.set_ylim(-0.6, p - 0.4)
    ax.set_yticks(range(p), [str(s) for s in range(p)])
    if timeline.whole_steps:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=TEXT_PT)
    ax.set_xlabel(xlabel or time_axis(timeline), fontsize=TEXT_PT)
    ax.set_ylabel("GPU", fontsize=TEXT_PT)
    ax.set_title(title or _title(timeline), fontsize=TEXT_PT + 1)
    handles = legend_handles(timeline)
    if new:
        ax.figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=TEXT_PT,
                         frameon=False)
    else:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=TEXT_PT, frameon=False)
    _label_blocks(ax, timeline)
    return ax.figure  # type: ignore[return-value]


def legend_handles(timeline: Timeline) -> list[Patch]:
    """The legend's entries for a diagram of ``timeline``: the kinds of block it draws, a later chunk's shade, idle."""
    handles = [Patch(facecolor=STYLE[k][0], hatch=STYLE[k][1], edgecolor="black",
                     label=NAMES[k[0]] + (" (second direction)" if k[1] else "")) for k in drawn_kinds(timeline)]
    if laps(timeline.schedule)[1] > 1:
        handles.append(Patch(facecolor=shade(STYLE["F", 0][0], 1, 2), edgecolor="black", label="a GPU's later chunk"))
    handles.append(Patch(facecolor=IDLE_STYLE[0], hatch=IDLE_STYLE[1], edgecolor="#BBBBBB", label="idle"))
    return handles


def _label_blocks(ax: Axes, timeline: Timeline) -> None:
    """Each block's micro-batch and chunk where they fit along it, else its micro-batch (a second direction's without
    its ′ last: the colour says the direction); else the same up the block where that fits; else nothing. A label sits
    on a patch of its block's colour, so hatching never crosses it."""
    figure = ax.get_figure(root=True)
    assert figure is not None
    figure.draw_without_rendering()  # lays the figure out, so a block's size on screen is known
    (x0, y0), (x1, y1) = ax.transData.transform([(0, 0), (1, 1)])
    per_unit, row = abs(x1 - x0), abs(y1 - y0) * 0.8
    em = TEXT_PT * figure.dpi / 72
    for e in timeline.events:
        short = label(e.op, timeline).lstrip("FBW")
        width = e.duration * per_unit
        micro_batch = short.split("c")[0].rstrip("'")
        texts = (short, micro_batch + ("'" if e.op.direction else ""), micro_batch)
        along = next((t for t in texts if width >= (_DIGIT * len(t) + 0.4) * em + 2 and row >= 1.4 * em), None)
        up = next((t for t in texts if row >= _DIGIT * em * len(t) + 4 and width >= 0.9 * em), None)  # turned: 0.73 em
        if along or up:
            colour = op_colour(e.op, timeline.schedule)
            ax.text(e.start + e.duration / 2, e.stage, along or up or "", ha="center", va="center", fontsize=TEXT_PT,
                    rotation=0 if along else 90, color=ink(colour), zorder=2, clip_on=True,
                    bbox=dict(boxstyle=f"square,pad={0.2 if along else 0.05}", facecolor=colour, edgecolor="none"))


@dataclass(frozen=True)
class Written:
    """A text a figure shows: what it says, its size in pixels at the figure's dpi, and its box on the canvas
    (``x0, y0, x1, y1`` in pixels)."""

    text: str
    px: float
    box: tuple[float, float, float, float]


def texts(figure: Figure) -> list[Written]:
    """Every text ``figure`` draws (titles, labels, ticks, legends, block labels), as a renderer draws it.

    >>> from ppedu import schedules, simulate
    >>> written = texts(plot_timeline(simulate(schedules.gpipe(2, 2))))
    >>> min(w.px for w in written) >= 15, any(w.text == "GPU" for w in written)
    (True, True)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    # Right after printing, a figure's canvas may be the plain base class, which draws nothing.
    canvas = figure.canvas if hasattr(figure.canvas, "get_renderer") else FigureCanvasAgg(figure)
    renderer = canvas.get_renderer()
    drawn: list[Text] = []
    draw = Text.draw

    def recording(text: Text, renderer_: Any) -> None:  # ticks outside the view are laid out but never drawn
        if text.get_visible() and text.get_text().strip():
            drawn.append(text)
        draw(text, renderer_)

    Text.draw = recording  # type: ignore[method-assign, assignment]
    try:
        figure.draw(renderer)
    finally:
        Text.draw = draw  # type: ignore[method-assign]
    out = []
    for artist in dict.fromkeys(drawn):  # a text of several lines is drawn line by line
        box = artist.get_window_extent(renderer)
        out.append(Written(artist.get_text(), float(artist.get_fontsize()) * figure.dpi / 72,
                           (box.x0, box.y0, box.x1, box.y1)))
    return out


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
    pattern as well as colour, and named in the legend).

    >>> from ppedu import schedules, simulate
    >>> fig = plot_memory(simulate(schedules.one_f_one_b(4, 8)))
    >>> [int(max(line.get_ydata())) for line in fig.axes[0].get_lines()]
    [4, 3, 2, 1]
    """
    if ax is None:
        fig = DisplayFigure(figsize=(8, 2.9), layout="constrained")
        ax = fig.add_subplot()
    for s in range(timeline.p):
        times, counts = timeline.activations(s)
        # The count after everything that happens at one instant: a free and an allocation at the same time are
        # no dip to the floor and back.
        at = {0.0: 0, **dict(zip((float(t) for t in times), counts))}
        ax.step(list(at), list(at.values()), where="post", label=f"GPU {s}",
                linestyle=_STEPS[s % len(_STEPS)], linewidth=1.8)
    ax.set_xlim(0, timeline.makespan or 1.0)
    if timeline.whole_steps:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=TEXT_PT)
    ax.set_xlabel(time_axis(timeline), fontsize=TEXT_PT)
    ax.set_ylabel("activations alive\n(one chunk's each)", fontsize=TEXT_PT)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=TEXT_PT, frameon=False)
    return ax.figure  # type: ignore[return-value]


def _new_axes(timeline: Timeline) -> Axes:
    width = min(MAX_WIDTH, 4 + 0.3 * timeline.makespan)
    fig = DisplayFigure(figsize=(width, 1.3 + 0.42 * timeline.p), layout="constrained")
    return fig.add_subplot()


def _title(t: Timeline) -> str:
    s = t.schedule
    v = f", v={s.virtual}" if s.virtual > 1 else ""
    pairs = f"; {t.costs.pair_booking()}" if s.overlapped else ""  # the booking changes both numbers: say which
    bubble = f"bubble {t.bubble_ratio:.1%} of {t.p}×{t.makespan:g} slots"
    return f"{s.name}: p={t.p}, m={s.microbatches}{v} — {bubble}{pairs}"
