"""docs/instructor.md, section by section, for the tests that run a section's commands as they are written."""

import re

from conftest import ROOT

GUIDE = (ROOT / "docs" / "instructor.md").read_text()


def section(title: str) -> str:
    """The text of the guide's section whose heading names ``title`` (its number aside), up to the next section."""
    start = re.search(rf"^## (\d+\. )?{re.escape(title)}$", GUIDE, re.M)
    assert start, f"docs/instructor.md has no section '{title}'"
    end = re.compile(r"^## ", re.M).search(GUIDE, start.end())
    return GUIDE[start.start():end.start() if end else len(GUIDE)]
