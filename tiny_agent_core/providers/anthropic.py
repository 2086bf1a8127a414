"""The Anthropic Messages adapter: canonical requests → Messages API bodies, provider bytes → canonical results.

This module and its two helpers are the only ones that know the Messages API wire shapes (``POST
<base_url>/messages``): the request (body, URL, headers, cache breakpoints) is built in
:mod:`~tiny_agent_core.providers.anthropic_request`, error bodies and ``error`` events are typed in
:mod:`~tiny_agent_core.providers.anthropic_errors`, and this module normalizes the responses and holds
:data:`ADAPTER`, the API kind ``anthropic`` as the client uses it (:mod:`~tiny_agent_core.providers.api_kinds`).
It is plain httpx + the shared SSE path; the Anthropic SDK is never used.

Response. A JSON body (:func:`normalize_body`) or an SSE stream (:class:`StreamAccumulator`, fed by httpx-sse:
``message_start``, ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``) / ``content_block_stop``, ``message_delta``, ``message_stop``, ``ping``,
``error``; event types this module does not know are ignored, as the API's versioning policy asks) both end in the
same place: text blocks are joined into ``content``, ``tool_use`` blocks become canonical ``tool_calls`` (``id`` =
the ``tool_use`` id, ``function.arguments`` = the input as compact JSON), the message goes through the
normalization seam (:func:`tiny_agent_core.seam.normalize_assistant_message`), and the stop reason is
cross-validated with it (:func:`tiny_agent_core.stop_reasons.stop_reason`). ``thinking`` and
``redacted_thinking`` blocks never enter the canonical transcript; they are listed in ``dropped``
(``message.thinking``, ``message.redacted_thinking``). Any other block type (server tools, compaction…, which this
client never asks for) is refused as malformed: dropping it would silently change what the model said. Because
thinking blocks are not kept, extended thinking (``extra["thinking"]``) works for single answers but not across
tool rounds: the API wants the signed thinking blocks of a tool-use turn sent back with its results, and answers
400 without them.

Stop reasons: ``end_turn`` and ``stop_sequence`` → ``stop`` (``toolUse`` when there are calls), ``tool_use`` →
``toolUse`` (calls required), ``max_tokens`` and ``model_context_window_exceeded`` → ``length``; ``refusal`` →
:class:`~tiny_agent_core.errors.ContentFilteredError` with the API's explanation; ``pause_turn`` (a server-side
tool still running) → :class:`~tiny_agent_core.errors.ProviderReportedError` saying to send the request again to
continue (this client offers no server tools, so the paused blocks cannot be kept); anything else is malformed.

Usage: ``input_tokens`` (already the uncached part) → ``input``, ``cache_read_input_tokens`` → ``cache_read``,
``cache_creation_input_tokens`` → ``cache_write``, ``output_tokens`` → ``output``. A stream reports the input
side in ``message_start`` and cumulative counts in each ``message_delta`` (newer API versions repeat the input
side there): each counter keeps its latest reported value.

Repairs (:data:`REPAIRS`): ``missing_message_stop`` — a stream that ended after its ``message_delta`` carried the
stop reason, but without ``message_stop``. Everything is bounded by :class:`~.results.Limits` (message bytes,
tool calls, argument bytes, bounded JSON) plus :data:`MAX_CONTENT_BLOCKS`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import (
    ContentFilteredError,
    EmptyStreamError,
    MalformedResponseError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
)
from tiny_agent_core.providers.anthropic_errors import http_error, stream_error
from tiny_agent_core.providers.anthropic_request import build_body, request_headers, request_url
from tiny_agent_core.providers.results import (
    DEFAULT_LIMITS,
    IdFactory,
    Limits,
    NormalizedResponse,
    Notes,
    Pieces,
    StreamDelta,
    StreamedText,
    StreamedToolCall,
    UsageReported,
    arguments_too_large,
    load_json,
    message_too_large,
    new_tool_call_id,
    parse_json,
    too_many_calls,
    usage_count,
    utf8_size,
)
from tiny_agent_core.seam import normalize_assistant_message
from tiny_agent_core.stop_reasons import stop_reason
from tiny_agent_core.usage import Usage

if TYPE_CHECKING:
    from tiny_agent_core.providers.profiles import ProviderProfile

KIND = "anthropic"
"""The API kind name of this adapter (a profile's ``api``)."""
MAX_CONTENT_BLOCKS = 4096
"""The most content blocks one response may have (answers have a handful; citations split text into more)."""
REPAIRS = ("missing_message_stop",)
"""Every dialect repair this adapter may apply, by name."""

_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage_counts(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        raise MalformedResponseError("Provider usage is not an object.")
    counts = {key: usage_count(usage, key) for key in _USAGE_KEYS}
    return {key: value for key, value in counts.items() if value is not None}


def _usage(counts: Mapping[str, int]) -> Usage | None:
    if "input_tokens" not in counts and "output_tokens" not in counts:
        return None
    return Usage(
        input=counts.get("input_tokens", 0),
        output=counts.get("output_tokens", 0),
        cache_read=counts.get("cache_read_input_tokens", 0),
        cache_write=counts.get("cache_creation_input_tokens", 0),
    )


def usage_from_wire(usage: Any) -> Usage | None:
    """A Messages API ``usage`` object as :class:`~tiny_agent_core.usage.Usage` (``None`` when it reports neither
    input nor output tokens); non-integer or negative counts are malformed, never coerced."""
    return _usage(_usage_counts(usage))


@dataclass
class _Block:
    """One content block as it accumulates."""

    type: str
    text: Pieces = field(default_factory=Pieces)
    id: Any = None
    name: Any = None
    input: Any = None
    """A ``tool_use`` block's input as sent whole (JSON bodies, or ``content_block_start``)."""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _arguments(block: _Block) -> str:
    """A ``tool_use`` block's input as compact JSON text (streamed text that is not JSON is kept as sent)."""
    if block.text.count:
        text = block.text.text()
        if not text.strip():
            return "{}"
        try:
            return _compact(parse_json(text))
        except ValueError:
            return text
    return _compact(block.input if block.input is not None else {})


def _message(blocks: Sequence[_Block], notes: Notes, limits: Limits) -> dict[str, Any]:
    """The wire-neutral assistant message the seam validates, from the accumulated blocks."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    total = 0
    for block in blocks:
        if block.type == "text":
            texts.append(block.text.text())
            total += block.text.size
        elif block.type == "tool_use":
            arguments = _arguments(block)
            size = utf8_size(arguments)
            if size > limits.tool_call_argument_bytes:
                raise arguments_too_large(limits)
            total += size
            calls.append({"id": block.id, "type": "function", "function": {"name": block.name, "arguments": arguments}})
        elif block.type in _DROPPED_BLOCKS:
            notes.dropped.setdefault(f"message.{block.type}", None)
        else:
            raise _unsupported_block(block.type)
    if len(calls) > limits.tool_calls:
        raise too_many_calls(limits)
    if total > limits.message_bytes:
        raise message_too_large(limits)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _unsupported_block(kind: Any) -> MalformedResponseError:
    return MalformedResponseError(
        f"The response has a content block of type {kind!r}, which this client does not support (it only asks for "
        "text and client tool calls). Check the profile's extra request parameters (server tools, betas)."
    )


def _refusal_text(details: Any) -> str:
    explanation = details.get("explanation") if isinstance(details, dict) else None
    return f": {explanation.strip()}" if isinstance(explanation, str) and explanation.strip() else "."


def _finish(
    blocks: Sequence[_Block],
    reason: Any,
    usage: Usage | None,
    notes: Notes,
    limits: Limits,
    *,
    details: Any = None,
    response_id: Any = None,
    model: Any = None,
) -> NormalizedResponse:
    """The shared tail of both paths: stop-reason failures, message, seam, stop-reason cross-validation."""
    try:
        if reason == "refusal":
            raise ContentFilteredError(f"The model refused (stop_reason: refusal){_refusal_text(details)}")
        if reason == "pause_turn":
            raise ProviderReportedError(
                "The provider paused the turn (stop_reason: pause_turn) while a server-side tool was running. This "
                "client does not use server tools, so the paused work cannot be kept: send the request again to "
                "continue."
            )
        if reason == "model_context_window_exceeded":
            reason = "max_tokens"
        canonical = normalize_assistant_message(_message(blocks, notes, limits))
        stop = stop_reason(reason, canonical)
    except ProviderError as error:
        error.usage = usage
        raise
    return NormalizedResponse(
        message=canonical,
        stop_reason=stop,
        usage=usage,
        repairs=tuple(notes.repairs),
        dropped=tuple(notes.dropped),
        response_id=response_id if isinstance(response_id, str) and response_id else None,
        model=model if isinstance(model, str) and model else None,
    )


def _block_from_json(value: Any) -> _Block:
    if not isinstance(value, dict):
        raise MalformedResponseError("invalid assistant content block")
    kind = value.get("type")
    block = _Block(kind if isinstance(kind, str) else repr(kind))
    if block.type == "text":
        text = value.get("text")
        if not isinstance(text, str):
            raise MalformedResponseError("invalid assistant content")
        block.text.add(text)
    elif block.type == "tool_use":
        block.id, block.name, block.input = value.get("id"), value.get("name"), value.get("input")
        if not isinstance(block.input, dict):
            raise MalformedResponseError("invalid assistant tool call function: tool_use input is not an object")
    return block


def normalize_body(
    body: bytes | str, limits: Limits = DEFAULT_LIMITS, *, new_id: IdFactory = new_tool_call_id
) -> NormalizedResponse:
    """Normalize a complete 2xx Messages API JSON body (``new_id`` is unused: every ``tool_use`` has an id).

    Raises :class:`~tiny_agent_core.errors.ProviderError` subclasses (with usage attached once it was read).
    """
    del new_id
    value = load_json(body, "The provider response")
    if not isinstance(value, dict):
        raise MalformedResponseError("The provider response is not a JSON object.")
    if value.get("type") == "error" or value.get("error") is not None:
        raise stream_error(value)
    usage = usage_from_wire(value.get("usage"))
    content = value.get("content")
    if value.get("role", "assistant") != "assistant" or not isinstance(content, list):
        raise MalformedResponseError("The provider returned no assistant message (no content list).", usage=usage)
    if len(content) > MAX_CONTENT_BLOCKS:
        raise MalformedResponseError(f"The response has more than {MAX_CONTENT_BLOCKS} content blocks.", usage=usage)
    notes = Notes()
    try:
        blocks = [_block_from_json(item) for item in content]
    except ProviderError as error:
        error.usage = usage
        raise
    return _finish(
        blocks,
        value.get("stop_reason"),
        usage,
        notes,
        limits,
        details=value.get("stop_details"),
        response_id=value.get("id"),
        model=value.get("model"),
    )


class StreamAccumulator:
    """Accumulates a Messages API SSE stream, event by event, into the same result as the JSON body.

    :meth:`feed` takes each event (name and data) and returns the deltas a view can show at once; it raises a
    typed error as soon as the stream reports one or breaks the protocol (a delta for a block never started, a
    block started twice). :meth:`finish` returns the :class:`~.results.NormalizedResponse` once the stream ended.
    Each event costs O(its size); the message is held to ``limits`` as it grows.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id) -> None:
        del new_id  # every tool_use block carries its id
        self._limits = limits
        self._notes = Notes()
        self._blocks: dict[int, _Block] = {}
        self._open: set[int] = set()
        self._calls: dict[int, int] = {}
        self._counts: dict[str, int] = {}
        self._message_bytes = 0
        self._started = False
        self._reason: Any = None
        self._details: Any = None
        self._response_id: Any = None
        self._model: Any = None
        self._events = 0
        self._done = False

    @property
    def done(self) -> bool:
        """True once ``message_stop`` arrived; later events are ignored."""
        return self._done

    @property
    def usage(self) -> Usage | None:
        """The usage reported so far (for recording what a failed stream cost)."""
        return _usage(self._counts)

    def feed(self, event: str, data: str) -> list[StreamDelta]:
        """Process one SSE event (its ``event`` name and ``data``); return the deltas it carried."""
        if self._done:
            return []
        if event == "error":
            payload: Any = data
            with contextlib.suppress(ValueError):
                payload = parse_json(data)
            raise stream_error(payload, usage=self.usage)
        value = load_json(data, f"Stream event {self._events + 1}")
        self._events += 1
        if not isinstance(value, dict):
            raise MalformedResponseError(f"Stream event {self._events} is not a JSON object.", usage=self.usage)
        try:
            return self._apply(value)
        except ProviderError as error:
            error.usage = error.usage or self.usage
            raise

    def _apply(self, value: dict[str, Any]) -> list[StreamDelta]:
        kind = value.get("type")
        if kind == "error":
            raise stream_error(value)
        if kind == "message_start":
            return self._message_start(value.get("message"))
        if not self._started and kind in _STREAM_EVENTS:
            raise MalformedResponseError(f"The stream sent {kind} before message_start.")
        if kind == "content_block_start":
            return self._block_start(value)
        if kind == "content_block_delta":
            return self._block_delta(value)
        if kind == "message_delta":
            return self._message_delta(value)
        if kind == "content_block_stop":
            self._open.discard(self._index(value))
        elif kind == "message_stop":
            self._done = True
        return []  # ping, and event types added to the API later

    def _message_start(self, message: Any) -> list[StreamDelta]:
        if self._started or not isinstance(message, dict):
            raise MalformedResponseError("The stream sent an invalid or repeated message_start.")
        self._started = True
        self._response_id = message.get("id")
        self._model = message.get("model")
        return self._usage_update(message.get("usage"))

    def _usage_update(self, usage: Any) -> list[StreamDelta]:
        counts = _usage_counts(usage)
        if not counts:
            return []
        self._counts.update(counts)
        current = self.usage
        return [UsageReported(current)] if current is not None else []

    def _index(self, value: Mapping[str, Any]) -> int:
        index = value.get("index")
        if type(index) is not int or not 0 <= index < MAX_CONTENT_BLOCKS:
            raise MalformedResponseError(f"invalid content block index {index!r}")
        return index

    def _block_start(self, value: Mapping[str, Any]) -> list[StreamDelta]:
        index = self._index(value)
        if index in self._blocks:
            raise MalformedResponseError(f"content block {index} started twice")
        block = _block_from_json(value.get("content_block"))
        self._blocks[index] = block
        self._open.add(index)
        self._grow(block.text.size)
        if block.type == "tool_use":
            if len(self._calls) >= self._limits.tool_calls:
                raise too_many_calls(self._limits)
            self._calls[index] = len(self._calls)
            return [StreamedToolCall(self._calls[index], block.id, block.name, "")]
        return [StreamedText(block.text.text())] if block.type == "text" and block.text.size else []

    def _block_delta(self, value: Mapping[str, Any]) -> list[StreamDelta]:
        index = self._index(value)
        block = self._blocks.get(index)
        if block is None or index not in self._open:
            raise MalformedResponseError(f"content block {index} received a delta outside its start and stop")
        delta = value.get("delta")
        kind = delta.get("type") if isinstance(delta, dict) else None
        if block.type not in ("text", "tool_use"):
            return []  # thinking_delta / signature_delta (never held, never shown); unsupported blocks fail at finish
        if block.type == "text" and kind == "text_delta" and isinstance(delta, dict):
            text = delta.get("text")
            if not isinstance(text, str):
                raise MalformedResponseError("invalid assistant content")
            self._grow(block.text.add(text))
            return [StreamedText(text)] if text else []
        if block.type == "tool_use" and kind == "input_json_delta" and isinstance(delta, dict):
            piece = delta.get("partial_json", "")
            if not isinstance(piece, str):
                raise MalformedResponseError("invalid assistant tool call function")
            self._grow(block.text.add(piece))
            if block.text.size > self._limits.tool_call_argument_bytes:
                raise arguments_too_large(self._limits)
            return [StreamedToolCall(self._calls[index], None, None, piece)] if piece else []
        if kind == "citations_delta" and block.type == "text":
            return []  # citations only annotate text this client already has
        raise MalformedResponseError(f"content block {index} ({block.type}) received a {kind!r} delta")

    def _message_delta(self, value: Mapping[str, Any]) -> list[StreamDelta]:
        delta = value.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason") is not None:
            self._reason = delta["stop_reason"]
            self._details = delta.get("stop_details")
        return self._usage_update(value.get("usage"))

    def _grow(self, size: int) -> None:
        self._message_bytes += size
        if self._message_bytes > self._limits.message_bytes:
            raise message_too_large(self._limits)

    def finish(self) -> NormalizedResponse:
        """The canonical result of the whole stream; raises if the stream was incomplete or invalid."""
        if self._events == 0:
            raise EmptyStreamError("The stream ended before any complete event arrived.")
        if not self._done:
            if self._reason is None:
                raise MalformedResponseError(
                    "The stream ended before the response completed (no stop_reason and no message_stop).",
                    usage=self.usage,
                )
            self._notes.repair("missing_message_stop")
        if not self._started:
            raise MalformedResponseError("The stream ended without a message_start.", usage=self.usage)
        blocks = [self._blocks[index] for index in sorted(self._blocks)]
        return _finish(
            blocks,
            self._reason,
            self.usage,
            self._notes,
            self._limits,
            details=self._details,
            response_id=self._response_id,
            model=self._model,
        )


_STREAM_EVENTS = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)


