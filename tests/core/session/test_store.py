"""The session store: file naming and mode, header, O(1) validated appends, torn-tail repair, locking."""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import stat
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript
from tiny_agent_core.errors import (
    SessionChangedError,
    SessionCorruption,
    SessionError,
    SessionLockedError,
    SessionTooLargeError,
    TransactionRejectedError,
)
from tiny_agent_core.session import (
    SessionStore,
    environment_identity,
    facts,
    find_session,
    reduce_session,
    session_file_name,
    state_to_json,
)
from tiny_agent_core.session import store as store_module
from tiny_agent_core.session.fact_types import AbortRequested, RunStarted, SessionFact, UserEntry
from tiny_agent_core.session.store import SESSION_FILE_MAX, read_session_file

NAME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.jsonl"
)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SessionStore.create(tmp_path, model="test/model", environment="fixture") as created:
        yield created


def run_facts(content: str = "hello") -> list[dict[str, Any]]:
    entry_id = facts.new_id()
    return [
        facts.user_entry(content, entry_id=entry_id),
        facts.run_started(operation_id=facts.new_id(), input_entry_id=entry_id),
    ]


def test_create_names_the_file_and_writes_the_exact_header(tmp_path: Path) -> None:
    now = datetime(2026, 8, 3, 3, 55, 50, 62_000, tzinfo=UTC)
    with SessionStore.create(tmp_path, model="m/x", now=now) as store:
        assert store.path.parent == Path(os.path.realpath(tmp_path / ".tiny-agent" / "sessions"))
        assert store.path.name == f"2026-08-03T03-55-50-062Z_{store.session_id}.jsonl"
        assert NAME.fullmatch(store.path.name)
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        lines = store.path.read_bytes().split(b"\n")
        assert lines[1:] == [b""]
        header = json.loads(lines[0])
        assert list(header) == ["kind", "version", "id", "createdAt", "cwd", "provider", "model", "environmentIdentity"]
        assert header == {
            "kind": "header",
            "version": 2,
            "id": store.session_id,
            "createdAt": int(now.timestamp() * 1000),
            "cwd": os.path.realpath(tmp_path),
            "provider": "openrouter",
            "model": "m/x",
            "environmentIdentity": environment_identity(tmp_path),
        }
        assert store.session_id == store.session_id.lower()
        assert store.state.repaired_length == len(lines[0]) + 1


def test_create_is_exclusive(tmp_path: Path) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    identifier = facts.new_id()
    SessionStore.create(tmp_path, model="m", now=now, session_id=identifier).close()
    existing = next((tmp_path / ".tiny-agent" / "sessions").iterdir())
    before = existing.read_bytes()
    with pytest.raises(SessionError, match="File exists") as caught:
        SessionStore.create(tmp_path, model="m", now=now, session_id=identifier, provider="other")
    assert isinstance(caught.value.__cause__, FileExistsError)
    assert [path.name for path in existing.parent.iterdir()] == [existing.name]  # no temporary file left
    assert existing.read_bytes() == before


def test_create_rejects_a_bad_header_without_creating_a_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="INVALID_HEADER"):
        SessionStore.create(tmp_path, model="")
    assert not (tmp_path / ".tiny-agent").exists()


def test_create_refuses_a_sessions_folder_that_a_link_leads_out_of_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    elsewhere = tmp_path / "autostart"
    elsewhere.mkdir()
    (workspace / ".tiny-agent").mkdir()
    (workspace / ".tiny-agent" / "sessions").symlink_to(elsewhere, target_is_directory=True)  # in the repository
    with pytest.raises(SessionError, match="outside the workspace"):
        SessionStore.create(workspace, model="m")
    assert list(elsewhere.iterdir()) == []
    (workspace / ".tiny-agent" / "sessions").unlink()
    (workspace / ".tiny-agent").rmdir()
    (workspace / ".tiny-agent").symlink_to(elsewhere, target_is_directory=True)  # a link further up, and missing parts
    with pytest.raises(SessionError, match="outside the workspace"):
        SessionStore.create(workspace, model="m")
    assert list(elsewhere.iterdir()) == []  # nothing was made there, not even the folder
    (workspace / ".tiny-agent").unlink()
    (workspace / "kept").mkdir()
    (workspace / ".tiny-agent").symlink_to("kept", target_is_directory=True)  # a link that stays inside is fine
    with SessionStore.create(workspace, model="m") as store:
        assert store.path.parent == (workspace / "kept" / "sessions").resolve()


