"""Search over session titles and content: extracted text, the trigram index, migration m002 from m001."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.ledger import connect, extract_session, list_sessions, rebuild, scan_workspace
from tiny_agent_core.ledger import extract as extract_module
from tiny_agent_core.ledger import migrations as m

T0 = 1_760_000_000_000


def _ids(conn: sqlite3.Connection, search: str, workspace: Path | None = None) -> list[str]:
    return [s.id for s in list_sessions(conn, workspace, search=search)]


@pytest.fixture
def files(conn: sqlite3.Connection, workspace: Path) -> list[SessionFile]:
    """Three indexed sessions; the second reads a file, the third quotes odd characters."""
    first = SessionFile(workspace, 1, created_at=T0)
    first.user("Fix the flaky   parser test")
    first.attempt()
    first.answer("The tokenizer drops a trailing NEWLINE.", usage=(1, 1, 0, 0))
    second = SessionFile(workspace, 2, created_at=T0 + 1000)
    second.user("Explain the ledger")
    second.attempt()
    second.call_read("src/ledger_schema.py", usage=None, result="SECRET TOOL OUTPUT nobody searches")
    second.attempt()
    second.answer("It stores 100% of the costs as Decimal.", usage=None)
    third = SessionFile(workspace, 3, created_at=T0 + 2000)
    third.user('He said "quote" and 中文内容 too')
    assert scan_workspace(conn, workspace).indexed == 3
    return [first, second, third]


def test_extracted_text_holds_messages_and_tool_calls(files: list[SessionFile]) -> None:
    text = extract_session(files[1].path.read_bytes()).text
    assert text.split("\n") == [
        "Explain the ledger",
        'read {"path": "src/ledger_schema.py"}',
        "It stores 100% of the costs as Decimal.",
    ]
    assert "SECRET TOOL OUTPUT" not in text  # tool results are not indexed


def test_search_matches_content_case_insensitively(conn: sqlite3.Connection, files: list[SessionFile]) -> None:
    first, second, third = files
    assert _ids(conn, "trailing newline") == [first.id]
    assert _ids(conn, "  flaky \n parser ") == [first.id]  # whitespace collapsed on both sides
    assert _ids(conn, "ledger_schema") == [second.id]  # tool-call arguments
    assert _ids(conn, "100%") == [second.id]
    assert _ids(conn, '"quote"') == [third.id]
    assert _ids(conn, "中文内") == [third.id]
    assert _ids(conn, "the") == [second.id, first.id]  # newest first
    assert _ids(conn, "tool output") == []
    assert _ids(conn, "") == [third.id, second.id, first.id]


def test_short_search_matches_titles_only(conn: sqlite3.Connection, files: list[SessionFile]) -> None:
    assert _ids(conn, "Fi") == [files[0].id]  # "Fix" in the title
    assert _ids(conn, "中文") == [files[2].id]
    assert _ids(conn, "NE") == []  # only in content ("NEWLINE"), which needs three characters


def test_search_combines_with_workspace_and_paging(
    conn: sqlite3.Connection, files: list[SessionFile], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    elsewhere = SessionFile(other, 9, created_at=T0 + 5000)
    elsewhere.user("another flaky parser")
    scan_workspace(conn, other)
    assert _ids(conn, "flaky parser") == [elsewhere.id, files[0].id]
    assert _ids(conn, "flaky parser", files[0].path.parent.parent.parent) == [files[0].id]
    page = list_sessions(conn, search="flaky parser", limit=1, offset=1)
    assert [s.id for s in page] == [files[0].id]


def test_reindex_replaces_and_removal_drops_the_text(
    conn: sqlite3.Connection, files: list[SessionFile], workspace: Path
) -> None:
    first = files[0]
    first.user("now about zebras")
    assert scan_workspace(conn, workspace).indexed == 1
    assert _ids(conn, "zebras") == [first.id]
    assert _ids(conn, "trailing newline") == [first.id]
    first.path.unlink()
    assert scan_workspace(conn, workspace).removed == 1
    assert _ids(conn, "zebras") == []
    assert conn.execute("SELECT count(*) FROM session_text").fetchone()[0] == 2
    fts = conn.execute("SELECT count(*) FROM session_text_fts WHERE session_text_fts MATCH '\"zebras\"'").fetchone()
    assert fts[0] == 0
    assert rebuild(conn).sessions == 2
    assert _ids(conn, "ledger") == [files[1].id]
    conn.execute("INSERT INTO session_text_fts (session_text_fts) VALUES ('integrity-check')")


def test_text_is_capped(conn: sqlite3.Connection, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract_module, "CONTENT_MAX", 40)
    session = SessionFile(workspace, 5, created_at=T0)
    session.user("a" * 30)
    session.attempt()
    session.answer("b" * 30 + " findme", usage=None)
    session.user("never indexed")
    text = extract_session(session.path.read_bytes()).text
    assert text == "a" * 30 + "\n" + "b" * 9
    scan_workspace(conn, workspace)
    assert _ids(conn, "findme") == []


def test_m002_from_m001_reads_every_file_once_more(data_dir: Path, workspace: Path) -> None:
    session = SessionFile(workspace, 1, created_at=T0)
    session.user("legacy content")
    session.attempt()
    session.answer("old answer about walruses", usage=(1, 1, 0, 0))
    old = connect()  # index with the current schema, then take the database back to what m001 left
    assert scan_workspace(old, workspace).indexed == 1
    for statement in (
        "DROP TABLE session_text_fts",
        "DROP TABLE session_text",
        "DROP TABLE pricing_inputs",
        "DROP INDEX requests_by_time",
        *(f"ALTER TABLE requests DROP COLUMN {name}" for name in ("provider_cost", "local", "cache_savings")),
        "ALTER TABLE requests DROP COLUMN dropped_fields",
        "ALTER TABLE sessions DROP COLUMN pinned",
        "ALTER TABLE sessions DROP COLUMN origin_session_id",
        "ALTER TABLE requests DROP COLUMN copy_of",
        "DROP INDEX raw_captures_whole",
        "ALTER TABLE raw_captures DROP COLUMN pruned",
        "DELETE FROM _migrations WHERE name IN ('m002_session_text', 'm003_dropped_fields', 'm004_recomputable_cost', "
        "'m005_session_meta', 'm006_request_copies', 'm007_capture_retention')",
        f"PRAGMA user_version = {1 << 16}",
    ):
        old.execute(statement)
    assert m.applied_migrations(old) == ["m001_initial"]
    old.close()
    conn = connect()
    try:
        assert m.applied_migrations(conn) == [
            "m001_initial",
            "m002_session_text",
            "m003_dropped_fields",
            "m004_recomputable_cost",
            "m005_session_meta",
            "m006_request_copies",
            "m007_capture_retention",
        ]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == m.user_version()
        assert [s.title for s in list_sessions(conn)] == ["legacy content"]  # the row is kept
        assert _ids(conn, "walruses") == []
        report = scan_workspace(conn, workspace)
        assert (report.indexed, report.unchanged) == (1, 0)
        assert _ids(conn, "walruses") == [session.id]
        assert scan_workspace(conn, workspace).unchanged == 1
        triggers = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert triggers == {"session_text_inserted", "session_text_deleted", "session_text_updated"}
    finally:
        conn.close()
