"""Indexing session files: derived rows, cheap re-index, removal, corrupt files, newest-first listing."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tests.shared_data import shared_path
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.ledger import (
    ScanReport,
    extract_session,
    get_session,
    index_session_file,
    known_workspaces,
    list_sessions,
    rebuild,
    scan_workspace,
    session_requests,
)
from tiny_agent_core.ledger import index as index_module
from tiny_agent_core.usage import Usage

FIXTURES = ("reference", "schemas", "session", "fixtures")
T0 = 1_760_000_000_000


def _tool_session(workspace: Path, number: int = 1, created_at: int = T0) -> SessionFile:
    session = SessionFile(workspace, number, created_at=created_at)
    session.user("  Please read\n the   README and summarize it  ")
    session.attempt()
    session.call_read("README.md", usage=(100, 20, 50, 5))
    session.attempt()
    session.answer("It is a readme.", usage=(30, 7, 120, 0))
    return session


def test_scan_indexes_session_requests_and_tools(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    report = scan_workspace(conn, workspace)
    assert (report.indexed, report.unchanged, report.corrupt) == (1, 0, [])
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.title == "Please read the README and summarize it"
    assert summary.workspace == workspace.resolve()
    assert summary.path == session.path
    assert summary.created_at == T0
    assert summary.updated_at == session.time
    assert (summary.operation, summary.last_outcome, summary.abort_requested) == ("idle", "completed", False)
    assert summary.usage == Usage(130, 27, 170, 5)
    assert (summary.requests, summary.usage_unknown_requests) == (2, 0)
    assert (summary.cost, summary.cost_unknown_requests) == (None, 2)  # no cost known yet: unknown, not $0
    requests = session_requests(conn, session.id)
    assert [(r.attempt, r.outcome, r.stop_reason, r.usage) for r in requests] == [
        (1, "settled", "toolUse", Usage(100, 20, 50, 5)),
        (1, "settled", "stop", Usage(30, 7, 120, 0)),
    ]
    assert {r.provider for r in requests} == {"openrouter"}
    tools = conn.execute("SELECT tool_name, duration_ms, outcome FROM tool_timings").fetchall()
    assert tools == [("read", 5, "success")]


def test_unknown_usage_stays_null_and_is_counted(conn: sqlite3.Connection, workspace: Path) -> None:
    session = SessionFile(workspace, 2, created_at=T0)
    session.user("first")
    session.attempt()
    session.call_read("a.txt", usage=None)  # the provider sent no usage for this request
    session.attempt()
    session.answer("done", usage=(10, 2, 0, 0))
    scan_workspace(conn, workspace)
    rows = conn.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens FROM requests ORDER BY started_at"
    ).fetchall()
    assert rows == [(None, None, None, None), (10, 2, 0, 0)]
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.usage == Usage(10, 2)  # known usage only
    assert summary.usage_unknown_requests == 1  # ...and the total says it is incomplete
    assert summary.as_json()["usageUnknownRequests"] == 1


def test_failed_and_retried_attempts(conn: sqlite3.Connection, workspace: Path) -> None:
    session = SessionFile(workspace, 3, created_at=T0)
    session.user("hello")
    first = session.attempt()
    second = session.attempt(retry=True)
    session.fail(usage=(5, 0, 0, 0))
    assert scan_workspace(conn, workspace).corrupt == []
    rows = {r.attempt_id: r for r in session_requests(conn, session.id)}
    assert (rows[first].outcome, rows[first].usage, rows[first].finished_at) == ("superseded", None, session.time - 1)
    assert (rows[second].outcome, rows[second].error_code, rows[second].usage) == ("failed", "model_error", Usage(5, 0))
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.model, summary.last_outcome, summary.usage_unknown_requests) == ("test/model", "failed", 1)


def test_open_operation_is_reported(conn: sqlite3.Connection, workspace: Path) -> None:
    session = SessionFile(workspace, 4, created_at=T0)
    session.user("x" * 200)
    session.attempt()
    scan_workspace(conn, workspace)
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.operation == "run"
    assert summary.title == "x" * 79 + "…"
    assert [r.outcome for r in session_requests(conn, session.id)] == ["open"]


def test_unchanged_files_are_not_reread(
    conn: sqlite3.Connection, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _tool_session(workspace)
    scan_workspace(conn, workspace)
    calls: list[int] = []
    original = index_module.extract_session

    def counting(data: bytes) -> object:
        calls.append(len(data))
        return original(data)

    monkeypatch.setattr(index_module, "extract_session", counting)
    assert scan_workspace(conn, workspace).unchanged == 1
    assert calls == []
    session.user("a second question")  # the file grows: re-indexed
    report = scan_workspace(conn, workspace)
    assert (report.indexed, report.unchanged) == (1, 0)
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.operation, summary.title) == ("run", "Please read the README and summarize it")


def test_a_workspace_folder_that_is_not_there_now_keeps_its_rows(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    scan_workspace(conn, workspace)
    workspace.rename(workspace.with_name("unmounted"))  # a disk not mounted, a folder renamed
    report = scan_workspace(conn, workspace)
    assert (report.indexed, report.removed) == (0, 0)
    assert get_session(conn, session.id) is not None


def test_removed_file_drops_its_rows(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    scan_workspace(conn, workspace)
    session.path.unlink()
    assert scan_workspace(conn, workspace).removed == 1
    assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM tool_timings").fetchone()[0] == 0


def test_corrupt_file_is_reported_and_skipped(conn: sqlite3.Connection, workspace: Path) -> None:
    good = _tool_session(workspace, 1)
    bad = _tool_session(workspace, 2, created_at=T0 + 1)
    scan_workspace(conn, workspace)
    with bad.path.open("ab") as handle:
        handle.write(b"{not json}\n")
    report = scan_workspace(conn, workspace)
    assert [(c.path, c.code, c.line) for c in report.corrupt] == [(bad.path, "MALFORMED_JSON", 10)]
    assert [s.id for s in list_sessions(conn, workspace)] == [good.id]


def test_a_file_too_large_to_read_is_reported_without_being_read(conn: sqlite3.Connection, workspace: Path) -> None:
    good = _tool_session(workspace, 1)
    huge = _tool_session(workspace, 2, created_at=T0 + 1)
    scan_workspace(conn, workspace)
    with huge.path.open("r+b") as handle:  # sparse: a repository's 3 GB file costs it nothing on disk
        handle.truncate(3 * 2**30)
    report = scan_workspace(conn, workspace)
    assert [(c.path, c.code, c.line) for c in report.corrupt] == [(huge.path, "FILE_TOO_LARGE", 1)]
    assert [s.id for s in list_sessions(conn, workspace)] == [good.id]


def test_torn_tail_is_ignored(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    with session.path.open("ab") as handle:
        handle.write(b'{"kind":"entry","seq":')
    assert scan_workspace(conn, workspace).corrupt == []
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.facts == 11


def test_listing_is_newest_first_per_workspace_and_searchable(
    conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    sessions = []
    for number, created in enumerate([T0 + 5, T0 + 1, T0 + 9], start=1):
        s = SessionFile(workspace, number, created_at=created)
        s.user(f"question {number} about 100%_coverage")
        sessions.append(s)
    elsewhere = SessionFile(other, 9, created_at=T0 + 100)
    elsewhere.user("elsewhere")
    scan_workspace(conn, workspace)
    scan_workspace(conn, other)
    assert [s.id for s in list_sessions(conn, workspace)] == [sessions[2].id, sessions[0].id, sessions[1].id]
    assert next(s.id for s in list_sessions(conn)) == elsewhere.id
    assert [s.id for s in list_sessions(conn, workspace, limit=1, offset=1)] == [sessions[0].id]
    assert [s.id for s in list_sessions(conn, title_contains="QUESTION 2")] == [sessions[1].id]
    assert len(list_sessions(conn, title_contains="100%_cov")) == 3
    assert list_sessions(conn, title_contains="100%%") == []
    assert list_sessions(conn, tmp_path / "never-seen") == []


def test_listing_uses_the_workspace_index(conn: sqlite3.Connection) -> None:
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE workspace_id = 1 ORDER BY created_at DESC, id DESC"
    ).fetchall()
    detail = " ".join(row[-1] for row in plan)
    assert "sessions_by_workspace_newest" in detail
    assert "TEMP B-TREE" not in detail


def test_index_session_file_directly(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    summary = index_session_file(conn, session.path)
    assert summary.workspace == workspace.resolve()
    assert summary.usage == Usage(130, 27, 170, 5)
    session.path.write_bytes(b"no header line")
    with pytest.raises(SessionCorruption):
        index_session_file(conn, session.path)
    assert get_session(conn, session.id) is not None  # the failed re-index changed nothing


def test_rebuild_from_files(conn: sqlite3.Connection, workspace: Path, tmp_path: Path) -> None:
    _tool_session(workspace, 1)
    _tool_session(workspace, 2, created_at=T0 + 1)
    extra = tmp_path / "extra"
    _tool_session(extra, 3)
    (workspace / ".tiny-agent" / "sessions" / "broken.jsonl").write_bytes(b'{"kind":"header"}\r\n')
    scan_workspace(conn, workspace)
    conn.execute("DELETE FROM tool_timings")
    conn.execute("UPDATE sessions SET title = 'stale', input_tokens = 0")
    report = rebuild(conn, [extra])
    assert report.as_json() == {
        "sessions": 3,
        "requests": 6,
        "corrupt": [
            {
                "path": str(workspace / ".tiny-agent" / "sessions" / "broken.jsonl"),
                "code": "CRLF_NOT_ALLOWED",
                "line": 1,
            }
        ],
    }
    assert {s.title for s in list_sessions(conn)} == {"Please read the README and summarize it"}
    assert {s.usage.input for s in list_sessions(conn)} == {130}
    assert conn.execute("SELECT count(*) FROM tool_timings").fetchone()[0] == 3


def test_reference_completed_tool_run(conn: sqlite3.Connection, workspace: Path) -> None:
    source = shared_path(*FIXTURES, "completed-tool-run.jsonl")
    expected = json.loads(shared_path(*FIXTURES, "completed-tool-run.expected.json").read_text())["state"]
    folder = workspace / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    target = folder / f"2024-03-09T16-00-00-000Z_{expected['header']['id']}.jsonl"
    target.write_bytes(source.read_bytes())
    report = rebuild(conn, [workspace])
    assert (report.sessions, report.requests, report.corrupt) == (1, 2, [])
    summary = get_session(conn, expected["header"]["id"])
    assert summary is not None
    assert summary.usage.as_dict() == expected["usage"]
    assert (summary.title, summary.model, summary.operation) == ("inspect", "test/model", expected["operation"]["kind"])
    assert (summary.created_at, summary.facts, summary.usage_unknown_requests) == (1710000000000, 10, 1)
    tools = conn.execute("SELECT tool_started_id, tool_name, outcome FROM tool_timings").fetchall()
    assert tools == [("018f0000-0000-7000-8000-000000000009", "read", "success")]


def _valid_reference_fixtures() -> list[str]:
    from tests.shared_data import SHARED

    manifest = SHARED.joinpath(*FIXTURES, "manifest.json")
    if not manifest.is_file():
        return []
    names = []
    for item in json.loads(manifest.read_text())["fixtures"]:
        if json.loads(SHARED.joinpath(*FIXTURES, item["expected"]).read_text())["ok"]:
            names.append(item["name"])
    return names


@pytest.mark.parametrize("name", _valid_reference_fixtures())
def test_every_valid_reference_fixture_extracts_like_the_reducer(name: str) -> None:
    data = shared_path(*FIXTURES, f"{name}.jsonl").read_bytes()
    state = json.loads(shared_path(*FIXTURES, f"{name}.expected.json").read_text())["state"]
    facts = extract_session(data)
    assert facts.usage.as_dict() == state["usage"]
    assert facts.operation == state["operation"]["kind"]
    assert facts.committed_length == state["repairedLength"]
    first_user = next((m["content"] for m in state["transcript"] if m["role"] == "user"), "")
    assert facts.title == " ".join(first_user.split())[:80]


def test_file_stat_is_recorded(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _tool_session(workspace)
    scan_workspace(conn, workspace)
    stat = os.stat(session.path)
    row = conn.execute("SELECT file_size, file_mtime_ns FROM sessions").fetchone()
    assert row == (stat.st_size, stat.st_mtime_ns)


def test_rebuild_reports_every_invalid_reference_fixture(conn: sqlite3.Connection, workspace: Path) -> None:
    from tests.shared_data import SHARED

    manifest = json.loads(shared_path(*FIXTURES, "manifest.json").read_text())
    folder = workspace / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    expected = []
    for item in manifest["fixtures"]:
        outcome = json.loads(SHARED.joinpath(*FIXTURES, item["expected"]).read_text())
        if not outcome["ok"]:
            target = folder / f"{item['name']}.jsonl"
            target.write_bytes(SHARED.joinpath(*FIXTURES, item["file"]).read_bytes())
            expected.append((target, outcome["error"]["code"], outcome["error"]["line"]))
    assert len(expected) > 20
    report = rebuild(conn, [workspace])
    assert (report.sessions, report.requests) == (0, 0)
    assert sorted((c.path, c.code, c.line) for c in report.corrupt) == sorted(expected)


def test_copied_session_file_is_reported_as_duplicate(
    conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    session = _tool_session(workspace)
    scan_workspace(conn, workspace)
    copy = tmp_path / "copy" / ".tiny-agent" / "sessions" / session.path.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(session.path.read_bytes())
    report = scan_workspace(conn, tmp_path / "copy")
    assert [(c.path, c.code) for c in report.corrupt] == [(copy, "DUPLICATE_SESSION_ID")]
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.path == session.path
    session.path.unlink()  # the original is gone: the copy takes over
    scan_workspace(conn, workspace)
    assert scan_workspace(conn, tmp_path / "copy").corrupt == []
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.path == copy


def test_folder_without_sessions_is_not_remembered(conn: sqlite3.Connection, workspace: Path) -> None:
    assert scan_workspace(conn, workspace) == ScanReport()
    assert known_workspaces(conn) == []
    _tool_session(workspace)
    scan_workspace(conn, workspace)
    assert known_workspaces(conn) == [workspace.resolve()]
