"""The streaming provider client, for every API kind (SPEC §3, §9).

One :class:`ProviderClient` per application owns (or is given) the one :class:`httpx.AsyncClient`. Each request
is a :class:`ChatStream`, spoken in the profile's API kind through its
:class:`~tiny_agent_core.providers.api_kinds.WireAdapter` (URL, headers, body, stream accumulator, JSON
normalization, HTTP errors; this module knows no wire shape): an async iterator of :data:`ChatEvent` as bytes
arrive — the adapter's deltas
(:class:`StreamedText`, :class:`StreamedToolCall`, :class:`UsageReported`), then one :class:`ChatCompleted` with the
:class:`~tiny_agent_core.providers.results.NormalizedResponse` and the :class:`RawCapture` — or a typed
:class:`~tiny_agent_core.errors.ProviderError` raised. The final result is exactly what the adapter gives for
the same bytes (``tiny-agent wire normalize``). When a profile switches streaming off, the same events are
produced from the JSON body.

Always close a stream you stop reading early — ``async with client.stream_chat(...) as stream`` (or
:func:`contextlib.aclosing`) — so the HTTP response is closed at once, not whenever the garbage collector runs.
Cancelling the task that iterates closes the response promptly too. After the stream ends (result, failure or
cancellation) ``stream.capture`` holds the raw wire record.

Nothing is retried automatically, with two exceptions, both before any event was yielded (and once again if that
resend meets a connection the server has just closed), and both named in the result's ``outbound_repairs``:

- a server that refuses a valid form of the request for its dialect (adapters with
  :class:`~tiny_agent_core.providers.api_kinds.RepairsRequests`, e.g.
  :func:`~tiny_agent_core.providers.openai_dialect.dialect_fallback`: it cannot stream a request with tools, or
  refuses ``content: null``) gets the request once more in the form it accepts; ``stream.dialect`` is then the
  dialect learned (the caller remembers it for the profile);
- a request that chained from server-held state (a
  :class:`~tiny_agent_core.providers.results.ConversationState`) the server no longer has (adapters with
  :class:`~tiny_agent_core.providers.api_kinds.KeepsServerState`) is sent once more with the whole transcript
  (``server_state_lost``).

Every request is bounded: each wait by :class:`Timeouts` (``read`` between bytes, ``total`` for the whole
request, so a trickling server cannot hold a run open), and every body by :class:`Limits` (bytes are counted as
they arrive, so a broken or hostile server cannot make the app buffer more than the limit).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Protocol, cast

import httpx
from httpx_sse import EventSource, SSEError

from tiny_agent_core.errors import MalformedResponseError, ProviderConnectionError, ProviderError, ProviderHTTPError
from tiny_agent_core.providers.api_kinds import (
    SERVER_STATE_LOST,
    KeepsServerState,
    RepairsRequests,
    StreamAssembler,
    WireAdapter,
    adapter_for,
)
from tiny_agent_core.providers.capture import DEFAULT_CAPTURE_LIMIT, CaptureRecorder, RawCapture
from tiny_agent_core.providers.openai_dialect import Dialect
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.results import (
    DEFAULT_LIMITS,
    ConversationState,
    Limits,
    NormalizedResponse,
    StreamDelta,
    StreamedText,
    StreamedToolCall,
    UsageReported,
)
from tiny_agent_core.providers.transport import (
    Deadline,
    StreamGuard,
    Timeouts,
    body_too_large,
    describe_size,
    read_body,
    translate_transport_errors,
)
from tiny_agent_core.redaction import Redactor

__all__ = [
    "ChatCompleted",
    "ChatEvent",
    "ChatStream",
    "Limits",
    "ProviderClient",
    "StreamedText",
    "StreamedToolCall",
    "Timeouts",
    "UsageReported",
    "error_summary",
]


@dataclass(frozen=True)
class ChatCompleted:
    """The last event of a successful request: the canonical result and the raw wire record."""

    response: NormalizedResponse
    capture: RawCapture


ChatEvent = StreamedText | StreamedToolCall | UsageReported | ChatCompleted
"""What a :class:`ChatStream` yields."""


_LOOP_SLICE = 0.002
"""Seconds of event processing (client and consumer) after which the stream yields to the event loop."""


class _AsDict(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


def _message_json(message: _AsDict | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    return message.as_dict()


def request_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[_AsDict | Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    *,
    state: ConversationState | None = None,
) -> dict[str, Any]:
    """The JSON request the profile's API kind sends for these canonical messages and tools (before the outbound
    repairs, which are applied as it is sent)."""
    canonical = [_message_json(message) for message in messages]
    return adapter_for(profile.api).build_body(profile, model, canonical, tools, extra, state=state)


def error_summary(error: ProviderError) -> dict[str, Any]:
    """``{kind, message, status?, retryAfter?}``: the failure as the CLI and the capture report it."""
    out: dict[str, Any] = {"kind": error.kind, "message": str(error)}
    if isinstance(error, ProviderHTTPError):
        out["status"] = error.status
        if error.retry_after is not None:
            out["retryAfter"] = error.retry_after
    return out


class _TappedResponse:
    """What :class:`httpx_sse.EventSource` reads: the response's text, copied into the capture as it passes.

    The bytes are checked by a :class:`StreamGuard` before they are decoded (so before httpx-sse assembles a line),
    and each read waits no longer than the request's deadline. The content type is presented as
    ``text/event-stream`` (the caller has already decided this body is SSE).
    """

    def __init__(
        self, response: httpx.Response, recorder: CaptureRecorder, guard: StreamGuard, deadline: Deadline
    ) -> None:
        self._response = response
        self._recorder = recorder
        self._guard = guard
        self._deadline = deadline
        self.headers = httpx.Headers(response.headers)
        self.headers["content-type"] = "text/event-stream"
        self._decoder = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace")
        self._chunks: AsyncGenerator[bytes, None] | None = None

    def aiter_text(self) -> AsyncIterator[str]:
        self._chunks = cast(AsyncGenerator[bytes, None], self._response.aiter_bytes())
        return self

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        while self._chunks is not None:
            try:
                chunk = await self._deadline.within(anext(self._chunks))
            except StopAsyncIteration:
                self._chunks = None
                text = self._decoder.decode(b"", final=True)
            else:
                self._guard.check(chunk)
                text = self._decoder.decode(chunk)
            if text:
                self._recorder.body_text(text)
                return text
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Close httpx's byte iterator (an async generator) now rather than at garbage collection."""
        chunks = self._chunks
        self._chunks = None
        if chunks is not None:
            await chunks.aclose()


