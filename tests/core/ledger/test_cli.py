"""``tiny-agent sessions`` and ``tiny-agent index rebuild`` through the command line."""

from __future__ import annotations

import json
import os
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.cli import index as index_command
from tiny_agent_core.cli import main
from tiny_agent_core.ledger import Cost, LiveRequest, SessionSummary, connect, record_live
from tiny_agent_core.paths import database_path

T0 = 1_760_000_000_000


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _sessions(workspace: Path) -> tuple[SessionFile, SessionFile]:
    older = SessionFile(workspace, 1, created_at=T0)
    older.user("Fix the flaky test")
    older.attempt()
    older.answer("Done.", usage=(1200, 30, 500, 100))
    newer = SessionFile(workspace, 2, created_at=T0 + 60_000, model="other/model")
    newer.user("Explain the build")
    newer.attempt()
    return older, newer


def test_sessions_json(capsys: pytest.CaptureFixture[str], workspace: Path, data_dir: Path) -> None:
    older, newer = _sessions(workspace)
    code, out, err = _run(capsys, "sessions", "--workspace", str(workspace), "--json")
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    listed = json.loads(out)
    assert [item["id"] for item in listed] == [newer.id, older.id]
    assert listed[1] == {
        "id": older.id,
        "title": "Fix the flaky test",
        "createdAt": T0,
        "updatedAt": older.time,
        "workspace": str(workspace.resolve()),
        "path": str(older.path),
        "provider": "openrouter",
        "model": "test/model",
        "operation": "idle",
        "abortRequested": False,
        "lastOutcome": "completed",
        "facts": 6,
        "usage": {"input": 1200, "output": 30, "cacheRead": 500, "cacheWrite": 100},
        "requests": 1,
        "usageUnknownRequests": 0,
        "cost": None,
        "costUnknownRequests": 1,
        "pinned": False,
        "originSessionId": None,
    }
    assert (listed[0]["operation"], listed[0]["model"], listed[0]["usageUnknownRequests"]) == ("run", "other/model", 1)
    assert database_path().is_file()
    assert database_path().parent == data_dir


