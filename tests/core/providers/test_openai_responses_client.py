"""The Responses API end to end through ``ProviderClient.stream_chat`` over the loopback server: recordings replayed
as real HTTP streams and bodies, the request as sent, typed HTTP errors, and the server-state fallback."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.core.providers.support import TEST_KEY, run_chat
from tests.core.providers.test_openai_responses import EXPECTED, RECORDINGS, check, recording
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.errors import ModelNotFoundError, ProviderHTTPError
from tiny_agent_core.providers.api_kinds import SERVER_STATE_LOST, normalize_sse_text
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.openai_responses import ADAPTER, normalize_response_body
from tiny_agent_core.providers.profiles import ProviderProfile, custom_profile
from tiny_agent_core.providers.results import ConversationState, StreamedText, StreamedToolCall

STREAMS = sorted(name for name in EXPECTED if not name.endswith(".json"))
BODIES = sorted(name for name in EXPECTED if name.endswith(".json"))


def responses_profile(base_url: str, **changes: Any) -> ProviderProfile:
    return replace(custom_profile(base_url), api="openai-responses", **changes)


@pytest.mark.parametrize("name", STREAMS)
async def test_recorded_stream_over_http_equals_the_adapter(
    name: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.sse(recording(name)))
    events, stream, failure = await run_chat(client, server.base_url, profile=responses_profile(server.base_url))
    assert failure is None
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response == normalize_sse_text(ADAPTER, recording(name))
    check(final.response, EXPECTED[name])
    shown = "".join(event.text for event in events if isinstance(event, StreamedText))
    assert shown == (final.response.message.content or "")
    request = server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert request.headers["accept"] == "text/event-stream"
    sent = request.json()
    assert sent["store"] is False
    assert sent["stream"] is True
    assert sent["instructions"] == "Be brief."
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hi."}]}
    assert sent["input"] == [user]
    assert stream.capture is not None


@pytest.mark.parametrize("name", BODIES)
async def test_recorded_body_over_http_equals_the_adapter(
    name: str, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.json(recording(name)))
    profile = responses_profile(server.base_url, streaming=False)
    events, _, failure = await run_chat(client, server.base_url, profile=profile)
    assert failure is None
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response == normalize_response_body(recording(name))
    assert "stream" not in server.requests[0].json()
    calls = [event for event in events if isinstance(event, StreamedToolCall)]
    assert [call.arguments for call in calls] == [call.function.arguments for call in final.response.message.calls]


@pytest.mark.parametrize(
    ("name", "status", "cls"),
    [
        ("error-400-decimal-below-min.json", 400, ProviderHTTPError),
        ("error-404-model-not-found.json", 404, ModelNotFoundError),
    ],
)
async def test_recorded_http_error_is_typed(
    name: str, status: int, cls: type[Exception], server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(status, recording(name)))
    _, _, failure = await run_chat(client, server.base_url, profile=responses_profile(server.base_url))
    assert type(failure) is cls
    assert len(server.requests) == 1


HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
]


async def chained(client: ProviderClient, profile: ProviderProfile, state: ConversationState | None) -> Any:
    events = []
    async with client.stream_chat(profile, model="gpt-5", messages=HISTORY, api_key=TEST_KEY, state=state) as stream:
        async for event in stream:
            events.append(event)
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    return final


async def test_chained_request_sends_only_the_new_items(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(recording("stream-text.sse")))
    profile = responses_profile(server.base_url, server_state=True)
    final = await chained(client, profile, ConversationState("resp_prev", 2))
    sent = server.requests[0].json()
    assert sent["previous_response_id"] == "resp_prev"
    assert sent["store"] is True
    assert sent["input"] == [{"type": "function_call_output", "call_id": "call_1", "output": "18 C"}]
    assert final.response.outbound_repairs == ()
    assert final.response.response_id == "resp_01000000000000000000000000000000000000000000000000"


async def test_lost_server_state_is_resent_once_with_the_whole_transcript(
    server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(400, recording("error-400-previous-response-not-found.json")))
    server.queue(Reply.sse(recording("stream-function-call.sse")))
    profile = responses_profile(server.base_url, server_state=True)
    final = await chained(client, profile, ConversationState("resp_gone", 2))
    first, second = (request.json() for request in server.requests)
    assert first["previous_response_id"] == "resp_gone"
    assert len(first["input"]) == 1
    assert "previous_response_id" not in second
    assert [item["type"] for item in second["input"]] == ["message", "function_call", "function_call_output"]
    assert second["store"] is True
    assert final.response.outbound_repairs == (SERVER_STATE_LOST,)
    assert final.capture.outbound_repairs == (SERVER_STATE_LOST,)
    assert final.response.stop_reason == "toolUse"


async def test_state_lost_reported_in_the_stream_is_resent_too(server: LoopbackServer, client: ProviderClient) -> None:
    lost = {
        "type": "error",
        "sequence_number": 0,
        "error": {
            "type": "invalid_request_error",
            "code": "previous_response_not_found",
            "message": "Previous response with id 'resp_gone' not found.",
            "param": "previous_response_id",
        },
    }
    server.queue(Reply.sse(f"event: error\ndata: {json.dumps(lost)}\n\n"), Reply.sse(recording("stream-text.sse")))
    profile = responses_profile(server.base_url, server_state=True)
    final = await chained(client, profile, ConversationState("resp_gone", 2))
    assert "previous_response_id" not in server.requests[1].json()
    assert final.response.outbound_repairs == (SERVER_STATE_LOST,)
    assert final.response.message.content == "streamed"


async def test_state_lost_again_is_not_resent_twice(server: LoopbackServer, client: ProviderClient) -> None:
    lost = recording("error-400-previous-response-not-found.json")
    server.queue(Reply.error(400, lost))
    server.queue(Reply.error(400, lost))
    profile = responses_profile(server.base_url, server_state=True)
    with pytest.raises(ProviderHTTPError, match="not found"):
        await chained(client, profile, ConversationState("resp_gone", 2))
    assert len(server.requests) == 2


async def test_other_errors_of_a_chained_request_are_not_resent(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.error(400, recording("error-400-decimal-below-min.json")))
    profile = responses_profile(server.base_url, server_state=True)
    with pytest.raises(ProviderHTTPError, match="temperature"):
        await chained(client, profile, ConversationState("resp_prev", 2))
    assert len(server.requests) == 1


def test_recordings_directory_has_sources() -> None:
    sources = (RECORDINGS / "SOURCES.md").read_text(encoding="utf-8")
    for path in RECORDINGS.iterdir():
        if path.name != "SOURCES.md":
            assert f"`{path.name}`" in sources
    assert json.loads(recording("error-404-model-not-found.json"))["error"]["code"] == "model_not_found"


# --- through the real agent -----------------------------------------------------------------------------------


async def test_a_tool_round_trip_goes_back_as_function_call_items(
    tmp_path: Path, server: LoopbackServer, client: ProviderClient
) -> None:
    from tests.core.agent.conftest import Harness
    from tiny_agent_core.agent.loop import Agent
    from tiny_agent_core.session.store import SessionStore
    from tiny_agent_core.tools.approval import AllowListApprover, ApprovalPolicy, ToolSettings
    from tiny_agent_core.tools.registry import builtin_tools

    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = SessionStore.create(workspace, model="gpt-4o", provider="custom")
    harness = Harness(workspace, server, None, store)  # type: ignore[arg-type]
    harness.agent = Agent(
        store=store,
        client=client,
        profile=responses_profile(server.base_url),
        model="gpt-4o",
        workspace=workspace,
        tools=builtin_tools(workspace, names=("read",)),
        policy=ApprovalPolicy(ToolSettings.in_memory()),
        approver=AllowListApprover(()),
        api_key=TEST_KEY,
        on_event=harness.events.append,
        record_request=harness.records.append,
    )
    # A get_capital call (a tool this agent does not have), then a text answer.
    server.queue(Reply.sse(recording("stream-function-call.sse")), Reply.sse(recording("stream-text.sse")))
    await harness.agent.run("What is the capital of France?")
    store.close()
    first, second = (request.json() for request in server.requests)
    assert [tool["name"] for tool in first["tools"]] == ["read"]
    assert first["tools"][0]["type"] == "function"
    assert first["store"] is False
    assert second["instructions"] == first["instructions"]
    assert "previous_response_id" not in second
    user, call_item, output_item = second["input"]
    assert user == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "What is the capital of France?"}],
    }
    assert call_item == {
        "type": "function_call",
        "call_id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
        "name": "get_capital",
        "arguments": '{"country":"France"}',
    }
    assert output_item["type"] == "function_call_output"
    assert output_item["call_id"] == "call_kL0PCQV7M2WMoVX8V8OtYSAL"
    assert output_item["output"].startswith("Error: Unknown tool")
    assert harness.reduced().transcript[-1]["content"] == "streamed"