def test_environment_identity_prefers_a_nonempty_override(tmp_path: Path) -> None:
    assert environment_identity(tmp_path, {}) == os.path.realpath(tmp_path)
    assert environment_identity(tmp_path, {"TINY_AGENT_ENVIRONMENT_IDENTITY": "  "}) == os.path.realpath(tmp_path)
    assert environment_identity(tmp_path, {"TINY_AGENT_ENVIRONMENT_IDENTITY": " ci-box "}) == "ci-box"


def test_append_fills_id_seq_timestamp_and_writes_one_line(store: SessionStore) -> None:
    before = store.path.read_bytes()
    committed = store.append(run_facts("héllo 中"))
    assert [fact["seq"] for fact in committed] == [1, 2]
    assert committed[0]["timestamp"] == committed[1]["timestamp"]
    assert all(re.fullmatch(r"[0-9a-f-]{36}", fact["id"]) for fact in committed)
    data = store.path.read_bytes()
    line = data[len(before) :]
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert "héllo 中".encode() in line  # ensure_ascii=False
    assert b", " not in line
    assert b": " not in line
    assert json.loads(line) == committed  # several facts: an array
    single = store.append(
        facts.step_attempt(
            operation_id=committed[1]["record"]["operationId"],
            step_id=facts.new_id(),
            attempt_id=facts.new_id(),
            context_through_entry_id=committed[0]["id"],
            configuration_snapshot=facts.configuration_snapshot(
                model="m", system_prompt_digest=facts.system_prompt_digest("p")
            ),
        )
    )
    assert json.loads(store.path.read_bytes().split(b"\n")[-2]) == single[0]  # one fact: an object
    assert state_to_json(store.state) == state_to_json(reduce_session(store.path.read_bytes()))


def test_rejected_append_changes_nothing(store: SessionStore) -> None:
    store.append(run_facts())
    data = store.path.read_bytes()
    state = json.dumps(state_to_json(store.state))
    next_seq = store.state.next_seq
    bad_transactions: list[Any] = [
        run_facts(),  # a run while a run is active
        [
            facts.user_entry("ok"),
            {"kind": "entry", "entry": {"type": "message", "message": {"role": "system", "content": "x"}}},
        ],
        {
            "kind": "usage",
            "operationId": facts.new_id(),
            "attemptId": facts.new_id(),
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        },
        {"kind": "entry", "entry": {"type": "message", "message": {"role": "user", "content": "\ud800"}}},
        {"kind": "entry", "entry": {"type": "message", "message": {"role": "user", "content": float("nan")}}},
        {"kind": "entry", "entry": object()},
        ["not a fact"],
        [],
    ]
    for transaction in bad_transactions:
        with pytest.raises(TransactionRejectedError) as caught:
            store.append(transaction)
        assert caught.value.code
        assert store.path.read_bytes() == data
        assert json.dumps(state_to_json(store.state)) == state
        assert store.state.next_seq == next_seq
    assert caught.value.code == "EMPTY_TRANSACTION"
    # And the store still works.
    assert store.append(
        facts.abort_requested(
            operation_id=json.loads(data.split(b"\n")[1])[1]["record"]["operationId"],
            operation_kind="run",
            phase="model",
        )
    )


def test_rejected_append_reports_the_reducer_code(store: SessionStore) -> None:
    with pytest.raises(TransactionRejectedError) as caught:
        store.append(facts.run_started(operation_id=facts.new_id(), input_entry_id=facts.new_id()))
    assert (caught.value.code, caught.value.line, caught.value.seq) == ("INVALID_REFERENCE", 2, 1)
    assert "nothing was written" in str(caught.value)


