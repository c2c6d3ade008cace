"""SVG renderings of the spacetime diagram: light enough to redraw on every slider move.

The same picture as :func:`ppedu.plot.plot_timeline` (GPU 0 at the bottom, the colours and
hatching of :mod:`ppedu.palette`), as a string an HTML widget or a notebook shows. Labels, idle
time and outlines take JupyterLab's theme colours, so the diagram reads in light and dark themes.
Each drawing names its own hatch patterns, so two drawings on a page (one on a hidden slide)
never borrow each other's. Every block is labelled at full size: along it where its label fits,
up it where only that fits (as :func:`ppedu.plot.plot_timeline` does); a diagram too long for its
width at that size is folded into bands of time, one under the other, rather than shrinking its
text or growing wider than its place (to be scrolled out of sight on a slide).

>>> from ppedu import schedules, simulate
>>> svg = render_svg(simulate(schedules.gpipe(2, 2)))
>>> svg.startswith("<svg"), svg.count('<path class="ppedu-op'), svg.count("h-")  # one path per look, 8 outlines
(True, 2, 8)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING
from html import escape

from ppedu.grid import Grid, grid, resolution
from ppedu.idle import CAUSE_STYLE
from ppedu.palette import (BACKGROUND, BORDER, IDLE, NAMES, STYLE, TEXT, drawn_kinds, ink, laps, op_colour, shade,
                           time_axis)
from ppedu.simulate import Timeline

if TYPE_CHECKING:  # a picture draws itself with this module, so it is told apart from a Grid here
    from ppedu.picture import Picture

#: The width (px) to draw a diagram a slide shows on its own: whole on a 1280×720 screen and nine tenths of a 1080p
#: slide's width (drawings are ppedu.lecture.DRAWN_ZOOM times as large there, two thirds of that under 900 px high);
#: a notebook column narrower than that shows it shrunk to fit.
SLIDE_WIDTH = 880.0
_ROW, _GAP, _LEFT, _BOTTOM, _TOP = 28, 4, 52, 40, 6
_BAND = 26  # below a band that another follows: its ticks and a gap
_LEGEND_ROW = 20
#: The size of every text in px: 13 in a notebook, 24 on a slide at 1080p (widgets and HTML there are
#: ppedu.lecture.DRAWN_ZOOM times as large); and the width of one of its characters at most.
_FONT, _CHAR = 13, 8.3
#: How far, in ems, each glyph of a block's label moves the next one on (digits are as wide as one another in any
#: font; a label's glyphs are placed one by one, so a font that differs only spaces them a little differently).
_ADVANCE = {"c": 0.5, "'": 0.25}
_MAX_WIDTH = 8000.0  # a wider diagram leaves its labels out rather than grow further
_UP_WIDTH = 0.9 * _FONT  # the narrowest block a label runs up (a digit, turned, is 0.73 em across)
_HATCH = {"//": '<path d="M0,6 L6,0" stroke="#000" stroke-opacity=".35" stroke-width="1"/>',
          "..": '<circle cx="3" cy="3" r="1" fill="#000" fill-opacity=".35"/>',
          "xx": f'<path d="M0,0 L6,6 M0,6 L6,0" style="stroke:{BORDER}" stroke-opacity=".5" stroke-width=".6"/>',
          # the idle causes' hatches (ppedu.idle.CAUSE_STYLE)
          "\\\\": '<path d="M0,0 L6,6" stroke="#666" stroke-width=".8"/>',
          "--": '<path d="M0,3 L6,3" stroke="#666" stroke-width=".8"/>',
          "||": '<path d="M3,0 L3,6" stroke="#666" stroke-width=".8"/>',
          "++": '<path d="M3,0 L3,6 M0,3 L6,3" stroke="#666" stroke-width=".6"/>',
          "oo": '<circle cx="3" cy="3" r="1.8" fill="none" stroke="#666" stroke-width=".6"/>'}
_drawings = itertools.count()


class _Patterns:
    """The hatch patterns one drawing uses, under ids no other drawing shares."""

    def __init__(self) -> None:
        self.prefix = f"ppedu-d{next(_drawings)}-"
        self.used: dict[tuple[str, str], str] = {}

    def fill(self, colour: str, hatch: str) -> str:
        """A ``fill`` attribute (or, for theme colours, a ``style``) painting ``colour`` with ``hatch``."""
        if hatch:
            pid = self.used.setdefault((colour, hatch), f"{self.prefix}{len(self.used)}")
            return f'fill="url(#{pid})"'
        return f'style="fill:{colour}"' if colour.startswith("var(") else f'fill="{colour}"'

    def defs(self) -> str:
        body = "".join(
            f'<pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" {self.fill(colour, "")}/>{_HATCH[hatch]}</pattern>'
            for (colour, hatch), pid in self.used.items())
        return f"<defs>{body}</defs>" if body else ""


def describe(timeline: Timeline) -> str:
    """One sentence saying what a spacetime diagram of ``timeline`` shows (its text alternative).

    >>> from ppedu import schedules, simulate
    >>> describe(simulate(schedules.gpipe(4, 4)))
    'Spacetime diagram of gpipe on 4 GPUs with 4 micro-batches: makespan 14, 24 of 56 slots idle (bubble ratio 42.9%).'
    """
    s = timeline.schedule
    v = f", {s.virtual} chunks per GPU" if s.virtual > 1 else ""
    return (f"Spacetime diagram of {s.name} on {timeline.stages} GPUs with {s.microbatches} micro-batches{v}: "
            f"makespan {timeline.makespan:.4g}, {timeline.idle_slots:.4g} of {timeline.total_slots:.4g} slots idle "
            f"(bubble ratio {timeline.bubble_ratio:.1%}).")


def render_svg(timeline: Timeline, upto: float | None = None, width: float = 560.0, title: str | None = None,
               causes: bool = False, time: tuple[str, float] | None = None) -> str:
    """The spacetime diagram of ``timeline`` as SVG; with ``upto``, only what has run by that time
    (the rest of the grid is left blank and a line marks "now"); with ``causes``, each idle
    interval hatched by why it is idle (:meth:`~ppedu.simulate.Timeline.idle_causes`).

    ``width`` is the drawing's width (a widget gives it its box's, :class:`ppedu.widgets._parts.Fitted`);
    a diagram whose blocks would be too narrow there for their micro-batch numbers folds its time axis
    into as many bands as the labels need (up to 8000 px of time), each band as wide as ``width``
    allows (a block a fold cuts is labelled in its larger piece). A block left without a label (too
    short even so) names itself on hover and carries the class ``ppedu-unlabelled``. The time axis says its unit: "time (steps)" when every op starts and ends
    on a whole step, else "time (cost units)"; or ``time``, a name and the factor from the timeline's
    units to it (``("time (ms)", 1e3)`` for a timeline in seconds).

    >>> from ppedu import schedules, simulate
    >>> render_svg(simulate(schedules.gpipe(2, 2)), causes=True).count('class="ppedu-idle ppedu-fill"')
    2
    >>> long = simulate(schedules.dualpipe(8, 20))
    >>> folded = render_svg(long, width=560)
    >>> float(folded.split('width="')[1].split('"')[0]) <= 560, folded.count(">GPU 7<"), "ppedu-unlabelled" in folded
    (True, 2, False)
    """
    p, end = timeline.p, timeline.makespan or 1.0
    room = width - _LEFT - 8
    unit = _unit(timeline, room / end)
    bands = [(0.0, end)]
    if unit * end > room:
        # Folds fall on the timeline's own steps (where blocks begin and end: fewer cut), as evenly as that allows; a
        # measured run's times have no steps of their own.
        even = end / math.ceil(unit * end / room - 1e-9)
        step = resolution({t for e in timeline.events for t in (e.start, e.end)})
        span = math.ceil(even / step - 1e-9) * step if step >= even / 100 else even
        span = span if span * unit <= room + 1e-9 else max(step, math.floor(even / step + 1e-9) * step)
        unit = room / span  # at least the unit the labels need: the bands are as many as that takes
        bands = [(k * span, min((k + 1) * span, end)) for k in range(math.ceil(end / span - 1e-9))]
    patterns = _Patterns()
    shown = end if upto is None else max(0.0, min(upto, end))
    name, scale = time or (time_axis(timeline), 1.0)
    largest = _largest_pieces(timeline, bands)
    body, y = [], float(_TOP + (20 if title else 0))
    for b, (t0, t1) in enumerate(bands):
        body.append(_band(timeline, patterns, unit, y, (b, t0, t1), shown, upto is not None, causes, largest, scale))
        y += p * _ROW + _BAND
    body.append(_text(_LEFT + (bands[0][1] - bands[0][0]) * unit / 2, y - _BAND + 33, name, "middle"))
    legend, legend_w, more = _legend(patterns, timeline, y - _BAND + _BOTTOM, causes, width)
    body.append(legend)
    if title:
        body.append(_text(_LEFT, 15, title))
    w = max(_LEFT + (bands[0][1] - bands[0][0]) * unit + 8, legend_w, min(420, width))
    summary = describe(timeline) + (f" Shown up to time {shown:g}." if upto is not None else "")
    return _svg(w, y - _BAND + _BOTTOM + 22 + more, summary, patterns, body)


def _unit(timeline: Timeline, fitting: float) -> float:
    """Pixels per time unit: ``fitting`` (at most 36) where every block can show its label there, else the least at
    which each can (along it if that fits at ``fitting``'s scale or larger, else up it). A block that could show its
    label only with more than 8000 px of time in all is left without one, and sets no unit."""
    end = timeline.makespan or 1.0
    most = (_MAX_WIDTH - _LEFT - 8) / end
    along, either = 0.0, 0.0  # the least unit at which every block's label fits along it; along or up it
    chunked = timeline.schedule.chunks > timeline.schedule.p
    for e in timeline.events:
        if e.duration > 0:
            needs = _labels(e.op.label(chunk=chunked))[-1]
            least = min(needs[0], _UP_WIDTH if needs[3] <= _ROW - _GAP else math.inf) / e.duration
            if least <= most:
                along, either = max(along, needs[0] / e.duration), max(either, least)
    best = min(36.0, fitting)
    return max(2.0, best if best >= along else max(best, either))


def _largest_pieces(timeline: Timeline, bands: list[tuple[float, float]]) -> dict[int, int]:
    """For each event a fold cuts, the band holding its largest piece (where its label goes)."""
    if len(bands) == 1:
        return {}
    out = {}
    for i, e in enumerate(timeline.events):
        pieces = [(min(e.end, t1) - max(e.start, t0), b) for b, (t0, t1) in enumerate(bands)]
        cut = [piece for piece in pieces if piece[0] > 1e-12]
        if len(cut) > 1:
            out[i] = max(cut)[1]
    return out


def _band(timeline: Timeline, patterns: _Patterns, unit: float, y0: float, band: tuple[int, float, float],
          shown: float, now: bool, causes: bool, largest: dict[int, int], scale: float) -> str:
    """Band ``band`` (its number, first and last time) of the diagram: those times of every GPU (all of them unless
    folded), its ticks below."""
    _, t0, t1 = band
    p, inner_h = timeline.p, timeline.p * _ROW
    body = []
    seen = max(0.0, min(shown, t1) - t0)
    for s in range(p):
        y = y0 + (p - 1 - s) * _ROW
        body.append(_rect(patterns, _LEFT, y + _GAP / 2, seen * unit, _ROW - _GAP, IDLE, "xx", "ppedu-idle", stroke="none"))
        body.append(_text(_LEFT - 6, y + _ROW / 2 + 4, f"GPU {s}", "end"))
    for idle in timeline.idle_causes() if causes else ():
        a, b = max(idle.start, t0), min(idle.end, shown, t1)
        if a < b:  # a pale tint, dimmed: no bright strip on a dark theme
            body.append(_rect(patterns, _LEFT + (a - t0) * unit, y0 + (p - 1 - idle.stage) * _ROW + _GAP / 2,
                              (b - a) * unit, _ROW - _GAP, *CAUSE_STYLE[idle.cause],
                              f"ppedu-idle ppedu-{idle.cause.replace(' ', '-')}", stroke="none", tip=idle.cause,
                              opacity=".6"))
    last = t1 >= (timeline.makespan or 1.0)  # its blocks run to the end, a block of no time at the end included
    body.append(_blocks(timeline, patterns, unit, y0, shown if now else None, (band[0], t0, math.inf if last else t1),
                        largest))
    if now and t0 <= shown <= t1:
        x = _LEFT + (shown - t0) * unit
        body.append(f'<line class="ppedu-now" x1="{x:.1f}" y1="{y0 - 2}" x2="{x:.1f}" y2="{y0 + inner_h + 2}" '
                    'stroke="#D55E00" stroke-width="2"/>')
    body.append(_axis(t1, unit, y0 + inner_h, scale=scale, start=t0))
    return "".join(body)


def render_grid_svg(g: Grid | Timeline | Picture, hidden: Sequence[Sequence[bool]] | None = None,
                    marked: set[tuple[int, int]] | None = None, width: float = 560.0) -> str:
    """The grid cell by cell, each cell outlined so it can be counted; ``hidden`` cells (``hidden[s][t]``, rows
    of a boolean array) show a ``?`` instead of their content, ``marked`` cells (stage, step) carry a cross. A
    :class:`~ppedu.picture.Picture` (a question's grid as data) is drawn as it is, its covered cells as ``?``."""
    g = grid(g) if isinstance(g, Timeline) else g
    p, steps = g.shape
    labels, kinds, starts = g.labels(), g.kinds(), g.starts()
    if not isinstance(g, Grid):
        hidden = [[bool(c or (hidden is not None and hidden[s][t])) for t, c in enumerate(row)]
                  for s, row in enumerate(g.covered())]
    shortest = max((_cell_width(_cell_labels(labels[s][t])[-1]) for s in range(p) for t in range(steps)
                    if kinds[s][t] and starts[s][t]), default=0.0)  # the cells widen until every label fits
    unit = max(14.0, min(60.0, (width - _LEFT - 8) / max(steps, 1)), shortest)  # as wide as the box lets it
    hidden = [[False] * steps for _ in range(p)] if hidden is None else hidden
    covered = sum(bool(x) for row in hidden for x in row)
    patterns = _Patterns()
    body = []
    for s in range(p):
        y = _TOP + (p - 1 - s) * _ROW
        body.append(_text(_LEFT - 6, y + _ROW / 2 + 4, f"GPU {s}", "end"))
        for t in range(steps):
            x = _LEFT + t * unit
            if hidden[s][t]:
                body.append(_rect(patterns, x, y, unit, _ROW, "#616161", "", "ppedu-hidden", stroke=BACKGROUND))
                body.append(_label(x, y, unit, "?", "#616161"))
            elif kinds[s][t]:
                colour, hatch = cell_look(g, s, t)
                text = next((label for label in _cell_labels(labels[s][t] if starts[s][t] else "·")
                             if unit >= _cell_width(label)), None)
                body.append(_rect(patterns, x, y, unit, _ROW, colour, hatch,
                                  f"ppedu-op ppedu-{kinds[s][t]}{'' if text else ' ppedu-unlabelled'}", stroke=BACKGROUND,
                                  tip=labels[s][t]))
                if text:
                    body.append(_label(x, y, unit, text, colour))
            else:
                body.append(_rect(patterns, x, y, unit, _ROW, BACKGROUND, "", "ppedu-idle", stroke=BORDER))
            if marked and (s, t) in marked:
                body.append(f'<path class="ppedu-marked" d="M{x + 4},{y + 4} L{x + unit - 4},{y + _ROW - 4} '
                            f'M{x + 4},{y + _ROW - 4} L{x + unit - 4},{y + 4}" stroke="#D55E00" stroke-width="2"/>')
    body.append(_axis(steps, unit, _TOP + p * _ROW, columns=True))
    name = (g.title or "a question") if not isinstance(g, Grid) else g.timeline.schedule.name
    summary = (f"Grid of {p} GPUs by {steps} time steps of {name}"
               + (f", {covered} cells hidden" if covered else "")
               + (f", {len(marked)} cells marked idle" if marked else "") + ".")
    return _svg(_LEFT + unit * steps + 8, p * _ROW + 22 + _TOP, summary, patterns, body)


def _cell_width(label: str) -> float:
    """The width a grid cell needs for ``label`` (its glyphs' own widths: a W is half as wide again as a digit)."""
    return sum(_GRID_ADVANCE.get(c, 0.64) for c in label) * _FONT + 4


#: A grid label's glyphs' widths in ems (DejaVu Sans), where they differ much from a digit's.
_GRID_ADVANCE = {"W": 1.0, "B": 0.69, "F": 0.58, "'": 0.28, "·": 0.32, "?": 0.53, "✗": 0.84}


def cell_look(g: Grid | Picture, s: int, t: int) -> tuple[str, str]:
    """The colour and hatch of the busy cell (``s``, ``t``): its op's, from the schedule for a simulated grid, from
    its label's kind and direction for a picture (a picture knows no chunk, so every chunk takes its kind's colour)."""
    if not isinstance(g, Grid):
        label = g.labels()[s][t]
        return STYLE[label[0], int(label.endswith("'"))]
    op = g.timeline.events[g.rows[s][t]].op
    return op_colour(op, g.timeline.schedule), STYLE[op.kind, op.direction][1]


def _cell_labels(text: str) -> tuple[str, ...]:
    """A grid cell's label, longest first: the op's whole name, without its chunk, without its ', its micro-batch.

    >>> _cell_labels("B12c3'")
    ("B12c3'", "B12'", 'B12', '12')
    """
    kind_batch = text.split("c")[0].rstrip("'")
    return tuple(dict.fromkeys((text, kind_batch + ("'" if text.endswith("'") else ""), kind_batch,
                                kind_batch.lstrip("FBW") or kind_batch)))


def _svg(w: float, h: float, summary: str, patterns: _Patterns, body: list[str]) -> str:
    # Drawn at its own size (text stays readable); the widget around it scrolls a wide one.
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}" '
            f'font-family="sans-serif" role="img" aria-label="{escape(summary)}" style="color:{TEXT}">'
            f'<title>{escape(summary)}</title>{patterns.defs()}{"".join(body)}</svg>')


