"""Reopening a closed session store from its snapshot: the state is reused only for byte-identical committed bytes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.core.session.builders import Call, SessionScript
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import SessionStore, facts, reduce_session
from tiny_agent_core.session.fact_types import SessionFact
from tiny_agent_core.session.store import session_file_name


def _script(runs: int) -> SessionScript:
    script = SessionScript(seed=11)
    for number in range(runs):
        script.run(f"prompt {number}", [[Call("read", '{"path":"a.txt"}', "A")], f"answer {number}"])
    return script


def _write(folder: Path, data: bytes) -> Path:
    session_id = json.loads(data.split(b"\n", 1)[0])["id"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / session_file_name(datetime(2026, 1, 1, tzinfo=UTC), session_id)
    path.write_bytes(data)
    return path


def _prompt(store: SessionStore, text: str) -> None:
    """Append a prompt and the start of its run (one transaction, as the agent writes it)."""
    entry_id = facts.new_id()
    store.append(
        [
            facts.user_entry(text, entry_id=entry_id),
            facts.run_started(operation_id=facts.new_id(), input_entry_id=entry_id),
        ]
    )


def test_an_unchanged_file_reopens_with_the_same_state_and_no_walk(tmp_path: Path) -> None:
    path = _write(tmp_path, _script(3).data())
    first = SessionStore.open(path, resumable=True)
    state = first.state
    snapshot = first.close_keeping()
    assert snapshot is not None
    assert first.closed
    heard: list[list[SessionFact]] = []
    again = SessionStore.open(path, resume=snapshot, observer=heard.append)
    try:
        assert again.resumed
        assert again.state is state
        assert heard == []  # no transaction was read again
    finally:
        again.close()


def test_a_store_opened_without_resumable_gives_no_snapshot(tmp_path: Path) -> None:
    path = _write(tmp_path, _script(1).data())
    store = SessionStore.open(path)
    assert store.close_keeping() is None
    assert store.closed
    assert store.close_keeping() is None  # already closed


def test_appends_keep_the_digest_so_a_session_can_be_resumed_again_and_again(tmp_path: Path) -> None:
    created = SessionStore.create(tmp_path, model="m", resumable=True)
    path = created.path
    snapshot = created.close_keeping()
    for number in range(3):
        assert snapshot is not None
        store = SessionStore.open(path, resume=snapshot)
        assert store.resumed
        if number == 0:
            _prompt(store, "hi")  # the digest now covers the appended line too
        snapshot = store.close_keeping()
    assert snapshot is not None
    reduced = reduce_session(path.read_bytes())
    assert snapshot.state.line_count == reduced.line_count == 2
    assert snapshot.state.repaired_length == reduced.repaired_length


def test_a_file_another_program_appended_to_is_reduced_again(tmp_path: Path) -> None:
    script = _script(2)
    path = _write(tmp_path, script.data())
    snapshot = SessionStore.open(path, resumable=True).close_keeping()
    assert snapshot is not None
    script.run("more", ["done"])
    path.write_bytes(script.data())
    heard: list[list[SessionFact]] = []
    store = SessionStore.open(path, resume=snapshot, observer=heard.append)
    try:
        assert not store.resumed
        assert store.state is not snapshot.state
        assert store.state.line_count == len(script.lines)
        assert len(heard) == len(script.lines) - 1  # every transaction, walked once
        resumable = store.close_keeping()  # a resume that fell back is resumable too
        assert resumable is not None
    finally:
        store.close()


def test_a_rewritten_file_of_the_same_length_is_validated_and_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, _script(2).data())
    snapshot = SessionStore.open(path, resumable=True).close_keeping()
    assert snapshot is not None
    data = path.read_bytes()
    path.write_bytes(data.replace(b"prompt 1", b"prompt\x01", 1))  # a raw control character: not JSON
    with pytest.raises(SessionCorruption) as raised:
        SessionStore.open(path, resume=snapshot)
    assert raised.value.code == "MALFORMED_JSON"


def test_a_torn_tail_does_not_stop_a_resume_and_is_repaired(tmp_path: Path) -> None:
    path = _write(tmp_path, _script(2).data())
    snapshot = SessionStore.open(path, resumable=True).close_keeping()
    assert snapshot is not None
    committed = path.read_bytes()
    path.write_bytes(committed + b'{"kind":"ent')  # a writer crashed mid-line
    store = SessionStore.open(path, resume=snapshot)
    try:
        assert store.resumed
        assert path.read_bytes() == committed
    finally:
        store.close()


def test_a_snapshot_of_another_file_is_ignored(tmp_path: Path) -> None:
    one = _write(tmp_path / "one", _script(1).data())
    other = _write(tmp_path / "two", SessionScript(seed=12).data())
    snapshot = SessionStore.open(one, resumable=True).close_keeping()
    store = SessionStore.open(other, resume=snapshot)
    try:
        assert not store.resumed
        assert store.session_id != one.name
    finally:
        store.close()


def test_a_read_only_store_stays_resumable_through_refresh(tmp_path: Path) -> None:
    script = _script(1)
    path = _write(tmp_path, script.data())
    writer = SessionStore.open(path)
    try:
        reader = SessionStore.open(path, read_only=True, resumable=True)
        _prompt(writer, "x")
        assert reader.refresh() == 1
        snapshot = reader.close_keeping()
        assert snapshot is not None
    finally:
        writer.close()
    again = SessionStore.open(path, resume=snapshot)
    try:
        assert again.resumed
        assert again.state.line_count == reduce_session(path.read_bytes()).line_count
    finally:
        again.close()