def test_sessions_table_shows_cost_and_unknowns(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    older, _newer = _sessions(workspace)
    _run(capsys, "sessions", "--workspace", str(workspace))
    conn = connect()
    (attempt,) = conn.execute("SELECT attempt_id FROM requests WHERE session_id = ?", (older.id,)).fetchone()
    record_live(conn, LiveRequest(attempt, cost=Cost(Decimal("0.00421"), "provider")))
    conn.close()
    code, out, _ = _run(capsys, "sessions", "--workspace", str(workspace))
    assert code == 0
    header, first, second = out.splitlines()
    assert header.split() == ["ID", "CREATED", "MODEL", "STATE", "TOKENS", "COST", "TITLE"]
    assert "Explain the build" in first
    assert "unknown" in first
    assert "run" in first
    assert "$0.00421" in second
    assert "↑1.2k ↓30 R500 W100" in second
    assert "idle (completed)" in second


def test_sessions_empty_workspace(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    assert _run(capsys, "sessions", "--workspace", str(workspace)) == (0, "No sessions.\n", "")
    assert _run(capsys, "sessions", "--workspace", str(workspace), "--json") == (0, "[]\n", "")


def test_sessions_warns_about_corrupt_files(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    _sessions(workspace)
    bad = workspace / ".tiny-agent" / "sessions" / "bad.jsonl"
    bad.write_bytes(b"\n")
    code, out, err = _run(capsys, "sessions", "--workspace", str(workspace), "--json")
    assert code == 0
    assert len(json.loads(out)) == 2
    assert err == f"tiny-agent: skipped {bad}: MISSING_HEADER at line 1\n"


def test_index_rebuild_summary(capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path) -> None:
    _sessions(workspace)
    _run(capsys, "sessions", "--workspace", str(workspace))  # makes the workspace known
    other = tmp_path / "other"
    SessionFile(other, 7, created_at=T0).user("elsewhere")
    bad = other / ".tiny-agent" / "sessions" / "bad.jsonl"
    header = {
        "kind": "header",
        "version": 1,
        "id": "01900000-0000-7000-8000-000000000000",
        "createdAt": T0,
        "cwd": "/",
        "provider": "openrouter",
        "model": "m",
        "environmentIdentity": "e",
    }
    bad.write_bytes(json.dumps(header).encode() + b"\n")
    code, out, err = _run(capsys, "index", "rebuild", "--workspace", str(other))
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    assert json.loads(out) == {
        "sessions": 3,
        "requests": 2,
        "corrupt": [{"path": str(bad), "code": "UNSUPPORTED_VERSION", "line": 1}],
    }
    code, out, _ = _run(capsys, "sessions", "--all", "--json")
    assert len(json.loads(out)) == 3


def test_newer_database_is_moved_aside_and_rebuilt(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    data_dir.mkdir()
    raw = sqlite3.connect(database_path())
    raw.execute("PRAGMA user_version = 131072")  # schema major 2
    raw.commit()
    raw.close()
    code, out, err = _run(capsys, "index", "rebuild")
    assert (code, json.loads(out)) == (0, {"sessions": 0, "requests": 0, "corrupt": []})
    assert err.count("\n") == 1
    assert err.startswith("tiny-agent: The index database could not be used (it was written by a newer version")


@pytest.mark.parametrize("command", [["sessions", "--json"], ["index", "rebuild"]])
def test_damaged_database_is_rebuilt_and_reported_once(
    capsys: pytest.CaptureFixture[str], workspace: Path, data_dir: Path, command: list[str]
) -> None:
    older, newer = _sessions(workspace)
    assert _run(capsys, "sessions", "--workspace", str(workspace))[0] == 0
    with open(database_path(), "r+b") as handle:
        handle.write(os.urandom(4096))  # the header page: SQLite no longer knows the file
    code, out, err = _run(capsys, *command, "--workspace", str(workspace))
    assert code == 0
    (line,) = err.splitlines()
    assert line.startswith("tiny-agent: The index database could not be used (file is not a database); it was moved")
    listed = json.loads(out)
    assert (listed["sessions"] if isinstance(listed, dict) else len(listed)) == 2
    assert len(list(data_dir.glob("index.sqlite3.corrupt-*"))) == 1
    code, out, err = _run(capsys, "sessions", "--workspace", str(workspace), "--json")
    assert (code, err) == (0, "")
    assert {item["id"] for item in json.loads(out)} == {older.id, newer.id}


def test_missing_workspace_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for command in (["index", "rebuild"], ["sessions"]):
        with pytest.raises(SystemExit) as exc:
            main([*command, "--workspace", str(tmp_path / "nowhere")])
        assert exc.value.code == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert (
            err
            == f"tiny-agent {' '.join(command)}: error: argument --workspace: {tmp_path / 'nowhere'} does not exist\n"
        )


def test_damage_found_after_opening_is_recovered_too(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older, newer = _sessions(workspace)
    _run(capsys, "sessions", "--workspace", str(workspace))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a database at all" * 500)
    real_list = index_command.list_sessions
    calls = []

    def damaged_once(conn: sqlite3.Connection, workspace: Path | None = None) -> list[SessionSummary]:
        calls.append(workspace)
        if len(calls) == 1:
            sqlite3.connect(garbage).execute("SELECT 1 FROM sqlite_master")  # a genuine "file is not a database"
        return real_list(conn, workspace)

    monkeypatch.setattr(index_command, "list_sessions", damaged_once)
    code, out, err = _run(capsys, "sessions", "--workspace", str(workspace), "--json")
    assert code == 0
    assert len(calls) == 2
    (line,) = err.splitlines()
    assert line.startswith("tiny-agent: The index database could not be used (file is not a database)")
    assert {item["id"] for item in json.loads(out)} == {older.id, newer.id}


def test_other_index_failures_are_one_line(
    capsys: pytest.CaptureFixture[str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def locked(conn: sqlite3.Connection, workspaces: list[Path]) -> None:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(index_command, "rebuild", locked)
    assert _run(capsys, "index", "rebuild") == (2, "", "tiny-agent: The index database failed: database is locked.\n")
