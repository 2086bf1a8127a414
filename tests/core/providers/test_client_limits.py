"""A broken or hostile provider cannot exhaust memory or hold a request open: every limit ends in a typed error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.core.providers.hostile import CASES
from tests.core.providers.support import FAST, run_chat
from tests.loopback import Generate, LoopbackServer, Reply, Send, Sleep, sse_events
from tiny_agent_core.errors import (
    MalformedResponseError,
    ProviderHTTPError,
    ProviderReportedError,
    ProviderTimeoutError,
    ResponseTooLargeError,
)
from tiny_agent_core.providers.client import ChatCompleted, Limits, ProviderClient
from tiny_agent_core.providers.profiles import custom_profile, list_models
from tiny_agent_core.providers.results import MAX_TOOL_CALLS
from tiny_agent_core.providers.transport import Timeouts

ROOT = Path(__file__).resolve().parents[3]
NESTED = b"[" * 100_000 + b"]" * 100_000


def _call(index: int, arguments: str = "{}") -> dict[str, Any]:
    function = {"name": "read", "arguments": arguments}
    return {"index": index, "id": f"call_{index}", "type": "function", "function": function}


def _calls_stream(count: int) -> str:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [_call(i)]}, "finish_reason": None}]} for i in range(count)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return sse_events(chunks)


@pytest.fixture
async def small() -> AsyncIterator[ProviderClient]:
    """A provider client with limits small enough to reach with a few KiB."""
    limits = Limits(
        response_bytes=4096,
        stream_bytes=64 * 1024,
        sse_event_bytes=2048,
        message_bytes=8192,
        tool_calls=4,
        tool_call_argument_bytes=1024,
    )
    http = httpx.AsyncClient(trust_env=False)
    async with ProviderClient(http, limits=limits) as provider:
        yield provider
    await http.aclose()


@pytest.mark.parametrize("case", sorted(CASES))
def test_real_size_hostile_response_is_refused_with_bounded_memory(case: str) -> None:
    """200 MB body, 300 MB SSE line without newline, 50 MB of tool-call arguments: refused, peak RSS < 300 MB."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.core.providers.hostile", case],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["error"]["type"] == "ResponseTooLargeError", result
    assert result["error"]["kind"] == "malformed"
    assert result["peakRssMb"] < 300, result


async def test_declared_content_length_over_the_limit_is_refused_unread(
    server: LoopbackServer, small: ProviderClient
) -> None:
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "x" * 10_000}}]})
    server.queue(Reply.json(body))
    _events, stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert error.limit == 4096
    assert "4096 bytes" in str(error)
    assert server.base_url in str(error)
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "malformed"
    assert stream.capture.response_body == ""


async def test_chunked_body_over_the_limit_is_refused(server: LoopbackServer, small: ProviderClient) -> None:
    server.queue(Reply(headers={"content-type": "application/json"}, steps=[Send(b"[" + b" " * 1000)] * 10))
    _events, _stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert error.limit == 4096


async def test_oversized_error_body_keeps_its_status(server: LoopbackServer, small: ProviderClient) -> None:
    """The status decides the error class; only the first ``response_bytes`` of the body are read."""
    server.queue(Reply(status=429, headers={"retry-after": "3"}, steps=[Send(b"slow down " * 100)] * 10))
    _events, stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 429
    assert error.retry_after == 3.0
    assert len(error.body) == 4096
    assert "larger than 4096 bytes" in str(error)
    assert stream.capture is not None
    assert stream.capture.status == 429


@pytest.mark.parametrize("status", [400, 500])
async def test_deeply_nested_error_body_is_a_typed_http_error(
    status: int, server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(status, NESTED))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == status
    assert str(error).startswith(f"HTTP {status}: [[[")


async def test_deeply_nested_body_and_stream_chunk_are_malformed(
    server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.json(NESTED), Reply.sse(b"data: " + NESTED + b"\n\n"))
    for _ in range(2):
        _events, _stream, error = await run_chat(client, server.base_url)
        assert type(error) is MalformedResponseError
        assert "nested more than 128 levels deep" in str(error)


async def test_deeply_nested_error_event_is_reported(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(b"event: error\ndata: " + NESTED + b"\n\n"))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderReportedError)


async def test_tool_calls_beyond_the_limit_are_refused(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(_calls_stream(MAX_TOOL_CALLS)), Reply.sse(_calls_stream(MAX_TOOL_CALLS + 1)))
    events, _stream, error = await run_chat(client, server.base_url)
    assert error is None
    assert isinstance(events[-1], ChatCompleted)
    assert len(events[-1].response.message.calls) == MAX_TOOL_CALLS
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert error.kind == "malformed"
    assert f"more than {MAX_TOOL_CALLS} tool calls" in str(error)


async def test_non_streamed_tool_calls_beyond_the_limit_are_refused(
    server: LoopbackServer, small: ProviderClient
) -> None:
    calls = [_call(i) for i in range(5)]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    server.queue(Reply.json({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}))
    profile = replace(custom_profile(server.base_url), streaming=False)
    _events, _stream, error = await run_chat(small, server.base_url, profile=profile)
    assert isinstance(error, ResponseTooLargeError)
    assert error.limit == 4


