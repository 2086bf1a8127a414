"""The Anthropic Messages adapter: canonical requests → Messages API bodies, provider bytes → canonical results.

This is the only module that knows the Messages API wire shapes (``POST <base_url>/messages``, API version
:data:`ANTHROPIC_VERSION`). It is plain httpx + the shared SSE path; the Anthropic SDK is never used.

Request (:func:`build_body`). The canonical transcript is Chat-Completions-shaped; the Messages API differs:

- ``system`` messages become the top-level ``system`` array of text blocks (empty ones are left out).
- A user message becomes a ``user`` message of one text block.
- An assistant message becomes text (when non-empty) then one ``tool_use`` block per call, ``input`` being the
  call's arguments parsed as a JSON object. Arguments that are not a JSON object (the model wrote invalid JSON; the
  agent answered with an invalid-arguments result) are sent as ``{"_invalid_arguments": <text>}``, so the model
  sees what it wrote.
- Consecutive ``tool`` messages are merged into one ``user`` message of ``tool_result`` blocks (``tool_use_id``,
  ``content`` string), as the API requires all results of a turn in the message right after it; a user message
  that directly follows tool results joins that same message, after the results.
- Tools ``{type: function, function: {name, description, parameters}}`` become ``{name, description,
  input_schema}``.
- ``max_tokens`` is required by the API: ``extra["max_tokens"]`` when given, else :data:`DEFAULT_MAX_TOKENS`.
  ``stream: true`` when the profile streams. Other ``extra`` keys (``temperature``, ``thinking``…) pass through,
  but never override the keys above.

Automatic prompt caching (the cache-breakpoint rule). ``cache_control: {"type": "ephemeral"}`` is put on:

1. the last block of ``system``,
2. the last tool,
3. the last block of the last ``user`` message, and
4. the last block of the ``user`` message before it,

skipping any that do not exist, so at most :data:`MAX_CACHE_BREAKPOINTS` (4, the API's limit). The API caches
the whole prefix up to a breakpoint (tools, then system, then messages). In an agent loop every request ends with
a ``user`` message (the prompt or the tool results): breakpoint 3 writes the prefix the *next* step will reuse,
and breakpoint 4 sits where the previous request put its breakpoint 3, so it reads what that request wrote. A
prefix shorter than the model's minimum cacheable length (1024–4096 tokens) is simply not cached by the API.

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

Errors (:func:`http_error`): the ``{"type": "error", "error": {"type", "message"}}`` body maps by status and
``error.type`` to the typed errors of :mod:`tiny_agent_core.errors`: 529 ``overloaded_error`` → ``ServerError``
(retry), 429 ``rate_limit_error`` → ``RateLimitError`` with ``retry_after`` from ``retry-after``, "prompt is too
long" → ``ContextLengthError``, 401/403 → ``AuthenticationError``, 404 → ``ModelNotFoundError``. An ``error``
event mid-stream is typed the same way, with the status its ``error.type`` stands for.

Repairs (:data:`REPAIRS`): ``missing_message_stop`` — a stream that ended after its ``message_delta`` carried the
stop reason, but without ``message_stop``. Everything is bounded by :class:`~.results.Limits` (message bytes,
tool calls, argument bytes, bounded JSON) plus :data:`MAX_CONTENT_BLOCKS`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    EmptyStreamError,
    MalformedResponseError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.http_errors import context_length_error, is_context_overflow, retry_after_header
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
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""
DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` when the caller gives none (the API requires it): every current Claude model allows at least
this many output tokens."""
MAX_CACHE_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints one request may carry (the API's limit)."""
MAX_CONTENT_BLOCKS = 4096
"""The most content blocks one response may have (answers have a handful; citations split text into more)."""
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
"""The breakpoint marker (5-minute cache)."""

REPAIRS = ("missing_message_stop",)
"""Every dialect repair this adapter may apply, by name."""

_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})


# --- request -------------------------------------------------------------------------------------------------


def request_url(profile: ProviderProfile) -> str:
    """``<base_url>/messages``."""
    return f"{profile.base_url}/messages"


