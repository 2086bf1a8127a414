"""The OpenAI Chat Completions adapter: canonical transcript → request, provider bytes → a canonical result or a
typed error.

This is the only module (with its three helpers below) that knows the Chat Completions wire shapes. It builds the
request (:func:`build_request_body`), and handles a complete JSON body (:func:`normalize_response_body`) and an SSE
stream event by event (:class:`StreamAccumulator`, fed by httpx-sse both for live responses and for recorded text,
:func:`normalize_sse_text`).

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

Outbound repairs (what is *sent* differently for servers that refuse a valid request) are in
:mod:`~tiny_agent_core.providers.openai_dialect`, the usage mapping in :mod:`~tiny_agent_core.providers.openai_usage`,
the HTTP error mapping in :mod:`~tiny_agent_core.providers.http_errors`. :data:`ADAPTER` is this API kind
(``openai-chat``) as the client uses it (:mod:`~tiny_agent_core.providers.api_kinds`).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import (
    ContentFilteredError,
    EmptyStreamError,
    MalformedResponseError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
)
from tiny_agent_core.messages import AssistantMessage
from tiny_agent_core.providers import http_errors, openai_dialect
from tiny_agent_core.providers.http_errors import error_message
from tiny_agent_core.providers.openai_usage import provider_cost, usage_from_wire
from tiny_agent_core.providers.results import (
    DEFAULT_LIMITS,
    ConversationState,
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
from tiny_agent_core.usage import Usage

if TYPE_CHECKING:
    from tiny_agent_core.providers.openai_dialect import Dialect
    from tiny_agent_core.providers.profiles import ProviderProfile

KIND = "openai-chat"
"""The API kind name of this adapter (a profile's ``api``)."""

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


def build_request_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON request: ``{model, messages, tools?, stream: true, stream_options: {include_usage: true}}``.

    Without streaming (profile flag) the stream keys are left out; ``stream_options`` only where accepted.
    ``extra`` adds request parameters (``temperature``, ``max_tokens``…) but never overrides the above. The
    profile's outbound repairs are applied when the request is sent (the client), not here.
    """
    body: dict[str, Any] = dict(extra or {})
    body["model"] = model
    body["messages"] = [dict(message) for message in messages]
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    else:
        body.pop("tools", None)
    body.pop("stream", None)
    body.pop("stream_options", None)
    if profile.streaming:
        body["stream"] = True
        if profile.stream_options:
            body["stream_options"] = {"include_usage": True}
    return body


_NON_CONTENT_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking"})


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
        raise ProviderReportedError(f"The provider reported an error: {error_message(value['error'])}", usage=usage)
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
        provider_cost=provider_cost(value.get("usage")),
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
            raise self._error_event(data)
        chunk = self._chunk(data)
        deltas = self._apply_usage(chunk.get("usage"))
        if chunk.get("error") is not None:
            raise ProviderReportedError(
                f"The provider reported an error mid-stream: {error_message(chunk['error'])}",
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
            deltas.extend(self._apply_choice(choice))
        return deltas

    def _error_event(self, data: str) -> ProviderReportedError:
        """The error an SSE ``error`` event reports (its message when ``data`` is a JSON error, else ``data``)."""
        detail = data
        with contextlib.suppress(ValueError):
            detail = error_message(parse_json(data))
        return ProviderReportedError(f"The provider reported an error mid-stream: {detail}", usage=self._usage)

    def _chunk(self, data: str) -> dict[str, Any]:
        """The next chunk: ``data`` parsed as a JSON object (and counted)."""
        chunk = load_json(data, f"Stream chunk {self._chunks + 1}")
        self._chunks += 1
        if not isinstance(chunk, dict):
            raise MalformedResponseError(f"Stream chunk {self._chunks} is not a JSON object.", usage=self._usage)
        return chunk

    def _apply_usage(self, raw: Any) -> list[StreamDelta]:
        """Take a chunk's ``usage`` (when it has a usable one) as the latest; the delta that reports it."""
        if raw is None:
            return []
        usage = usage_from_wire(raw, self._notes)
        if usage is None:
            return []
        self._usage = usage
        self._usage_raw = raw
        return [UsageReported(usage)]

    def _apply_choice(self, choice: Any) -> list[StreamDelta]:
        """Apply one choice of a chunk (only choice 0 counts): its finish reason and its delta."""
        if not isinstance(choice, dict):
            raise MalformedResponseError(f"Stream chunk {self._chunks} has an invalid choice.", usage=self._usage)
        if choice.get("index", 0) != 0:
            return []
        if choice.get("finish_reason") is not None:
            self._finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if delta is None:
            return []
        if not isinstance(delta, dict):
            raise MalformedResponseError(f"Stream chunk {self._chunks} has an invalid delta.", usage=self._usage)
        try:
            return self._apply_delta(delta)
        except ProviderError as error:
            error.usage = self._usage
            raise

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
        name, arguments = self._apply_function_delta(index, partial, call.get("function"))
        return StreamedToolCall(
            index, call_id if isinstance(call_id, str) and call_id else None, name or None, arguments
        )

    def _apply_function_delta(self, index: int, partial: _PartialCall, function: Any) -> tuple[str | None, str]:
        """Apply a tool-call delta's ``function`` to call ``index``; the name and argument text it carried."""
        if function is None:
            return None, ""
        if not isinstance(function, dict):
            raise MalformedResponseError("invalid assistant tool call")
        self._notes.drop_extras(function, FUNCTION_KEYS, f"message.tool_calls[{index}].function.")
        name = function.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise MalformedResponseError("invalid assistant tool call function")
            if name and partial.name not in (None, name):
                raise MalformedResponseError(f"invalid assistant tool call function: index {index} changed its name")
            partial.name = partial.name or name or None
        return name, self._apply_arguments_delta(partial, function.get("arguments"))

    def _apply_arguments_delta(self, partial: _PartialCall, piece: Any) -> str:
        """Add an ``arguments`` piece to ``partial`` (text, or the whole arguments as a JSON object); the text."""
        if isinstance(piece, str):
            self._grow(partial.arguments.add(piece))
            if partial.arguments.size > self._limits.tool_call_argument_bytes:
                raise arguments_too_large(self._limits)
            return piece
        if isinstance(piece, dict):
            if partial.arguments.count or partial.arguments_object is not None:
                raise MalformedResponseError("invalid assistant tool call function: mixed argument forms")
            partial.arguments_object = piece
        elif piece is not None:
            raise MalformedResponseError("invalid assistant tool call function")
        return ""

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
            provider_cost=provider_cost(self._usage_raw),
            response_id=self._response_id,
            model=self._model,
        )


