"""The course's colours, for every renderer (SVG, matplotlib, widgets): no plotting library here.

Operations keep Okabe and Ito's colour-blind-safe palette in every theme (a diagram means the
same thing on a dark screen); F, B and W also differ by hatching. Text on a block is black or
white, whichever contrasts more, and at least WCAG AA's 4.5:1. Everything else (labels, idle
time, outlines) follows JupyterLab's theme through its CSS variables, with a light fallback
where no JupyterLab theme is loaded (an exported page, a static slide deck).

>>> ink("#0072B2"), ink("#56B4E9")
('#FFFFFF', '#000000')
>>> round(contrast("#FFFFFF", "#0072B2"), 2)
5.19
"""

from __future__ import annotations

from functools import lru_cache

#: (face colour, hatch) per (kind, direction).
STYLE = {
    ("F", 0): ("#0072B2", ""),
    ("B", 0): ("#E69F00", "//"),
    ("W", 0): ("#009E73", ".."),
    ("F", 1): ("#56B4E9", ""),
    ("B", 1): ("#D55E00", "//"),
    ("W", 1): ("#CC79A7", ".."),
}
#: Idle time: a pale grey, hatched (on paper and in matplotlib; the SVG takes the theme's own grey).
IDLE_STYLE = ("#F2F2F2", "xx")
NAMES = {"F": "forward", "B": "backward", "W": "weight gradient"}
#: Marks a cell the student flagged, a broken rule, "now" on the player: a graphic, not text.
ALERT = "#D55E00"
OK = "#1B7F3B"

# JupyterLab's theme, as CSS values with light fallbacks.
TEXT = "var(--jp-ui-font-color1, #1F1F1F)"
BACKGROUND = "var(--jp-layout-color0, #FFFFFF)"
IDLE = "var(--jp-layout-color2, #EEEEEE)"
BORDER = "var(--jp-border-color1, #9E9E9E)"


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4


def _luminance(colour: str) -> float:
    r, g, b = (_linear(int(colour.lstrip("#")[i:i + 2], 16) / 255) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two ``#RRGGBB`` colours (1 … 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@lru_cache(maxsize=256)  # a few colours, asked for once per block drawn
def ink(background: str) -> str:
    """Black or white text, whichever reads better on ``background``."""
    return max(("#000000", "#FFFFFF"), key=lambda text: contrast(text, background))


#: The relative luminance of a GPU's last chunk (near black leaves hatching unseen); the others lie between.
_DARKEST = 0.045


@lru_cache(maxsize=256)
def shade(colour: str, lap: int, laps: int) -> str:
    """``colour`` for a GPU's ``lap``-th chunk of ``laps`` (0 first): the first as is, each later one darker by the
    same contrast ratio, the last at luminance 0.045, so every chunk of a GPU has a shade of its own (at v = 4 the
    neighbours differ by at least 1.25:1) and an interleaved or V-shaped schedule's passes can be told apart.

    >>> shade("#0072B2", 0, 2), shade("#0072B2", 1, 2)
    ('#0072B2', '#003F65')
    >>> min(contrast(shade(c, k, 4), shade(c, k + 1, 4)) for c in ("#0072B2", "#E69F00") for k in range(3)) > 1.25
    True
    """
    if laps <= 1 or lap <= 0:
        return colour
    channels = [_linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5)]
    base = _luminance(colour)
    step = ((base + 0.05) / (_DARKEST + 0.05)) ** (1 / (laps - 1))
    keep = max(((base + 0.05) / step ** lap - 0.05) / base, 0.0)  # luminance is linear in the linear channels
    return "#" + "".join(f"{round(255 * _gamma(c * keep)):02X}" for c in channels)


def _gamma(c: float) -> float:
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def time_axis(timeline) -> str:
    """The name of a diagram's time axis: "time (steps)" when every op starts and ends on a whole step, else
    "time (cost units)"."""
    return "time (steps)" if timeline.whole_steps else "time (cost units)"


def op_colour(op, schedule) -> str:
    """The block colour of ``op`` in ``schedule``: its kind's colour, darker on a GPU's later chunks."""
    lap, count = laps(schedule)
    return shade(STYLE[op.kind, op.direction][0], lap[op.chunk], count)


def laps(schedule) -> tuple[dict[int, int], int]:
    """Per chunk, which of its GPU's chunks it is (0 for the GPU's first), and how many a GPU holds.

    >>> from ppedu.schedules import interleaved_1f1b
    >>> laps(interleaved_1f1b(2, 2, v=2))
    ({0: 0, 1: 0, 2: 1, 3: 1}, 2)
    """
    return _laps(schedule.placement[0])


@lru_cache(maxsize=64)  # asked once per block drawn: thousands of times per diagram
def _laps(homes: tuple[int, ...]) -> tuple[dict[int, int], int]:
    lap = {c: homes[:c].count(homes[c]) for c in range(len(homes))}
    return lap, max(lap.values(), default=0) + 1


def drawn_kinds(timeline) -> list[tuple[str, int]]:
    """The (kind, direction) pairs a diagram of ``timeline`` shows, in legend order: only those
    with some duration (a W of cost 0 draws nothing, so the legend must not name it)."""
    kinds = {(e.op.kind, e.op.direction) for e in timeline.events if e.duration > 0}
    return sorted(kinds, key=lambda k: (k[1], "FBW".index(k[0])))
