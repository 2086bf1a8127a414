"""The index is a cache: a damaged or newer-schema database is moved aside and rebuilt from the session files."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import (
    IndexConnection,
    connect,
    known_workspaces,
    list_sessions,
    scan_workspace,
)
from tiny_agent_core.ledger.migrations import SCHEMA_MAJOR
from tiny_agent_core.paths import database_path, default_workspace

T0 = 1_760_000_000_000


def _indexed(workspace: Path, sessions: int = 30) -> list[str]:
    """A real database indexing ``sessions`` session files of ``workspace``, closed; returns the session ids."""
    ids = []
    for number in range(1, sessions + 1):
        session = SessionFile(workspace, number, created_at=T0 + number)
        session.user(f"question {number} " + "padding " * 200)
        session.attempt()
        session.answer("answer " * 200, usage=(10, 2, 0, 0))
        ids.append(session.id)
    conn = connect()
    scan_workspace(conn, workspace)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return ids


def _scribble(path: Path, offset: int, size: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(os.urandom(size))


def test_random_bytes_over_the_whole_file(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    data_dir.mkdir()
    database_path().write_bytes(os.urandom(40_000))
    default = SessionFile(default_workspace(), 1, created_at=T0)
    default.user("in the default workspace")
    with caplog.at_level(logging.WARNING):
        conn = connect()
    try:
        recovery = conn.recovery
        assert recovery is not None
        assert recovery.reason == "file is not a database"
        assert recovery.moved_to.name.startswith("index.sqlite3.corrupt-")
        assert recovery.moved_to.stat().st_size == 40_000
        assert [s.id for s in list_sessions(conn)] == [default.id]  # the default workspace was re-indexed
        assert recovery.report.sessions == 1
        assert str(recovery.moved_to) in recovery.message
        assert "\n" not in recovery.message
        assert [r.getMessage() for r in caplog.records] == [recovery.message]
    finally:
        conn.close()
    again = connect()  # said once: the new file is healthy
    assert again.recovery is None
    again.close()


def test_random_bytes_over_a_page_in_the_middle(data_dir: Path, workspace: Path) -> None:
    ids = _indexed(workspace)
    path = database_path()
    page_size = 4096
    pages = path.stat().st_size // page_size
    assert pages > 10
    _scribble(path, (pages // 2) * page_size, page_size)
    conn = connect()
    try:
        assert conn.recovery is not None
        assert "malformed" in conn.recovery.reason or "integrity" in conn.recovery.reason
        assert known_workspaces(conn) == [workspace.resolve()]  # read from the damaged file's first pages
        assert sorted(s.id for s in list_sessions(conn, workspace)) == sorted(ids)
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_healthy_database_is_left_alone(data_dir: Path, workspace: Path) -> None:
    _indexed(workspace, sessions=2)
    conn = connect()
    assert isinstance(conn, IndexConnection)
    assert conn.recovery is None
    conn.close()
    assert [p.name for p in data_dir.iterdir() if "corrupt" in p.name] == []


def test_an_unwritable_folder_is_still_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(LedgerError, match="Could not create the index database"):
        connect(blocker / "index.sqlite3")


def test_relative_data_folder(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", "data")
    ids = _indexed(workspace, sessions=2)
    raw = sqlite3.connect(database_path())
    raw.execute(f"PRAGMA user_version = {(SCHEMA_MAJOR + 1) << 16}")
    raw.close()
    conn = connect()
    try:
        assert conn.recovery is not None
        assert conn.recovery.moved_to.parent == Path("data")
        assert sorted(s.id for s in list_sessions(conn, workspace)) == sorted(ids)  # the workspace list was read
    finally:
        conn.close()
