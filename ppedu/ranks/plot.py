"""The lab's measured collectives drawn: bus bandwidth against buffer size, each collective beside chapter 12's ring on
the fitted link."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from ppedu.cluster.collectives import cost
from ppedu.plot import TEXT_PT, DisplayFigure
from ppedu.ranks.timing import Fit, Measured


def plot_busbw(rows: Sequence[Measured], fitted: Fit) -> Figure:
    """Measured busbw (GB/s, solid, dots) against the buffer ``S`` (MB, log scale) per collective, and the ring's
    busbw on the fitted link (dashed, the same colour), with the fitted bandwidth as a level line.

    >>> from ppedu.ranks.timing import fit
    >>> rows = [Measured("all-reduce", 2, s, 1e-5 + s / 1e9) for s in (1e3, 1e5, 1e7)]
    >>> fig = plot_busbw(rows, fit(rows))
    >>> len(fig.axes[0].get_lines()), fig._repr_png_()[:4]
    (3, b'\\x89PNG')
    """
    fig = DisplayFigure(figsize=(8, 3.8), layout="constrained")
    ax = fig.add_subplot()
    for kind in dict.fromkeys(r.kind for r in rows):
        mine = sorted((r for r in rows if r.kind == kind), key=lambda r: r.nbytes)
        sizes = [r.nbytes / 1e6 for r in mine]
        line, = ax.plot(sizes, [r.busbw / 1e9 for r in mine], marker="o", linewidth=1.8, label=kind)
        model = [cost(kind, r.nbytes, r.n, fitted.link).busbw / 1e9 for r in mine]
        ax.plot(sizes, model, linestyle="--", linewidth=1.2, color=line.get_color())
    ax.axhline(fitted.bandwidth / 1e9, color="grey", linewidth=1, linestyle=":", label="fitted B")
    ax.set_xscale("log")
    ax.set_xlabel("buffer S (MB)", fontsize=TEXT_PT)
    ax.set_ylabel("busbw (GB/s)", fontsize=TEXT_PT)
    ax.tick_params(labelsize=TEXT_PT)
    fig.suptitle(f"{rows[0].n} ranks: measured (solid) and chapter 12's ring on the fitted link (dashed)",
                 fontsize=TEXT_PT)
    # beside the axes: inside, the fitted level ran through the legend's labels
    ax.legend(fontsize=TEXT_PT, frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig
