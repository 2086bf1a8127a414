"""The run loop against a real loopback provider: transactions, tools, approval, synthetic results, failures."""

from __future__ import annotations

from pathlib import Path

from tests.core.agent.conftest import API_KEY, Harness, make_agent, text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.agent import events
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT
from tiny_agent_core.usage import Usage


async def test_a_plain_answer(harness: Harness) -> None:
    harness.server.queue(text_reply("Hello there", usage=(2000, 2)))  # a prompt with the tools in it
    result = await harness.agent.run("hi")
    assert (result.outcome, result.answer) == ("completed", "Hello there")
    state = harness.reduced()
    assert state.operation.kind == "idle"
    assert state.transcript == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello there"},
    ]
    assert state.usage == Usage(2000, 2)
    sent = harness.request_messages(0)
    assert sent[0]["role"] == "system"
    assert sent[1:] == [{"role": "user", "content": "hi"}]
    body = harness.server.requests[0].json()
    assert body["stream"] is True
    assert [tool["function"]["name"] for tool in body["tools"]] == ["bash", "read", "write", "edit", "bg"]
    kinds = [type(event).__name__ for event in harness.events]
    assert kinds[:2] == ["RunStarted", "StepStarted"]
    assert "TextDelta" in kinds
    assert kinds[-2:] == ["StepFinished", "RunFinished"]
    finished = harness.events[-1]
    assert isinstance(finished, events.RunFinished)
    assert finished.outcome == "completed"
    assert [r.attempt_id for r in harness.records] == [harness.events[1].attempt_id]  # type: ignore[union-attr]


async def test_parallel_tool_calls_run_in_order_and_feed_the_next_step(harness: Harness) -> None:
    (harness.workspace / "a.txt").write_text("alpha\n")
    (harness.workspace / "b.txt").write_text("beta\n")
    harness.server.queue(
        tool_reply(("c1", "read", '{"path": "a.txt"}'), ("c2", "read", '{"path": "b.txt"}')),
        text_reply("Both read."),
    )
    result = await harness.agent.run("read both")
    assert result.outcome == "completed"
    sent = harness.request_messages(1)
    assert sent[-2:] == [
        {"role": "tool", "content": "alpha", "tool_call_id": "c1"},
        {"role": "tool", "content": "beta", "tool_call_id": "c2"},
    ]
    started = harness.records_of("toolStarted")
    assert [(r["toolName"], r["arguments"], r["replay"], r["replayKey"]) for r in started] == [
        ("read", {"path": "a.txt"}, "safe", "builtin:read:v1"),
        ("read", {"path": "b.txt"}, "safe", "builtin:read:v1"),
    ]
    assert harness.reduced().operation.kind == "idle"
    finished = [e for e in harness.events if isinstance(e, events.ToolFinished)]
    assert [(e.call_id, e.outcome) for e in finished] == [("c1", "success"), ("c2", "success")]


async def test_a_denied_tool_is_started_with_an_error_result(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    harness = make_agent(workspace, server, http, allow=("read",))
    server.queue(tool_reply(("w1", "write", '{"path": "x.txt", "content": "no"}')), text_reply("Understood."))
    result = await harness.agent.run("write it")
    harness.store.close()
    assert result.outcome == "completed"
    assert not (workspace / "x.txt").exists()
    tool_message = harness.request_messages(1)[-1]
    assert tool_message["tool_call_id"] == "w1"
    assert tool_message["content"].startswith("Error: Tool call denied; the tool was not executed.")
    assert [r["toolName"] for r in harness.records_of("toolStarted")] == ["write"]
    assert any(isinstance(e, events.ApprovalNeeded) and e.name == "write" for e in harness.events)


async def test_an_approved_write_runs(harness: Harness) -> None:
    harness.server.queue(tool_reply(("w1", "write", '{"path": "x.txt", "content": "yes"}')), text_reply("Done."))
    assert (await harness.agent.run("write it")).outcome == "completed"
    assert (harness.workspace / "x.txt").read_text() == "yes"


async def test_invalid_arguments_and_unknown_tools_get_synthetic_results(harness: Harness) -> None:
    harness.server.queue(
        tool_reply(("c1", "read", "{not json"), ("c2", "fly", "{}"), ("c3", "read", "[1]")),
        text_reply("Sorry."),
    )
    assert (await harness.agent.run("go")).outcome == "completed"
    assert harness.request_messages(1)[-3:] == [
        {"role": "tool", "content": SYNTHETIC_CONTENT["invalidArguments"], "tool_call_id": "c1"},
        {"role": "tool", "content": SYNTHETIC_CONTENT["unknownTool"], "tool_call_id": "c2"},
        {"role": "tool", "content": SYNTHETIC_CONTENT["invalidArguments"], "tool_call_id": "c3"},
    ]
    assert harness.records_of("toolStarted") == []
    assert harness.reduced().operation.kind == "idle"


async def test_length_with_calls_truncates_without_executing(harness: Harness) -> None:
    harness.server.queue(tool_reply(("c1", "bash", '{"command": "touch ran"}'), finish="length", content="partial"))
    result = await harness.agent.run("go")
    assert (result.outcome, result.answer) == ("completed", "partial")
    assert not (harness.workspace / "ran").exists()
    state = harness.reduced()
    assert state.transcript[-1] == {"role": "tool", "content": SYNTHETIC_CONTENT["truncated"], "tool_call_id": "c1"}
    finished = harness.records_of("operationFinished")[-1]
    assert (finished["outcome"], finished["completion"]) == ("completed", "truncated")


async def test_length_without_calls_keeps_the_text_and_fails(harness: Harness) -> None:
    reply = Reply.sse(
        'data: {"choices":[{"index":0,"delta":{"content":"half an ans"},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
    )
    harness.server.queue(reply)
    result = await harness.agent.run("go")
    assert result.outcome == "failed"
    state = harness.reduced()
    assert state.transcript[-1] == {"role": "assistant", "content": "half an ans"}
    assert state.operation.kind == "idle"
    assert "truncated" in str(result.error)


async def test_a_blank_final_answer_is_an_empty_response_failure(harness: Harness) -> None:
    harness.server.queue(text_reply("  "))
    result = await harness.agent.run("go")
    assert result.outcome == "failed"
    error = harness.records_of("operationFinished")[-1]["error"]
    assert error == {"code": "empty_response", "message": "Model returned an empty response (finish_reason: stop)."}


async def test_a_provider_error_fails_durably_in_one_transaction(harness: Harness) -> None:
    harness.server.queue(Reply.error(429, {"error": {"message": "slow down"}}, retry_after=3))
    result = await harness.agent.run("go")
    assert result.outcome == "failed"
    assert getattr(result.error, "retry_after", None) == 3.0
    last_line = harness.store.path.read_text().splitlines()[-1]
    assert '"stepFailed"' in last_line
    assert '"operationFinished"' in last_line
    assert harness.reduced().operation.kind == "idle"
    finished = harness.events[-1]
    assert isinstance(finished, events.RunFinished)
    assert (finished.error_kind, finished.retry_after) == ("http_error", 3.0)
    assert harness.records[0].error is not None


async def test_the_session_accepts_a_second_prompt_after_a_failure(harness: Harness) -> None:
    harness.server.queue(Reply.error(500, "boom"), text_reply("fine now"))
    assert (await harness.agent.run("one")).outcome == "failed"
    assert (await harness.agent.run("two")).answer == "fine now"
    assert [m["role"] for m in harness.reduced().transcript] == ["user", "user", "assistant"]


async def test_the_api_key_is_never_written(harness: Harness) -> None:
    harness.server.queue(tool_reply(("c1", "bash", '{"command": "echo hi"}')), text_reply("ok"))
    await harness.agent.run("go")
    for path in harness.workspace.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path
    assert harness.server.requests[0].headers.get("authorization") == f"Bearer {API_KEY}"


async def test_bash_output_is_reported_live_before_the_result(harness: Harness) -> None:
    harness.server.queue(tool_reply(("b1", "bash", '{"command": "echo one; sleep 0.2; echo two"}')), text_reply("ok"))
    await harness.agent.run("go")
    kinds = [
        (type(e).__name__, getattr(e, "text", None)) for e in harness.events if type(e).__name__.startswith("Tool")
    ]
    outputs = [text for kind, text in kinds if kind == "ToolOutput"]
    assert "".join(outputs) == "one\ntwo\n"
    assert len(outputs) == 2  # two pieces, as they were produced
    assert [kind for kind, _ in kinds][-1] == "ToolFinished"


async def test_a_key_http_cannot_carry_fails_typed_and_is_never_written(
    workspace: Path, server: LoopbackServer, http: ProviderClient
) -> None:
    bad_key = "sk-pasted-0123456789\nabcdef"
    harness = make_agent(workspace, server, http, api_key=bad_key)
    result = await harness.agent.run("hi")
    harness.store.close()
    assert result.outcome == "failed"
    assert type(result.error).__name__ == "ProviderConfigurationError"
    assert harness.reduced().operation.kind == "idle"
    data = harness.store.path.read_bytes()
    assert b"sk-pasted-0123456789" not in data
    assert "Paste the key again" in data.decode()
    assert server.requests == []  # nothing was sent
