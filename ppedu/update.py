"""Bringing a new release of the course into a student's clone of it (``ppedu update``), by nbgitpuller's rules,
the ones the course's JupyterHub links follow: the student's changes are committed (under nbgitpuller's name, so no
git identity is needed), a file they deleted comes back, a file of theirs that the release now ships too is moved
aside, and the release is merged in; where both changed the same lines, the student's lines win (``-Xours``). A
notebook that a merge of lines would leave unreadable is never written: the student's version stays, and the
release's is saved beside it.

:func:`update` says what it kept (:class:`Update`); the command line is ``ppedu update`` (:mod:`ppedu.cli`).

>>> Update("a1", "b2", kept=("notebooks/01.ipynb",)).summary().splitlines()[0]
'Updated from a1 to the release b2.'
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Who the commits of an update are by: nbgitpuller's own name, as on the hub.
COMMITTER = ("-c", "user.email=nbgitpuller@nbgitpuller.link", "-c", "user.name=nbgitpuller")


@dataclass(frozen=True)
class Update:
    """What an update did: the commits before and after, the files where the student's changes were kept (merged
    with the release's), files of theirs moved aside for the release's (old, new name), deleted files brought back,
    and notebooks kept as the student left them with the release's saved beside (theirs, the release's)."""

    before: str
    after: str
    kept: tuple[str, ...] = ()
    moved: tuple[tuple[str, str], ...] = ()
    restored: tuple[str, ...] = ()
    beside: tuple[tuple[str, str], ...] = ()

    def summary(self) -> str:
        """The update in a few lines, for the student."""
        lines = [f"Already the newest release ({self.after})." if self.before == self.after else
                 f"Updated from {self.before} to the release {self.after}."]
        if self.kept:
            lines.append("Kept your changes in (merged with the release's; where both changed a line, yours): "
                         + ", ".join(self.kept))
        lines += [f"Your {old} now ships with the release: yours is {new}" for old, new in self.moved]
        if self.restored:
            lines.append("Brought back, as the release has them: " + ", ".join(self.restored))
        lines += [f"Kept {mine} as you left it; the release's version is {theirs}" for mine, theirs in self.beside]
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


def readable(text: str) -> bool:
    """Whether ``text`` is a notebook Jupyter can open (JSON with cells; no conflict markers)."""
    try:
        return isinstance(json.loads(text).get("cells"), list)
    except (ValueError, AttributeError):
        return False


def update(folder: Path) -> Update:
    """Merge the newest release into the clone at ``folder`` by nbgitpuller's rules; what it kept."""
    from nbgitpuller.pull import GitPuller

    remote, branch = upstream(folder)
    top = Path(git(folder, "rev-parse", "--show-toplevel"))
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
    beside = tuple(_keep_readable(top, path) for path in sorted(mine & theirs) if path.endswith(".ipynb")
                   and (top / path).is_file() and not readable((top / path).read_text(encoding="utf-8")))
    if beside:
        git(top, *COMMITTER, "commit", "--quiet", "-am", "ppedu update: notebooks kept as the student left them")
    kept = tuple(sorted(mine & theirs - {path for path, _ in beside}))
    restored = tuple(sorted(path for path in deleted if (top / path).exists()))
    return Update(before, git(top, "rev-parse", "--short", "HEAD"), kept, moved, restored, beside)


def _keep_readable(top: Path, path: str) -> tuple[str, str]:
    """The student's version of the notebook ``path`` back in place (the merge's first parent), the release's saved
    beside it; (the notebook, the release's copy)."""
    mine = git(top, "show", f"HEAD^1:{path}")
    release = git(top, "show", f"HEAD^2:{path}")
    (top / path).write_text(mine + "\n", encoding="utf-8")
    copy = Path(path).with_suffix(".release.ipynb")
    (top / copy).write_text(release + "\n", encoding="utf-8")
    return path, str(copy)