def test_writer_output_re_reduces_to_the_same_state(store: SessionStore) -> None:
    script = SessionScript(store=store)
    script.run("one", [[Call("read"), Call("nope", "{", outcome="invalidArguments")], "done"])
    script.compact()
    script.run("two", [[Call("bash", '{"command":"false"}', "exit 1", "error")], "ok"])
    script.run("three", [[Call("write", "{}", outcome="pending")]], finish="open")
    assert state_to_json(store.state) == state_to_json(reduce_session(store.path.read_bytes()))
    assert store.state.operation.kind == "run"


def test_open_repairs_a_torn_tail_before_any_append(store: SessionStore) -> None:
    store.append(run_facts())
    path = store.path
    committed = path.read_bytes()
    store.close()
    with open(path, "ab") as handle:
        handle.write(b'[{"kind":"entry","seq":3,"id":"01')
    with SessionStore.open(path) as reopened:
        assert path.read_bytes() == committed
        assert reopened.state.fact_count == 2
        reopened.append(
            facts.abort_requested(
                operation_id=reopened.state.operation.operation_id, operation_kind="run", phase="model"
            )
        )  # type: ignore[union-attr]
    reduce_session(path.read_bytes())


def test_a_tail_that_grows_while_the_file_is_opened_is_not_cut_off(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(run_facts())
    path = store.path
    store.close()
    with open(path, "ab") as writer:
        writer.write(b'[{"kind":"entry","seq":3,')  # a reference CLI's line, half written (it takes no lock)
    reduce = store_module._reduce

    def reduce_while_the_cli_writes(*args: Any) -> Any:
        with open(path, "ab") as writer:
            writer.write(b'"id":"01')
        return reduce(*args)

    monkeypatch.setattr(store_module, "_reduce", reduce_while_the_cli_writes)
    before = len(path.read_bytes())
    with pytest.raises(SessionChangedError, match="grew while it was being opened"):
        SessionStore.open(path)
    assert len(path.read_bytes()) > before  # nothing cut off


def test_read_only_open_leaves_a_torn_tail_alone(store: SessionStore) -> None:
    store.close()
    with open(store.path, "ab") as handle:
        handle.write(b"{torn")
    with SessionStore.open(store.path, read_only=True) as reader:
        assert reader.read_only
        assert store.path.read_bytes().endswith(b"{torn")
        with pytest.raises(SessionError, match="read-only"):
            reader.append(run_facts())


def test_open_rechmods_to_0600(store: SessionStore) -> None:
    store.close()
    os.chmod(store.path, 0o644)
    SessionStore.open(store.path).close()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_open_requires_the_header_id_to_match_the_file_name(store: SessionStore, tmp_path: Path) -> None:
    store.close()
    other = store.path.with_name(session_file_name(datetime.now(UTC), facts.new_id()))
    other.write_bytes(store.path.read_bytes())
    with pytest.raises(SessionError, match="does not match header"):
        SessionStore.open(other)
    with pytest.raises(SessionError, match="does not match header"):
        SessionStore.open(other, read_only=True)
    plain = tmp_path / "session.jsonl"
    plain.write_bytes(store.path.read_bytes())
    with pytest.raises(SessionError, match="Not a session file name"):
        SessionStore.open(plain)


def test_open_refuses_a_corrupt_file_and_a_symlink(store: SessionStore, tmp_path: Path) -> None:
    store.close()
    with open(store.path, "ab") as handle:
        handle.write(b"[]\n")
    with pytest.raises(SessionCorruption) as caught:
        SessionStore.open(store.path)
    assert caught.value.code == "EMPTY_TRANSACTION"
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(b"")
    fresh = store.path.parent / session_file_name(datetime.now(UTC), facts.new_id())
    fresh.symlink_to(target)
    with pytest.raises(OSError, match="symbolic links"):
        SessionStore.open(fresh)


def test_a_second_writer_is_refused_but_reading_works(store: SessionStore) -> None:
    store.append(run_facts())
    with pytest.raises(SessionLockedError, match="open for writing elsewhere"):
        SessionStore.open(store.path)
    with SessionStore.open(store.path, read_only=True) as reader:
        assert reader.state.fact_count == 2
        store.append(
            facts.abort_requested(operation_id=reader.state.operation.operation_id, operation_kind="run", phase="model")
        )  # type: ignore[union-attr]
        assert reader.refresh() == 1
        assert state_to_json(reader.state) == state_to_json(store.state)
    store.close()
    with SessionStore.open(store.path) as second:
        assert second.state.fact_count == 3


def test_a_line_another_program_appended_stops_further_writes_and_stays_readable(
    store: SessionStore, tmp_path: Path
) -> None:
    store.append(run_facts())
    before = store.path.read_bytes()
    elsewhere = tmp_path / "cli" / store.path.name  # the same session, appended to by a reference CLI (no lock)
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(before)
    with SessionStore.open(elsewhere) as cli:
        cli.append(abort_fact(cli))
    with store.path.open("ab") as raw:
        raw.write(elsewhere.read_bytes()[len(before) :])
    for _ in range(2):  # and every later append: this store's state no longer describes the file
        with pytest.raises(SessionChangedError, match=r"changed by another program.*nothing was written"):
            store.append(abort_fact(store))
    assert store.path.read_bytes() == elsewhere.read_bytes()
    store.close()
    with SessionStore.open(store.path) as reopened:
        assert reopened.state.fact_count == 3


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(SESSION_FILE_MAX + 1)  # sparse
    with pytest.raises(SessionTooLargeError, match=r"files over 512 MiB are not opened.*Move it out"):
        read_session_file(path)
    assert read_session_file(path, limit=4) == b"\0" * 4  # a bounded read (the header probe) still works


def test_a_session_file_over_the_limit_is_not_opened_for_writing_either(store: SessionStore) -> None:
    store.close()
    with store.path.open("r+b") as handle:
        handle.truncate(SESSION_FILE_MAX + 1)  # sparse
    with pytest.raises(SessionTooLargeError, match="files over 512 MiB are not opened"):
        SessionStore.open(store.path)


def test_a_session_stops_growing_at_the_size_limit(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(store)
    monkeypatch.setattr(store_module, "CLOSING_RESERVE", 200)
    monkeypatch.setattr(store_module, "SESSION_FILE_MAX", store.path.stat().st_size + 800)
    with pytest.raises(SessionTooLargeError, match="the most the app opens; nothing was written"):
        store.append(run_facts("x" * 600))
    assert snapshot(store) == before
    store.append(run_facts("short"))  # what fits is still written


def test_a_run_that_reaches_the_limit_can_still_be_stopped(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(run_facts())
    operation = store.state.operation
    monkeypatch.setattr(store_module, "CLOSING_RESERVE", 1000)
    monkeypatch.setattr(store_module, "SESSION_FILE_MAX", store.path.stat().st_size + 900)  # in the reserve already
    with pytest.raises(SessionTooLargeError):  # nothing new may start (checked before the reducer)
        store.append(facts.user_entry("more"))
    store.append(abort_fact(store))  # but the run can be wound down: the session is never jammed
    store.append(facts.operation_aborted(operation_id=operation.operation_id))  # type: ignore[union-attr]
    assert store.state.operation.kind == "idle"


def test_closed_store_refuses_appends(store: SessionStore) -> None:
    store.close()
    store.close()
    assert store.closed
    with pytest.raises(SessionError, match="closed"):
        store.append(run_facts())


def test_commit_observers_see_committed_facts_and_cannot_break_appends(store: SessionStore) -> None:
    seen: list[list[SessionFact]] = []
    store.observe_commits(seen.append)
    store.observe_commits(lambda committed: 1 / 0)  # type: ignore[func-returns-value]
    committed = store.append(run_facts())
    assert len(seen) == 1
    user, run = seen[0]
    assert isinstance(user, UserEntry)
    assert isinstance(run, RunStarted)
    assert [(fact.seq, fact.id, fact.timestamp) for fact in seen[0]] == [
        (fact["seq"], fact["id"], fact["timestamp"]) for fact in committed
    ]
    assert user.message == committed[0]["entry"]["message"]
    assert (run.operation_id, run.input_entry_id) == (committed[1]["record"]["operationId"], user.id)
    with pytest.raises(TransactionRejectedError):
        store.append(run_facts())
    assert len(seen) == 1


def test_an_observer_given_at_open_hears_the_file_then_every_append(store: SessionStore) -> None:
    store.append(run_facts())
    store.close()
    heard: list[list[SessionFact]] = []
    with SessionStore.open(store.path, observer=heard.append) as reopened:
        assert [type(fact) for transaction in heard for fact in transaction] == [UserEntry, RunStarted]
        reopened.append(abort_fact(reopened))
    assert [type(fact) for fact in heard[-1]] == [AbortRequested]


def abort_fact(store: SessionStore) -> dict[str, Any]:
    return facts.abort_requested(operation_id=store.state.operation.operation_id, operation_kind="run", phase="model")  # type: ignore[union-attr]


def snapshot(store: SessionStore) -> tuple[bytes, str, int]:
    """The file's bytes, the reduced state as JSON, and the state's byte length."""
    return store.path.read_bytes(), json.dumps(state_to_json(store.state)), store.state.repaired_length


def test_failed_write_is_undone(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The append's fsync fails after the line was written: the line is truncated away (the undo's own fsync
    works), the state is unchanged, and the store stays usable."""
    store.append(run_facts())
    before = snapshot(store)
    real_fsync = os.fsync
    calls: list[int] = []

    def first_fsync_fails(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            assert store.path.stat().st_size > before[2]  # the line is on disk when the fsync fails
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", first_fsync_fails)
    with pytest.raises(SessionError, match="Could not write"):
        store.append(abort_fact(store))
    assert len(calls) == 2  # the append's fsync, then the undo's
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert not store.closed
    assert snapshot(store) == before
    committed = store.append(abort_fact(store))
    assert committed[0]["seq"] == store.state.next_seq - 1
    assert reduce_session(store.path.read_bytes()).fact_count == store.state.fact_count == 3


def test_failed_undo_closes_the_store(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write stops halfway and the undo's truncation fails too: the state is still unchanged, the store
    closes, and the next writable open truncates the torn line the failed undo left."""
    store.append(run_facts())
    data, state, _ = snapshot(store)
    real_write = os.write

    def half_write(fd: int, chunk: Any) -> int:
        if fd != store._fd:
            return real_write(fd, chunk)
        real_write(fd, bytes(chunk[: len(chunk) // 2]))
        raise OSError(28, "No space left on device")

    def failing_truncate(fd: int, length: int) -> None:
        raise OSError(5, "Input/output error")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "write", half_write)
        patch.setattr(os, "ftruncate", failing_truncate)
        with pytest.raises(SessionError, match="Could not write"):
            store.append(abort_fact(store))
    assert json.dumps(state_to_json(store.state)) == state
    assert store.closed
    torn = store.path.read_bytes()
    assert torn.startswith(data)
    assert len(torn) > len(data)
    with pytest.raises(SessionError, match="closed"):
        store.append(abort_fact(store))
    with SessionStore.open(store.path) as reopened:
        assert json.dumps(state_to_json(reopened.state)) == state
    assert store.path.read_bytes() == data


@pytest.mark.parametrize("where", ["write", "fsync"])
def test_an_interrupt_during_the_write_is_undone_and_re_raised(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Not only OSError: a KeyboardInterrupt after part of the line is written (or during the fsync) leaves the
    file and the state as they were, and propagates as itself."""
    store.append(run_facts())
    before = snapshot(store)
    real_write, real_fsync = os.write, os.fsync
    interrupted: list[str] = []

    def half_write(fd: int, data: Any) -> int:
        if fd != store._fd or interrupted:
            return real_write(fd, data)
        interrupted.append("write")
        real_write(fd, bytes(data[: len(data) // 2]))
        raise KeyboardInterrupt

    def interrupted_fsync(fd: int) -> None:
        if not interrupted:
            interrupted.append("fsync")
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(os, where, half_write if where == "write" else interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        store.append(abort_fact(store))
    assert interrupted == [where]
    monkeypatch.undo()
    assert not store.closed
    assert snapshot(store) == before
    store.append(abort_fact(store))
    assert reduce_session(store.path.read_bytes()).fact_count == 3


def test_close_waits_for_an_append_in_another_thread(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store may be shared between threads: close() takes the append lock, so it cannot close the file under a
    write or fsync in progress."""
    store.append(run_facts())
    real_fsync = os.fsync
    in_fsync, release = threading.Event(), threading.Event()

    def slow_fsync(fd: int) -> None:
        in_fsync.set()
        assert release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    outcome: list[Any] = []

    def appending() -> None:
        try:
            outcome.append(store.append(abort_fact(store)))
        except BaseException as error:  # reported by the assertions below
            outcome.append(error)

    appender = threading.Thread(target=appending)
    closer = threading.Thread(target=store.close)
    appender.start()
    assert in_fsync.wait(10)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # blocked on the append lock
    assert not store.closed
    release.set()
    appender.join(10)
    closer.join(10)
    assert not appender.is_alive()
    assert not closer.is_alive()
    assert isinstance(outcome[0], list), outcome
    assert store.closed
    with SessionStore.open(store.path) as reopened:
        assert reopened.state.fact_count == 3


def test_find_session_by_id(store: SessionStore, tmp_path: Path) -> None:
    assert find_session(tmp_path, store.session_id) == store.path
    with pytest.raises(SessionError, match="Invalid session ID"):
        find_session(tmp_path, "nope")
    with pytest.raises(SessionError, match="Session not found"):
        find_session(tmp_path, facts.new_id())
    with pytest.raises(SessionError, match="Session not found"):
        find_session(tmp_path / "missing", store.session_id)
    duplicate = store.path.with_name("2020-01-01T00-00-00-000Z_" + store.session_id + ".jsonl")
    duplicate.write_bytes(store.path.read_bytes())
    with pytest.raises(SessionError, match="Duplicate session ID"):
        find_session(tmp_path, store.session_id)


class _RereadTrap:
    """Counts ``os.read``/``os.pread`` calls and fails every way of opening one file again, while installed."""

    def __init__(self, path: Path) -> None:
        self.session_file = os.path.realpath(path)
        self.reads: list[int] = []
        self.opened: list[str] = []

    def _refuse(self, file: Any) -> None:
        if isinstance(file, int):
            return
        try:
            same = os.path.realpath(os.fspath(file)) == self.session_file
        except TypeError:
            return
        if same:
            self.opened.append(os.fspath(file))
            raise AssertionError(f"the session file was opened again: {file}")

    def _guarded(self, real: Any) -> Any:
        def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
            self._refuse(file)
            return real(file, *args, **kwargs)

        return guarded

    def _counted(self, real: Any) -> Any:
        def counted(fd: int, size: int, *args: Any) -> Any:
            self.reads.append(size)
            return real(fd, size, *args)

        return counted

    def install(self, patch: pytest.MonkeyPatch) -> None:
        """Patch os.read/os.pread (counted) and open, io.open, os.open, Path.open/read_bytes/read_text (guarded)."""
        for module, name in ((os, "read"), (os, "pread")):
            patch.setattr(module, name, self._counted(getattr(module, name)))
        openers = (
            (builtins, "open"),
            (io, "open"),
            (os, "open"),
            (Path, "open"),
            (Path, "read_bytes"),
            (Path, "read_text"),
        )
        for owner, name in openers:
            patch.setattr(owner, name, self._guarded(getattr(owner, name)))


def test_append_cost_does_not_grow_with_the_file(store: SessionStore) -> None:
    """O(1) per append: the file is never re-read, whether through os.read/os.pread on any descriptor or by opening
    the session file again (open, io.open, os.open, Path.open/read_bytes/read_text all fail on that path)."""
    script = SessionScript(store=store)
    for index in range(20):
        script.run(f"task {index}", [[Call("read")], "done"])
    trap = _RereadTrap(store.path)
    with pytest.MonkeyPatch.context() as patch:
        trap.install(patch)
        with pytest.raises(AssertionError, match="opened again"):  # the trap works
            store.path.read_bytes()
        trap.opened.clear()
        script.run("more", [[Call("read")], "done"])
    assert trap.reads == []
    assert trap.opened == []
