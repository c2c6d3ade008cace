"""How the course shows a number: rounded to six significant digits, so float noise
(0.1 + 0.2 = 0.30000000000000004) never reaches a student's screen.

>>> rounded(0.1 + 0.2), rounded(2 / 3), rounded(33554432.0), rounded(2.5e-08 / 3)
(0.3, 0.666667, 33554432.0, 8.33333e-09)
>>> rounded({"ratio": 6 / 14, "stages": (1, 2 / 3)})
{'ratio': 0.428571, 'stages': (1, 0.666667)}
"""

from __future__ import annotations

import math
import re
from typing import Any

#: As many as Python's ``:g`` shows, which the course's tables and diagrams use.
SIGNIFICANT = 6
#: What a rounded number never shows: seven or more significant digits after the point, as in float noise
#: (0.30000000000000004) or an unrounded quotient (0.6666666666666666); 0.000107022 and 33554432.0 are fine.
UNROUNDED = re.compile(r"\d\.0*[1-9]\d{6,}")


def rounded(x: Any) -> Any:
    """``x`` with every float in it (inside tuples, lists and dict values too) rounded to
    :data:`SIGNIFICANT` significant digits; whole digits are never dropped; anything else as it is."""
    if isinstance(x, float):
        if x == 0 or not math.isfinite(x):
            return x
        return round(x, max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(x)))))
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if type(x) in (tuple, list):  # a named tuple or a PerChunk keeps its type and repr
        return type(x)(rounded(v) for v in x)
    return x


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext ppedu.rounding``: the kernel then prints every float as :func:`rounded` does, also
    inside tuples, lists and dicts, so a cell that ends in ``t.bubble_ratio`` shows 0.428571. The chapters
    opt in on their first line; importing ppedu alone changes nothing, and the values stay exact."""
    shell.display_formatter.formatters["text/plain"].for_type(float, lambda x, p, _cycle: p.text(repr(rounded(x))))
