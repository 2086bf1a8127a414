"""Opening the index and ledger database: WAL, foreign keys, a busy timeout, migrations (SPEC §5).

The index is a cache of the session files, so opening it never fails because of what the file holds. A file
SQLite cannot use (not a database, a malformed image, a failed ``PRAGMA quick_check``) or one written by a newer
schema major is moved aside as ``<name>.corrupt-<UTC time>`` (with its ``-wal``/``-shm`` if SQLite left any), a
new database is created and rebuilt from the session files of the workspaces the old one still lists (when that
much of it is readable) and of the default workspace; the connection's :attr:`IndexConnection.recovery` says
what happened, and a warning is logged. Opening fails (:class:`~tiny_agent_core.errors.LedgerError`) only for
environmental reasons: the folder cannot be written, another process holds the write lock too long, and so on.

The integrity check reads the whole file, so it runs once per process for each version of the file (its size
and modification time), not on every connection. Connections are in autocommit mode; group writes with
:func:`~tiny_agent_core.ledger.transactions.transaction`. A connection belongs to the thread that opened it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tiny_agent_core import paths
from tiny_agent_core.errors import LedgerError, LedgerVersionError
from tiny_agent_core.ledger import migrations
from tiny_agent_core.ledger.rebuild import RebuildReport, rebuild
from tiny_agent_core.session.store import sessions_directory

_log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's write lock before failing."""

SIDE_FILES = ("-wal", "-shm", "-journal")
"""Suffixes of the files SQLite keeps next to a database; they move aside with it."""

_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

_checked: set[tuple[int, int, int, int]] = set()
"""(device, inode, size, mtime) of the database files that passed the integrity check in this process."""


@dataclass(frozen=True, slots=True)
class IndexRecovery:
    """The index file could not be used when it was opened; it was replaced by one rebuilt from the session files."""

    reason: str
    """Why the old file was unusable, e.g. ``database disk image is malformed``."""
    moved_to: Path
    """Where the old file (and its ``-wal``/``-shm``) now is."""
    report: RebuildReport
    """What the rebuild of the new database found."""

    @property
    def message(self) -> str:
        """One line for the user: what happened, where the old file is, how many sessions were re-indexed."""
        count = self.report.sessions
        return (
            f"The index database could not be used ({self.reason}); it was moved to {self.moved_to} and rebuilt "
            f"from the session files ({count} session{'' if count == 1 else 's'})."
        )


class IndexConnection(sqlite3.Connection):
    """A connection to the index database, as :func:`connect` returns it."""

    recovery: IndexRecovery | None = None
    """Set when opening had to replace an unusable file (show :attr:`IndexRecovery.message` once); else ``None``."""


class _Unusable(Exception):
    """The file's content cannot be used as the index (internal to this module: it never escapes it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _create_file(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            # Captures hold prompts and outputs: keep the file private (the -wal/-shm files inherit the mode).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as error:
        raise LedgerError(f"Could not create the index database at {path}: {error.strerror}.") from error


def _identity(path: Path) -> tuple[int, int, int, int]:
    stat = path.stat()
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    identity = _identity(path)
    if identity in _checked:
        return
    problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(1)")]
    if problems != ["ok"]:
        raise _Unusable(f"integrity check failed: {' '.join(' '.join(problems).split())}")
    _checked.add(identity)


def _open(path: Path, *, migrate: bool) -> IndexConnection:
    """Open and prepare ``path``; raises ``_Unusable`` for an unusable file, ``LedgerError`` otherwise."""
    conn: IndexConnection | None = None
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, factory=IndexConnection)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        migrations.check_version(conn)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"The index database at {path} cannot use write-ahead logging (mode {mode}).")
        conn.execute("PRAGMA synchronous = NORMAL")
        _check_integrity(conn, path)
        if migrate:
            migrations.migrate(conn)
    except BaseException as error:
        if conn is not None:
            conn.close()
        reason = damage_reason(error)
        if reason is not None:
            raise _Unusable(reason) from error
        if isinstance(error, sqlite3.Error):
            raise LedgerError(f"Could not open the index database at {path}: {error}.") from error
        raise
    return conn


def damage_reason(error: BaseException) -> str | None:
    """Why ``error`` (from opening or using the index) means its file is unusable, or ``None`` when it is something
    else (busy, I/O, a full disk, …)."""
    if isinstance(error, _Unusable):
        return error.reason
    if isinstance(error, LedgerVersionError):
        return f"it was written by a newer version of the app, schema {error.found}"
    cause = error.__cause__ if isinstance(error, LedgerError) else error
    code = getattr(cause, "sqlite_errorcode", None)  # absent when the error was not raised by SQLite itself
    if isinstance(cause, sqlite3.DatabaseError) and isinstance(code, int) and code & 0xFF in _DAMAGE_CODES:
        return str(cause)
    return None


def _move_aside(path: Path) -> Path:
    """Rename ``path`` and its side files to ``<name>.corrupt-<UTC time>``; returns the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    try:
        os.replace(path, target)
        for suffix in SIDE_FILES:
            side = Path(f"{path}{suffix}")
            if side.exists():
                os.replace(side, f"{target}{suffix}")
    except OSError as error:
        raise LedgerError(f"Could not move the unusable index database {path} aside: {error.strerror}.") from error
    return target


def _listed_workspaces(old: Path) -> list[Path]:
    """The workspaces an unusable database still lists, read-only and as far as it can be read."""
    try:
        conn = sqlite3.connect(f"{old.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    try:
        return [Path(row[0]) for row in conn.execute("SELECT path FROM workspaces ORDER BY id")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def _replace(path: Path, reason: str) -> IndexConnection:
    moved = _move_aside(path)
    _create_file(path)
    try:
        conn = _open(path, migrate=True)
    except _Unusable as error:  # a file SQLite itself just created: give up rather than loop
        raise LedgerError(f"Could not recreate the index database at {path}: {error.reason}.") from error
    workspaces = _listed_workspaces(moved)
    default = paths.default_workspace()
    if sessions_directory(default).is_dir():
        workspaces.append(default)
    try:
        report = rebuild(conn, workspaces)
    except BaseException:
        conn.close()
        raise
    conn.recovery = IndexRecovery(reason, moved, report)
    _log.warning("%s", conn.recovery.message)
    return conn


def connect(path: Path | None = None, *, migrate: bool = True) -> IndexConnection:
    """Open (creating it, mode 0600, if missing) the database at ``path`` (default :func:`paths.database_path`).

    WAL is enabled and, unless ``migrate`` is false, pending migrations are applied. An unusable file is replaced
    (see the module docstring; :attr:`IndexConnection.recovery` is then set). Any other failure is raised as
    :class:`~tiny_agent_core.errors.LedgerError`.
    """
    path = paths.database_path() if path is None else path
    _create_file(path)
    before = _identity(path)[:2]
    try:
        return _open(path, migrate=migrate)
    except _Unusable as error:
        reason = error.reason
    _create_file(path)
    if _identity(path)[:2] != before:  # another process replaced it meanwhile: use theirs
        try:
            return _open(path, migrate=migrate)
        except _Unusable as error:
            reason = error.reason
    return _replace(path, reason)


def replace_damaged(reason: str, path: Path | None = None) -> IndexConnection:
    """For damage found after opening (``reason`` = :func:`damage_reason` of the error): close every connection
    to ``path`` first; the file is then moved aside and replaced as :func:`connect` does (``recovery`` is set)."""
    return _replace(paths.database_path() if path is None else path, reason)


@contextlib.contextmanager
def opened(path: Path | None = None) -> Iterator[IndexConnection]:
    """:func:`connect`, closed on exit."""
    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()
