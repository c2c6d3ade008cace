"""Students' homes on a machine they share (the course's JupyterHub): private, or the class does not start.

A home is private when no one but its owner can enter it: mode ``0700``, or ``0750`` where its group is the
owner's own (a group no one else is in). ``useradd --create-home`` makes ``0755`` homes on many systems, where a
classmate could read an answered notebook, its feedback and nbgrader's cache of every submission.

>>> refusal([("bob", "/home/bob"), ("carol", "/home/carol")])
'the homes of 2 student(s) can be read by others (bob, carol): chmod 0700 /home/bob /home/carol'
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Sequence


def members(group: str) -> list[pwd.struct_passwd]:
    """The users of a Unix group: its listed members and those whose own group it is (none if there is no group)."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return []
    return [user for user in pwd.getpwall() if user.pw_name in entry.gr_mem or user.pw_gid == entry.gr_gid]


def private(user: pwd.struct_passwd) -> bool:
    """Whether ``user``'s home is theirs alone (a home that does not exist yet is nobody's business)."""
    try:
        info = os.stat(user.pw_dir)
    except FileNotFoundError:
        return True
    if info.st_uid != user.pw_uid or info.st_mode & stat.S_IRWXO:
        return False
    if not info.st_mode & stat.S_IRWXG:
        return True
    try:
        group = grp.getgrgid(info.st_gid)
    except KeyError:
        return False
    return group.gr_gid == user.pw_gid and not set(group.gr_mem) - {user.pw_name}


def open_homes(group: str) -> list[tuple[str, str]]:
    """The students of ``group`` whose home others can enter: (login, home)."""
    return sorted((user.pw_name, user.pw_dir) for user in members(group) if not private(user))


def refusal(homes: Sequence[tuple[str, str]]) -> str:
    """One line: whose homes are open, and the command that closes them."""
    names = ", ".join(name for name, _ in homes)
    return (f"the homes of {len(homes)} student(s) can be read by others ({names}): "
            f"chmod 0700 {' '.join(home for _, home in homes)}")