def _legend(patterns: _Patterns, timeline: Timeline, y: float, causes: bool = False,
            width: float = math.inf) -> tuple[str, float, float]:
    """The legend's entries in rows no wider than ``width``; its width and the height of the rows after the first."""
    entries = [(STYLE[k][0], STYLE[k][1], NAMES[k[0]] + ("'" if k[1] else "")) for k in drawn_kinds(timeline)]
    if laps(timeline.schedule)[1] > 1:
        entries.append((shade(STYLE["F", 0][0], 1, 2), "", "later chunk: darker"))
    if causes:
        totals = timeline.idle_causes().totals()
        entries += [(*CAUSE_STYLE[cause], cause) for cause, time in totals.items() if time > 0]
    else:
        entries.append((IDLE, "xx", "idle"))
    out, x, widest, first = [], float(_LEFT), 0.0, y
    for fill, hatch, name in entries:
        if x > _LEFT and x + 16 + _CHAR * len(name) > width:
            x, y = float(_LEFT), y + _LEGEND_ROW
        out.append(_rect(patterns, x, y, 12, 12, fill, hatch, "ppedu-key", stroke="currentColor"))
        out.append(_text(x + 16, y + 11, name))
        widest = max(widest, x + 16 + _CHAR * len(name))
        x += 30 + _CHAR * len(name)
    return "".join(out), widest, y - first


