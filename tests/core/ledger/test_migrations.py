"""Schema migrations: exact tables and columns, recorded and idempotent, WAL, and the newer-version guard."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tiny_agent_core.errors import LedgerError, LedgerVersionError
from tiny_agent_core.ledger import connect
from tiny_agent_core.ledger import migrations as m
from tiny_agent_core.paths import database_path

EXPECTED_COLUMNS = {
    "_migrations": ["name", "applied_at"],
    "workspaces": ["id", "path", "added_at", "last_scanned_at"],
    "sessions": [
        "id",
        "workspace_id",
        "path",
        "title",
        "created_at",
        "updated_at",
        "provider",
        "model",
        "operation",
        "abort_requested",
        "last_outcome",
        "facts",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "requests",
        "usage_unknown_requests",
        "cost_total",
        "cost_unknown_requests",
        "file_size",
        "file_mtime_ns",
        "indexed_at",
        "pinned",
        "origin_session_id",
    ],
    "requests": [
        "attempt_id",
        "session_id",
        "operation_id",
        "step_id",
        "attempt",
        "step_kind",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "stop_reason",
        "error_code",
        "outcome",
        "started_at",
        "finished_at",
        "cost",
        "cost_source",
        "price_data_version",
        "response_model",
        "latency_ms",
        "ttft_ms",
        "http_status",
        "error_kind",
        "dialect_repairs",
        "dropped_fields",
        "provider_cost",
        "local",
        "cache_savings",
        "copy_of",
    ],
    "pricing_inputs": ["id", "overrides"],
    "raw_captures": ["id", "attempt_id", "captured_at", "body", "truncated", "original_size", "pruned"],
    "tool_timings": [
        "tool_started_id",
        "session_id",
        "operation_id",
        "step_id",
        "tool_call_id",
        "tool_name",
        "started_at",
        "finished_at",
        "duration_ms",
        "outcome",
    ],
    "session_text": ["id", "session_id", "body"],
    "session_text_fts": ["body"],
    "session_text_fts_config": ["k", "v"],
    "session_text_fts_data": ["id", "block"],
    "session_text_fts_docsize": ["id", "sz"],
    "session_text_fts_idx": ["segid", "term", "pgno"],
}

APPLIED = [
    "m001_initial",
    "m002_session_text",
    "m003_dropped_fields",
    "m004_recomputable_cost",
    "m005_session_meta",
    "m006_request_copies",
    "m007_capture_retention",
]

EXPECTED_INDEXES = {
    "sessions_by_workspace_newest",
    "sessions_newest",
    "sessions_by_title",
    "requests_by_session",
    "requests_by_model",
    "requests_by_time",
    "raw_captures_by_attempt",
    "raw_captures_whole",
    "tool_timings_by_session",
    "tool_timings_by_name",
}

NULLABLE_USAGE = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "cost_source"]


def _tables(conn: sqlite3.Connection) -> dict[str, list[str]]:
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return {name: [row[1] for row in conn.execute(f"PRAGMA table_info({name})")] for name in names}


def test_blank_database_gets_exact_schema(conn: sqlite3.Connection) -> None:
    assert _tables(conn) == EXPECTED_COLUMNS
    indexes = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    }
    assert indexes == EXPECTED_INDEXES


def test_unknown_usage_and_cost_columns_are_nullable(conn: sqlite3.Connection) -> None:
    info = {row[1]: row for row in conn.execute("PRAGMA table_info(requests)")}
    for name in NULLABLE_USAGE:
        assert info[name][3] == 0, f"{name} must be nullable: unknown is not zero"
    assert info["cost"][2] == "TEXT"  # Decimal text, never REAL


def test_migrations_are_recorded_in_order_and_idempotent(conn: sqlite3.Connection) -> None:
    assert m.applied_migrations(conn) == APPLIED
    assert [fn.__name__ for fn in m.MIGRATIONS] == APPLIED
    assert conn.execute("PRAGMA user_version").fetchone()[0] == m.user_version() == 1 << 16 | 6
    assert m.migrate(conn) == []
    again = connect()
    try:
        assert m.applied_migrations(again) == APPLIED
        assert _tables(again) == EXPECTED_COLUMNS
    finally:
        again.close()


def test_wal_foreign_keys_and_private_file(conn: sqlite3.Connection) -> None:
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert database_path().stat().st_mode & 0o077 == 0


def test_newer_major_is_refused_without_writing(data_dir: Path) -> None:
    data_dir.mkdir()
    path = database_path()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {(m.SCHEMA_MAJOR + 1) << 16}")
    raw.commit()
    with pytest.raises(LedgerVersionError, match="newer version") as info:
        m.migrate(raw)
    assert isinstance(info.value, LedgerError)
    assert (info.value.found, info.value.supported) == (m.SCHEMA_MAJOR + 1, m.SCHEMA_MAJOR)
    assert raw.execute("SELECT name FROM sqlite_master").fetchall() == []  # nothing was created
    raw.close()


def test_connect_moves_a_newer_major_aside(data_dir: Path) -> None:
    data_dir.mkdir()
    newer = (m.SCHEMA_MAJOR + 1) << 16
    raw = sqlite3.connect(database_path())
    raw.execute(f"PRAGMA user_version = {newer}")
    raw.commit()
    raw.close()
    conn = connect()
    try:
        assert conn.recovery is not None
        assert "newer version" in conn.recovery.reason
        assert conn.execute("PRAGMA user_version").fetchone()[0] == m.user_version()
        old = sqlite3.connect(conn.recovery.moved_to)
        assert old.execute("PRAGMA user_version").fetchone()[0] == newer  # kept as it was, for the newer app
        old.close()
    finally:
        conn.close()


def test_newer_minor_is_accepted_and_kept(conn: sqlite3.Connection) -> None:
    newer = m.SCHEMA_MAJOR << 16 | (m.SCHEMA_MINOR + 3)
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.close()
    again = connect()
    try:
        assert again.execute("PRAGMA user_version").fetchone()[0] == newer
    finally:
        again.close()


def test_not_a_database_is_replaced(data_dir: Path) -> None:
    data_dir.mkdir()
    database_path().write_bytes(b"this is not a database, just text" * 100)
    conn = connect()
    try:
        assert conn.recovery is not None
        assert conn.recovery.reason == "file is not a database"
        assert m.applied_migrations(conn) == APPLIED
    finally:
        conn.close()


def test_migration_names_must_be_sequential() -> None:
    def m010_skipped(conn: sqlite3.Connection) -> None:
        raise AssertionError

    def m008BadName(conn: sqlite3.Connection) -> None:
        raise AssertionError

    for fn in (m010_skipped, m008BadName):
        with pytest.raises(ValueError, match="must be named m008_"):
            m.migration(fn)
    assert len(m.MIGRATIONS) == len(APPLIED)


def test_failed_migration_rolls_back_and_is_not_recorded(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    def m004_broken(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")
        c.execute("THIS IS NOT SQL")

    monkeypatch.setattr(m, "MIGRATIONS", [*m.MIGRATIONS, m004_broken])
    with pytest.raises(LedgerError, match="migrate"):
        m.migrate(conn)
    assert m.applied_migrations(conn) == APPLIED
    assert "half_done" not in _tables(conn)


def test_m004_keeps_captures_and_provider_figures_and_reprices_the_rest(data_dir: Path) -> None:
    """A version-3 database with live data: captures survive the rebuilt ``requests``, a provider-sourced cost
    becomes the provider's figure, other costs are cleared for re-pricing, and every session is re-read."""
    data_dir.mkdir()
    raw = sqlite3.connect(database_path(), isolation_level=None)
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    for fn in m.MIGRATIONS[:3]:
        raw.execute("BEGIN")
        fn(raw)
        raw.execute("INSERT INTO _migrations VALUES (?, 0)", (fn.__name__,))
        raw.execute("COMMIT")
    raw.execute("INSERT INTO workspaces (id, path, added_at) VALUES (1, '/w', 0)")
    raw.execute(
        "INSERT INTO sessions VALUES ('s', 1, '/w/s.jsonl', 't', 0, 0, 'openrouter', 'm', 'idle', 0, NULL, 1, "
        "0, 0, 0, 0, 2, 0, '0.5', 0, 10, 10, 0)"
    )
    for attempt, cost, source in (("a1", "0.5", "provider"), ("a2", "0.25", "price_table")):
        raw.execute(
            "INSERT INTO requests (attempt_id, session_id, operation_id, step_id, attempt, step_kind, provider, "
            "model, outcome, started_at, cost, cost_source) VALUES (?, 's', 'o', 'x', 1, 'assistant', 'openrouter', "
            "'m', 'settled', 0, ?, ?)",
            (attempt, cost, source),
        )
    raw.execute("INSERT INTO raw_captures VALUES (1, 'a1', 0, '{}', 0, 2)")
    raw.execute(f"PRAGMA user_version = {1 << 16 | 2}")
    raw.close()
    conn = connect()
    try:
        assert m.applied_migrations(conn)[3] == "m004_recomputable_cost"
        assert conn.execute("SELECT attempt_id, body FROM raw_captures").fetchall() == [("a1", "{}")]
        rows = conn.execute("SELECT attempt_id, provider_cost, local FROM requests ORDER BY attempt_id").fetchall()
        assert rows == [("a1", "0.5", 0), ("a2", None, 0)]
        assert conn.execute("SELECT file_size FROM sessions").fetchone()[0] == -1
        conn.execute("DELETE FROM requests WHERE attempt_id = 'a1'")
        assert conn.execute("SELECT count(*) FROM raw_captures").fetchone()[0] == 0  # the cascade still works
    finally:
        conn.close()
