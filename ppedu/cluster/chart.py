"""The bus-bandwidth chart: what NCCL-tests plot for a collective, bus bandwidth against message size, drawn as
SVG from :mod:`ppedu.cluster.collectives` (no plotting library: it draws in the browser edition and the widgets
alike). A curve per algorithm, the link's bandwidth as the ceiling it approaches once the latency is paid off,
the chosen size marked, and for an all-reduce the size below which the tree beats the ring.

>>> from ppedu.cluster import LINKS
>>> svg = render_bandwidth("all-reduce", 8, LINKS["nvlink"], 1e9)
>>> svg.count('class="ppedu-curve'), "tree faster below" in svg
(2, True)
"""

from __future__ import annotations

import math
from html import escape

from ppedu.cluster.collectives import cost, crossover
from ppedu.cluster.hardware import Link
from ppedu.palette import BORDER, STYLE

#: Message sizes the chart spans (bytes, decimal): 1 kB to 10 GB.
SPAN = (1e3, 1e10)
_FONT = 13  # 24 px on a 1080p slide, where a widget shows ppedu.lecture.DRAWN_ZOOM times as large
_H, _LEFT, _BOTTOM, _TOP, _RIGHT = 220.0, 58.0, 40.0, 30.0, 16.0  # low enough for a slide with its controls
_COLOURS = {"ring": STYLE["F", 0][0], "tree": STYLE["B", 1][0]}
_DASH = {"ring": "", "tree": ' stroke-dasharray="7 4"'}


def size_label(nbytes: float) -> str:
    """``1 kB``, ``20 MB``, ``5 GB``: a size in decimal units, as the chart's ticks and the widget write it.

    >>> size_label(2e6), size_label(500), size_label(1e10)
    ('2 MB', '500 B', '10 GB')
    """
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"


def render_bandwidth(kind: str, n: int, link: Link, nbytes: float, width: int = 560) -> str:
    """The chart for ``kind`` over ``n`` GPUs on ``link``, ``nbytes`` marked, drawn ``width`` px wide."""
    algorithms = ("ring", "tree") if kind == "all-reduce" and n > 2 else ("ring",)
    plot_w, plot_h = width - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    top = link.bandwidth * 1.08
    lo, hi = (math.log10(x) for x in SPAN)

    def x(size: float) -> float:
        return _LEFT + (math.log10(size) - lo) / (hi - lo) * plot_w

    def y(bw: float) -> float:
        return _TOP + plot_h * (1 - bw / top)

    body = [f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w:.1f}" height="{plot_h:.1f}" fill="none" '
            f'style="stroke:{BORDER}"/>']
    for decade in range(int(lo), int(hi) + 1, 3):
        body.append(_text(x(10.0 ** decade), _TOP + plot_h + 16, size_label(10.0 ** decade), "middle"))
    for share in (0.0, 0.5, 1.0):
        body.append(_text(_LEFT - 6, y(share * link.bandwidth) + 4, f"{share * link.bandwidth / 1e9:g}", "end"))
    body.append(_text(_LEFT + plot_w / 2, _H - 6, "message size (decimal units)", "middle"))
    body.append(f'<text transform="translate(14,{_TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
                f'font-size="{_FONT}" fill="currentColor">bus bandwidth, GB/s</text>')
    body.append(f'<line x1="{_LEFT}" x2="{_LEFT + plot_w:.1f}" y1="{y(link.bandwidth):.1f}" y2="{y(link.bandwidth):.1f}" '
                f'style="stroke:{BORDER}" stroke-dasharray="2 3"/>')
    body.append(_text(_LEFT + 6, y(link.bandwidth) - 5, f"the link: {link.bandwidth / 1e9:g} GB/s each way"))
    sizes = [10 ** (lo + (hi - lo) * k / 120) for k in range(121)]
    ends = sorted(((y(cost(kind, sizes[-1], n, link, a).busbw), a) for a in algorithms))  # top of the chart first
    below = -1e9
    for k, (end, algorithm) in enumerate(ends):
        points = " ".join(f"{x(s):.1f},{y(cost(kind, s, n, link, algorithm).busbw):.1f}" for s in sizes)
        body.append(f'<polyline class="ppedu-curve ppedu-{algorithm}" points="{points}" fill="none" '
                    f'stroke="{_COLOURS[algorithm]}" stroke-width="2.5"{_DASH[algorithm]}/>')
        at = end - 8 if k == 0 else max(end + 18, below + 16)  # the upper curve named above its end, the other below
        below = at
        body.append(_text(x(sizes[-1]) - 4, at, algorithm, "end"))
    if len(algorithms) == 2 and SPAN[0] < (edge := crossover(n, link)) < SPAN[1]:
        body.append(f'<line x1="{x(edge):.1f}" x2="{x(edge):.1f}" y1="{_TOP}" y2="{_TOP + plot_h:.1f}" '
                    f'style="stroke:{BORDER}" stroke-dasharray="4 3"/>')
        # above the frame, at the line, where no curve runs
        body.append(_text(min(max(x(edge), _LEFT + 90), _LEFT + plot_w - 90), _TOP - 9,
                          f"tree faster below {size_label(float(f'{edge:.2g}'))}", "middle"))
    here = min(max(nbytes, SPAN[0]), SPAN[1])
    best = min(algorithms, key=lambda a: cost(kind, here, n, link, a).seconds)
    bw = cost(kind, here, n, link, best).busbw
    body.append(f'<circle class="ppedu-here" cx="{x(here):.1f}" cy="{y(bw):.1f}" r="6" fill="{_COLOURS[best]}" '
                'stroke="currentColor" stroke-width="1.5"/>')
    # in the lower right, where the curves have long risen
    body.append(_text(_LEFT + plot_w - 8, _TOP + plot_h - 10, f"● {size_label(here)}: {bw / 1e9:.3g} GB/s ({best})",
                      "end"))
    title = escape(f"{kind} over {n} GPUs on {link.name}: bus bandwidth against message size")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_H:.0f}" viewBox="0 0 {width} {_H:.0f}" '
            f'role="img" aria-label="{title}" style="color:var(--jp-ui-font-color1, #1F1F1F)"><title>{title}</title>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{_FONT}" fill="currentColor">'
            f"{escape(text)}</text>")
