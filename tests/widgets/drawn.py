"""What a diagram draws, read back from its SVG: the labelled blocks of one look share one path (a segment each)
and an unlabelled block is a rect of its own; the labels of one look on one GPU are one text that places each
glyph at its own x."""

import re


def blocks(svg: str) -> int:
    """How many operation blocks ``svg`` draws."""
    paths = re.findall(r'<path class="ppedu-op[^"]*"[^>]* d="([^"]*)"', svg)
    return sum(d.count("M") for d in paths) + svg.count('<rect class="ppedu-op')


def labels(svg: str) -> tuple[int, str]:
    """How many glyphs the blocks' labels place, and the glyphs they write (one after another)."""
    texts = re.findall(r'<text class="ppedu-label" x="([^"]*)"[^>]*>([^<]*)</text>', svg)
    return sum(len(x.split()) for x, _ in texts), "".join(t for _, t in texts)
