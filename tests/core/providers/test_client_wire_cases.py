"""Every recorded case of ../shared/wire replayed over real HTTP through the client gives the adapter's result.

The expected value is ``tiny-agent wire normalize`` on the same bytes
(:func:`tiny_agent_core.cli.wire.normalize_bytes`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.providers.support import outcome, run_chat, without_generated_ids
from tests.loopback import LoopbackServer, Reply, Send, case_sse_text, load_case
from tests.shared_data import shared_files
from tiny_agent_core.cli.wire import normalize_bytes
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.results import StreamedText, StreamedToolCall, UsageReported

CASES = shared_files("wire/cases", "*.json")
SSE_CASES = [path for path in CASES if load_case(path)["kind"] == "sse"]
BODY_CASES = [path for path in CASES if load_case(path)["kind"] != "sse"]


def test_cases_present_or_skipped() -> None:
    if not CASES:
        pytest.skip("../shared is not present beside the project (a plain clone); wire cases skipped")
    assert SSE_CASES
    assert BODY_CASES


@pytest.mark.parametrize("framing", ["chunked", "close"])
@pytest.mark.parametrize("path", SSE_CASES, ids=lambda p: p.stem)
async def test_sse_case_over_http_equals_wire_normalize(
    path: Path, framing: str, server: LoopbackServer, client: ProviderClient
) -> None:
    case = load_case(path)
    text = case_sse_text(case)
    expected = normalize_bytes(text.encode("utf-8"), stream=True, status=200)
    server.queue(Reply.from_case(case, framing=framing))  # type: ignore[arg-type]

    events, stream, error = await run_chat(client, server.base_url)

    assert without_generated_ids(outcome(events, error)) == without_generated_ids(expected)
    assert stream.capture is not None
    assert text.replace("\r\n", "\n").startswith(stream.capture.response_body)
    if error is None:
        assert stream.capture.sse_events > 0
        # The streamed deltas add up to the final message.
        final = events[-1]
        assert isinstance(final, ChatCompleted)
        text_out = "".join(e.text for e in events if isinstance(e, StreamedText))
        assert text_out == (final.response.message.content or "")
        args: dict[int, str] = {}
        for event in events:
            if isinstance(event, StreamedToolCall):
                args[event.index] = args.get(event.index, "") + event.arguments
        assert len(args) == len(final.response.message.calls)
        usages = [e.usage for e in events if isinstance(e, UsageReported)]
        assert (usages[-1] if usages else None) == final.response.usage
        assert not server.requests[0].client_closed


@pytest.mark.parametrize("path", SSE_CASES[:3], ids=lambda p: p.stem)
async def test_paced_sse_case_is_delivered_incrementally(
    path: Path, server: LoopbackServer, client: ProviderClient
) -> None:
    case = load_case(path)
    expected = normalize_bytes(case_sse_text(case).encode("utf-8"), stream=True, status=200)
    server.queue(Reply.from_case(case, pace=0.002))
    events, _stream, error = await run_chat(client, server.base_url)
    assert without_generated_ids(outcome(events, error)) == without_generated_ids(expected)


@pytest.mark.parametrize("path", BODY_CASES, ids=lambda p: p.stem)
async def test_body_case_over_http_equals_wire_normalize(
    path: Path, server: LoopbackServer, client: ProviderClient
) -> None:
    """JSON and error cases: streaming switched off (profile), and also answered with JSON to a stream request."""
    case = load_case(path)
    status = case.get("http_status") or (200 if case["kind"] == "response" else 400)
    body = json.dumps(case["body"], ensure_ascii=False).encode("utf-8")
    expected = normalize_bytes(body, stream=False, status=status)
    reply = Reply.json(body, status=status, headers={"x-request-id": "req_123"})
    server.queue(reply, reply)

    profile = custom_profile(server.base_url)
    no_stream = type(profile)(**{**profile.__dict__, "streaming": False})
    for chosen in (no_stream, profile):
        events, stream, error = await run_chat(client, server.base_url, profile=chosen)
        assert without_generated_ids(outcome(events, error)) == without_generated_ids(expected)
        assert stream.capture is not None
        assert stream.capture.status == status
        assert stream.capture.request_id == "req_123"

    assert "stream" not in server.requests[0].json()
    assert server.requests[1].json()["stream"] is True


@pytest.mark.parametrize("path", SSE_CASES, ids=lambda p: p.stem)
async def test_sse_case_split_at_arbitrary_bytes(path: Path, server: LoopbackServer, client: ProviderClient) -> None:
    """TCP may split anywhere: mid-line, mid-event, inside a multi-byte UTF-8 character."""
    case = load_case(path)
    text = case_sse_text(case)
    expected = normalize_bytes(text.encode("utf-8"), stream=True, status=200)
    data = text.encode("utf-8")
    reply = Reply(
        headers={"content-type": "text/event-stream"}, steps=[Send(data[i : i + 7]) for i in range(0, len(data), 7)]
    )
    server.queue(reply)
    events, _stream, error = await run_chat(client, server.base_url)
    assert without_generated_ids(outcome(events, error)) == without_generated_ids(expected)
