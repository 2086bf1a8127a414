"""The Anthropic adapter end to end: recorded streams and bodies replayed by the loopback server through
``ProviderClient.stream_chat`` with a profile of API kind ``anthropic`` (the same result as the adapter gives for
the same bytes, the request in the Messages API's form), typed HTTP and mid-stream errors, and Anthropic cache usage
landing in the ledger as cache read/write priced at the cache rates."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.core.providers.support import TEST_KEY, run_chat
from tests.loopback import LoopbackServer, Reply
from tiny_agent_core.errors import RateLimitError, ServerError
from tiny_agent_core.providers.anthropic import normalize_body, normalize_sse_text
from tiny_agent_core.providers.anthropic_request import ANTHROPIC_VERSION, MAX_CACHE_BREAKPOINTS
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.results import StreamedText, UsageReported
from tiny_agent_core.usage import Usage

RECORDINGS = Path(__file__).parent / "recordings" / "anthropic"


def recording(prefix: str) -> dict[str, Any]:
    """The recording whose file name starts with ``prefix``."""
    (path,) = RECORDINGS.glob(f"{prefix}-*.json")
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def anthropic_profile(server: LoopbackServer, *, streaming: bool = True) -> ProviderProfile:
    """A profile of API kind ``anthropic`` pointing at the loopback server."""
    return ProviderProfile("anthropic", "Anthropic", server.base_url, streaming=streaming, api="anthropic")


@pytest.mark.parametrize("prefix", ["01", "02", "03", "04", "05"])
async def test_recorded_streams_give_the_adapters_result_through_the_client(
    prefix: str, server: LoopbackServer, client: ProviderClient
) -> None:
    case = recording(prefix)
    server.queue(Reply.from_case(case))
    events, stream, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server))
    assert failure is None
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response == normalize_sse_text(case["sse"])
    texts = "".join(event.text for event in events if isinstance(event, StreamedText))
    assert texts == (final.response.message.content or "")
    assert any(isinstance(event, UsageReported) for event in events)
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == TEST_KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in request.headers
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert body["stream"] is True
    assert body["max_tokens"] > 0
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Say hi.", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert stream.capture is not None


@pytest.mark.parametrize("prefix", ["08", "10"])
async def test_recorded_json_bodies_when_the_profile_does_not_stream(
    prefix: str, server: LoopbackServer, client: ProviderClient
) -> None:
    case = recording(prefix)
    server.queue(Reply.from_case(case))
    events, _, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server, streaming=False))
    assert failure is None
    final = events[-1]
    assert isinstance(final, ChatCompleted)
    assert final.response == normalize_body(json.dumps(case["body"]))
    assert "stream" not in server.requests[0].json()


async def test_529_overloaded_is_a_typed_server_error(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.from_case(recording("16")))
    _, stream, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server))
    assert isinstance(failure, ServerError)
    assert failure.status == 529
    assert stream.capture is not None


async def test_429_carries_retry_after(server: LoopbackServer, client: ProviderClient) -> None:
    case = recording("15")
    server.queue(Reply.error(429, case["body"], retry_after="12"))
    _, _, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server))
    assert isinstance(failure, RateLimitError)
    assert failure.retry_after == 12.0


async def test_a_mid_stream_error_event_fails_the_request_with_the_usage_so_far(
    server: LoopbackServer, client: ProviderClient
) -> None:
    head = recording("01")["sse"].split("event: content_block_delta")[0]
    server.queue(Reply.sse(head + recording("17")["sse"]))
    events, _, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server))
    assert isinstance(failure, ServerError)
    assert failure.usage == Usage(17, 1)
    assert not any(isinstance(event, ChatCompleted) for event in events)


def test_the_profile_api_kind_selects_the_adapter() -> None:
    from tiny_agent_core.providers.api_kinds import adapter_for

    profile = replace(ProviderProfile("anthropic", "Anthropic", "https://api.anthropic.com/v1"), api="anthropic")
    assert adapter_for(profile.api).request_url(profile) == "https://api.anthropic.com/v1/messages"


# --- the ledger ----------------------------------------------------------------------------------------------


def anthropic_agent(tmp_path: Path, server: LoopbackServer, client: ProviderClient, *, streaming: bool) -> Any:
    """A real agent (no tools offered, none approved) in a fresh workspace, speaking Anthropic to the server."""
    from tests.core.agent.conftest import AllowListApprover, Harness
    from tiny_agent_core.agent.loop import Agent
    from tiny_agent_core.session.store import SessionStore
    from tiny_agent_core.tools.approval import ApprovalPolicy, ToolSettings
    from tiny_agent_core.tools.registry import builtin_tools

    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = SessionStore.create(workspace, model=MODEL, provider="anthropic")
    harness = Harness(workspace, server, None, store)  # type: ignore[arg-type]
    harness.agent = Agent(
        store=store,
        client=client,
        profile=anthropic_profile(server, streaming=streaming),
        model=MODEL,
        workspace=workspace,
        tools=builtin_tools(workspace, names=("read",)),
        policy=ApprovalPolicy(ToolSettings.in_memory()),
        approver=AllowListApprover(()),
        api_key=TEST_KEY,
        on_event=harness.events.append,
        record_request=harness.records.append,
    )
    return harness


MODEL = "claude-sonnet-4-5"


async def test_a_tool_round_trip_goes_back_as_tool_use_and_tool_result_blocks(
    tmp_path: Path, server: LoopbackServer, client: ProviderClient
) -> None:
    harness = anthropic_agent(tmp_path, server, client, streaming=True)
    server.queue(Reply.from_case(recording("03")), Reply.from_case(recording("01")))  # a tool call, then an answer
    await harness.agent.run("What is the weather in Paris?")
    harness.store.close()
    first, second = (request.json() for request in server.requests)
    assert [tool["name"] for tool in first["tools"]] == ["read"]
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assistant, results = second["messages"][1:]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I'll check the current weather in Paris for you."},
            {
                "type": "tool_use",
                "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "name": "get_weather",
                "input": {"location": "Paris"},
            },
        ],
    }
    [result] = results["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert result["content"] == "Error: Unknown tool; the tool was not executed."  # the agent does not have it
    assert result["cache_control"] == {"type": "ephemeral"}
    assert second["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(second).count('"cache_control"') == MAX_CACHE_BREAKPOINTS
    assert harness.reduced().transcript[-1]["content"] == "- Captain\n- Scoop"


async def test_anthropic_cache_usage_lands_in_the_ledger_priced_at_the_cache_rates(
    tmp_path: Path, server: LoopbackServer, client: ProviderClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_agent_core.agent.recording import LedgerRecorder
    from tiny_agent_core.ledger import connect
    from tiny_agent_core.ledger.costs import cost_rows
    from tiny_agent_core.ledger.repricing import refresh_prices
    from tiny_agent_core.pricing import PriceOverride

    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))  # never the user's ledger or settings
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    harness = anthropic_agent(tmp_path, server, client, streaming=False)
    server.queue(Reply.from_case(recording("08")))  # input 3, cache read 1111, cache write 418, output 33
    await harness.agent.run("Explain Python briefly.")
    store = harness.store
    conn = connect()
    recorder = LedgerRecorder(conn, store.path, harness.workspace)
    try:
        for record in harness.records:
            recorder(record)
        rates = PriceOverride(Decimal(3), Decimal(15), cache_read=Decimal("0.30"), cache_write=Decimal("3.75"))
        refresh_prices(conn, {("anthropic", MODEL): rates})
        row = conn.execute(
            "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, cost_source FROM requests"
        ).fetchone()
        expected = (3 * Decimal(3) + 33 * Decimal(15) + 1111 * Decimal("0.30") + 418 * Decimal("3.75")) / 10**6
        assert row[:4] == (3, 33, 1111, 418)
        assert Decimal(row[4]) == expected
        assert row[5] == "override"
        [totals] = cost_rows(conn)
        assert totals.cost == expected
    finally:
        recorder.close()
        conn.close()
        store.close()


async def test_the_capture_names_where_the_key_went_and_copy_as_curl_puts_it_there(
    server: LoopbackServer, client: ProviderClient
) -> None:
    from tiny_agent_core.wire_view import curl_command

    server.queue(Reply.from_case(recording("01")))
    _events, stream, failure = await run_chat(client, server.base_url, profile=anthropic_profile(server))
    assert failure is None
    assert stream.capture is not None
    captured = stream.capture.to_json()
    assert captured["credentialHeaders"] == ["x-api-key"]
    assert TEST_KEY not in json.dumps(captured)
    curl = curl_command(captured)
    assert curl is not None
    assert '-H "x-api-key: $API_KEY"' in curl
    assert "Authorization" not in curl