def _blocks(timeline: Timeline, patterns: _Patterns, unit: float, y0: float, upto: float | None,
            band: tuple[int, float, float] = (0, 0.0, math.inf), largest: dict[int, int] | None = None) -> str:
    """Each operation's block in ``band`` (its number, first and last time; run by ``upto``, if given) with its label,
    along the block or up it; a block a fold cuts has its label in its ``largest`` piece. The big diagrams have
    thousands, redrawn on every slider move, and a browser lays out each element on its own: so the labelled blocks of
    one look are one path, and the labels of one look on one GPU one text, each glyph placed (and centred) at its own
    x (the labels up their blocks of one look: one text, turned a quarter, each glyph at its own x and y)."""
    number, t0, t1 = band
    p, chunked = timeline.p, timeline.schedule.chunks > timeline.schedule.p
    looks: dict[tuple[str, int, int], tuple[str, str]] = {}  # per kind, direction and chunk: the block's and label's
    shapes: dict[str, list[str]] = {}  # per block look: the outlines of its blocks
    glyphs: dict[tuple[float, str], tuple[list[str], list[str]]] = {}  # per row and label look: x positions, glyphs
    upright: dict[str, tuple[list[str], list[str], list[str]]] = {}  # per label look: the turned labels' x, y, glyphs
    alone = []  # unlabelled blocks, each naming itself on hover
    height = _ROW - _GAP
    rows = [y0 + (p - 1 - s) * _ROW + _GAP / 2 for s in range(p)]
    row_text = [f"{y:g}" for y in rows]
    for i, e in enumerate(timeline.events):
        if e.start >= t1 or e.end < t0 or (e.end == t0 and e.duration > 0) or (upto is not None and e.start >= upto):
            continue
        start, end = max(e.start, t0), min(e.end, t1, math.inf if upto is None else upto)
        op = e.op
        look = looks.get((op.kind, op.direction, op.chunk))
        if look is None:
            colour = op_colour(op, timeline.schedule)
            look = looks[op.kind, op.direction, op.chunk] = (
                f'class="ppedu-op ppedu-{op.kind}" {patterns.fill(colour, STYLE[op.kind, op.direction][1])}',
                f'fill="{ink(colour)}" stroke="{colour}"')
        x, w = _LEFT + (start - t0) * unit, (end - start) * unit
        text = op.label(chunk=chunked)
        elsewhere = (largest or {}).get(i, number) != number  # labelled in another band's piece
        # The micro-batch and chunk if they fit, else the micro-batch (and its ' ), else the micro-batch alone; along
        # the block, else up it.
        fits = w + 1e-6  # the unit was chosen so the least label fits exactly: no rounding may undo that
        along = next((label for label in _labels(text) if fits >= label[0]), None)
        up = None if along else next((label for label in _labels(text) if fits >= _UP_WIDTH and label[3] <= height), None)
        if elsewhere or not (along or up):
            cut_short = upto is not None and e.end > upto  # still running: labelled once it is long enough
            flag = "" if elsewhere or cut_short or e.duration == 0 else " ppedu-unlabelled"
            alone.append(f'<rect {look[0].replace("ppedu-op", "ppedu-op" + flag, 1)} x="{x:.1f}" '
                         f'y="{row_text[e.stage]}" width="{w:.1f}" height="{height}"><title>{text}</title></rect>')
            continue
        shapes.setdefault(look[0], []).append(f"M{x:.1f},{row_text[e.stage]}h{w:.1f}v{height}h{-w:.1f}z")
        middle, centre = x + w / 2, rows[e.stage] + height / 2
        if along:
            xs, chars = glyphs.setdefault((rows[e.stage] + _ROW / 2 + 2, look[1]), ([], []))
            xs += [f"{middle + dx:.1f}" for dx in along[1]]
            chars.append(along[2])
        elif up:  # turned a quarter: x runs up the page, y across it
            xs, ys, chars = upright.setdefault(look[1], ([], [], []))
            xs += [f"{-centre + dx:.1f}" for dx in up[1]]
            ys += [f"{middle + 4:.1f}"] * len(up[2])
            chars.append(up[2])
    # What every block and label shares is said once: the outline, and the label's size, centring and halo (a stroke
    # in its block's colour, painted under the letters: it keeps hatch lines out from under them).
    return (f'<g class="ppedu-blocks" stroke="#000" stroke-width=".6" font-size="{_FONT}" text-anchor="middle">'
            f'<style>.ppedu-blocks .ppedu-label{{stroke-width:3px;paint-order:stroke;pointer-events:none}}</style>'
            + "".join(alone) + "".join(f'<path {look} d="{"".join(d)}"/>' for look, d in shapes.items())
            + "".join(f'<text class="ppedu-label" x="{" ".join(xs)}" y="{y:g}" {look}>{escape("".join(chars))}</text>'
                      for (y, look), (xs, chars) in glyphs.items())
            + "".join(f'<text class="ppedu-label" x="{" ".join(xs)}" y="{" ".join(ys)}" transform="rotate(-90)" '
                      f'{look}>{escape("".join(chars))}</text>' for look, (xs, ys, chars) in upright.items())
            + "</g>")