def normalize_sse_text(
    text: str, limits: Limits = DEFAULT_LIMITS, *, new_id: IdFactory = new_tool_call_id
) -> NormalizedResponse:
    """Normalize a complete recorded SSE stream, decoded with httpx-sse exactly as a live response is
    (:func:`~tiny_agent_core.providers.api_kinds.normalize_sse_text` with this adapter)."""
    from tiny_agent_core.providers import api_kinds  # the registry imports this module

    return api_kinds.normalize_sse_text(ADAPTER, text, limits=limits, new_id=new_id)


@dataclass(frozen=True)
class AnthropicAdapter:
    """The Messages API as a wire adapter (the API kind ``anthropic``); each method delegates to this module or
    its request and error modules."""

    kind: str = KIND

    def request_url(self, profile: ProviderProfile) -> str:
        """See :func:`~tiny_agent_core.providers.anthropic_request.request_url`."""
        return request_url(profile)

    def request_headers(self, profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
        """See :func:`~tiny_agent_core.providers.anthropic_request.request_headers`."""
        return request_headers(profile, api_key)

    def build_body(
        self,
        profile: ProviderProfile,
        model: str,
        messages: Sequence[Any],
        tools: Sequence[Mapping[str, Any]] | None,
        extra: Mapping[str, Any] | None,
        *,
        state: object | None = None,
    ) -> dict[str, Any]:
        """See :func:`~tiny_agent_core.providers.anthropic_request.build_body`."""
        return build_body(profile, model, messages, tools, extra, state=state)

    def new_accumulator(self, limits: Limits, new_id: IdFactory = new_tool_call_id) -> StreamAccumulator:
        """A fresh :class:`StreamAccumulator`."""
        return StreamAccumulator(limits, new_id)

    def normalize_body(
        self, body: bytes | str, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id
    ) -> NormalizedResponse:
        """See :func:`normalize_body`."""
        return normalize_body(body, limits, new_id=new_id)

    def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> ProviderHTTPError:
        """See :func:`~tiny_agent_core.providers.anthropic_errors.http_error`."""
        return http_error(status, body, headers)


ADAPTER = AnthropicAdapter()
"""The adapter instance the API-kind registry holds."""
