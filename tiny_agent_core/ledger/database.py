"""Opening the index and ledger database: WAL, foreign keys, a busy timeout, migrations (SPEC §5).

Connections are in autocommit mode; group writes with :func:`transaction`. A connection belongs to the thread
that opened it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import migrations, paths

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's write lock before failing."""


def connect(path: Path | None = None, *, migrate: bool = True) -> sqlite3.Connection:
    """Open (creating it, mode 0600, if missing) the database at ``path`` (default :func:`paths.database_path`).

    The schema version is checked before anything is written (a newer major raises
    :class:`~tiny_agent_core.errors.LedgerVersionError`), then WAL is enabled and, unless ``migrate`` is false,
    pending migrations are applied. Any SQLite failure is raised as :class:`~tiny_agent_core.errors.LedgerError`.
    """
    path = paths.database_path() if path is None else path
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            # Captures hold prompts and outputs: keep the file private (the -wal/-shm files inherit the mode).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as error:
        raise LedgerError(f"Could not create the index database at {path}: {error.strerror}.") from error
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        migrations.check_version(conn)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"The index database at {path} cannot use write-ahead logging (mode {mode}).")
        conn.execute("PRAGMA synchronous = NORMAL")
        if migrate:
            migrations.migrate(conn)
    except sqlite3.Error as error:
        if conn is not None:
            conn.close()
        raise LedgerError(f"Could not open the index database at {path}: {error}.") from error
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception); SQLite errors become ``LedgerError``."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as error:
        raise LedgerError(f"Could not write to the index database: {error}.") from error
    try:
        yield conn
    except sqlite3.Error as error:
        conn.execute("ROLLBACK")
        raise LedgerError(f"Could not write to the index database: {error}.") from error
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def opened(path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """:func:`connect`, closed on exit."""
    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()