def request_headers(profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
    """The profile's extra headers, ``anthropic-version``, and ``x-api-key`` when a key is given (checked as
    :func:`~tiny_agent_core.providers.profiles.check_api_key` does; the key never appears in errors). The client
    adds ``Content-Type`` and ``Accept``."""
    from tiny_agent_core.providers.profiles import check_api_key  # late: the registry imports this module

    out = dict(profile.extra_headers)
    out["anthropic-version"] = ANTHROPIC_VERSION
    if api_key:
        out["x-api-key"] = check_api_key(api_key)
    return out


def _as_mapping(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    value = message.as_dict()
    if not isinstance(value, Mapping):  # pragma: no cover - every canonical message gives a dict
        raise TypeError("a message's as_dict() must give a mapping")
    return value


def _tool_input(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            value = parse_json(arguments) if arguments.strip() else {}
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        return {"_invalid_arguments": arguments}
    return {"_invalid_arguments": json.dumps(arguments)}


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append({"type": "text", "text": content})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _tool_input(function.get("arguments", "")),
            }
        )
    return blocks


def wire_messages(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The canonical ``messages`` as the Messages API's ``(system blocks, messages)`` (see the module docstring).

    An assistant message with neither text nor calls has no blocks to send and is left out.
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for item in messages:
        message = _as_mapping(item)
        role = message.get("role")
        if role == "system":
            text = message.get("content")
            if isinstance(text, str) and text:
                system.append({"type": "text", "text": text})
            continue
        if role == "assistant":
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            continue
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": message["content"]}
        elif role == "user":
            block = {"type": "text", "text": message.get("content")}
        else:
            raise ValueError(f"a canonical message cannot have role {role!r}")
        previous = out[-1] if out else None
        joins = previous is not None and previous["role"] == "user" and previous["content"][-1]["type"] == "tool_result"
        if joins and previous is not None:
            previous["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return system, out


def wire_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat-Completions-shaped tool definitions as Messages API tools ``{name, description, input_schema}``."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function = tool.get("function", tool)
        item: dict[str, Any] = {"name": function["name"]}
        if function.get("description"):
            item["description"] = function["description"]
        item["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
        out.append(item)
    return out


def place_cache_breakpoints(body: dict[str, Any]) -> int:
    """Mark the cache breakpoints of the module docstring's rule in ``body`` (in place); return how many."""
    targets: list[dict[str, Any]] = []
    system = body.get("system")
    if isinstance(system, list) and system:
        targets.append(system[-1])
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        targets.append(tools[-1])
    user_turns = [message for message in body.get("messages", ()) if message.get("role") == "user"]
    targets.extend(turn["content"][-1] for turn in reversed(user_turns[-2:]))
    for target in targets[:MAX_CACHE_BREAKPOINTS]:
        target["cache_control"] = dict(CACHE_CONTROL)
    return min(len(targets), MAX_CACHE_BREAKPOINTS)


_CONTROLLED_KEYS = ("model", "messages", "system", "tools", "stream", "stream_options")


def build_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[Any],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    *,
    state: object | None = None,
) -> dict[str, Any]:
    """The Messages API request body for the canonical ``messages`` (see the module docstring).

    ``state`` (server-held conversation state) does not exist in this API and is ignored.
    """
    del state
    body: dict[str, Any] = dict(extra or {})
    for key in _CONTROLLED_KEYS:
        body.pop(key, None)
    body["model"] = model
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    system, wire = wire_messages(messages)
    if system:
        body["system"] = system
    body["messages"] = wire
    if tools:
        body["tools"] = wire_tools(tools)
    if profile.streaming:
        body["stream"] = True
    place_cache_breakpoints(body)
    return body


# --- response ------------------------------------------------------------------------------------------------


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


# --- errors --------------------------------------------------------------------------------------------------

_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each documented ``error.type`` stands for (used for errors that arrive inside a stream)."""

_ADVICE: dict[int, tuple[type[ProviderHTTPError], str]] = {
    401: (AuthenticationError, "Check the Anthropic API key for this profile in Settings."),
    403: (AuthenticationError, "The key is not allowed to use this model or feature; check its permissions."),
    402: (PaymentRequiredError, "Add credits to your Anthropic account (Plans & Billing), then retry."),
    404: (ModelNotFoundError, "Check the model name and the base URL of this provider profile."),
    413: (
        ProviderHTTPError,
        "The request is larger than the API accepts (32 MB): compact the session or start a new one.",
    ),
    429: (RateLimitError, "Anthropic is rate-limiting this key; wait and retry."),
    529: (ServerError, "Anthropic's API is temporarily overloaded; retry in a moment."),
}
"""Anthropic's statuses, typed as :func:`~tiny_agent_core.providers.http_errors.status_error` types them, with
Anthropic's own ways out (and 529, which only Anthropic sends)."""

_MAXIMUM = re.compile(r">\s*(\d{3,9})\s*maximum", re.IGNORECASE)
"""The window in Anthropic's overflow text: ``prompt is too long: 191989 tokens > 180000 maximum``."""


def _error_parts(payload: Any, text: str) -> tuple[str | None, str]:
    """``(error.type, message)`` of an error body (any shape; the text itself when it is not the API's)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message")
        return (kind if isinstance(kind, str) else None), (
            message if isinstance(message, str) and message else json.dumps(error)[:500]
        )
    if isinstance(error, str) and error:
        return None, error
    return None, text.strip()[:500] or "(empty body)"


def _typed(status: int, label: str, detail: str, *, body: str, retry_after: float | None) -> ProviderHTTPError:
    if is_context_overflow(status, detail):
        match = _MAXIMUM.search(detail)
        window = int(match.group(1)) if match else None
        return context_length_error(f"{label}: {detail}", status=status, body=body, context_length=window)
    if status in _ADVICE:
        cls, advice = _ADVICE[status]
    elif status >= 500:
        cls, advice = ServerError, "Anthropic's API failed; retry later."
    else:
        cls, advice = ProviderHTTPError, "Anthropic rejected the request."
    if retry_after is not None and cls in (RateLimitError, ServerError):
        advice = f"{advice} Retry in {retry_after:g} s."
    return cls(f"{label}: {detail} — {advice}", status=status, body=body, retry_after=retry_after)


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response (status ≥ 400), with Anthropic's own explanation.

    ``retry_after`` comes from the ``retry-after`` header (:func:`~.http_errors.retry_after_header`). See the module
    docstring for the mapping.
    """
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        payload: Any = parse_json(text)
    except ValueError:
        payload = None
    kind, detail = _error_parts(payload, text)
    retry_after = retry_after_header(headers or {})
    label = f"HTTP {status}" + (f" {kind}" if kind else "")
    return _typed(status, label, detail, body=text, retry_after=retry_after)


def stream_error(payload: Any, *, usage: Usage | None = None) -> ProviderError:
    """The typed error for an ``error`` event (or a 2xx body of type ``error``): a documented ``error.type``
    becomes the HTTP error class of its status (an ``overloaded_error`` is a retryable ``ServerError``), anything
    else a :class:`~tiny_agent_core.errors.ProviderReportedError`."""
    text = payload if isinstance(payload, str) else ""
    kind, detail = _error_parts(payload, text)
    status = _ERROR_STATUS.get(kind or "")
    if status is None:
        return ProviderReportedError(f"The provider reported an error mid-stream: {detail}", usage=usage)
    body = payload if isinstance(payload, str) else _compact(payload)
    error = _typed(status, f"Mid-stream {kind}", detail, body=body, retry_after=None)
    error.usage = usage
    return error


@dataclass(frozen=True)
class AnthropicAdapter:
    """The Messages API as a wire adapter (the API kind ``anthropic``); each method delegates to this module."""

    kind: str = KIND

    def request_url(self, profile: ProviderProfile) -> str:
        """See :func:`request_url`."""
        return request_url(profile)

    def request_headers(self, profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
        """See :func:`request_headers`."""
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
        """See :func:`build_body`."""
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
        """See :func:`http_error`."""
        return http_error(status, body, headers)


ADAPTER = AnthropicAdapter()
"""The adapter instance the API-kind registry holds."""