def _deltas_of(result: NormalizedResponse) -> list[StreamDelta]:
    """The events a non-streamed response stands for, in stream order."""
    out: list[StreamDelta] = []
    if result.message.content:
        out.append(StreamedText(result.message.content))
    for index, call in enumerate(result.message.calls):
        out.append(StreamedToolCall(index, call.id, call.function.name, call.function.arguments))
    if result.usage is not None:
        out.append(UsageReported(result.usage))
    return out


def _recorded(recorder: CaptureRecorder, deltas: Iterable[StreamDelta]) -> Iterator[StreamDelta]:
    """``deltas``, each content delta (text or a tool call, not usage) marking the first token in the capture."""
    for delta in deltas:
        if not isinstance(delta, UsageReported):
            recorder.first_token()
        yield delta


class ChatStream:
    """One request to the profile's endpoint, in its API kind; iterate for events (see the module docstring).

    Use it as ``async with`` (or :func:`contextlib.aclosing`) so stopping early closes the response at once.
    ``capture`` is set when the request ends in any way; ``result`` when it succeeded. ``full_body`` is the same
    request built without server state, sent instead when the server lost the state ``body`` chains from.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        profile: ProviderProfile,
        body: dict[str, Any],
        *,
        api_key: str | None,
        timeouts: Timeouts,
        capture_limit: int,
        limits: Limits = DEFAULT_LIMITS,
        full_body: dict[str, Any] | None = None,
    ) -> None:
        self._http = http
        self.profile = profile
        self.adapter: WireAdapter = adapter_for(profile.api)
        """The profile's API kind."""
        self._body = body
        self._full_body = full_body
        self._api_key = api_key or None
        self._redact = Redactor([api_key])
        self.timeouts = timeouts
        self.limits = limits
        self._capture_limit = capture_limit
        self.capture: RawCapture | None = None
        """The raw wire record, once the request has ended (success, failure or cancellation)."""
        self.result: NormalizedResponse | None = None
        """The canonical result, once the request has succeeded."""
        self.dialect: Dialect = profile.dialect
        """The dialect the request was last sent with: the profile's, or one learned from a refusal."""
        self._events = self._run()
        self._started = False
        self._ended = False

    def __aiter__(self) -> ChatStream:
        return self

    async def __anext__(self) -> ChatEvent:
        self._started = True
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop the request now, closing the HTTP response (safe to call more than once)."""
        self._ended = True
        await self._events.aclose()

    def __del__(self) -> None:
        if self._started and not self._ended:
            # Left to the garbage collector, httpx's nested async generators are closed in no particular order.
            warnings.warn(
                "A ChatStream was abandoned without being closed; use 'async with' or contextlib.aclosing.",
                ResourceWarning,
                stacklevel=1,
            )

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _scrub_error(self, error: ProviderError) -> None:
        """Make sure the key never travels inside an error message or body."""
        message = str(error)
        scrubbed = self._redact(message)
        if scrubbed != message:
            error.args = (scrubbed,)
        if isinstance(error, ProviderHTTPError):
            error.body = self._redact(error.body)

    def _outbound(self, body: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``body`` as it is sent, and the outbound repairs applied to it."""
        if isinstance(self.adapter, RepairsRequests):
            return self.adapter.repair_request(body, self.dialect)
        return body, ()

    def _state_lost(self, error: ProviderError) -> bool:
        """``error`` says the server no longer has the state the request chained from."""
        return isinstance(self.adapter, KeepsServerState) and self.adapter.state_lost(error)

    async def _run(self) -> AsyncGenerator[ChatEvent, None]:
        resent = False
        source = self._body
        lost: tuple[str, ...] = ()
        while True:
            body, outbound = self._outbound(source)
            outbound = lost + outbound
            yielded = False
            try:
                async for event in self._send(body, outbound):
                    yielded = True
                    yield event
                return
            except ProviderError as error:
                if yielded:
                    raise
                if resent and isinstance(error, ProviderConnectionError):
                    # The refused request's keep-alive connection, closed by the server as it was reused
                    # (llama-cpp-python after its empty stream): once more, on a new connection.
                    resent = False
                    self._ended = False
                    continue
                if not lost and self._full_body is not None and self._state_lost(error):
                    source, lost = self._full_body, (SERVER_STATE_LOST,)
                    resent = True
                    self._ended = False
                    continue
                learned = (
                    self.adapter.fallback(error, body, self.dialect)
                    if isinstance(self.adapter, RepairsRequests)
                    else None
                )
                if learned is None:
                    raise
                self.dialect = learned
                resent = True
                self._ended = False

    async def _send(self, sent: dict[str, Any], outbound: tuple[str, ...]) -> AsyncGenerator[ChatEvent, None]:
        profile, adapter = self.profile, self.adapter
        url = adapter.request_url(profile)
        payload = json.dumps(sent, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        streaming = bool(sent.get("stream"))
        headers = self._request_headers(streaming)
        recorder = CaptureRecorder(
            method="POST",
            url=url,
            stream=streaming,
            request_headers=headers,
            request_body=payload,
            secret=self._api_key,
            limit=self._capture_limit,
            outbound_repairs=outbound,
        )
        try:
            with translate_transport_errors(profile.base_url, self.timeouts):
                deadline = Deadline(profile.base_url, self.timeouts.total)
                request = self._http.build_request(
                    "POST", url, content=payload, headers=headers, timeout=self.timeouts.to_httpx()
                )
                response = await deadline.within(self._http.send(request, stream=True))
                try:
                    recorder.response_started(response.status_code, response.headers)
                    if response.status_code >= 400:
                        raise await self._http_error(response, recorder, deadline)
                    content_type = response.headers.get("content-type", "").lower()
                    if streaming and "json" not in content_type:
                        accumulator = adapter.new_accumulator(self.limits)
                        async with aclosing(self._stream_deltas(response, accumulator, recorder, deadline)) as deltas:
                            async for delta in deltas:
                                yield delta
                        result = accumulator.finish()
                    else:
                        # A JSON body: streaming is off, or the server answered a stream request with JSON.
                        result = await self._json_result(response, recorder, deadline)
                        for delta in _recorded(recorder, _deltas_of(result)):
                            yield delta
                finally:
                    await response.aclose()
        except ProviderError as error:
            self._ended = True
            self._scrub_error(error)
            recorder.failed(error_summary(error))
            self.capture = recorder.finish()
            raise
        except BaseException:
            # Cancelled, or closed early by the consumer (GeneratorExit): the response is already closed.
            self._ended = True
            recorder.failed({"kind": "cancelled", "message": "The request was cancelled before it completed."})
            self.capture = recorder.finish()
            raise
        self._ended = True
        self.capture = recorder.finish()
        self.result = replace(result, outbound_repairs=outbound)
        yield ChatCompleted(self.result, self.capture)

    def _request_headers(self, streaming: bool) -> dict[str, str]:
        """The headers of a request: JSON out, an event stream or JSON back, and the adapter's own (the key)."""
        return {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if streaming else "application/json",
            **self.adapter.request_headers(self.profile, self._api_key),
        }

    async def _http_error(
        self, response: httpx.Response, recorder: CaptureRecorder, deadline: Deadline
    ) -> ProviderError:
        """The adapter's error for a response with an error status, its body read (up to the limit) and recorded."""
        limit = self.limits.response_bytes
        body, complete = await read_body(response, limit, deadline)
        recorder.body_bytes(body)
        error = self.adapter.http_error(response.status_code, body, response.headers)
        if not complete:
            error.args = (f"{error} (The error body is larger than {describe_size(limit)} and was not read in full.)",)
        return error

    async def _stream_deltas(
        self, response: httpx.Response, accumulator: StreamAssembler, recorder: CaptureRecorder, deadline: Deadline
    ) -> AsyncGenerator[StreamDelta, None]:
        """The deltas of an event-stream body, fed to ``accumulator`` event by event until it is done or the body
        ends; the body is checked against the limits and copied into the capture as it arrives."""
        limits = self.limits
        guard = StreamGuard(self.profile.base_url, event_limit=limits.sse_event_bytes, total_limit=limits.stream_bytes)
        tapped = _TappedResponse(response, recorder, guard, deadline)
        events = EventSource(cast(httpx.Response, tapped)).aiter_sse()
        checkpoint = time.perf_counter()
        try:
            async for sse in events:
                if time.perf_counter() - checkpoint > _LOOP_SLICE:
                    # A burst of buffered events is processed without any I/O wait; let the
                    # rest of the event loop (the UI) run between slices.
                    await asyncio.sleep(0)
                    checkpoint = time.perf_counter()
                recorder.sse_event()
                for delta in _recorded(recorder, accumulator.feed(sse.event, sse.data)):
                    yield delta
                if accumulator.done:
                    break
        except SSEError as error:  # pragma: no cover - the content type is forced above
            raise MalformedResponseError(f"Invalid event stream: {error}.") from error
        finally:
            await events.aclose()
            await tapped.aclose()

    async def _json_result(
        self, response: httpx.Response, recorder: CaptureRecorder, deadline: Deadline
    ) -> NormalizedResponse:
        """The result of a JSON body (read up to the limit and recorded), as the adapter normalizes it."""
        body, complete = await read_body(response, self.limits.response_bytes, deadline)
        recorder.body_bytes(body)
        if not complete:
            raise body_too_large(self.profile.base_url, self.limits.response_bytes)
        return self.adapter.normalize_body(body, self.limits)


class ProviderClient:
    """The application's one HTTP client for providers (building an ``httpx.AsyncClient`` costs 50–80 ms).

    Pass an existing ``httpx.AsyncClient`` to share it, or let this object create and own one; ``aclose()`` (or
    ``async with``) closes an owned client.
    """

    def __init__(
        self,
        http: httpx.AsyncClient | None = None,
        *,
        capture_limit: int = DEFAULT_CAPTURE_LIMIT,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._owns_http = http is None
        self.http = http if http is not None else httpx.AsyncClient(timeout=Timeouts().to_httpx())
        self.capture_limit = capture_limit
        self.limits = limits
        """The size limits every request of this client applies (see :class:`Limits`)."""

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_http:
            await self.http.aclose()

    async def __aenter__(self) -> ProviderClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def stream_chat(
        self,
        profile: ProviderProfile,
        *,
        model: str,
        messages: Sequence[_AsDict | Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
        extra: Mapping[str, Any] | None = None,
        state: ConversationState | None = None,
    ) -> ChatStream:
        """Start (lazily, on first iteration) one chat request; see :class:`ChatStream`.

        ``state`` (for API kinds that keep server state) says what the server already holds of ``messages``; the
        request then sends only the rest, and falls back to the whole transcript once if the state is gone.
        Raises :class:`~tiny_agent_core.errors.ProviderConfigurationError` for an unknown API kind.
        """
        body = request_body(profile, model, messages, tools, extra, state=state)
        full_body = None if state is None else request_body(profile, model, messages, tools, extra)
        return ChatStream(
            self.http,
            profile,
            body,
            api_key=api_key,
            timeouts=timeouts or Timeouts(),
            capture_limit=self.capture_limit,
            limits=self.limits,
            full_body=full_body if full_body != body else None,
        )

    async def complete(
        self,
        profile: ProviderProfile,
        *,
        model: str,
        messages: Sequence[_AsDict | Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> ChatCompleted:
        """Run one request to the end and return its :class:`ChatCompleted` (deltas are discarded; the
        profile's dialect and its fallbacks apply as for :meth:`stream_chat`)."""
        async with self.stream_chat(
            profile, model=model, messages=messages, tools=tools, api_key=api_key, timeouts=timeouts
        ) as stream:
            async for event in stream:
                if isinstance(event, ChatCompleted):
                    return event
        raise MalformedResponseError("The request ended without a result.")  # pragma: no cover
