"""Cancellation closes the HTTP response promptly (the server sees the connection go) and leaves no warnings."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings

import pytest

from tests.core.providers.support import FAST, MESSAGES, TEST_KEY
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.providers.client import ChatEvent, ChatStream, ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.providers.results import StreamedText

SLOW = sse_events(
    [{"id": "c", "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}]} for i in range(400)]
)


def _stream(client: ProviderClient, server: LoopbackServer) -> ChatStream:
    return client.stream_chat(
        custom_profile(server.base_url), model="m", messages=MESSAGES, api_key=TEST_KEY, timeouts=FAST
    )


async def _consume(stream: ChatStream, seen: asyncio.Event, events: list[ChatEvent]) -> None:
    async with stream:
        async for event in stream:
            events.append(event)
            seen.set()


async def test_cancelling_the_consumer_closes_the_connection(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(SLOW, pace=0.05))
    stream = _stream(client, server)
    seen = asyncio.Event()
    events: list[ChatEvent] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = asyncio.create_task(_consume(stream, seen, events))
        await asyncio.wait_for(seen.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        closed = await asyncio.to_thread(server.requests[0].wait_closed, 5)
        gc.collect()
        await asyncio.sleep(0)
    assert closed, "the server did not see the connection close"
    assert server.requests[0].client_closed
    assert not server.requests[0].response_complete
    assert events
    assert isinstance(events[0], StreamedText)
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "cancelled"
    assert [str(w.message) for w in caught] == []


async def test_cancel_while_waiting_for_headers(server: LoopbackServer, client: ProviderClient) -> None:
    reply = Reply.sse(SLOW)
    reply.delay = 30
    server.queue(reply)
    stream = _stream(client, server)
    task = asyncio.create_task(_consume(stream, asyncio.Event(), []))
    assert await asyncio.to_thread(server.wait_for_requests, 1, 5)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.requests[0].wait_closed, 5)


async def test_stopping_early_inside_async_with_closes_at_once(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(SLOW, pace=0.05))
    async with _stream(client, server) as stream:
        async for event in stream:
            assert isinstance(event, StreamedText)
            break
    assert await asyncio.to_thread(server.requests[0].wait_closed, 5)
    assert stream.capture is not None
    assert stream.capture.error is not None
    assert stream.capture.error["kind"] == "cancelled"


async def test_aclosing_works_too(server: LoopbackServer, client: ProviderClient) -> None:
    server.queue(Reply.sse(SLOW, pace=0.05))
    async with contextlib.aclosing(_stream(client, server)) as stream:
        async for _event in stream:
            break
    assert await asyncio.to_thread(server.requests[0].wait_closed, 5)


async def test_timeout_around_the_consumer(server: LoopbackServer, client: ProviderClient) -> None:
    """``asyncio.timeout`` (a cancellation) around consumption closes the response too."""
    server.queue(Reply.sse(SLOW, pace=0.05))
    stream = _stream(client, server)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await _consume(stream, asyncio.Event(), [])
    assert await asyncio.to_thread(server.requests[0].wait_closed, 5)


async def test_client_survives_cancellation(server: LoopbackServer, client: ProviderClient) -> None:
    """After a cancelled request the same client serves the next one."""
    server.queue(Reply.sse(SLOW, pace=0.05), Reply.sse(SLOW))
    stream = _stream(client, server)
    async with stream:
        async for _event in stream:
            break
    events: list[ChatEvent] = []
    await _consume(_stream(client, server), asyncio.Event(), events)
    assert len([e for e in events if isinstance(e, StreamedText)]) == 400
    assert server.requests[1].response_complete
