"""Each fault class ends in its typed failure, within its timeout, with a message a user can act on."""

from __future__ import annotations

import time

import pytest

from tests.core.providers.support import FAST, TEST_KEY, run_chat
from tests.loopback import Abort, BlackHole, LoopbackServer, Reply, Send, Sleep, free_port_url, sse_events
from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    MalformedResponseError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderReportedError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.client import ChatCompleted, ProviderClient
from tiny_agent_core.providers.results import StreamedText
from tiny_agent_core.providers.transport import Timeouts

CHUNK = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}
CHUNK2 = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": None}]}
LAST = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE = {"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
GOOD = sse_events([CHUNK, CHUNK2, LAST, USAGE])


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ProviderHTTPError),
        (401, AuthenticationError),
        (402, PaymentRequiredError),
        (403, AuthenticationError),
        (404, ModelNotFoundError),
        (408, RateLimitError),
        (429, RateLimitError),
        (500, ServerError),
        (502, ServerError),
        (503, ServerError),
    ],
)
async def test_http_status_gives_typed_error(
    status: int, cls: type[ProviderHTTPError], server: LoopbackServer, client: ProviderClient
) -> None:
    server.queue(Reply.error(status, {"error": {"message": f"nope {status}", "type": "x"}}))
    events, stream, error = await run_chat(client, server.base_url)
    assert type(error) is cls
    assert isinstance(error, ProviderHTTPError)
    assert error.status == status
    assert f"nope {status}" in str(error)
    assert events == []
    assert stream.capture is not None
    assert stream.capture.status == status
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "http_error"
    assert stream.capture.error["status"] == status


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), ("0.5", 0.5)])
async def test_retry_after_header(header: str, seconds: float, server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.error(429, {"error": {"message": "slow down"}}, retry_after=header))
    _events, stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, RateLimitError)
    assert error.retry_after == seconds
    assert stream.capture is not None
    assert stream.capture.response_headers["retry-after"] == header
    assert stream.capture.error is not None
    assert stream.capture.error["retryAfter"] == seconds


async def test_retry_hint_in_body(server: LoopbackServer, client: ProviderClient) -> None:
    body = {"error": {"message": "Rate limit reached. Please try again in 20s.", "type": "tokens"}}
    server.queue(Reply.error(429, body, headers={"x-ratelimit-remaining-tokens": "0"}))
    _events, stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 20.0
    assert stream.capture is not None
    assert stream.capture.response_headers["x-ratelimit-remaining-tokens"] == "0"


async def test_stalled_stream_fails_after_read_timeout(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(GOOD, stall_after=1, stall=30))
    started = time.monotonic()
    events, stream, error = await run_chat(client, server.base_url, timeouts=Timeouts(connect=5, read=0.5))
    elapsed = time.monotonic() - started
    assert isinstance(error, ProviderTimeoutError)
    assert "0.5 s" in str(error)
    assert server.base_url in str(error)
    assert elapsed < 10
    assert [e for e in events if isinstance(e, StreamedText)] == [StreamedText("Hel")]
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "timeout"
    assert server.requests[0].wait_closed(5)


async def test_slow_headers_fail_after_read_timeout(server: LoopbackServer, client: ProviderClient) -> None:
    reply = Reply.sse(GOOD)
    reply.delay = 30
    server.queue(reply)
    _events, _stream, error = await run_chat(client, server.base_url, timeouts=Timeouts(read=0.3))
    assert isinstance(error, ProviderTimeoutError)


async def test_keepalive_comments_keep_a_slow_stream_alive(server: LoopbackServer, client: ProviderClient) -> None:
    """The read timeout is the time allowed without any byte: comments count as bytes."""
    text = ": PROCESSING\n\n" * 6 + GOOD
    server.queue(Reply.sse(text, pace=0.1))
    events, _stream, error = await run_chat(client, server.base_url, timeouts=Timeouts(read=0.4))
    assert error is None
    assert isinstance(events[-1], ChatCompleted)
    assert events[-1].response.message.content == "Hello"


