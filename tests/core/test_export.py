"""Export (Markdown, the v2 file), import (strict reducer first, nothing half-written), the user's metadata sidecar
(title and pin survive an index rebuild), and whole-session copies."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tests.shared_data import shared_path
from tiny_agent_core.errors import SessionCorruption, SessionError
from tiny_agent_core.export import EXPORT_FORMATS, export_session, import_session, session_markdown
from tiny_agent_core.fork import ForkError, copies_path, fork_before, fork_whole, origin_path, read_origin
from tiny_agent_core.ledger import Cost, LiveRequest, connect, get_session, list_sessions, record_live, scan_workspace
from tiny_agent_core.ledger.index import forget_session, set_session_meta
from tiny_agent_core.ledger.rebuild import rebuild
from tiny_agent_core.session import reduce_session
from tiny_agent_core.session_meta import (
    META_MAX_BYTES,
    TITLE_MAX,
    SessionMeta,
    clean_title,
    companion_files,
    meta_path,
    read_meta,
    write_meta,
)

T0 = 1_760_000_000_000  # 2025-10-09 08:53:20 UTC


@pytest.fixture
def conn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[sqlite3.Connection]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    connection = connect(tmp_path / "index.sqlite3")
    yield connection
    connection.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _session(workspace: Path, number: int = 1) -> SessionFile:
    session = SessionFile(workspace, number, created_at=T0, model="vendor/model-a")
    session.user("Read `notes.md` and | summarise it")
    session.attempt()
    session.call_read("notes.md", usage=(1200, 30, 200, 0), result="line one\nline two ``` fence\n")
    session.attempt()
    session.answer("It says **two** things.", usage=(1300, 12, 0, 0))
    return session


EXPECTED_MARKDOWN = """\
# Read `notes.md` and \\| summarise it

| | |
|---|---|
| Session | `00000001-0000-7000-8000-000000000001` |
| Provider · model | openrouter · vendor/model-a |
| Workspace | {workspace} |
| Started | 2025-10-09 08:53 UTC |
| Requests | 2 |
| Tokens | 2,700 in / 42 out (200 from cache) |
| Cost | ≥ $0.0042 + 1 unknown — provider: 1 |

## User · 2025-10-09 08:53 UTC

Read `notes.md` and | summarise it

## Assistant · vendor/model-a · 1,400 in / 30 out (200 from cache) · $0.0042 (provider)

#### Tool call `read` — ok

read notes.md · 2 lines

Arguments:

```json
{{"path": "notes.md"}}
```

Result:

````text
line one
line two ``` fence
````

## Assistant · vendor/model-a · 1,300 in / 12 out · cost unknown

It says **two** things.

## Requests and cost

| # | Model | Outcome | Tokens | Cost | Source |
|---|---|---|---|---|---|
| 1 | vendor/model-a | toolUse | 1,400 in / 30 out (200 from cache) | $0.0042 | provider |
| 2 | vendor/model-a | stop | 1,300 in / 12 out | unknown | — |
| | **Total** | | 2,700 in / 42 out (200 from cache) | **≥ $0.0042 + 1 unknown** | |
"""


def test_markdown_export_snapshot(conn: sqlite3.Connection, workspace: Path, tmp_path: Path) -> None:
    session = _session(workspace)
    scan_workspace(conn, workspace)
    (first,) = conn.execute(
        "SELECT attempt_id FROM requests WHERE session_id = ? ORDER BY started_at LIMIT 1", (session.id,)
    ).fetchone()
    record_live(conn, LiveRequest(first, cost=Cost(Decimal("0.0042"), "provider")))
    text = session_markdown(session.path, conn)
    assert text == EXPECTED_MARKDOWN.format(workspace=workspace)
    target = tmp_path / "out.md"
    export_session(session.path, target, "md", conn)
    assert target.read_text(encoding="utf-8") == text
    assert not list(tmp_path.glob(".out.md.*"))  # no temporary file left behind


def test_markdown_without_an_index_says_unknown_and_uses_the_users_title(workspace: Path) -> None:
    session = _session(workspace)
    write_meta(session.path, SessionMeta(title="My  renamed\nsession"))
    text = session_markdown(session.path)
    assert text.startswith("# My renamed session\n")
    assert "| Cost | unknown |" in text
    assert "$" not in text


def test_v2_export_is_the_file_as_it_is(workspace: Path, tmp_path: Path) -> None:
    session = _session(workspace)
    target = tmp_path / "copy.jsonl"
    target.write_bytes(b"old")
    export_session(session.path, target, "jsonl")
    assert target.read_bytes() == session.path.read_bytes()
    assert target.stat().st_mode & 0o777 == 0o600


def test_export_refuses_a_corrupt_session_and_leaves_the_target_alone(workspace: Path, tmp_path: Path) -> None:
    session = _session(workspace)
    with session.path.open("ab") as handle:
        handle.write(b'{"not": "a fact"}\n')
    target = tmp_path / "copy.jsonl"
    for fmt in EXPORT_FORMATS:
        with pytest.raises(SessionCorruption):
            export_session(session.path, target, fmt)
        assert not target.exists()


def test_import_copies_a_new_session_as_it_is_and_indexes_it(
    conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    session = _session(elsewhere)
    source = tmp_path / "downloaded session.jsonl"  # any name
    source.write_bytes(session.path.read_bytes())
    imported = import_session(source, workspace, conn)
    assert not imported.copied_as_new
    assert imported.session_id == session.id
    assert imported.path.parent == workspace / ".tiny-agent" / "sessions"
    assert imported.path.name == session.path.name  # the canonical <stamp>_<id>.jsonl name
    assert imported.path.read_bytes() == source.read_bytes()
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.title == "Read `notes.md` and | summarise it"
    assert summary.path == imported.path

    again = import_session(source, workspace, conn)  # the same session once more: a copy with new ids
    assert again.copied_as_new
    assert again.session_id != session.id
    assert read_origin(again.path) is None
    state = reduce_session(again.path.read_bytes())
    assert state.usage == reduce_session(source.read_bytes()).usage
    assert len(list_sessions(conn, workspace)) == 2
    assert scan_workspace(conn, workspace).corrupt == []  # no duplicate id, no shared request ids


def test_import_rejects_a_mutated_file_with_the_reducers_code_and_writes_nothing(
    conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    session = _session(tmp_path / "elsewhere")
    lines = session.path.read_bytes().split(b"\n")
    fact = json.loads(lines[2])
    fact["seq"] = 99  # a skipped sequence number
    lines[2] = json.dumps(fact).encode()
    source = tmp_path / "mutated.jsonl"
    source.write_bytes(b"\n".join(lines))
    with pytest.raises(SessionCorruption) as caught:
        import_session(source, workspace, conn)
    assert (caught.value.code, caught.value.line) == ("SEQ_MISMATCH", 3)
    assert not (workspace / ".tiny-agent").exists() or not any((workspace / ".tiny-agent").rglob("*.jsonl"))
    assert list_sessions(conn) == []


def test_import_refuses_an_oversized_file_before_reading_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(tmp_path / "elsewhere")
    monkeypatch.setattr("tiny_agent_core.export.IMPORT_MAX_BYTES", 100)
    with pytest.raises(SessionError, match="larger than 100 bytes"):
        import_session(session.path, workspace)
    assert not (workspace / ".tiny-agent").exists()


def test_import_accepts_a_golden_fixture(conn: sqlite3.Connection, workspace: Path) -> None:
    fixture = shared_path("reference", "schemas", "session", "fixtures", "completed-tool-run.jsonl")
    imported = import_session(fixture, workspace, conn)
    assert imported.path.read_bytes() == fixture.read_bytes()
    assert get_session(conn, imported.session_id) is not None


def test_import_rejects_a_golden_corrupt_fixture(workspace: Path) -> None:
    folder = shared_path("reference", "schemas", "session", "fixtures")
    expected = json.loads((folder / "duplicate-attempt.expected.json").read_text())
    with pytest.raises(SessionCorruption) as caught:
        import_session(folder / "duplicate-attempt.jsonl", workspace)
    assert caught.value.code == expected["error"]["code"]
    assert caught.value.line == expected["error"]["line"]
    assert not (workspace / ".tiny-agent").exists() or not any((workspace / ".tiny-agent").rglob("*.jsonl"))


# -- the metadata sidecar --------------------------------------------------------------------------------------


def test_rename_and_pin_survive_a_rebuild_and_leave_the_session_file_alone(
    conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    session = _session(workspace)
    before = session.path.read_bytes()
    scan_workspace(conn, workspace)
    summary = set_session_meta(conn, session.path, SessionMeta(title="  Walrus  notes ", pinned=True))
    assert (summary.title, summary.pinned) == ("Walrus notes", True)
    assert session.path.read_bytes() == before
    assert meta_path(session.path).stat().st_mode & 0o777 == 0o600
    assert [s.id for s in list_sessions(conn, pinned=True)] == [session.id]
    assert list_sessions(conn, pinned=False) == []
    assert list_sessions(conn, search="walrus")[0].id == session.id
    conn.close()
    rebuilt = connect(tmp_path / "index.sqlite3")
    try:
        rebuild(rebuilt)
        again = get_session(rebuilt, session.id)
        assert again is not None
        assert (again.title, again.pinned) == ("Walrus notes", True)
        assert again.as_json()["pinned"] is True
        cleared = set_session_meta(rebuilt, session.path, SessionMeta())
        assert (cleared.title, cleared.pinned) == ("Read `notes.md` and | summarise it", False)
        assert not meta_path(session.path).exists()
    finally:
        rebuilt.close()


def test_meta_sidecar_rules(tmp_path: Path) -> None:
    session_file = tmp_path / "s.jsonl"
    assert read_meta(session_file) == SessionMeta()
    assert clean_title(" \n ") is None
    assert clean_title("x" * 500) == "x" * TITLE_MAX
    stored = write_meta(session_file, SessionMeta(title="a\tb", pinned=False))
    assert stored == SessionMeta("a b", False) == read_meta(session_file)
    for bad in (b"{", b"[]", b'{"version": 2, "title": "x"}', b'{"version": 1, "pinned": "yes"}'):
        meta_path(session_file).write_bytes(bad)
        assert read_meta(session_file) == SessionMeta()
    meta_path(session_file).write_bytes(b'{"version": 1, "title": "' + b"x" * META_MAX_BYTES + b'"}')
    assert read_meta(session_file) == SessionMeta()


def test_forget_session_removes_the_row(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _session(workspace)
    scan_workspace(conn, workspace)
    assert forget_session(conn, session.id)
    assert get_session(conn, session.id) is None
    assert not forget_session(conn, session.id)


# -- whole copies ----------------------------------------------------------------------------------------------


def test_fork_whole_copies_everything_with_new_ids(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _session(workspace)
    store = fork_whole(session.path)
    store.close()
    original = reduce_session(session.path.read_bytes())
    copy = reduce_session(store.path.read_bytes())
    assert copy.header.id != original.header.id
    assert (copy.header.model, copy.header.provider) == (original.header.model, original.header.provider)
    assert copy.usage == original.usage
    assert copy.fact_count == original.fact_count
    assert read_origin(store.path) is None
    report = scan_workspace(conn, workspace)
    assert (report.indexed, report.corrupt) == (2, [])


def test_fork_whole_refuses_an_unfinished_session(workspace: Path) -> None:
    session = SessionFile(workspace, 2, created_at=T0)
    session.user("still running")
    session.attempt()
    with pytest.raises(ForkError, match="unfinished operation"):
        fork_whole(session.path)
    assert len(list((workspace / ".tiny-agent" / "sessions").glob("*.jsonl"))) == 1


def test_a_forks_origin_is_indexed(conn: sqlite3.Connection, workspace: Path) -> None:
    session = _session(workspace)
    session.user("Now in French")
    second = session.boundary
    session.attempt()
    session.answer("Ça dit deux choses.", usage=(10, 5, 0, 0))
    store, prompt = fork_before(session.path, second, model="other/model", provider="openrouter")
    store.close()
    assert prompt == "Now in French"
    scan_workspace(conn, workspace)
    fork = get_session(conn, store.session_id)
    assert fork is not None
    assert fork.origin_id == session.id
    assert fork.as_json()["originSessionId"] == session.id
    original = get_session(conn, session.id)
    assert original is not None
    assert original.origin_id is None
    companions = [origin_path(store.path).name, copies_path(store.path).name]  # the copies: counted once
    assert [path.name for path in companion_files(store.path)] == companions
    write_meta(store.path, SessionMeta(pinned=True))
    assert {path.name for path in companion_files(store.path)} == {*companions, meta_path(store.path).name}


def test_import_of_a_valid_file_whose_creation_time_no_date_can_hold(workspace: Path, tmp_path: Path) -> None:
    session = SessionFile(tmp_path / "elsewhere", 1, created_at=T0, model="vendor/model-a")
    lines = session.path.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["createdAt"] = 9007199254740991  # the largest count the format allows: year ~285,000
    source = tmp_path / "far-future.jsonl"
    source.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + b"".join(lines[1:]))
    reduce_session(source.read_bytes())  # the strict reducer accepts it
    imported = import_session(source, workspace)
    assert imported.path.name.endswith(f"_{header['id']}.jsonl")
    assert imported.path.read_bytes() == source.read_bytes()


def test_import_refuses_what_is_not_a_regular_file_without_blocking(workspace: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SessionError, match="not a regular file"):
        import_session(fifo, workspace)
    with pytest.raises(SessionError, match="not a regular file"):
        import_session(tmp_path, workspace)
    assert not (workspace / ".tiny-agent" / "sessions").exists() or not any(
        (workspace / ".tiny-agent" / "sessions").iterdir()
    )