@lru_cache(maxsize=4096)
def _labels(text: str) -> tuple[tuple[float, tuple[float, ...], str, float], ...]:
    """A block's label, longest first (micro-batch and chunk, then the micro-batch with a second direction's ', then
    the micro-batch alone: its colour says the direction): each with the width a block needs to show it along, its
    glyphs' offsets from the block's middle, and the height a block needs to show it up.

    >>> [label[2] for label in _labels("B11c7'")], [label[2] for label in _labels("F3")]
    (["11c7'", "11'", '11'], ['3'])
    """
    short = text.lstrip("FBW")
    micro_batch = short.split("c")[0].rstrip("'")
    out = []
    for label in dict.fromkeys((short, micro_batch + ("'" if text.endswith("'") else ""), micro_batch)):
        advances = [_ADVANCE.get(c, 0.6) * _FONT for c in label]
        edges = [x - sum(advances) / 2 for x in itertools.accumulate(advances, initial=0.0)]
        out.append((_CHAR * len(label) + 3, tuple((a + b) / 2 for a, b in zip(edges, edges[1:])), label,
                    sum(advances) + 4))
    return tuple(out)


def _rect(patterns: _Patterns, x: float, y: float, w: float, h: float, fill: str, hatch: str, cls: str,
          stroke: str = "#000", tip: str | None = None, opacity: str | None = None) -> str:
    body = f"><title>{escape(tip)}</title></rect>" if tip else "/>"
    paint = patterns.fill(fill, hatch)
    if not stroke.startswith("var("):
        paint += f' stroke="{stroke}"'
    elif paint.startswith('style="'):  # a themed fill and a themed outline share the one style attribute
        paint = f'{paint[:-1]};stroke:{stroke}"'
    else:
        paint += f' style="stroke:{stroke}"'
    paint += f' opacity="{opacity}"' if opacity else ""
    return (f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" '
            f'{paint} stroke-width=".6"{body}')


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = _FONT) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="currentColor">'
            f'{escape(text)}</text>')


