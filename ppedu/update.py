"""Bringing a new release of the course into a student's clone of it (``ppedu update``), by nbgitpuller's rules,
the ones the course's JupyterHub links follow: the student's changes are committed (under nbgitpuller's name, so no
git identity is needed), a file they deleted comes back, a file of theirs that the release now ships too is moved
aside, and the release is merged in; where both changed the same lines, the student's lines win (``-Xours``).
Notebooks both changed are merged cell by cell (nbdime), by git itself: the student release's ``.gitattributes``
names this module's merge driver for every notebook (:data:`ATTRIBUTES`), which the hub's git config defines for its
users (hub/deploy.py) and :func:`update` for the clone it updates. Cells both added are all kept, the student's
first; where both changed the same cell, the student's stays and the release's whole notebook is saved beside it as
``NAME.release.ipynb``. A notebook that cannot be merged so (one side no notebook, or the merge no valid notebook)
keeps the student's version, the release's saved beside it. Where no git config defines the driver, or it cannot
run, git merges the notebook line by line as before, the student's lines winning.

:func:`update` says what it kept (:class:`Update`); the command line is ``ppedu update`` (:mod:`ppedu.cli`); git
runs ``python -m ppedu.update BASE MINE RELEASE PATH`` (:func:`driver`).

>>> Update("a1", "b2", kept=("notebooks/01.ipynb",)).summary().splitlines()[0]
'Updated from a1 to the release b2.'
>>> import nbformat, nbformat.v4 as v4
>>> base = v4.new_notebook(cells=[v4.new_markdown_cell("# GPipe")])
>>> mine, release = (v4.new_notebook(cells=[*base.cells, v4.new_markdown_cell(text)]) for text in ("Mine.", "New."))
>>> text, clashes = merge_notebooks(*(nbformat.writes(nb) for nb in (base, mine, release)))
>>> [cell.source for cell in nbformat.reads(text, as_version=4).cells], clashes
(['# GPipe', 'Mine.', 'New.'], 0)
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: The name of git's merge driver for notebooks (``merge.ppedu-notebook.driver`` in a git config).
DRIVER = "ppedu-notebook"
#: The student release's ``.gitattributes``: every notebook merged by that driver, where a git config defines it.
ATTRIBUTES = f"*.ipynb merge={DRIVER}\n"
#: What the driver says of a notebook it kept as the student left it, and of one where both changed some cells; git
#: passes it on (nbgitpuller's log on the hub) and :func:`update` reads it back.
KEPT = "Kept {mine} as you left it (it cannot be merged as a notebook); the release's version is {theirs}"
CLASH = ("In {path} you and the release changed the same {n} cell(s): yours are kept; the release's version of the "
         "notebook is {theirs}")


@dataclass(frozen=True)
class Update:
    """What an update did: the commits before and after, the files where the student's changes were kept (merged
    with the release's), files of theirs moved aside for the release's (old, new name), deleted files brought back,
    notebooks kept as the student left them with the release's saved beside (theirs, the release's), and notebooks
    merged where both changed some cells, the student's kept (the notebook, how many cells, the release's copy)."""

    before: str
    after: str
    kept: tuple[str, ...] = ()
    moved: tuple[tuple[str, str], ...] = ()
    restored: tuple[str, ...] = ()
    beside: tuple[tuple[str, str], ...] = ()
    clashes: tuple[tuple[str, int, str], ...] = ()

    def summary(self) -> str:
        """The update in a few lines, for the student."""
        lines = [f"Already the newest release ({self.after})." if self.before == self.after else
                 f"Updated from {self.before} to the release {self.after}."]
        if self.kept:
            lines.append("Kept your changes in (merged with the release's; where both changed a line or a cell, "
                         "yours): " + ", ".join(self.kept))
        lines += [f"Your {old} now ships with the release: yours is {new}" for old, new in self.moved]
        if self.restored:
            lines.append("Brought back, as the release has them: " + ", ".join(self.restored))
        lines += [KEPT.format(mine=mine, theirs=theirs) for mine, theirs in self.beside]
        lines += [CLASH.format(path=path, n=n, theirs=theirs) for path, n, theirs in self.clashes]
        return "\n".join(lines)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout.strip()


def upstream(folder: Path) -> tuple[str, str]:
    """The clone's remote and branch a release comes from (ValueError, in words, if ``folder`` is not such a clone)."""
    try:
        top = git(folder, "rev-parse", "--show-toplevel")
    except (subprocess.CalledProcessError, FileNotFoundError):
        raise ValueError(f"{folder} is not a clone of the course's release (git finds no repository there)") from None
    try:
        remote, branch = git(Path(top), "rev-parse", "--abbrev-ref", "@{upstream}").split("/", 1)
    except subprocess.CalledProcessError:
        raise ValueError(f"{top} follows no release: its branch has no remote branch (clone the release with "
                         "`git clone URL`)") from None
    return remote, branch


