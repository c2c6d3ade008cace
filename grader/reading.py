"""Reading the cells of a submitted notebook file: the one step of the intake (:func:`grader.intake.repair`) that
parses a student's bytes, run in a process of its own with Python's standard library alone (``python -I -S``),
under limits on its memory and its CPU time that it sets itself before reading: a file whose shape would cost far more
than its size (millions of tiny objects, nesting past any parser's depth, a huge number of cells) stops here, in this
process, never in the grader's, and what comes back is bounded whatever the file held.

Reads on standard input one line of JSON (``{"limits": {…}, "released": [grade_id, …]}``), then the file's bytes.
Writes one JSON document on standard output: ``{"cells": [{"type", "source", "nbgrader", "pictures", "odd_id"}, …],
"notes": […]}``, or ``{"not_notebook": "its first characters", "notes": […]}``. Of a notebook with more cells than
``limits["cells"]``, the first are kept and, after them, the last cell carrying each released grade_id (the one
nbgrader grades); a cell's source is cut at ``limits["cell_chars"]`` characters and all cells' together at
``limits["chars"]``; a text cell's pasted pictures are kept up to ``limits["picture_bytes"]`` in all. No output of any
cell is kept.
"""

import json
import re
import resource
import sys

_GOOD_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _text(value, limit):
    """A cell's source as text: a string or a list of strings, with lone surrogates replaced."""
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        value = "".join(value)
    if not isinstance(value, str):
        return ""
    value = value[:limit]
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)


def _surrogates(value):
    texts = value if isinstance(value, list) else [value]
    return any(isinstance(t, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in t) for t in texts)


def _nbgrader(meta):
    """The cell's nbgrader metadata, its plain values only (the rest of a cell's metadata is not graded)."""
    data = meta.get("nbgrader") if isinstance(meta, dict) else None
    if not isinstance(data, dict):
        return None
    return {k: _text(v, 200) if isinstance(v, str) else v for k, v in data.items() if isinstance(k, str)
            and type(v) in (str, bool, int, float) and not (isinstance(v, str) and len(v) > 200)
            and not (type(v) is int and abs(v) > 2**53)}


def _pictures(cell, room):
    """A text cell's pasted pictures (``{name: {"image/…": base64 text}}``) within ``room`` bytes; and the bytes
    left."""
    found = cell.get("attachments")
    kept = {}
    if not isinstance(found, dict) or cell.get("cell_type") != "markdown":
        return kept, room
    for name, files in list(found.items())[:20]:
        if not (isinstance(name, str) and 0 < len(name) <= 200 and isinstance(files, dict)):
            continue
        for kind, data in list(files.items())[:5]:
            if isinstance(kind, str) and kind.startswith("image/") and len(kind) < 100 and isinstance(data, str) \
                    and len(data) <= room and re.fullmatch(r"[A-Za-z0-9+/=\s]*", data):
                kept.setdefault(_text(name, 200), {})[kind] = data
                room -= len(data)
    return kept, room


def _cells_of(document):
    if isinstance(document, dict):
        if isinstance(document.get("cells"), list):
            return document["cells"]
        sheets = document.get("worksheets")  # nbformat 3
        if isinstance(sheets, list):
            return [c for w in sheets if isinstance(w, dict) and isinstance(w.get("cells"), list) for c in w["cells"]]
    return []


def _scan(text, most):
    """The cells that can be read one by one out of a notebook file that does not parse as a whole (at most
    ``most``)."""
    decoder, cells = json.JSONDecoder(), []
    for match in re.finditer(r'\{\s*"cell_type"', text):
        try:
            cell, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        cells.append(cell)
        if len(cells) >= most:
            break
    return cells


def read(raw, limits, released):
    notes = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        notes.append("it held bytes that are not UTF-8 text; they were replaced")
    del raw
    opening = text.lstrip("\ufeff \t\r\n")[:40]
    if not opening.startswith("{"):  # not a notebook cut short or damaged: some other file under a notebook's name
        return {"not_notebook": _text(opening, 40), "notes": notes}
    try:
        cells = _cells_of(json.loads(text))
        if not cells:
            notes.append("it holds no cells")
    except (ValueError, RecursionError):
        cells = _scan(text, 4 * limits["cells"])
        notes.append(f"it is not a complete notebook file; {len(cells)} cell(s) could be read from it")
    del text
    cells = [c for c in cells if isinstance(c, dict)]
    if len(cells) > limits["cells"]:  # the first ones, and the last of each released cell after them
        ids = set(released)
        last = {}
        for i, cell in enumerate(cells[limits["cells"]:], limits["cells"]):
            gid = (_nbgrader(cell.get("metadata")) or {}).get("grade_id")
            if gid in ids:
                last[gid] = i
        notes.append(f"it has {len(cells)} cells: the first {limits['cells']} were kept, and after them only the "
                     "released cells (the others were left out)")
        cells = cells[:limits["cells"]] + [cells[i] for i in sorted(last.values())]
    made, chars, room, cut = [], limits["chars"], limits["picture_bytes"], False
    for cell in cells:
        kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown", "raw") else "markdown"
        raw_source = cell.get("source", cell.get("input"))
        source = _text(raw_source, min(limits["cell_chars"], chars))
        whole = _text(raw_source, limits["cell_chars"] + 1)
        if len(whole) > len(source) and not cut:
            cut = True
            notes.append(f"a cell's text was cut (at most {limits['cell_chars']:,} characters a cell, "
                         f"{limits['chars']:,} in all)")
        chars -= len(source)
        if "\ufffd" in source and not any("lone surrogates" in n for n in notes) and _surrogates(raw_source):
            notes.append("it held characters that are not valid Unicode (lone surrogates); they were replaced")
        pictures, room = _pictures(cell, room)
        made.append({"type": kind, "source": source, "nbgrader": _nbgrader(cell.get("metadata")),
                     "pictures": pictures,
                     "odd_id": isinstance(cell.get("id"), str) and not _GOOD_ID.match(cell["id"])})
    if any(c["odd_id"] for c in made):
        notes.append("invalid cell ids")
    return {"cells": made, "notes": notes}


def main():
    header = json.loads(sys.stdin.buffer.readline())
    limits = header["limits"]
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory"], limits["memory"]))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["seconds"], limits["seconds"]))
    out = read(sys.stdin.buffer.read(), limits, header["released"])
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