def normalize_sse_text(
    text: str, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS
) -> NormalizedResponse:
    """Normalize a complete recorded SSE stream (the raw ``text/event-stream`` text).

    Decodes with httpx-sse, exactly as a live streamed response is decoded, then runs :class:`StreamAccumulator`
    (``limits`` as for a live stream): :func:`~tiny_agent_core.providers.api_kinds.normalize_sse_text` with this
    adapter.
    """
    from tiny_agent_core.providers import api_kinds  # the registry imports this module

    return api_kinds.normalize_sse_text(ADAPTER, text, limits=limits, new_id=new_id)


@dataclass(frozen=True)
class ChatCompletionsAdapter:
    """Chat Completions as a wire adapter (API kind ``openai-chat``), with the dialect's outbound repairs."""

    kind: str = KIND
    """See :data:`KIND`."""

    def request_url(self, profile: ProviderProfile) -> str:
        """``<base_url>/chat/completions``."""
        return f"{profile.base_url}/chat/completions"

    def request_headers(self, profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
        """The profile's extra headers and ``Authorization: Bearer <key>`` when a key is given."""
        return profile.headers(api_key)

    def build_body(
        self,
        profile: ProviderProfile,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        extra: Mapping[str, Any] | None,
        *,
        state: ConversationState | None = None,
    ) -> dict[str, Any]:
        """See :func:`build_request_body` (the API keeps no server state: ``state`` is ignored)."""
        return build_request_body(profile, model, messages, tools, extra)

    def new_accumulator(self, limits: Limits, new_id: IdFactory = new_tool_call_id) -> StreamAccumulator:
        """A fresh :class:`StreamAccumulator`."""
        return StreamAccumulator(new_id=new_id, limits=limits)

    def normalize_body(
        self, body: bytes | str, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id
    ) -> NormalizedResponse:
        """See :func:`normalize_response_body`."""
        return normalize_response_body(body, new_id=new_id, limits=limits)

    def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> ProviderHTTPError:
        """See :func:`~tiny_agent_core.providers.http_errors.http_error`."""
        return http_errors.http_error(status, body, headers)

    def repair_request(self, body: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], tuple[str, ...]]:
        """See :func:`~tiny_agent_core.providers.openai_dialect.repair_request`."""
        return openai_dialect.repair_request(body, dialect)

    def fallback(self, error: ProviderError, body: Mapping[str, Any], dialect: Dialect) -> Dialect | None:
        """See :func:`~tiny_agent_core.providers.openai_dialect.dialect_fallback`."""
        return openai_dialect.dialect_fallback(error, body, dialect)


ADAPTER = ChatCompletionsAdapter()
"""The adapter instance the API-kind registry holds."""
