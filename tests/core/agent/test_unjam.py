"""A session can never be jammed by what a model sends: a lone surrogate in tool arguments is a malformed
response (committed as a failed run), a number JSON.stringify cannot print is recorded as null, and a session an
older version left jammed is closed by ``tiny-agent session abandon`` and accepts a new run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.agent.conftest import Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer
from tiny_agent_core.cli import main
from tiny_agent_core.errors import InvalidAssistantMessage, TransactionRejectedError
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session import facts
from tiny_agent_core.session.store import SessionStore


async def test_a_lone_surrogate_in_arguments_fails_the_run_durably(harness: Harness) -> None:
    harness.server.queue(tool_reply(("c1", "read", '{"path": "\\ud800"}')))
    result = await harness.agent.run("go")
    assert result.outcome == "failed"
    assert isinstance(result.error, InvalidAssistantMessage)
    assert harness.reduced().operation.kind == "idle"
    finished = harness.records_of("operationFinished")[-1]
    assert finished["error"] == {
        "code": "model_error",
        "message": "invalid assistant tool call function: lone surrogate in arguments",
    }
    harness.server.queue(text_reply("fine"))
    assert (await harness.agent.run("again")).outcome == "completed"


async def test_a_number_beyond_a_double_is_recorded_as_null(harness: Harness) -> None:
    (harness.workspace / "a.txt").write_text("hello\n", encoding="utf-8")
    harness.server.queue(tool_reply(("c1", "read", '{"path": "a.txt", "huge": 1e400}')), text_reply("done"))
    result = await harness.agent.run("go")
    assert result.outcome == "completed"
    assert harness.records_of("toolStarted")[0]["arguments"] == {"path": "a.txt", "huge": None}
    assert harness.reduced().operation.kind == "idle"


async def test_a_session_an_older_version_jammed_is_abandoned_then_runs(
    harness: Harness,
    workspace: Path,
    server: LoopbackServer,
    http: ProviderClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    harness.server.queue(text_reply("first"))
    assert (await harness.agent.run("first")).outcome == "completed"
    snapshot = harness.records_of("stepAttempt")[0]["configurationSnapshot"]  # the agent's own configuration
    store = harness.store
    user_id, operation_id, step_id, attempt_id = (facts.new_id() for _ in range(4))
    store.append(
        [
            facts.user_entry("go", entry_id=user_id),
            facts.run_started(operation_id=operation_id, input_entry_id=user_id),
        ]
    )
    store.append(
        facts.step_attempt(
            operation_id=operation_id,
            step_id=step_id,
            attempt_id=attempt_id,
            context_through_entry_id=user_id,
            configuration_snapshot=snapshot,
        )
    )
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "\\ud800"}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    store.append(facts.assistant_entry(message, step_id=step_id, attempt_id=attempt_id, stop_reason="toolUse"))
    with pytest.raises(TransactionRejectedError, match="MALFORMED_JSON"):
        await harness.agent.resume()  # the call can never be recorded as started: jammed
    store.close()

    assert main(["session", "abandon", str(store.path)]) == 0
    closed = json.loads(capsys.readouterr().out)["closed"]
    assert (closed["operationId"], closed["syntheticResults"]) == (operation_id, 1)

    again = make_agent(workspace, server, http, store=SessionStore.open(store.path))
    server.queue(text_reply("usable again"))
    result = await again.agent.run("next")
    assert (result.outcome, result.answer) == ("completed", "usable again")
    again.store.close()
