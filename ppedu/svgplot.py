""":mod:`ppedu.plot`'s two figures drawn as SVG, for where matplotlib does not run (the browser edition, on
Pyodide): the same calls, ``plot_timeline(t)`` and ``plot_memory(t)``, each returning a figure a notebook shows.

The spacetime diagram is :func:`ppedu.svg.render_svg`'s; the memory figure draws one step line per GPU, told
apart by dash pattern as well as colour (Okabe and Ito's), each named at its peak.

>>> from ppedu import schedules, simulate
>>> t = simulate(schedules.one_f_one_b(4, 8))
>>> plot_timeline(t)._repr_html_().count("<svg"), plot_memory(t).svg.count('class="ppedu-memory-line"')
(1, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ppedu.arrays import as_list
from ppedu.palette import BORDER, TEXT, time_axis
from ppedu.simulate import Timeline
from ppedu.svg import render_svg

__all__ = ["SvgFigure", "plot_memory", "plot_timeline"]
#: Okabe and Ito's colours for lines (no yellow: it fades on white), and the dash patterns of matplotlib's lines.
_LINES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
_DASHES = ("", "6 3", "2 2", "6 2 2 2")
_W, _H, _LEFT, _BOTTOM, _TOP, _RIGHT = 560.0, 200.0, 48.0, 34.0, 10.0, 70.0


@dataclass(frozen=True)
class SvgFigure:
    """An SVG drawing that a notebook shows (as wide as it was drawn: a long diagram folds into bands)."""

    svg: str

    def _repr_html_(self) -> str:
        return self.svg


def plot_timeline(timeline: Timeline, title: str | None = None) -> SvgFigure:
    """The spacetime diagram of ``timeline`` (GPU 0 at the bottom), as :func:`ppedu.plot.plot_timeline` draws it."""
    s = timeline.schedule
    v = f", v={s.virtual}" if s.virtual > 1 else ""
    heading = title or (f"{s.name}: p={timeline.p}, m={s.microbatches}{v} — bubble {timeline.bubble_ratio:.1%} "
                        f"of {timeline.p}×{timeline.makespan:g} slots")
    return SvgFigure(render_svg(timeline, title=heading))


def plot_memory(timeline: Timeline) -> SvgFigure:
    """Chunk-activations alive per GPU over time, one step line per GPU, as :func:`ppedu.plot.plot_memory` draws it."""
    end = timeline.makespan or 1.0
    profiles = [(as_list(times), as_list(alive)) for times, alive in (timeline.activations(s) for s in range(timeline.p))]
    top = max((max(alive, default=0) for _, alive in profiles), default=0) or 1
    width, height = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(t: float) -> float:
        return _LEFT + t / end * width

    def y(a: float) -> float:
        return _TOP + height - a / top * height

    body = [f'<rect x="{_LEFT}" y="{_TOP}" width="{width}" height="{height}" fill="none" style="stroke:{BORDER}"/>']
    for tick in _ticks(top):
        body.append(f'<text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="10" '
                    f'fill="currentColor">{tick:g}</text>')
    for tick in _ticks(end):
        body.append(f'<text x="{x(tick):.1f}" y="{_TOP + height + 14}" text-anchor="middle" font-size="10" '
                    f'fill="currentColor">{tick:g}</text>')
    body.append(f'<text x="{_LEFT + width / 2}" y="{_H - 4}" text-anchor="middle" font-size="11" fill="currentColor">'
                f'{time_axis(timeline)}</text>')
    body.append(f'<text transform="translate(12,{_TOP + height / 2}) rotate(-90)" text-anchor="middle" font-size="11" '
                'fill="currentColor">activations alive</text>')
    for s, (times, alive) in enumerate(profiles):
        colour, dash = _LINES[s % len(_LINES)], _DASHES[s % len(_DASHES)]
        points, level = [f"{x(0):.1f},{y(0):.1f}"], 0.0
        for t, a in zip(times, alive):
            points += [f"{x(t):.1f},{y(level):.1f}", f"{x(t):.1f},{y(a):.1f}"]
            level = a
        points.append(f"{x(end):.1f},{y(level):.1f}")
        body.append(f'<polyline class="ppedu-memory-line" points="{" ".join(points)}" fill="none" stroke="{colour}" '
                    f'stroke-width="1.5"' + (f' stroke-dasharray="{dash}"' if dash else "") + f'><title>GPU {s}</title>'
                    '</polyline>')
        if alive:
            peak = alive.index(max(alive))
            body.append(f'<text x="{x(times[peak]) + 2:.1f}" y="{y(alive[peak]) - 3:.1f}" font-size="9" '
                        f'fill="{colour}">GPU {s}</text>')
        key_y = _TOP + 12 + 14 * s
        body.append(f'<line x1="{_W - _RIGHT + 8}" y1="{key_y - 4}" x2="{_W - _RIGHT + 28}" y2="{key_y - 4}" '
                    f'stroke="{colour}" stroke-width="1.5"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>"
                    f'<text x="{_W - _RIGHT + 32}" y="{key_y}" font-size="10" fill="currentColor">GPU {s}</text>')
    summary = (f"Activations alive per GPU over time for {timeline.schedule.name} on {timeline.p} GPUs: peaks "
               + ", ".join(map(str, timeline.peak_activations)) + ".")
    height_all = max(_H, _TOP + 14 * timeline.p + 12)
    return SvgFigure(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W:.0f}" height="{height_all:.0f}" '
                     f'viewBox="0 0 {_W:.0f} {height_all:.0f}" font-family="sans-serif" role="img" '
                     f'aria-label="{escape(summary)}" style="color:{TEXT}"><title>{escape(summary)}</title>'
                     + "".join(body) + "</svg>")


def _ticks(top: float) -> list[float]:
    """Round tick values from 0 to ``top``, at most about six."""
    step = next(k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10**9) if top / k <= 6)
    return [float(t) for t in range(0, int(top) + 1, step)]
