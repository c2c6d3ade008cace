"""The gradebook's version stamp. nbgrader creates a new gradebook's tables, then asks the ``alembic`` program (by its
name, from PATH) which schema version they are; where ``alembic`` is not on PATH (a formgrader started from a
JupyterLab whose environment was not activated) the tables stay without their stamp, and every later ``nbgrader db
upgrade`` fails on them ("duplicate column name"). nbgrader_config.py puts this environment's programs first on
PATH, and stamps a gradebook left so: its tables were made by this nbgrader, so they are at its newest version.
And ``nbgrader db upgrade`` backs the file up under its URL's path, options and all (the course's ``?timeout=60``):
:func:`backup_the_file` gives it the file's own name.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sqlalchemy import create_engine, inspect, text


def tools_on_path() -> None:
    """This interpreter's own folder of programs (``alembic``, ``jupyter``) first on PATH, for nbgrader's
    subprocesses."""
    here = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != here:
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")


def newest_version() -> str:
    """nbgrader's newest gradebook schema version, read from its migration scripts (no subprocess)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return str(ScriptDirectory.from_config(config).get_current_head())


def repair_version_stamp(db_url: str) -> bool:
    """Stamp a gradebook file (SQLite) that has nbgrader's tables but no version; whether it had to.

    >>> import tempfile; url = f"sqlite:///{tempfile.mkdtemp()}/gradebook.db"
    >>> from nbgrader.api import Base; Base.metadata.create_all(create_engine(url))  # tables, as if alembic failed
    >>> repair_version_stamp(url), repair_version_stamp(url)
    (True, False)
    """
    if not db_url.startswith("sqlite:///") or not Path(db_url[len("sqlite:///"):].split("?")[0]).is_file():
        return False  # no gradebook yet (nbgrader makes it, with tools_on_path() in effect), or a server's database
    engine = create_engine(db_url)
    try:
        tables = set(inspect(engine).get_table_names())
        if "assignment" not in tables or "alembic_version" in tables:
            return False
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": newest_version()})
        return True
    finally:
        engine.dispose()


def backup_the_file() -> None:
    """``nbgrader db upgrade`` backs up ``gradebook.db``, not a file named ``gradebook.db?timeout=60``."""
    from nbgrader.apps.dbapp import DbUpgradeApp

    if getattr(DbUpgradeApp, "_ppedu_backup", False):
        return
    backup = DbUpgradeApp._backup_db_file
    DbUpgradeApp._backup_db_file = lambda self, db_file: backup(self, db_file.split("?")[0])  # type: ignore
    DbUpgradeApp._ppedu_backup = True  # type: ignore[attr-defined]
