"""How the course shows a result: a number rounded to six significant digits, so float noise
(0.1 + 0.2 = 0.30000000000000004) never reaches a student's screen; and a cell that ends in several
values, each beside the expression it came from, so no output is a bare tuple of numbers.

>>> rounded(0.1 + 0.2), rounded(2 / 3), rounded(33554432.0), rounded(2.5e-08 / 3)
(0.3, 0.666667, 33554432.0, 8.33333e-09)
>>> rounded({"ratio": 6 / 14, "stages": (1, 2 / 3)})
{'ratio': 0.428571, 'stages': (1, 0.666667)}
"""

from __future__ import annotations

import ast
import copy
import math
import re
import textwrap
from typing import Any

#: As many as Python's ``:g`` shows, which the course's tables and diagrams use.
SIGNIFICANT = 6
#: What a rounded number never shows: seven or more significant digits after the point, as in float noise
#: (0.30000000000000004) or an unrounded quotient (0.6666666666666666); 0.000107022 and 33554432.0 are fine.
UNROUNDED = re.compile(r"\d\.0*[1-9]\d{6,}")
#: The longest expression :class:`Named` writes beside its value, and the longest line it writes.
NAME_WIDTH, LINE = 40, 100
_INDENT = 4


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


class Named(tuple):
    """A tuple that shows each value beside the expression it came from (a cell's last line ``a, b``); in every
    other way the tuple of the values. Where an expression is longer than :data:`NAME_WIDTH`, each stands on lines of
    its own (at most :data:`LINE` characters each) with its value indented below it, so no line outgrows a notebook
    column or a slide, and no value sits beside one name and under the next.

    >>> from IPython.lib.pretty import pretty
    >>> print(pretty(Named(("t.makespan", "2 * 7"), (14.0, 14))))
    t.makespan  14.0
    2 * 7       14
    >>> print(pretty(Named(("a", "[(x.name, f'{x.mfu:.1%}') for x in runs if x.fits and x.name != 'gpipe']"), (1, 2))))
    a
        1
    [(x.name, f'{x.mfu:.1%}') for x in runs if x.fits and x.name != 'gpipe']
        2
    >>> Named(("a", "b"), (1, 2)) == (1, 2)
    True
    """

    names: tuple[str, ...]

    def __new__(cls, names: tuple[str, ...], values: tuple[Any, ...]) -> Named:
        named = super().__new__(cls, values)
        named.names = names
        return named

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from IPython.lib.pretty import pretty

        stacked = any(len(name) > NAME_WIDTH for name in self.names)
        width = max(map(len, self.names), default=0)
        lines = []
        for name, value in zip(self.names, self):
            if stacked:
                shown = pretty(rounded(value), max_width=LINE - _INDENT).replace("\n", "\n" + " " * _INDENT)
                lines += [*textwrap.wrap(name, LINE, subsequent_indent="  "), " " * _INDENT + shown]
            else:
                shown = pretty(rounded(value), max_width=LINE - width - 2).replace("\n", "\n" + " " * (width + 2))
                lines.append(f"{name:<{width}}  {shown}")
        p.text("\n".join(lines))


class _Written(ast.NodeTransformer):
    """A float as a person writes it where that is shorter and means the same: 1e9, not 1000000000.0."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is not float or not math.isfinite(node.value):
            return node
        short = re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{node.value:g}")
        return ast.Name(short) if len(short) < len(repr(node.value)) and float(short) == node.value else node


class _NameTheValues(ast.NodeTransformer):
    """A cell that ends in a tuple of expressions ends in :class:`Named` of them instead."""

    def visit_Module(self, module: ast.Module) -> ast.Module:
        last = module.body[-1] if module.body else None
        if (isinstance(last, ast.Expr) and isinstance(last.value, ast.Tuple) and len(last.value.elts) > 1
                and not any(isinstance(e, ast.Starred) for e in last.value.elts)):
            names = ast.Tuple([ast.Constant(ast.unparse(_Written().visit(copy.deepcopy(e))))
                               for e in last.value.elts], ast.Load())
            module_ = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant(__name__)],
                               [ast.keyword("fromlist", ast.List([ast.Constant("Named")], ast.Load()))])
            call = ast.Call(ast.Attribute(module_, "Named", ast.Load()), [names, last.value], [])
            last.value = ast.fix_missing_locations(ast.copy_location(call, last.value))
        return module


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext ppedu.rounding``: the kernel then prints every float as :func:`rounded` does, also
    inside tuples, lists and dicts, so a cell that ends in ``t.bubble_ratio`` shows 0.428571; and a cell that
    ends in ``a, b`` shows each value beside its expression (:class:`Named`). The chapters opt in on their first
    line; importing ppedu alone changes nothing, and the values stay exact."""
    shell.display_formatter.formatters["text/plain"].for_type(float, lambda x, p, _cycle: p.text(repr(rounded(x))))
    if not any(isinstance(t, _NameTheValues) for t in shell.ast_transformers):
        shell.ast_transformers.append(_NameTheValues())
