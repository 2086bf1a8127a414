"""The OpenAI Chat Completions adapter: provider bytes → a canonical result or a typed error.

This is the only module that knows the Chat Completions wire shapes. It handles a complete JSON body
(:func:`normalize_response_body`), an SSE stream event by event (:class:`StreamAccumulator`, fed by httpx-sse
both for live responses and for recorded text, :func:`normalize_sse_text`), and HTTP error bodies
(:func:`http_error`).

Both paths end in the same place: the assistant message is put through the *dialect repairs* (each one named,
applied only where the meaning is unambiguous, and reported in ``repairs``), then the normalization seam
(:func:`tiny_agent_core.seam.normalize_assistant_message`), then the finish-reason cross-validation. Provider-only
fields that carried a value are listed in ``dropped`` so the inspector can show what the seam removed.

Dialect repairs (:data:`REPAIRS`):

- ``empty_tool_calls``: ``tool_calls: []`` means the model called no tool (vLLM sends it).
- ``content_parts``: ``content`` given as a list of typed parts means the concatenation of its ``text`` parts;
  reasoning/thinking parts are not content. Any other part type is rejected (ambiguous).
- ``missing_content``: a message without a ``content`` key has no text (``null``) (Gemini sends it).
- ``missing_tool_call_type``: a call without ``type`` is a function call (the only kind this API has).
- ``missing_tool_call_id``: an empty or missing call id gets a fresh unique id (Gemini sends ``""``).
- ``empty_arguments``: tool-call ``arguments: ""`` means ``"{}"`` (no arguments).
- ``arguments_object``: arguments sent as a JSON object are serialised to a compact JSON string.
- ``missing_tool_call_index``: a streamed tool-call delta without ``index`` starts a new call when it carries a
  new id or a name, and otherwise continues the previous call.
- ``missing_done_marker``: a stream that ended cleanly after a ``finish_reason`` but without ``data: [DONE]``.
- ``usage_input_clamped``: cache reads plus writes exceed ``prompt_tokens`` (OpenRouter→Gemini reports the same
  tokens as both); uncached input is clamped to 0 as the reference does, and the inconsistency is visible.

Outbound repairs (:data:`OUTBOUND_REPAIRS`) change what is *sent*, for servers that refuse or mishandle a valid
request; each one follows from the profile's :class:`Dialect` (set per profile, or learned from the server's answer
by :func:`dialect_fallback`) and is reported with the result (``outbound_repairs``):

- ``tool_choice_auto``: ``tool_choice: "auto"`` is sent with the tools (llama-cpp-python leaves the tools out of the
  prompt without it; ``"auto"`` is the API's default, so the meaning is unchanged).
- ``tools_not_streamed``: a request offering tools is sent without streaming (llama-cpp-python cannot stream an
  automatic tool choice: it answers 200 with an empty body); the same events are produced from the JSON body.
- ``tool_call_content_empty_string``: an assistant tool-call message's ``content: null`` is sent as ``""``
  (llama-cpp-python refuses ``null``: HTTP 500 "Input should be a valid string"); no text either way.

A legacy ``function_call`` answer (without ``tool_calls``) is rejected: this client never sends ``functions`` and
the call carries no id to bind a result to. A context-window overflow becomes
:class:`~tiny_agent_core.errors.ContextLengthError` (kind ``context_length``) with the way out.

Every response is held to :class:`~tiny_agent_core.providers.results.Limits` (message, tool calls, arguments)
as it grows, and all provider JSON is parsed within the bounds of
:func:`~tiny_agent_core.providers.results.parse_json`; the shared result types live in
:mod:`tiny_agent_core.providers.results`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from httpx_sse import EventSource

from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    ContextLengthError,
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
from tiny_agent_core.messages import AssistantMessage
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
    utf8_size,
)
from tiny_agent_core.seam import ASSISTANT_KEYS, FUNCTION_KEYS, TOOL_CALL_KEYS, normalize_assistant_message
from tiny_agent_core.stop_reasons import stop_reason
from tiny_agent_core.usage import MAX_SAFE_INTEGER, Usage

REPAIRS = (
    "empty_tool_calls",
    "content_parts",
    "missing_content",
    "missing_tool_call_type",
    "missing_tool_call_id",
    "empty_arguments",
    "arguments_object",
    "missing_tool_call_index",
    "missing_done_marker",
    "usage_input_clamped",
)
"""Every dialect repair this adapter may apply, by name."""

OUTBOUND_REPAIRS = ("tool_choice_auto", "tools_not_streamed", "tool_call_content_empty_string")
"""Every outbound repair :func:`repair_request` may apply to a request, by name."""


@dataclass(frozen=True)
class Dialect:
    """What one server needs of a request beyond the OpenAI API (see the module docstring's outbound repairs)."""

    tool_choice_auto: bool = False
    """Send ``tool_choice: "auto"`` with the tools (``tool_choice_auto``)."""
    stream_tools: bool = True
    """A request offering tools may be streamed; when off, it is sent without streaming (``tools_not_streamed``)."""
    null_content: bool = True
    """The server accepts ``content: null`` in an assistant tool-call message; when off it is sent as ``""``
    (``tool_call_content_empty_string``)."""


DIALECT_REPAIRS = {
    "tool_choice_auto": "tool_choice_auto",
    "stream_tools": "tools_not_streamed",
    "null_content": "tool_call_content_empty_string",
}
"""The outbound repair each :class:`Dialect` field governs, by field name."""

LOCAL_DIALECT = Dialect(tool_choice_auto=True, null_content=False)
"""The dialect assumed for a local server (llama.cpp, llama-cpp-python, Ollama, LM Studio, vLLM): each repair is
also valid for OpenAI-compatible servers that do not need it."""


def repair_request(body: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The request ``body`` as ``dialect`` needs it to be sent, and the names of the outbound repairs applied."""
    out = dict(body)
    names: list[str] = []
    if out.get("tools"):
        if dialect.tool_choice_auto and "tool_choice" not in out:
            out["tool_choice"] = "auto"
            names.append("tool_choice_auto")
        if not dialect.stream_tools and out.get("stream"):
            del out["stream"]
            out.pop("stream_options", None)
            names.append("tools_not_streamed")
    if not dialect.null_content:
        messages = [
            {**message, "content": ""} if _null_content_call(message) else message
            for message in out.get("messages", ())
        ]
        if messages != out.get("messages", []):
            out["messages"] = messages
            names.append("tool_call_content_empty_string")
    return out, tuple(names)


def _null_content_call(message: Any) -> bool:
    return (
        isinstance(message, Mapping)
        and message.get("role") == "assistant"
        and bool(message.get("tool_calls"))
        and message.get("content") is None
    )


_STREAMING_TOOLS_REFUSED = re.compile(r"streaming tool choice is not supported", re.IGNORECASE)
_NOT_A_STRING = re.compile(r"input should be a valid string", re.IGNORECASE)


def dialect_fallback(error: ProviderError, body: Mapping[str, Any], dialect: Dialect) -> Dialect | None:
    """The dialect to resend ``body`` with when ``error`` shows the server refused a valid form it used, else ``None``.

    - A streamed request offering tools that ended empty (:class:`~tiny_agent_core.errors.EmptyStreamError`) or was
      refused with "streaming tool choice is not supported": resend without streaming.
    - An HTTP 400/422/500 saying "Input should be a valid string" for a request with an assistant tool-call message
      whose ``content`` is ``null``: resend it as ``""``.

    Each fallback happens at most once per request (the returned dialect no longer uses the refused form).
    """
    refused_stream = isinstance(error, EmptyStreamError) or _STREAMING_TOOLS_REFUSED.search(_error_text(error))
    if refused_stream and dialect.stream_tools and body.get("stream") and body.get("tools"):
        return replace(dialect, stream_tools=False)
    if (
        dialect.null_content
        and isinstance(error, ProviderHTTPError)
        and error.status in (400, 422, 500)
        and _NOT_A_STRING.search(_error_text(error))
        and any(_null_content_call(message) for message in body.get("messages", ()))
    ):
        return replace(dialect, null_content=False)
    return None


def _error_text(error: ProviderError) -> str:
    return f"{error} {error.body}" if isinstance(error, ProviderHTTPError) else str(error)


_NON_CONTENT_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking"})


def _error_message(error: Any) -> str:
    """The most useful human text inside a provider ``error`` value (handles nested and metadata forms)."""
    if isinstance(error, str):
        return error
    if not isinstance(error, dict):
        return json.dumps(error)[:500]
    inner = error.get("error")
    if isinstance(inner, dict | str) and not error.get("message"):
        return _error_message(inner)
    message = error.get("message")
    text = message if isinstance(message, str) and message else json.dumps(error)[:500]
    metadata = error.get("metadata")
    if isinstance(metadata, dict):
        provider = metadata.get("provider_name")
        raw = metadata.get("raw")
        if isinstance(raw, str) and raw and raw not in text:
            text = f"{text} ({raw[:300]})"
        if isinstance(provider, str) and provider:
            text = f"{text} [upstream: {provider}]"
    return text


def _count(owner: Mapping[str, Any], key: str, where: str) -> int | None:
    value = owner.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise MalformedResponseError(f"Provider usage field {where}{key} is not a non-negative integer: {value!r}.")
    return value


def usage_from_wire(usage: Any, notes: Notes | None = None) -> Usage | None:
    """Map a Chat Completions ``usage`` object to :class:`Usage`; ``None`` when the provider reported none.

    ``cacheRead`` is ``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens`` (only
    when ``cached_tokens`` is absent); ``cacheWrite`` is ``prompt_tokens_details.cache_write_tokens``, else
    ``cache_creation_input_tokens`` (in the details or at the top level); missing details count 0;
    ``input = prompt_tokens - cacheRead - cacheWrite``. A usage object reporting neither ``prompt_tokens`` nor
    ``completion_tokens`` is unknown. Non-integer or negative counts are malformed (never coerced).
    """
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise MalformedResponseError("Provider usage is not an object.")
    prompt = _count(usage, "prompt_tokens", "")
    completion = _count(usage, "completion_tokens", "")
    if prompt is None and completion is None:
        return None
    details = usage.get("prompt_tokens_details")
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        raise MalformedResponseError("Provider usage prompt_tokens_details is not an object.")
    cache_read = _count(details, "cached_tokens", "prompt_tokens_details.")
    if cache_read is None:
        cache_read = _count(usage, "prompt_cache_hit_tokens", "")
    cache_write = _count(details, "cache_write_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = _count(details, "cache_creation_input_tokens", "prompt_tokens_details.")
    if cache_write is None:
        cache_write = _count(usage, "cache_creation_input_tokens", "")
    cache_read = cache_read or 0
    cache_write = cache_write or 0
    uncached = (prompt or 0) - cache_read - cache_write
    if uncached < 0 and notes is not None:
        notes.repair("usage_input_clamped")
    return Usage(max(0, uncached), completion or 0, cache_read, cache_write)


def _provider_cost(usage: Any) -> Decimal | None:
    """OpenRouter's ``usage.cost``; ``None`` for BYOK requests, whose 0 is not what the user paid upstream."""
    if not isinstance(usage, dict) or usage.get("is_byok") is True:
        return None
    cost = usage.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    try:
        value = Decimal(str(cost))
    except InvalidOperation:
        return None
    return value if value.is_finite() and value >= 0 else None


def _content_from_parts(parts: list[Any], notes: Notes) -> str:
    texts: list[str] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind not in _NON_CONTENT_PARTS:
            raise MalformedResponseError(f"invalid assistant content: unsupported content part {kind!r}")
    notes.repair("content_parts")
    return "".join(texts)


def _repair_message(message: Any, notes: Notes, new_id: IdFactory) -> Any:
    """Apply the unambiguous dialect repairs to a wire assistant message; leave everything else to the seam."""
    if not isinstance(message, dict):
        return message
    repaired = dict(message)
    if "content" not in repaired:
        repaired["content"] = None
        notes.repair("missing_content")
    elif isinstance(repaired["content"], list):
        repaired["content"] = _content_from_parts(repaired["content"], notes)
    calls = repaired.get("tool_calls")
    if isinstance(calls, list):
        if not calls:
            del repaired["tool_calls"]
            notes.repair("empty_tool_calls")
        else:
            repaired["tool_calls"] = [_repair_call(call, notes, new_id) for call in calls]
    return repaired


def _repair_call(call: Any, notes: Notes, new_id: IdFactory) -> Any:
    if not isinstance(call, dict):
        return call
    repaired = dict(call)
    if "type" not in repaired or repaired["type"] is None:
        repaired["type"] = "function"
        notes.repair("missing_tool_call_type")
    if repaired.get("id") in (None, ""):
        repaired["id"] = new_id()
        notes.repair("missing_tool_call_id")
    function = repaired.get("function")
    if isinstance(function, dict):
        function = dict(function)
        arguments = function.get("arguments")
        if arguments == "":
            function["arguments"] = "{}"
            notes.repair("empty_arguments")
        elif isinstance(arguments, dict):
            function["arguments"] = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
            notes.repair("arguments_object")
        repaired["function"] = function
    return repaired


def _note_dropped(message: Any, notes: Notes) -> None:
    if not isinstance(message, dict):
        return
    notes.drop_extras(message, ASSISTANT_KEYS, "message.")
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for index, call in enumerate(calls):
            if isinstance(call, dict):
                notes.drop_extras(call, TOOL_CALL_KEYS, f"message.tool_calls[{index}].")
                function = call.get("function")
                if isinstance(function, dict):
                    notes.drop_extras(function, FUNCTION_KEYS, f"message.tool_calls[{index}].function.")


def _check_refusal(message: Any, usage: Usage | None) -> None:
    """A refusal with no answer and no calls is reported as a content-filter outcome, with the model's words."""
    if not isinstance(message, dict):
        return
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip() and not message.get("content") and not message.get("tool_calls"):
        raise ContentFilteredError(f"The model refused: {refusal.strip()}", usage=usage)


def _check_legacy_call(message: Any, usage: Usage | None) -> None:
    """A legacy ``function_call`` without ``tool_calls`` is refused: it has no id a result could bind to."""
    if isinstance(message, dict) and message.get("function_call") is not None and not message.get("tool_calls"):
        raise MalformedResponseError(
            "The model answered with a legacy function_call, which this client does not accept (it only sends "
            "tools and reads tool_calls). Use a model or server chat template with tool-call support.",
            usage=usage,
        )


def _check_limits(message: Any, limits: Limits) -> None:
    """Refuse a repaired wire message over the tool-call or message limits, before the seam copies it."""
    if not isinstance(message, dict):
        return
    content = message.get("content")
    total = utf8_size(content) if isinstance(content, str) else 0
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        if len(calls) > limits.tool_calls:
            raise too_many_calls(limits)
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if isinstance(arguments, str):
                size = utf8_size(arguments)
                if size > limits.tool_call_argument_bytes:
                    raise arguments_too_large(limits)
                total += size
    if total > limits.message_bytes:
        raise message_too_large(limits)


def _finalize(
    message: Any,
    finish_reason: Any,
    usage: Usage | None,
    notes: Notes,
    new_id: IdFactory,
    limits: Limits,
    *,
    provider_cost: Decimal | None,
    response_id: Any,
    model: Any,
) -> NormalizedResponse:
    """The shared tail of both paths: refusal check, repairs, limits, seam, finish-reason cross-validation."""
    _check_refusal(message, usage)
    _check_legacy_call(message, usage)
    _note_dropped(message, notes)
    try:
        repaired = _repair_message(message, notes, new_id)
        _check_limits(repaired, limits)
        canonical = normalize_assistant_message(repaired)
        reason = stop_reason(finish_reason, canonical)
    except ProviderError as error:
        error.usage = usage
        raise
    return NormalizedResponse(
        message=canonical,
        stop_reason=reason,
        usage=usage,
        repairs=tuple(notes.repairs),
        dropped=tuple(notes.dropped),
        provider_cost=provider_cost,
        response_id=response_id if isinstance(response_id, str) and response_id else None,
        model=model if isinstance(model, str) and model else None,
    )


def _raise_failure_reason(finish_reason: Any, usage: Usage | None) -> None:
    """Raise for ``content_filter``/``error`` finish reasons, which need no message to be meaningful."""
    try:
        stop_reason(finish_reason, AssistantMessage(content=None))
    except (ContentFilteredError, ProviderReportedError) as error:
        error.usage = usage
        raise
    except MalformedResponseError:
        return


def normalize_response_body(
    body: bytes | str, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS
) -> NormalizedResponse:
    """Normalize a complete 2xx Chat Completions JSON body.

    Raises :class:`~tiny_agent_core.errors.ProviderError` subclasses: malformed JSON or shape, a provider
    ``error`` object, a content filter or refusal, a message over ``limits``, or a seam / finish-reason rejection
    (with usage attached).
    """
    value = load_json(body, "The provider response")
    if not isinstance(value, dict):
        raise MalformedResponseError("The provider response is not a JSON object.")
    notes = Notes()
    usage = usage_from_wire(value.get("usage"), notes)
    if value.get("error") is not None:
        raise ProviderReportedError(f"The provider reported an error: {_error_message(value['error'])}", usage=usage)
    choices = value.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        raise MalformedResponseError("The provider returned no assistant message (no choices).", usage=usage)
    finish_reason = choice.get("finish_reason")
    message = choice.get("message")
    if message is None:
        _raise_failure_reason(finish_reason, usage)
        raise MalformedResponseError("The provider returned no assistant message.", usage=usage)
    return _finalize(
        message,
        finish_reason,
        usage,
        notes,
        new_id,
        limits,
        provider_cost=_provider_cost(value.get("usage")),
        response_id=value.get("id"),
        model=value.get("model"),
    )


@dataclass
class _PartialCall:
    id: str | None = None
    type: str | None = None
    name: str | None = None
    arguments: Pieces = field(default_factory=Pieces)
    arguments_object: Any = None


_DELTA_KEYS = frozenset({"role", "content", "tool_calls", "refusal", "function_call"})


class StreamAccumulator:
    """Accumulates a Chat Completions SSE stream, event by event, into the same result as the JSON body.

    Feed every SSE event with :meth:`feed`; it returns the deltas a view can show at once and raises a typed
    error as soon as the stream reports one. After the stream ends, :meth:`finish` returns the
    :class:`NormalizedResponse` (or raises). Each event costs O(size of the event). The message, its tool calls
    and their arguments are held to ``limits`` as they grow, so an oversized one is refused before it is whole.
    """

    def __init__(self, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS) -> None:
        self._new_id = new_id
        self._limits = limits
        self._message_bytes = 0
        self._notes = Notes()
        self._text: Pieces | None = None
        self._refusal = Pieces()
        self._calls: dict[int, _PartialCall] = {}
        self._last_index: int | None = None
        self._finish_reason: Any = None
        self._usage: Usage | None = None
        self._usage_raw: Any = None
        self._response_id: Any = None
        self._model: Any = None
        self._chunks = 0
        self._done = False
        self._legacy_call = False

    @property
    def done(self) -> bool:
        """True once ``data: [DONE]`` arrived; later events are ignored."""
        return self._done

    @property
    def usage(self) -> Usage | None:
        """The latest usage reported so far (for recording what a failed stream cost)."""
        return self._usage

    def feed(self, event: str, data: str) -> list[StreamDelta]:
        """Process one SSE event (its ``event`` name and ``data``); return the deltas it carried."""
        if self._done:
            return []
        if data.strip() == "[DONE]":
            self._done = True
            return []
        if event == "error":
            detail = data
            with contextlib.suppress(ValueError):
                detail = _error_message(parse_json(data))
            raise ProviderReportedError(f"The provider reported an error mid-stream: {detail}", usage=self._usage)
        chunk = load_json(data, f"Stream chunk {self._chunks + 1}")
        self._chunks += 1
        if not isinstance(chunk, dict):
            raise MalformedResponseError(f"Stream chunk {self._chunks} is not a JSON object.", usage=self._usage)
        deltas: list[StreamDelta] = []
        if chunk.get("usage") is not None:
            usage = usage_from_wire(chunk["usage"], self._notes)
            if usage is not None:
                self._usage = usage
                self._usage_raw = chunk["usage"]
                deltas.append(UsageReported(usage))
        if chunk.get("error") is not None:
            raise ProviderReportedError(
                f"The provider reported an error mid-stream: {_error_message(chunk['error'])}",
                usage=self._usage,
            )
        self._response_id = self._response_id or chunk.get("id")
        self._model = self._model or chunk.get("model")
        choices = chunk.get("choices")
        if choices is None:
            return deltas
        if not isinstance(choices, list):
            raise MalformedResponseError(f"Stream chunk {self._chunks} has invalid choices.", usage=self._usage)
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedResponseError(f"Stream chunk {self._chunks} has an invalid choice.", usage=self._usage)
            if choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason") is not None:
                self._finish_reason = choice["finish_reason"]
            delta = choice.get("delta")
            if delta is None:
                continue
            if not isinstance(delta, dict):
                raise MalformedResponseError(f"Stream chunk {self._chunks} has an invalid delta.", usage=self._usage)
            try:
                deltas.extend(self._apply_delta(delta))
            except ProviderError as error:
                error.usage = self._usage
                raise
        return deltas

    def _apply_delta(self, delta: dict[str, Any]) -> list[StreamDelta]:
        self._notes.drop_extras(delta, _DELTA_KEYS, "message.")
        role = delta.get("role")
        if role is not None and role != "assistant":
            raise MalformedResponseError("invalid assistant message role")
        out: list[StreamDelta] = []
        content = delta.get("content")
        if isinstance(content, list):
            content = _content_from_parts(content, self._notes)
        if content is not None:
            if not isinstance(content, str):
                raise MalformedResponseError("invalid assistant content")
            if self._text is None:
                self._text = Pieces()
            self._grow(self._text.add(content))
            if content:
                out.append(StreamedText(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            self._grow(self._refusal.add(refusal))
        if delta.get("function_call") is not None:
            self._legacy_call = True
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise MalformedResponseError("invalid assistant tool_calls")
            out.extend(self._apply_call_delta(call) for call in calls)
        return out

    def _grow(self, size: int) -> None:
        self._message_bytes += size
        if self._message_bytes > self._limits.message_bytes:
            raise message_too_large(self._limits)

    def _call_index(self, call: dict[str, Any]) -> int:
        index = call.get("index")
        if index is not None:
            if type(index) is not int or index < 0:
                raise MalformedResponseError(f"invalid assistant tool call index {index!r}")
            return index
        self._notes.repair("missing_tool_call_index")
        call_id = call.get("id")
        function = call.get("function")
        starts_new = (isinstance(call_id, str) and call_id and all(c.id != call_id for c in self._calls.values())) or (
            isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]
        )
        if self._last_index is None or starts_new:
            return max(self._calls, default=-1) + 1
        return self._last_index

    def _apply_call_delta(self, call: Any) -> StreamedToolCall:
        if not isinstance(call, dict):
            raise MalformedResponseError("invalid assistant tool call")
        index = self._call_index(call)
        if index not in self._calls and len(self._calls) >= self._limits.tool_calls:
            raise too_many_calls(self._limits)
        self._last_index = index
        partial = self._calls.setdefault(index, _PartialCall())
        self._notes.drop_extras(call, TOOL_CALL_KEYS | {"index"}, f"message.tool_calls[{index}].")
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id:
            if partial.id not in (None, call_id):
                raise MalformedResponseError(f"invalid assistant tool call: index {index} changed its id")
            partial.id = call_id
        elif call_id not in (None, ""):
            raise MalformedResponseError("invalid assistant tool call")
        if call.get("type") is not None:
            partial.type = call["type"]
        function = call.get("function")
        name: str | None = None
        arguments = ""
        if function is not None:
            if not isinstance(function, dict):
                raise MalformedResponseError("invalid assistant tool call")
            self._notes.drop_extras(function, FUNCTION_KEYS, f"message.tool_calls[{index}].function.")
            name = function.get("name")
            if name is not None:
                if not isinstance(name, str):
                    raise MalformedResponseError("invalid assistant tool call function")
                if name and partial.name not in (None, name):
                    raise MalformedResponseError(
                        f"invalid assistant tool call function: index {index} changed its name"
                    )
                partial.name = partial.name or name or None
            piece = function.get("arguments")
            if isinstance(piece, str):
                arguments = piece
                self._grow(partial.arguments.add(piece))
                if partial.arguments.size > self._limits.tool_call_argument_bytes:
                    raise arguments_too_large(self._limits)
            elif isinstance(piece, dict):
                if partial.arguments.count or partial.arguments_object is not None:
                    raise MalformedResponseError("invalid assistant tool call function: mixed argument forms")
                partial.arguments_object = piece
            elif piece is not None:
                raise MalformedResponseError("invalid assistant tool call function")
        return StreamedToolCall(
            index, call_id if isinstance(call_id, str) and call_id else None, name or None, arguments
        )

    def _message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        message["content"] = None if self._text is None else self._text.text()
        if self._refusal.count:
            message["refusal"] = self._refusal.text()
        if self._legacy_call:
            message["function_call"] = {}  # its pieces are never used: only its presence matters
        if self._calls:
            calls = []
            for index in sorted(self._calls):
                partial = self._calls[index]
                call: dict[str, Any] = {"id": partial.id, "function": {}}
                if partial.type is not None:
                    call["type"] = partial.type
                if partial.name is not None:
                    call["function"]["name"] = partial.name
                call["function"]["arguments"] = (
                    partial.arguments_object if partial.arguments_object is not None else partial.arguments.text()
                )
                calls.append(call)
            message["tool_calls"] = calls
        return message

    def finish(self) -> NormalizedResponse:
        """The canonical result of the whole stream; raises if the stream was incomplete or invalid."""
        if self._chunks == 0:
            raise EmptyStreamError("The stream ended before any complete event arrived.")
        if not self._done:
            if self._finish_reason is None:
                raise MalformedResponseError(
                    "The stream ended before the response completed (no finish_reason and no [DONE]).",
                    usage=self._usage,
                )
            self._notes.repair("missing_done_marker")
        if self._finish_reason is not None:
            _raise_failure_reason(self._finish_reason, self._usage)
        return _finalize(
            self._message(),
            self._finish_reason,
            self._usage,
            self._notes,
            self._new_id,
            self._limits,
            provider_cost=_provider_cost(self._usage_raw),
            response_id=self._response_id,
            model=self._model,
        )


def normalize_sse_text(
    text: str, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS
) -> NormalizedResponse:
    """Normalize a complete recorded SSE stream (the raw ``text/event-stream`` text).

    Decodes with httpx-sse, exactly as a live streamed response is decoded, then runs :class:`StreamAccumulator`
    (``limits`` as for a live stream).
    """
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode("utf-8"))
    accumulator = StreamAccumulator(new_id=new_id, limits=limits)
    for sse in EventSource(response).iter_sse():
        accumulator.feed(sse.event, sse.data)
    return accumulator.finish()


_RETRY_IN = re.compile(r"(?:try again|retry) in\s+(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)(ms|s))?", re.IGNORECASE)


def _retry_after_header(headers: Mapping[str, str]) -> float | None:
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    try:
        reference = parsedate_to_datetime(lowered["date"]) if "date" in lowered else datetime.now(UTC)
    except (TypeError, ValueError):
        reference = datetime.now(UTC)
    return max(0.0, (moment - reference).total_seconds())


def _retry_after_body(payload: Any, text: str) -> float | None:
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        availability = error.get("availability")
        if isinstance(availability, dict):
            value = availability.get("retry_after")
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                return float(value)
    match = _RETRY_IN.search(text)
    if not match or not any(match.groups()):
        return None
    hours, minutes, amount, unit = match.groups()
    seconds = float(hours or 0) * 3600 + float(minutes or 0) * 60
    if amount:
        seconds += float(amount) / (1000 if unit == "ms" else 1)
    return seconds


_HTTP_CLASSES: dict[int, tuple[type[ProviderHTTPError], str]] = {
    401: (AuthenticationError, "Check the API key for this provider in Settings."),
    403: (
        AuthenticationError,
        "The key is not allowed to use this model or endpoint; check its permissions.",
    ),
    402: (PaymentRequiredError, "Add credits to your account with the provider, then retry."),
    404: (ModelNotFoundError, "Check the model name and the base URL of this provider profile."),
    408: (RateLimitError, "The provider timed out the request; retry."),
    429: (RateLimitError, "The provider is rate-limiting you; wait and retry."),
}


_CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|exceeds? (?:the )?(?:available )?context"
    r"|exceed_context_size|context window|prompt is too long|too many tokens in the prompt",
    re.IGNORECASE,
)
_CONTEXT_SIZE = re.compile(
    r"(?:maximum context length|context window|context size|context length)\D{0,24}?(\d{3,9})", re.IGNORECASE
)
CONTEXT_ADVICE = (
    "The conversation no longer fits the model's context window, so retrying fails the same way: compact the "
    "session (Compact, Ctrl+Shift+K in the window) or start a new session."
)
"""The way out a :class:`~tiny_agent_core.errors.ContextLengthError` message ends with."""


def _context_length_in(payload: Any, detail: str) -> int | None:
    """The context window a context-overflow error names (llama.cpp ``error.n_ctx``, else a number in the text)."""
    error = payload.get("error") if isinstance(payload, dict) else None
    n_ctx = error.get("n_ctx") if isinstance(error, dict) else None
    if type(n_ctx) is int and n_ctx > 0:
        return n_ctx
    match = _CONTEXT_SIZE.search(detail)
    return int(match.group(1)) if match else None


def context_length_error(
    message: str, *, status: int, body: str = "", context_length: int | None = None
) -> ContextLengthError:
    """A :class:`~tiny_agent_core.errors.ContextLengthError` whose message ends with the way out."""
    size = f" ({context_length:,} tokens)" if context_length else ""
    advice = CONTEXT_ADVICE.replace("context window", f"context window{size}", 1)
    return ContextLengthError(f"{message} — {advice}", status=status, body=body, context_length=context_length)


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response (status ≥ 400), with the provider's own explanation.

    ``retry_after`` comes from ``Retry-After``/``retry-after-ms`` headers, else from retry hints in the body
    (OpenRouter ``error.availability.retry_after``, "try again in 20s" / "7m54.3s" / "120ms" texts). A
    context-window overflow (400/413/422/500 saying "maximum context length", "exceeds the available context
    size", "context window"…) is a :class:`~tiny_agent_core.errors.ContextLengthError` with the way out.
    """
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        payload: Any = parse_json(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("error") is not None:
        detail = _error_message(payload["error"])
    elif isinstance(payload, dict) and isinstance(payload.get("message") or payload.get("detail"), str):
        detail = payload.get("message") or payload["detail"]
    else:
        detail = text.strip()[:500] or "(empty body)"
    if status in (400, 413, 422, 500) and _CONTEXT_OVERFLOW.search(detail):
        return context_length_error(
            f"HTTP {status}: {detail}", status=status, body=text, context_length=_context_length_in(payload, detail)
        )
    retry_after = _retry_after_header(headers or {})
    if retry_after is None:
        retry_after = _retry_after_body(payload, detail)
    if status in _HTTP_CLASSES:
        cls, advice = _HTTP_CLASSES[status]
    elif status >= 500:
        cls, advice = ServerError, "The provider failed; retry later."
    else:
        cls, advice = ProviderHTTPError, "The provider rejected the request."
    if retry_after is not None and cls is RateLimitError:
        advice = f"Retry in {retry_after:g} s."
    return cls(f"HTTP {status}: {detail} — {advice}", status=status, body=text, retry_after=retry_after)
