"""What a session file can never become: half-created, or jammed by text the format cannot hold.

Creation is atomic (a full disk leaves no file), a file an older version left without a header line is reported
as deletable, a transaction without a valid JSON line is refused before anything is written (and the session
stays usable), and the fact builders make tool output and arguments persistable.
"""

from __future__ import annotations

import errno
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.errors import SessionCorruption, SessionError, TransactionRejectedError
from tiny_agent_core.session import SessionStore, facts, reduce_session
from tiny_agent_core.session.canonical_json import js_numbers
from tiny_agent_core.session.store import sessions_directory

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def run_facts(content: str = "hello") -> list[dict[str, Any]]:
    entry_id = facts.new_id()
    return [
        facts.user_entry(content, entry_id=entry_id),
        facts.run_started(operation_id=facts.new_id(), input_entry_id=entry_id),
    ]


# --- atomic creation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["write", "fsync", "link"])
def test_a_full_disk_during_creation_leaves_no_file(
    failing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions_directory(tmp_path).mkdir(parents=True)

    def no_space(*args: Any, **kwargs: Any) -> Any:
        raise ENOSPC

    with monkeypatch.context() as patch:
        patch.setattr(os, failing, no_space)
        with pytest.raises(SessionError, match="No space left on device") as caught:
            SessionStore.create(tmp_path, model="m", environment="fixture")
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENOSPC
    assert list(sessions_directory(tmp_path).iterdir()) == []


def test_a_full_disk_after_the_link_removes_the_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder's fsync fails once the file has its name: the file is removed again, not left behind."""
    sessions_directory(tmp_path).mkdir(parents=True)
    real_fsync = os.fsync

    def folder_fsync_fails(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise ENOSPC
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", folder_fsync_fails)
    with pytest.raises(SessionError, match="No space left"):
        SessionStore.create(tmp_path, model="m", environment="fixture")
    assert list(sessions_directory(tmp_path).iterdir()) == []


def test_a_full_disk_making_the_sessions_folder_is_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(*args: Any, **kwargs: Any) -> None:
        raise ENOSPC

    monkeypatch.setattr(Path, "mkdir", no_space)
    with pytest.raises(SessionError, match="No space left"):
        SessionStore.create(tmp_path, model="m", environment="fixture")


def test_creation_leaves_only_the_complete_session_file(tmp_path: Path) -> None:
    with SessionStore.create(tmp_path, model="m", environment="fixture") as store:
        assert [path.name for path in store.path.parent.iterdir()] == [store.path.name]
        assert reduce_session(store.path.read_bytes()).header.id == store.session_id
        store.append(run_facts())  # the descriptor is the named file's, open for appending
    assert reduce_session(store.path.read_bytes()).fact_count == 2


def test_without_hard_links_creation_renames_and_never_clobbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", unsupported)
    same: dict[str, Any] = {
        "model": "m",
        "environment": "fixture",
        "session_id": facts.new_id(),
        "now": datetime.now(UTC),
    }
    with SessionStore.create(tmp_path, **same) as store:
        assert [path.name for path in store.path.parent.iterdir()] == [store.path.name]
        store.append(run_facts())
    before = store.path.read_bytes()
    with pytest.raises(SessionError, match="Operation not permitted"):
        SessionStore.create(tmp_path, **same)
    assert store.path.read_bytes() == before
    assert [path.name for path in store.path.parent.iterdir()] == [store.path.name]


# --- files an older version left ---------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b'{"kind":"header","vers'])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_file_without_a_header_line_is_reported_as_deletable(tmp_path: Path, data: bytes, read_only: bool) -> None:
    folder = sessions_directory(tmp_path)
    folder.mkdir(parents=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{facts.new_id()}.jsonl"
    path.write_bytes(data)
    with pytest.raises(SessionCorruption) as caught:
        SessionStore.open(path, read_only=read_only)
    assert (caught.value.code, caught.value.line, caught.value.seq) == ("MISSING_HEADER", 1, None)
    assert f"({len(data)} bytes)" in str(caught.value)
    assert "can be deleted" in str(caught.value)
    assert path.read_bytes() == data  # reported, never changed
    with pytest.raises(SessionCorruption, match="MISSING_HEADER"):
        reduce_session(data)  # the reducer's own verdict is the reference's, unchanged


# --- text the format cannot hold -----------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SessionStore.create(tmp_path, model="test/model", environment="fixture") as created:
        yield created


@pytest.mark.parametrize(
    "content",
    ["lone \ud800", "low \udcff from surrogateescape", {"nested": ["\udfff"]}, float("inf"), float("nan")],
    ids=["high", "low", "key-path", "inf", "nan"],
)
def test_a_transaction_without_a_json_line_is_refused_before_writing(store: SessionStore, content: Any) -> None:
    before = store.path.read_bytes()
    batch = run_facts()
    batch[0]["entry"]["message"]["content"] = content
    with pytest.raises(TransactionRejectedError) as caught:
        store.append(batch)
    assert (caught.value.code, caught.value.line) == ("MALFORMED_JSON", 2)
    assert store.path.read_bytes() == before
    assert store.state.operation.kind == "idle"
    store.append(run_facts("the session is still usable"))
    assert reduce_session(store.path.read_bytes()).operation.kind == "run"


def test_a_lone_surrogate_key_is_refused_too(store: SessionStore) -> None:
    batch = run_facts()
    batch[0]["entry"]["\udc80"] = "x"
    with pytest.raises(TransactionRejectedError, match="MALFORMED_JSON"):
        store.append(batch)
    assert store.state.fact_count == 0


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("plain ascii", "plain ascii", 0),
        ("é中🙂", "é中🙂", 0),
        ("name \udcff\udcfe.txt", "name \ufffd\ufffd.txt", 2),
        ("\ud800", "\ufffd", 1),
        ("\udc00\ud800", "\ufffd\ufffd", 2),  # low then high is not a pair
        ("\ud83d\ude00 joined", "\U0001f600 joined", 0),
        ("\ud83d\ude00\ud83d", "\U0001f600\ufffd", 1),
    ],
)
def test_make_persistable(text: str, expected: str, count: int) -> None:
    assert facts.make_persistable(text) == (expected, count)
    expected.encode("utf-8")  # always storable


def test_sanitized_text_is_stored(store: SessionStore) -> None:
    content, replaced = facts.make_persistable("Error: cannot read link target: \udcff\udcfe")
    assert replaced == 2
    committed = store.append(facts.user_entry(content))
    assert committed[0]["entry"]["message"]["content"] == "Error: cannot read link target: \ufffd\ufffd"
    assert reduce_session(store.path.read_bytes()).transcript[0]["content"] == content


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"n": float("inf"), "m": float("-inf"), "k": float("nan")}, {"n": None, "m": None, "k": None}),
        ({"big": 10**400, "fits": 10**300, "neg": -(10**400)}, {"big": None, "fits": 10**300, "neg": None}),
        ([1, 1.5, True, None, "1e400", {"deep": [float("inf")]}], [1, 1.5, True, None, "1e400", {"deep": [None]}]),
        ((1, float("inf")), [1, None]),
    ],
)
def test_js_numbers_writes_what_json_stringify_writes(value: Any, expected: Any) -> None:
    converted = js_numbers(value)
    assert converted == expected
    json.dumps(converted, allow_nan=False)


def test_tool_started_records_unrepresentable_numbers_as_null() -> None:
    fact = facts.tool_started(
        tool_started_id=facts.new_id(),
        operation_id=facts.new_id(),
        step_id=facts.new_id(),
        assistant_entry_id=facts.new_id(),
        tool_index=0,
        tool_call_id="c1",
        tool_name="read",
        arguments={"path": "a", "limit": float("inf"), "digits": 10**400, "offset": 3},
        replay="safe",
        replay_key=facts.READ_REPLAY_KEY,
        environment_identity="fixture",
        result_entry_id=facts.new_id(),
    )
    assert fact["record"]["arguments"] == {"path": "a", "limit": None, "digits": None, "offset": 3}