def _label(x: float, y: float, w: float, text: str, background: str) -> str:
    # A halo of the block's own colour keeps hatch lines out from under the letters.
    return (f'<text class="ppedu-label" x="{x + w / 2:.1f}" y="{y + _ROW / 2 + 4}" text-anchor="middle" '
            f'font-size="{_FONT}" fill="{ink(background)}" stroke="{background}" stroke-width="3" '
            f'paint-order="stroke" pointer-events="none">{escape(text)}</text>')


def _axis(end: float, unit: float, y: float, name: str = "", scale: float = 1.0, columns: bool = False,
          start: float = 0.0) -> str:
    """Tick labels along the time axis from ``start`` to ``end``, as far apart as their text needs, and the axis's name
    with its unit. ``columns``: a grid's columns, labelled t1, t2, … at their centres; else the times, in the
    timeline's units times ``scale``, at steps of 1, 2 or 5 × 10ⁿ."""
    ticks = []
    if columns:
        every = next(k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9)
                     if k * unit >= _CHAR * len(f"t{int(end)}") + 8)
        ticks = [(_LEFT + (t + 0.5) * unit, f"t{t + 1}") for t in range(0, int(end), every)]
    else:
        shown = end * scale
        steps = (m * 10.0**k for k in range(-9, 12) for m in (1, 2, 5))
        step = next(d for d in steps if d / scale * unit >= _CHAR * len(_number(shown, d)) + 8)
        first = math.ceil(start * scale / step - 1e-9)
        ticks = [(_LEFT + (i * step / scale - start) * unit, _number(i * step, step))
                 for i in range(first, int(shown / step + 1e-9) + 1)]
    out = [_text(x, y + 16, text, "middle") for x, text in ticks]
    if name:
        out.append(_text(_LEFT + (end - start) * unit / 2, y + 33, name, "middle"))
    return "".join(out)


def _number(x: float, step: float) -> str:
    """``x`` with as many decimals as ``step`` needs."""
    decimals = max(0, -int(f"{step:e}".split("e")[1]))
    return f"{x:.{decimals}f}"