def _changed(folder: Path, *revisions: str) -> set[str]:
    return set(git(folder, "diff", "--name-only", *revisions).splitlines())


def driver(python: str) -> str:
    """The command git runs to merge a notebook both sides changed (``merge.ppedu-notebook.driver``): this module
    run by ``python``, and where that cannot run (the environment gone, ppedu not in it) git's own line merge, the
    student's lines winning as under nbgitpuller's ``-Xours``, so that a pull never stops at a notebook.

    >>> driver("/opt/ppedu/bin/python")
    '/opt/ppedu/bin/python -m ppedu.update %O %A %B %P || git merge-file --ours %A %O %B'
    """
    return f"{shlex.quote(python)} -m ppedu.update %O %A %B %P || git merge-file --ours %A %O %B"


def define_driver(python: str, *where: str) -> None:
    """Define the driver, run by ``python``, in the git config ``where`` names (``--system``, ``--file PATH``)."""
    subprocess.run(["git", "config", *where, f"merge.{DRIVER}.driver", driver(python)], check=True)


def configure(top: Path) -> None:
    """Make the clone at ``top`` merge notebooks cell by cell with this environment's ppedu, in ``ppedu update`` and
    in a ``git pull`` alike. The rule goes in the clone's own attributes too: git reads attributes from the working
    tree, where the release's ``.gitattributes`` arrives only with the merge that brings it."""
    define_driver(sys.executable, "--file", str(top / git(top, "rev-parse", "--git-path", "config")))
    attributes = top / git(top, "rev-parse", "--git-path", "info/attributes")
    known = attributes.read_text(encoding="utf-8") if attributes.is_file() else ""
    if ATTRIBUTES not in known.splitlines(keepends=True):
        attributes.parent.mkdir(parents=True, exist_ok=True)
        attributes.write_text(known + ("\n" if known and not known.endswith("\n") else "") + ATTRIBUTES,
                              encoding="utf-8")


def update(folder: Path) -> Update:
    """Merge the newest release into the clone at ``folder`` by nbgitpuller's rules, notebooks cell by cell; what it
    kept."""
    from nbgitpuller.pull import GitPuller

    remote, branch = upstream(folder)
    top = Path(git(folder, "rev-parse", "--show-toplevel"))
    configure(top)
    before = git(top, "rev-parse", "--short", "HEAD")
    git(top, "fetch", "--quiet", remote)
    release = f"{remote}/{branch}"
    base = git(top, "merge-base", "HEAD", release)
    theirs = _changed(top, base, release)
    deleted = set(git(top, "ls-files", "--deleted").splitlines())
    mine = _changed(top, base) - deleted
    puller = GitPuller(git(top, "remote", "get-url", remote), str(top), branch=branch)
    try:
        said = "".join(puller.update())
    except subprocess.CalledProcessError as error:  # the student's work is committed; the merge undone
        subprocess.run(["git", "-C", str(top), "merge", "--abort"], capture_output=True)
        raise RuntimeError(f"the release could not be merged in ({' '.join(error.cmd)} failed); your work is "
                           "safe, committed in this clone") from None
    moved = tuple((str(Path(old).relative_to(top)), str(Path(new).relative_to(top)))
                  for old, new in re.findall(r"Renamed (.+) to (.+) to avoid conflict with upstream", said))
    beside = tuple((fields["mine"], fields["theirs"]) for fields in _said(KEPT, said))
    clashes = tuple((fields["path"], int(fields["n"]), fields["theirs"]) for fields in _said(CLASH, said))
    kept = tuple(sorted(mine & theirs - {path for path, _ in beside}))
    restored = tuple(sorted(path for path in deleted if (top / path).exists()))
    return Update(before, git(top, "rev-parse", "--short", "HEAD"), kept, moved, restored, beside, clashes)