async def test_connection_closed_mid_stream_chunked(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(GOOD, cut_after=1))
    events, stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderConnectionError)
    assert "closed before the response completed" in str(error)
    assert server.base_url in str(error)
    assert events == [StreamedText("Hel")]
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "connection"


async def test_connection_reset_mid_stream(server: LoopbackServer, client: ProviderClient) -> None:
    reply = Reply.sse(GOOD)
    reply.steps = [*reply.steps[:1], Sleep(0.05), Abort(reset=True)]
    server.queue(reply)
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderConnectionError)


async def test_close_delimited_stream_cut_is_incomplete(server: LoopbackServer, client: ProviderClient) -> None:
    """Without chunking the transport cannot tell a cut from the end: the adapter's end checks catch it."""
    server.queue(Reply.sse(GOOD, framing="close", cut_after=2))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, MalformedResponseError)
    assert "ended before the response completed" in str(error)


async def test_malformed_chunk_framing(server: LoopbackServer, client: ProviderClient) -> None:
    head = b"data: " + b'{"choices":[]}' + b"\n\n"
    reply = Reply(
        headers={"content-type": "text/event-stream", "transfer-encoding": "chunked"},
        steps=[Send(b"%x\r\n" % len(head) + head + b"\r\n"), Send(b"zz-not-a-size\r\nxx\r\n")],
        framing="raw",
    )
    server.queue(reply)
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderConnectionError)


async def test_malformed_json_chunk(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(sse_events([CHUNK, '{"choices": [', LAST])))
    events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, MalformedResponseError)
    assert events == [StreamedText("Hel")]


async def test_malformed_json_body_without_streaming(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.json(b"{not json"))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, MalformedResponseError)


async def test_html_instead_of_a_stream(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply(headers={"content-type": "text/html"}, steps=[Send(b"<html>proxy login</html>")]))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, MalformedResponseError)


async def test_midstream_error_event(server: LoopbackServer, client: ProviderClient) -> None:
    text = sse_events([CHUNK], done=False) + 'event: error\ndata: {"error": {"message": "upstream overloaded"}}\n\n'
    server.queue(Reply.sse(text))
    events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ProviderReportedError)
    assert "upstream overloaded" in str(error)
    assert events == [StreamedText("Hel")]


async def test_content_filtered_stream(server: LoopbackServer, client: ProviderClient) -> None:
    last = {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]}
    server.queue(Reply.sse(sse_events([CHUNK, last])))
    _events, _stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, ContentFilteredError)
    assert error.kind == "content_filter"


async def test_connection_refused(client: ProviderClient) -> None:
    url = free_port_url()
    _events, stream, error = await run_chat(client, url)
    assert isinstance(error, ProviderConnectionError)
    assert url in str(error)
    assert "Is the server running" in str(error)
    assert stream.capture is not None
    assert stream.capture.status is None


async def test_connect_timeout(client: ProviderClient) -> None:
    with BlackHole() as url:
        started = time.monotonic()
        _events, _stream, error = await run_chat(client, url, timeouts=Timeouts(connect=0.3, read=5))
        elapsed = time.monotonic() - started
    assert isinstance(error, ProviderTimeoutError)
    assert "Could not connect" in str(error)
    assert elapsed < 10


async def test_invalid_base_url(client: ProviderClient) -> None:
    _events, _stream, error = await run_chat(client, "ftp://example.invalid/v1")
    assert isinstance(error, ProviderConnectionError)
    assert "cannot be used" in str(error)


async def test_no_automatic_retry(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.error(503, {"error": {"message": "busy"}}), Reply.sse(GOOD))
    _events, _stream, error = await run_chat(client, server.base_url, timeouts=FAST)
    assert isinstance(error, ServerError)
    assert len(server.requests) == 1


async def test_key_never_in_error_messages(server: LoopbackServer, client: ProviderClient) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {TEST_KEY}."}}
    server.queue(Reply.error(401, body))
    _events, stream, error = await run_chat(client, server.base_url)
    assert isinstance(error, AuthenticationError)
    assert TEST_KEY not in str(error)
    assert TEST_KEY not in error.body
    assert stream.capture is not None
    assert TEST_KEY not in str(stream.capture.to_json())
