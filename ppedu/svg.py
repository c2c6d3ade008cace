"""SVG renderings of the spacetime diagram: light enough to redraw on every slider move.

The same picture as :func:`ppedu.plot.plot_timeline` (GPU 0 at the bottom, the same
colour-blind-safe colours and hatching), as a string an HTML widget or a notebook shows.

>>> from ppedu import schedules, simulate
>>> svg = render_svg(simulate(schedules.gpipe(2, 2)))
>>> svg.startswith("<svg") and svg.count('class="ppedu-op') == 8
True
"""

from __future__ import annotations

from html import escape

import numpy as np

from ppedu.grid import Grid, grid, label
from ppedu.idle import CAUSE_STYLE
from ppedu.plot import IDLE_STYLE, STYLE
from ppedu.simulate import Timeline

_NAMES = {"F": "forward", "B": "backward", "W": "weight grad"}
_ROW, _GAP, _LEFT, _BOTTOM, _TOP = 26, 4, 44, 22, 6
_HATCH = {"//": '<path d="M0,6 L6,0" stroke="#000" stroke-opacity=".35" stroke-width="1"/>',
          "..": '<circle cx="3" cy="3" r="1" fill="#000" fill-opacity=".35"/>',
          "xx": '<path d="M0,0 L6,6 M0,6 L6,0" stroke="#BBB" stroke-width=".6"/>',
          "\\\\": '<path d="M0,0 L6,6" stroke="#666" stroke-width=".8"/>',
          "--": '<path d="M0,3 L6,3" stroke="#666" stroke-width=".8"/>',
          "||": '<path d="M3,0 L3,6" stroke="#666" stroke-width=".8"/>',
          "++": '<path d="M3,0 L3,6 M0,3 L6,3" stroke="#666" stroke-width=".6"/>',
          "oo": '<circle cx="3" cy="3" r="1.8" fill="none" stroke="#666" stroke-width=".6"/>'}
# One pattern per hatched style, its colour baked in, so each block is a single element.
_PATTERNS = {(colour, hatch): f"ppedu-p{i}" for i, (colour, hatch) in enumerate(
    sorted({style for style in (*STYLE.values(), IDLE_STYLE, *CAUSE_STYLE.values()) if style[1]}))}
_DEFS = "<defs>" + "".join(
    f'<pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse">'
    f'<rect width="6" height="6" fill="{colour}"/>{_HATCH[hatch]}</pattern>'
    for (colour, hatch), pid in _PATTERNS.items()) + "</defs>"


def _fill(colour: str, hatch: str) -> str:
    return f"url(#{_PATTERNS[colour, hatch]})" if hatch else colour


def render_svg(timeline: Timeline, upto: float | None = None, width: float = 880.0, title: str | None = None,
               causes: bool = False) -> str:
    """The spacetime diagram of ``timeline`` as SVG; with ``upto``, only what has run by that time
    (the rest of the grid is left blank and a line marks "now"); with ``causes``, each idle
    interval hatched by why it is idle (:meth:`~ppedu.simulate.Timeline.idle_causes`).

    >>> from ppedu import schedules, simulate
    >>> render_svg(simulate(schedules.gpipe(2, 2)), causes=True).count('class="ppedu-idle ppedu-fill"')
    2
    """
    p, end = timeline.p, timeline.makespan or 1.0
    unit = max(2.0, min(36.0, (width - _LEFT - 8) / end))
    inner_w, inner_h = unit * end, p * _ROW
    out = [_header(max(_LEFT + inner_w + 8, 420), inner_h + _BOTTOM + _TOP + 20 + (18 if title else 0), title)]
    y0 = _TOP + (18 if title else 0)
    shown = end if upto is None else max(0.0, min(upto, end))
    for s in range(p):
        y = y0 + (p - 1 - s) * _ROW
        out.append(_rect(_LEFT, y + _GAP / 2, shown * unit, _ROW - _GAP, IDLE_STYLE[0], IDLE_STYLE[1],
                         "ppedu-idle", stroke="none"))
        out.append(f'<text x="{_LEFT - 6}" y="{y + _ROW / 2 + 4}" text-anchor="end" font-size="11">GPU {s}</text>')
    for idle in timeline.idle_causes() if causes else ():
        if idle.start < shown:
            out.append(_rect(_LEFT + idle.start * unit, y0 + (p - 1 - idle.stage) * _ROW + _GAP / 2,
                             (min(idle.end, shown) - idle.start) * unit, _ROW - _GAP, *CAUSE_STYLE[idle.cause],
                             f"ppedu-idle ppedu-{idle.cause.replace(' ', '-')}", stroke="none", tip=idle.cause))
    for e in timeline.events:
        if e.start >= shown and upto is not None:
            continue
        stop = min(e.end, shown)
        x, w = _LEFT + e.start * unit, (stop - e.start) * unit
        y = y0 + (p - 1 - e.stage) * _ROW
        text = label(e.op, timeline)
        out.append(_rect(x, y + _GAP / 2, w, _ROW - _GAP, *STYLE[e.op.kind, e.op.direction], f"ppedu-op ppedu-{e.op.kind}",
                         tip=text))
        # The micro-batch and chunk if they fit, else the micro-batch alone, else nothing.
        short = text.lstrip("FBW")
        fits = [t for t in (short, short.split("c")[0] + ("'" if e.op.direction else "")) if w >= 6.5 * len(t) + 3]
        if fits:
            out.append(_centred(x, y, w, fits[0], "#fff" if e.op.kind == "F" else "#000"))
    if upto is not None:
        x = _LEFT + shown * unit
        out.append(f'<line class="ppedu-now" x1="{x:.1f}" y1="{y0 - 2}" x2="{x:.1f}" y2="{y0 + inner_h + 2}" '
                   'stroke="#D55E00" stroke-width="2"/>')
    out.append(_axis(end, unit, y0 + inner_h))
    out.append(_legend(timeline, y0 + inner_h + 22, causes))
    out.append("</svg>")
    return "".join(out)