def _said(template: str, said: str) -> list[dict[str, str]]:
    """The fields of each line of ``said`` that ``template`` (:data:`KEPT`, :data:`CLASH`) formats."""
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.+?)", re.escape(template))
    return [found.groupdict() for found in re.finditer(f"^{pattern}$", said, re.MULTILINE)]


def merge_file(base: Path, mine: Path, release: Path, path: str) -> str:
    """git's merge of the notebook ``path`` (the driver, run in the clone's top folder): the student's version
    ``mine`` (git's ``%A``, which holds the result) merged with the release's changes from ``base`` to ``release``
    cell by cell (:func:`merge_notebooks`); the release's notebook saved beside it where it could not all be merged
    in. What it says of that ("" where everything was merged)."""
    sides = [side.read_text(encoding="utf-8", errors="replace") for side in (base, mine, release)]
    result = merge_notebooks(*sides)
    theirs = _beside(Path.cwd(), path, sides[2]) if result is None or result[1] else ""
    if result is None:
        return KEPT.format(mine=path, theirs=theirs)
    mine.write_text(result[0], encoding="utf-8")
    return CLASH.format(path=path, n=result[1], theirs=theirs) if result[1] else ""


def _beside(top: Path, path: str, release: str) -> str:
    """The release's version of the notebook ``path`` saved beside it as ``NAME.release.ipynb`` (``-2``, ``-3``...
    where a file of that name already differs, so that nothing the student wrote is overwritten); its path."""
    stem, n = Path(path).with_suffix(""), 1
    while True:
        copy = Path(f"{stem}.release{'' if n == 1 else f'-{n}'}.ipynb")
        if not (top / copy).exists() or (top / copy).read_text(encoding="utf-8") == release:
            (top / copy).write_text(release, encoding="utf-8")
            return str(copy)
        n += 1


def merge_notebooks(base: str, mine: str, release: str) -> tuple[str, int] | None:
    """The student's notebook ``mine`` with the release's changes (from ``base``, "" where it had none, to
    ``release``) merged in cell by cell by nbdime, and the number of cells both changed (the student's version kept);
    None where a side is no notebook or the merge is no valid notebook."""
    import nbformat
    from nbdime.diffing.notebooks import diff_notebooks
    from nbdime.merging.decisions import apply_decisions
    from nbdime.merging.generic import decide_merge_with_diff

    try:
        sides = [nbformat.reads(text, as_version=4) if text else nbformat.v4.new_notebook()
                 for text in (base, mine, release)]
        decisions = decide_merge_with_diff(*sides, diff_notebooks(sides[0], sides[1]),
                                           diff_notebooks(sides[0], sides[2]))
        cells = set()
        for decision in (d for d in decisions if d.conflict):  # nbdime leaves each conflict to us
            added = decision.common_path == ("cells",) and all(
                op.op == "addrange" for op in decision.local_diff + decision.remote_diff)
            decision.action = "local_then_remote" if added else "local"  # cells both added: all, the student's first
            decision.conflict = False
            if not added and decision.common_path[:1] == ("cells",):  # the notebook's metadata: theirs, silently
                cells.add(decision.common_path[:2])
        merged = apply_decisions(sides[0], decisions)
        nbformat.validate(merged)
    except Exception:  # noqa: BLE001 (whatever a side or nbdime raises, the student's notebook stays as it is)
        return None
    return nbformat.writes(merged) + "\n", len(cells)


def main(argv: list[str]) -> int:
    """git's merge driver: ``python -m ppedu.update BASE MINE RELEASE PATH`` (:func:`driver`)."""
    base, mine, release, path = argv
    said = merge_file(Path(base), Path(mine), Path(release), path)
    if said:
        print(said, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
