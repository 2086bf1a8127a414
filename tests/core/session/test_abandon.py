"""``abandon_operation`` and ``tiny-agent session abandon``: any open operation is closed as aborted, through the
store and the planner's abort branch, with no provider; the session is then idle and accepts a new run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript, current_configuration
from tiny_agent_core.cli import main
from tiny_agent_core.session import RunOperation, SessionStore, facts, plan_recovery, reduce_session
from tiny_agent_core.session.abandon import abandon_operation
from tiny_agent_core.session.store import sessions_directory


@pytest.fixture
def script(tmp_path: Path) -> Any:
    store = SessionStore.create(tmp_path, model="test/model", environment="fixture")
    yield SessionScript(store=store)
    store.close()


def open_attempt(script: SessionScript) -> str:
    """A run whose model request was in flight when the process died."""
    user_id, operation_id = facts.new_id(), facts.new_id()
    script.commit(
        [
            facts.user_entry("go", entry_id=user_id),
            facts.run_started(operation_id=operation_id, input_entry_id=user_id),
        ]
    )
    script.commit([script.step_attempt(operation_id, facts.new_id(), facts.new_id())])
    return operation_id


def jammed_by_a_lone_surrogate(script: SessionScript) -> str:
    """What versions before the seam check wrote: a call whose arguments decode to a lone surrogate, which no
    ``toolStarted`` can record, so every recovery was refused (``MALFORMED_JSON``)."""
    operation_id = open_attempt(script)
    assert script.store is not None
    operation = script.store.state.operation
    assert isinstance(operation, RunOperation)
    step = operation.step
    assert step is not None
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "\\ud800"}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    script.commit(
        [facts.assistant_entry(message, step_id=step.step_id, attempt_id=step.attempt_id, stop_reason="toolUse")]
    )
    return operation_id


def records(store: SessionStore) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in store.path.read_bytes().splitlines()[1:]:
        value = json.loads(line)
        out.extend(fact["record"] for fact in (value if isinstance(value, list) else [value]) if "record" in fact)
    return out


def assert_usable(store: SessionStore) -> None:
    """Idle on disk, and a new run is accepted and planned."""
    assert reduce_session(store.path.read_bytes()).operation.kind == "idle"
    assert store.state.operation.kind == "idle"
    user_id = facts.new_id()
    store.append(
        [
            facts.user_entry("again", entry_id=user_id),
            facts.run_started(operation_id=facts.new_id(), input_entry_id=user_id),
        ]
    )
    assert plan_recovery(store.state, current_configuration())["type"] == "startStep"


def test_an_open_attempt_is_closed(script: SessionScript) -> None:
    assert script.store is not None
    operation_id = open_attempt(script)
    closed = abandon_operation(script.store)
    assert closed is not None
    assert closed.as_json() == {
        "operationId": operation_id,
        "operationKind": "run",
        "abortRequested": True,
        "attemptsClosed": 1,
        "syntheticResults": 0,
    }
    kinds = [(record["type"], record.get("outcome")) for record in records(script.store)]
    assert kinds[-3:] == [("abortRequested", None), ("stepFailed", None), ("operationFinished", "aborted")]
    assert records(script.store)[-2]["error"] == {"code": "aborted", "message": "Operation aborted"}
    assert_usable(script.store)


def test_started_and_unstarted_calls_get_their_synthetic_results(script: SessionScript) -> None:
    assert script.store is not None
    script.run("go", [[Call("bash", '{"command":"make"}', outcome="pending"), Call("read")]], finish="open")
    closed = abandon_operation(script.store)
    assert closed is not None
    assert (closed.attempts_closed, closed.synthetic_results) == (0, 2)
    reasons = [message["content"] for message in script.store.state.transcript if message["role"] == "tool"]
    assert reasons == [
        "Operation interrupted after execution status became unknown; the tool was not replayed.",
        "Operation aborted before execution.",
    ]
    assert_usable(script.store)


def test_a_session_jammed_by_a_lone_surrogate_becomes_usable(script: SessionScript) -> None:
    assert script.store is not None
    jammed_by_a_lone_surrogate(script)
    plan = plan_recovery(script.store.state, current_configuration())
    assert plan["type"] == "startTool"
    assert plan["arguments"] == {"path": "\ud800"}  # what could never be recorded
    closed = abandon_operation(script.store)
    assert closed is not None
    assert closed.synthetic_results == 1
    assert_usable(script.store)


def test_an_abort_already_requested_is_finished(script: SessionScript) -> None:
    assert script.store is not None
    operation_id = open_attempt(script)
    script.commit([facts.abort_requested(operation_id=operation_id, operation_kind="run", phase="model")])
    closed = abandon_operation(script.store)
    assert closed is not None
    assert (closed.abort_requested, closed.attempts_closed) == (False, 1)
    assert_usable(script.store)


def test_an_open_compaction_is_closed(script: SessionScript) -> None:
    assert script.store is not None
    script.run("one", ["answer one"])
    script.run("two", ["answer two"])
    source = list(script.messages)
    operation_id = facts.new_id()
    script.commit(
        [
            facts.compaction_started(
                operation_id=operation_id,
                input_through_entry_id=source[-1][0],
                result_entry_id=facts.new_id(),
                compacted_entry_ids=[entry_id for entry_id, _ in source[:2]],
                retained_entry_ids=[entry_id for entry_id, _ in source[2:]],
                source_digest=facts.source_digest(source),
            )
        ]
    )
    script.active_through = source[-1][0]
    script.commit([script.step_attempt(operation_id, facts.new_id(), facts.new_id(), kind="compaction")])
    closed = abandon_operation(script.store)
    assert closed is not None
    assert (closed.operation_kind, closed.attempts_closed) == ("compaction", 1)
    assert records(script.store)[-3]["phase"] == "compact"
    assert_usable(script.store)


def test_an_idle_session_has_nothing_to_close(script: SessionScript) -> None:
    assert script.store is not None
    script.run("go", ["done"])
    before = script.store.path.read_bytes()
    assert abandon_operation(script.store) is None
    assert script.store.path.read_bytes() == before


# --- the command -------------------------------------------------------------------------------------------------


def abandon(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["session", "abandon", str(path)])
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return code, json.loads(out)


def test_command_closes_a_jammed_session(script: SessionScript, capsys: pytest.CaptureFixture[str]) -> None:
    assert script.store is not None
    operation_id = jammed_by_a_lone_surrogate(script)
    path = script.store.path
    script.store.close()
    code, out = abandon(path, capsys)
    assert code == 0
    assert out == {
        "ok": True,
        "closed": {
            "operationId": operation_id,
            "operationKind": "run",
            "abortRequested": True,
            "attemptsClosed": 0,
            "syntheticResults": 1,
        },
    }
    with SessionStore.open(path) as store:
        assert_usable(store)
    code, out = abandon(path, capsys)  # the run assert_usable started, before any step
    assert (code, out["closed"]["attemptsClosed"], out["closed"]["syntheticResults"]) == (0, 0, 0)
    assert abandon(path, capsys) == (0, {"ok": True, "closed": None})
    assert reduce_session(path.read_bytes()).operation.kind == "idle"


def test_command_refuses_a_session_another_writer_holds(
    script: SessionScript, capsys: pytest.CaptureFixture[str]
) -> None:
    assert script.store is not None
    open_attempt(script)
    before = script.store.path.read_bytes()
    code, out = abandon(script.store.path, capsys)
    assert code == 2
    assert out["error"]["code"] == "SESSION_LOCKED"
    assert "open for writing in another window or process" in out["error"]["message"]
    assert script.store.path.read_bytes() == before


def test_command_reports_files_it_cannot_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = sessions_directory(tmp_path)
    folder.mkdir(parents=True)
    empty = folder / f"2026-01-01T00-00-00-000Z_{facts.new_id()}.jsonl"
    empty.write_bytes(b"")
    code, out = abandon(empty, capsys)
    assert code == 2
    assert (out["error"]["code"], out["error"]["line"]) == ("MISSING_HEADER", 1)
    assert "can be deleted" in out["error"]["message"]
    code, out = abandon(folder / "not-a-session.jsonl", capsys)
    assert (code, out["error"]["code"]) == (2, "SESSION_ERROR")
    code, out = abandon(folder / f"2026-01-01T00-00-00-000Z_{facts.new_id()}.jsonl", capsys)
    assert (code, out["error"]["code"]) == (2, "FILE_UNREADABLE")