def render_grid_svg(g: Grid | Timeline, hidden: np.ndarray | None = None, marked: set[tuple[int, int]] | None = None,
                    width: float = 880.0) -> str:
    """The grid cell by cell, each cell outlined so it can be counted; ``hidden`` cells show a
    ``?`` instead of their content, ``marked`` cells (stage, step) carry a cross."""
    g = g if isinstance(g, Grid) else grid(g)
    p, steps = g.shape
    unit = max(8.0, min(36.0, (width - _LEFT - 8) / max(steps, 1)))
    labels, kinds, starts = g.labels(), g.kinds(), g.starts()
    events = g.timeline.events
    hidden = np.zeros(g.shape, dtype=bool) if hidden is None else hidden
    out = [_header(_LEFT + unit * steps + 8, p * _ROW + _BOTTOM + _TOP)]
    for s in range(p):
        y = _TOP + (p - 1 - s) * _ROW
        out.append(f'<text x="{_LEFT - 6}" y="{y + _ROW / 2 + 4}" text-anchor="end" font-size="11">GPU {s}</text>')
        for t in range(steps):
            x = _LEFT + t * unit
            if hidden[s, t]:
                out.append(_rect(x, y, unit, _ROW, "#9E9E9E", "", "ppedu-hidden", stroke="#fff"))
                out.append(_centred(x, y, unit, "?", "#fff"))
            elif kinds[s, t]:
                op = events[g.cells[s, t]].op
                colour, hatch = STYLE[op.kind, op.direction]
                out.append(_rect(x, y, unit, _ROW, colour, hatch, f"ppedu-op ppedu-{op.kind}", stroke="#fff",
                                 tip=labels[s, t]))
                text = labels[s, t] if starts[s, t] else "·"
                if unit >= 6 * len(text) + 2:
                    out.append(_centred(x, y, unit, text, "#fff" if op.kind == "F" else "#000"))
            else:
                out.append(_rect(x, y, unit, _ROW, "#FFFFFF", "", "ppedu-idle", stroke="#BBB"))
            if marked and (s, t) in marked:
                out.append(f'<path class="ppedu-marked" d="M{x + 4},{y + 4} L{x + unit - 4},{y + _ROW - 4} '
                           f'M{x + 4},{y + _ROW - 4} L{x + unit - 4},{y + 4}" stroke="#D55E00" stroke-width="2"/>')
    out.append(_axis(steps, unit, _TOP + p * _ROW, first_step_label=True))
    out.append("</svg>")
    return "".join(out)


def _legend(timeline: Timeline, y: float, causes: bool = False) -> str:
    kinds = sorted({(e.op.kind, e.op.direction) for e in timeline.events}, key=lambda k: (k[1], "FBW".index(k[0])))
    entries = [(STYLE[k][0], STYLE[k][1], _NAMES[k[0]] + ("'" if k[1] else "")) for k in kinds]
    if causes:
        totals = timeline.idle_causes().totals()
        entries += [(*CAUSE_STYLE[cause], cause) for cause, time in totals.items() if time > 0]
    else:
        entries.append((IDLE_STYLE[0], IDLE_STYLE[1], "idle"))
    out, x = [], float(_LEFT)
    for fill, hatch, name in entries:
        out.append(_rect(x, y, 12, 12, fill, hatch, "ppedu-key", stroke="#666"))
        out.append(f'<text x="{x + 16}" y="{y + 10}" font-size="10">{escape(name)}</text>')
        x += 24 + 6 * len(name)
    return "".join(out)


def _header(w: float, h: float, title: str | None = None) -> str:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
            f'viewBox="0 0 {w:.0f} {h:.0f}" style="max-width: 100%; height: auto" '
            f'font-family="sans-serif" role="img">{_DEFS}')  # shrinks to a narrow output area, never clipped
    if title:
        head += f'<text x="{_LEFT}" y="14" font-size="12">{escape(title)}</text>'
    return head


def _rect(x: float, y: float, w: float, h: float, fill: str, hatch: str, cls: str, stroke: str = "#000",
          tip: str | None = None) -> str:
    body = f"><title>{escape(tip)}</title></rect>" if tip else "/>"
    return (f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" '
            f'fill="{_fill(fill, hatch)}" stroke="{stroke}" stroke-width=".6"{body}')


def _centred(x: float, y: float, w: float, text: str, fill: str) -> str:
    return (f'<text x="{x + w / 2:.1f}" y="{y + _ROW / 2 + 4}" text-anchor="middle" font-size="10" fill="{fill}" '
            f'pointer-events="none">{escape(text)}</text>')


def _axis(end: float, unit: float, y: float, first_step_label: bool = False) -> str:
    """Tick labels along the time axis, thinned so they never overlap."""
    every = next(k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9) if k * unit >= 24)
    ticks = []
    for t in range(0, int(end) + 1, every):
        if first_step_label:  # the grid labels its columns t1, t2, … at their centres
            if t >= end:
                break
            x, text = _LEFT + (t + 0.5) * unit, f"t{t + 1}"
        else:
            x, text = _LEFT + t * unit, str(t)
        ticks.append(f'<text x="{x:.1f}" y="{y + 15}" text-anchor="middle" font-size="10" fill="#444">{text}</text>')
    return "".join(ticks)