async def test_streamed_arguments_beyond_the_limit_are_refused_while_they_grow(
    server: LoopbackServer, small: ProviderClient
) -> None:
    piece = {"index": 0, "function": {"arguments": "a" * 500}}
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]} for call in [_call(0, ""), *[piece] * 50]]
    server.queue(Reply.sse(sse_events(chunks), pace=0.01))
    events, _stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert "larger than 1024 bytes (the limit for one call)" in str(error)
    assert len(events) == 3  # the call's start and two 500-byte pieces; the third crosses the limit
    assert server.requests[0].wait_closed(5)


async def test_streamed_text_beyond_the_message_limit_is_refused(server: LoopbackServer, small: ProviderClient) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "é" * 500}}]}  # 1000 bytes of UTF-8 each
    server.queue(Reply.sse(sse_events([chunk] * 20)))
    events, _stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert "larger than 8192 bytes (the size limit of one message)" in str(error)
    assert len(events) == 8


async def test_stream_beyond_the_total_limit_is_refused(server: LoopbackServer, small: ProviderClient) -> None:
    server.queue(Reply.sse(": keep-alive\n\n" * 10_000))
    _events, _stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert "larger than 65536 bytes (the size limit of a streamed response)" in str(error)


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"choices": [' + b" " * 3000,  # one line without a newline
        b"data: x\r\n" * 400,  # many lines, no blank line: one event
    ],
)
async def test_sse_event_beyond_the_limit_is_refused_before_it_is_assembled(
    body: bytes, server: LoopbackServer, small: ProviderClient
) -> None:
    server.queue(
        Reply(
            headers={"content-type": "text/event-stream"},
            steps=[Send(body[i : i + 500]) for i in range(0, len(body), 500)],
        )
    )
    _events, _stream, error = await run_chat(small, server.base_url)
    assert isinstance(error, ResponseTooLargeError)
    assert "an event larger than 2048 bytes" in str(error)


async def test_events_with_any_line_endings_stay_within_the_event_limit(
    server: LoopbackServer, small: ProviderClient
) -> None:
    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 1000}}]})
    last = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    text = f"data: {chunk}\r\n\r\ndata: {chunk}\r\rdata: {chunk}\n\ndata: {last}\n\ndata: [DONE]\n\n"
    server.queue(Reply(headers={"content-type": "text/event-stream"}, steps=[Send(text.encode())]))
    events, _stream, error = await run_chat(small, server.base_url)
    assert error is None
    assert isinstance(events[-1], ChatCompleted)


async def test_trickling_stream_is_cut_by_the_total_deadline(server: LoopbackServer, client: ProviderClient) -> None:
    """One byte every 0.2 s never trips a 1 s read timeout; the 1.5 s whole-request deadline ends it."""
    server.queue(Reply(headers={"content-type": "text/event-stream"}, steps=[Send(b":"), Sleep(0.2)] * 100))
    started = time.monotonic()
    _events, stream, error = await run_chat(client, server.base_url, timeouts=Timeouts(connect=5, read=1, total=1.5))
    elapsed = time.monotonic() - started
    assert isinstance(error, ProviderTimeoutError)
    assert "within 1.5 s (the whole-request time limit)" in str(error)
    assert 1.4 < elapsed < 3
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "timeout"
    assert server.requests[0].wait_closed(5)


async def test_total_deadline_covers_waiting_for_the_headers(server: LoopbackServer, client: ProviderClient) -> None:
    reply = Reply.sse(": hi\n\n")
    reply.delay = 30
    server.queue(reply)
    _events, _stream, error = await run_chat(client, server.base_url, timeouts=Timeouts(read=10, total=0.3))
    assert isinstance(error, ProviderTimeoutError)
    assert "0.3 s (the whole-request time limit)" in str(error)


async def test_trickling_json_body_is_cut_by_the_total_deadline(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply(headers={"content-type": "application/json"}, steps=[Send(b" "), Sleep(0.1)] * 100))
    profile = replace(custom_profile(server.base_url), streaming=False)
    _events, _stream, error = await run_chat(
        client, server.base_url, profile=profile, timeouts=Timeouts(read=5, total=0.5)
    )
    assert isinstance(error, ProviderTimeoutError)


async def test_no_total_deadline(server: LoopbackServer, client: ProviderClient) -> None:
    last = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    server.queue(Reply.sse(sse_events([last]), pace=0.05))
    events, _stream, error = await run_chat(client, server.base_url, timeouts=replace(FAST, total=None))
    assert error is None
    assert isinstance(events[-1], ChatCompleted)


async def test_model_list_over_the_limit_is_refused(server: LoopbackServer) -> None:
    def pieces() -> Iterator[bytes]:
        yield b'{"data": ['
        for _ in range(40):
            yield b'{"id": "m"},' * 100_000

    server.queue(Reply(headers={"content-type": "application/json"}, steps=[Generate(pieces)]))
    async with httpx.AsyncClient(trust_env=False) as http:
        with pytest.raises(ResponseTooLargeError):
            await list_models(http, custom_profile(server.base_url), None)
