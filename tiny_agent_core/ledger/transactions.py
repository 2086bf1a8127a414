"""Grouping writes to the index database: one ``BEGIN IMMEDIATE`` … ``COMMIT`` per unit of work.

Connections are in autocommit mode (:func:`~tiny_agent_core.ledger.database.connect`); a connection belongs to
the thread that opened it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from tiny_agent_core.errors import LedgerError


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
