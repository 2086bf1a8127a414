"""The OpenAI Responses adapter (API kind ``openai-responses``): canonical transcript → request, provider bytes →
a canonical result or a typed error.

This is the only module that knows the Responses API wire shapes (``POST <base_url>/responses``). It builds the
request (:func:`build_request_body`), normalizes a complete JSON body (:func:`normalize_response_body`), a stream
event by event (:class:`ResponsesAccumulator`, fed by httpx-sse both for live responses and for recorded text),
and HTTP error bodies (:func:`http_error`); :data:`ADAPTER` is this API kind as the client uses it
(:mod:`~tiny_agent_core.providers.api_kinds`).

Requests. The canonical transcript becomes ``input`` items: the system prompt is ``instructions`` (sent with every
request: the server never carries it over from a previous response); a user message is a ``message`` item with
``input_text``; an assistant message is a ``message`` item with ``output_text`` when it has text, followed by one
``function_call`` item (``call_id``, ``name``, ``arguments``) per tool call; a tool result is a
``function_call_output`` item (``call_id``, ``output``). Tools become ``{type: "function", name, description,
parameters}``; ``max_tokens`` (the loop's room for the answer) is sent as ``max_output_tokens``.

State. By default every request is stateless: ``store: false`` and the whole transcript as input, like Chat
Completions. A profile with ``server_state`` asks the server to keep each response (``store: true``); given a
:class:`~tiny_agent_core.providers.results.ConversationState` (the server holds the first ``covered`` messages of
the transcript, system prompt excluded, under ``response_id``), the request carries ``previous_response_id`` and
only the messages after ``covered``. The canonical transcript is still what the session file holds, and the
result's ``response_id`` is the id to chain from next. When the server no longer has that response
(:func:`state_lost`: ``previous_response_not_found``, HTTP 400/404/409), the request is sent once more with the
whole transcript and no ``previous_response_id`` (the client does this, through :attr:`ResponsesAdapter.state_lost`),
and the result names the outbound repair ``server_state_lost``.

Responses. A response is a list of output items. ``message`` items give the text (``output_text`` parts) and
refusals (``refusal`` parts: a refusal with no text and no call is a
:class:`~tiny_agent_core.errors.ContentFilteredError`); ``function_call`` items give the tool calls, whose
canonical ``id`` is the ``call_id``; ``reasoning`` items are kept out of the canonical transcript and listed in
``dropped``. Any other item type (a built-in tool call this client never offers) is malformed: fail closed. The
assistant message then goes through the normalization seam
(:func:`tiny_agent_core.seam.normalize_assistant_message`) and the stop-reason cross-validation, exactly as a Chat
Completions answer. ``status``: ``completed`` → ``stop``/``toolUse``; ``incomplete`` with reason
``max_output_tokens`` → ``length``, with ``content_filter`` → :class:`~tiny_agent_core.errors.ContentFilteredError`;
``failed`` → the typed error of its ``error`` (:func:`reported_error`).

A stream is ``response.created`` …, ``response.output_item.added``, ``response.output_text.delta``,
``response.function_call_arguments.delta``/``.done``, ``response.output_item.done``, and one terminal event:
``response.completed``, ``response.incomplete`` or ``response.failed``; an ``error`` event is a typed error at once.
The event name is the JSON's ``type`` (the ``event:`` line repeats it, and recorders often drop it). There is no
``[DONE]`` marker (one is ignored if a proxy adds it); a stream that ends without a terminal event is malformed.

Usage: ``input_tokens`` includes cached (and cache-written) tokens, so ``input = input_tokens − cached_tokens −
cache_write_tokens``, ``cacheRead = input_tokens_details.cached_tokens``, ``cacheWrite =
input_tokens_details.cache_write_tokens``; ``output = output_tokens``, which already includes
``output_tokens_details.reasoning_tokens`` (never added a second time).

Dialect repairs (:data:`REPAIRS`), each named in the result:

- ``message_items_joined``: several ``message`` items (a commentary preamble, then the final answer) are one
  canonical text, joined with a blank line.
- ``missing_call_id``: a ``function_call`` without ``call_id`` gets a fresh unique id.
- ``empty_arguments``: ``arguments: ""`` means ``"{}"`` (no arguments).
- ``missing_output_index``: a stream event without ``output_index`` belongs to the item its ``item_id`` names, else
  to the last item (a new item goes after every known one).
- ``output_only_in_final_event``: a stream without item events whose terminal event carries the output.
- ``usage_input_clamped``: cached plus cache-written tokens exceed ``input_tokens``; uncached input is clamped to 0.

Every size is bounded by :class:`~tiny_agent_core.providers.results.Limits`, as for Chat Completions, and the
number of output items by :data:`MAX_OUTPUT_ITEMS`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import (
    ContentFilteredError,
    EmptyStreamError,
    MalformedResponseError,
    PaymentRequiredError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
    ResponseTooLargeError,
)
from tiny_agent_core.providers import http_errors
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
    usage_count,
    utf8_size,
)
from tiny_agent_core.seam import normalize_assistant_message
from tiny_agent_core.stop_reasons import stop_reason
from tiny_agent_core.usage import MAX_SAFE_INTEGER, Usage

if TYPE_CHECKING:
    from tiny_agent_core.providers.profiles import ProviderProfile

KIND = "openai-responses"
"""The API kind this adapter speaks (:attr:`~tiny_agent_core.providers.profiles.ProviderProfile.api`)."""

REPAIRS = (
    "message_items_joined",
    "missing_call_id",
    "empty_arguments",
    "missing_output_index",
    "output_only_in_final_event",
    "usage_input_clamped",
)
"""Every dialect repair this adapter may apply, by name."""

MAX_OUTPUT_ITEMS = 1024
"""The most output items (messages, calls, reasoning) one response may have: a real one has a handful."""

MESSAGE_SEPARATOR = "\n\n"
"""What joins the texts of several ``message`` items (``message_items_joined``)."""


# --- requests -------------------------------------------------------------------------------------------------


def request_url(profile: ProviderProfile) -> str:
    """``<base_url>/responses``."""
    return f"{profile.base_url}/responses"


def _text_item(role: str, part: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _message_items(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The input items of one canonical (non-system) message."""
    role = message.get("role")
    if role == "user":
        return [_text_item("user", "input_text", message["content"])]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}]
    if role == "assistant":
        items: list[dict[str, Any]] = []
        if message.get("content"):
            items.append(_text_item("assistant", "output_text", message["content"]))
        for call in message.get("tool_calls") or ():
            function = call["function"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
        return items
    if role == "system":  # a system message inside the transcript (not the leading prompt)
        return [_text_item("system", "input_text", message["content"])]
    raise ValueError(f"cannot send a message with role {role!r}")


def split_system(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Mapping[str, Any]]]:
    """The leading system prompt (``None`` when there is none) and the canonical transcript after it."""
    if messages and messages[0].get("role") == "system":
        return messages[0]["content"], list(messages[1:])
    return None, list(messages)


def _tool_json(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool ``{type, function: {name, description, parameters}}`` in the Responses form."""
    function = tool.get("function")
    if not isinstance(function, Mapping):
        return dict(tool)
    out: dict[str, Any] = {"type": "function", "name": function["name"]}
    if function.get("description") is not None:
        out["description"] = function["description"]
    if function.get("parameters") is not None:
        out["parameters"] = function["parameters"]
    return out


_MAX_TOKEN_KEYS = ("max_tokens", "max_completion_tokens")


def build_request_body(
    profile: ProviderProfile,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    *,
    state: ConversationState | None = None,
) -> dict[str, Any]:
    """The JSON request (see the module docstring): stateless unless the profile keeps server state.

    ``messages`` are canonical JSON messages (the system prompt first, if any). ``state`` is used only when the
    profile has ``server_state`` and it covers at most the whole transcript; otherwise the whole transcript is
    sent. ``extra`` adds request parameters but never overrides the ones set here; ``max_tokens`` (or
    ``max_completion_tokens``) becomes ``max_output_tokens``.
    """
    body: dict[str, Any] = dict(extra or {})
    for key in _MAX_TOKEN_KEYS:
        if key in body:
            value = body.pop(key)
            body.setdefault("max_output_tokens", value)
    for key in ("input", "instructions", "tools", "stream", "stream_options", "previous_response_id", "messages"):
        body.pop(key, None)
    instructions, transcript = split_system(messages)
    keep = profile.server_state
    if keep and state is not None and 0 < state.covered <= len(transcript):
        body["previous_response_id"] = state.response_id
        transcript = transcript[state.covered :]
    body["model"] = model
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = [item for message in transcript for item in _message_items(message)]
    if tools:
        body["tools"] = [_tool_json(tool) for tool in tools]
    body["store"] = keep
    if profile.streaming:
        body["stream"] = True
    return body


# --- usage ----------------------------------------------------------------------------------------------------


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    details = usage.get(key)
    if details is None:
        return {}
    if not isinstance(details, dict):
        raise MalformedResponseError(f"Provider usage {key} is not an object.")
    return details


def usage_from_wire(usage: Any, notes: Notes | None = None) -> Usage | None:
    """Map a Responses ``usage`` object to :class:`~tiny_agent_core.usage.Usage` (see the module docstring);
    ``None`` when the provider reported none. Non-integer or negative counts are malformed (never coerced)."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise MalformedResponseError("Provider usage is not an object.")
    input_tokens = usage_count(usage, "input_tokens", "")
    output_tokens = usage_count(usage, "output_tokens", "")
    if input_tokens is None and output_tokens is None:
        return None
    details = _details(usage, "input_tokens_details")
    cache_read = usage_count(details, "cached_tokens", "input_tokens_details.") or 0
    cache_write = usage_count(details, "cache_write_tokens", "input_tokens_details.") or 0
    usage_count(_details(usage, "output_tokens_details"), "reasoning_tokens", "output_tokens_details.")
    uncached = (input_tokens or 0) - cache_read - cache_write
    if uncached < 0 and notes is not None:
        notes.repair("usage_input_clamped")
    return Usage(max(0, uncached), output_tokens or 0, cache_read, cache_write)


# --- errors ---------------------------------------------------------------------------------------------------

_STATE_LOST_CODE = "previous_response_not_found"
_STATE_LOST_TEXT = re.compile(r"previous response with id .{0,200}? not found", re.IGNORECASE)


def _error_fields(error: Any) -> tuple[str, str]:
    """``(code, message)`` of a Responses ``error`` object (``{code, message, type?, param?}``)."""
    if isinstance(error, str):
        return "", error
    if not isinstance(error, dict):
        return "", json.dumps(error)[:500]
    code = next((value for value in (error.get("code"), error.get("type")) if isinstance(value, str) and value), "")
    message = error.get("message")
    return code, message if isinstance(message, str) and message else json.dumps(error)[:500]


_FAILURE_STATUS = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "context_length_exceeded": 400,
    "server_error": 500,
    "vector_store_timeout": 500,
}
"""The HTTP status the same failure has when it comes before the stream (so the same typed error)."""


_QUOTA_ADVICE = "Add credits or raise the quota with the provider, then retry."


def reported_error(error: Any, *, what: str, usage: Usage | None = None) -> ProviderError:
    """The typed error for a Responses ``error`` object reported inside a 2xx body or stream (``what`` says where).

    Rate limits, quota, context overflow and server errors become the same classes as their HTTP forms (with the
    status they have there); anything else is a :class:`~tiny_agent_core.errors.ProviderReportedError`. The code is
    kept in the message.
    """
    code, message = _error_fields(error)
    detail = f"{what}{f' ({code})' if code else ''}: {message}"
    status = _FAILURE_STATUS.get(code)
    out: ProviderError
    if code == "insufficient_quota":
        out = PaymentRequiredError(f"{detail} — {_QUOTA_ADVICE}", status=429)
    elif code == "context_length_exceeded":
        out = http_errors.context_length_error(detail, status=400)
    elif status is not None:
        retry_after = http_errors.retry_after_body(None, message)
        out = http_errors.status_error(status, detail, body="", retry_after=retry_after)
        out.args = (str(out).removeprefix(f"HTTP {status}: "),)
    else:
        out = ProviderReportedError(detail)
    out.usage = usage
    return out


def http_error(status: int, body: bytes | str, headers: Mapping[str, str] | None = None) -> ProviderHTTPError:
    """The typed error for an HTTP error response of the Responses API (``{"error": {message, type, param,
    code}}``): the shared mapping (:func:`~tiny_agent_core.providers.http_errors.http_error`: authentication, 404
    model, 429 with ``retry-after``, context overflow, 5xx), plus the codes that say more than the status:
    ``insufficient_quota`` (HTTP 429) is a :class:`~tiny_agent_core.errors.PaymentRequiredError` (waiting does not
    help) and ``context_length_exceeded`` a :class:`~tiny_agent_core.errors.ContextLengthError` whatever the text."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    error = http_errors.http_error(status, text, headers)
    code = _body_code(text)
    detail = str(error).split(" — ", 1)[0]
    if code == "insufficient_quota":
        return PaymentRequiredError(f"{detail} — {_QUOTA_ADVICE}", status=status, body=text)
    if code == "context_length_exceeded" and error.kind != "context_length":
        return http_errors.context_length_error(detail, status=status, body=text)
    return error


def _body_code(text: str) -> str:
    try:
        payload = parse_json(text)
    except ValueError:
        return ""
    error = payload.get("error") if isinstance(payload, dict) else None
    return _error_fields(error)[0] if error is not None else ""


def state_lost(error: ProviderError) -> bool:
    """The server no longer has the response a request chained from (``previous_response_not_found``)."""
    if isinstance(error, ProviderHTTPError):
        if error.status not in (400, 404, 409):
            return False
        text = error.body or str(error)
    else:
        text = str(error)
    return _STATE_LOST_CODE in text or _STATE_LOST_TEXT.search(text) is not None


# --- responses ------------------------------------------------------------------------------------------------


def _has_value(value: Any) -> bool:
    return value is not None and value != [] and value != {} and value != ""


_MESSAGE_KEYS = frozenset({"type", "id", "status", "role", "content"})
_PART_KEYS = frozenset({"type", "text", "refusal", "annotations", "logprobs"})
_CALL_KEYS = frozenset({"type", "id", "status", "call_id", "name", "arguments"})


@dataclass
class _Call:
    """One ``function_call`` output item as it accumulates."""

    ordinal: int
    """Its position among the response's calls (the canonical ``tool_calls`` index, the deltas' ``index``)."""
    call_id: str | None = None
    name: str | None = None
    arguments: Pieces = field(default_factory=Pieces)
    final: str | None = None
    """The complete arguments from a ``.done`` event or the finished item, when one said them."""


@dataclass
class _Message:
    """One ``message`` output item as it accumulates."""

    index: int
    """Its ``output_index``."""
    text: Pieces = field(default_factory=Pieces)
    refusal: Pieces = field(default_factory=Pieces)
    final: str | None = None


_Item = _Call | _Message | None
"""An output item: a call, a message, or ``None`` for a reasoning item (kept out of the transcript)."""


class _Output:
    """The output items of one response in ``output_index`` order, held to the limits as they grow."""

    def __init__(self, notes: Notes, limits: Limits, new_id: IdFactory) -> None:
        self.notes = notes
        self.limits = limits
        self.new_id = new_id
        self.items: dict[int, _Item] = {}
        self.ids: dict[str, int] = {}
        self.calls = 0
        self.size = 0

    def grow(self, size: int) -> None:
        self.size += size
        if self.size > self.limits.message_bytes:
            raise message_too_large(self.limits)

    def add(self, index: int, item: Any) -> _Item:
        """Register output item ``index`` (its ``output_item.added`` form, or the finished item)."""
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise MalformedResponseError(f"Output item {index} is not an object with a type.")
        kind = item["type"]
        if isinstance(item.get("id"), str):
            self.ids[item["id"]] = index
        if index in self.items:
            return self.items[index]
        if len(self.items) >= MAX_OUTPUT_ITEMS:
            raise ResponseTooLargeError(
                f"The response has more than {MAX_OUTPUT_ITEMS} output items (the limit), so it was refused. The "
                "server is misbehaving; retry.",
                limit=MAX_OUTPUT_ITEMS,
            )
        entry: _Item
        if kind == "message":
            if item.get("role", "assistant") != "assistant":
                raise MalformedResponseError("invalid assistant message role")
            self._drop(item, _MESSAGE_KEYS, "output.message.")
            entry = _Message(index)
        elif kind == "function_call":
            if self.calls >= self.limits.tool_calls:
                raise too_many_calls(self.limits)
            self._drop(item, _CALL_KEYS, "output.function_call.")
            entry = _Call(self.calls, call_id=_text(item.get("call_id")), name=_text(item.get("name")))
            self.calls += 1
        elif kind == "reasoning":
            self.notes.dropped.setdefault("output.reasoning", None)
            entry = None
        else:
            raise MalformedResponseError(
                f"The response has an output item of type {kind!r}, which this client never asks for and cannot "
                "answer (only messages and function calls are accepted)."
            )
        self.items[index] = entry
        return entry

    def _drop(self, value: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
        for key, item in value.items():
            if key not in allowed and _has_value(item):
                self.notes.dropped.setdefault(f"{prefix}{key}", None)

    def add_text(self, message: _Message, text: str, *, refusal: bool = False) -> None:
        self.grow((message.refusal if refusal else message.text).add(text))

    def add_arguments(self, call: _Call, piece: str) -> None:
        self.grow(call.arguments.add(piece))
        if call.arguments.size > self.limits.tool_call_argument_bytes:
            raise arguments_too_large(self.limits)

    def finish_item(self, index: int, item: Any) -> None:
        """Apply a finished item (``output_item.done`` or an item of a complete body) to entry ``index``."""
        entry = self.add(index, item)
        if isinstance(entry, _Call):
            entry.call_id = entry.call_id or _text(item.get("call_id"))
            entry.name = entry.name or _text(item.get("name"))
            arguments = item.get("arguments")
            if arguments is not None:
                self.final_arguments(entry, arguments)
        elif isinstance(entry, _Message):
            self._finish_message(entry, item.get("content"))

    def final_arguments(self, call: _Call, arguments: Any) -> None:
        """The complete arguments of ``call``: they must agree with the streamed pieces, if any arrived."""
        if not isinstance(arguments, str):
            raise MalformedResponseError("invalid assistant tool call function")
        if call.arguments.count == 0 and call.final is None:
            self.add_arguments(call, arguments)
        elif (call.final if call.final is not None else call.arguments.text()) != arguments:
            raise MalformedResponseError("The finished tool call's arguments differ from the streamed ones.")
        call.final = arguments

    def _finish_message(self, message: _Message, content: Any) -> None:
        if content is None:
            return
        if not isinstance(content, list):
            raise MalformedResponseError("invalid assistant content")
        texts: list[str] = []
        refusals: list[str] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "output_text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                refusals.append(part["refusal"])
            else:
                raise MalformedResponseError(f"invalid assistant content: unsupported content part {kind!r}")
            self._drop(part, _PART_KEYS, f"output.message.content.{kind}.")
        text = "".join(texts)
        if message.text.count == 0 and message.final is None:
            self.add_text(message, text)
            if refusals and message.refusal.count == 0:
                self.add_text(message, "".join(refusals), refusal=True)
        elif (message.final if message.final is not None else message.text.text()) != text:
            raise MalformedResponseError("The finished message's text differs from the streamed text.")
        message.final = text

    def assistant_message(self) -> dict[str, Any]:
        """The assistant message in the seam's input form (``role``, ``content``, ``tool_calls``, ``refusal``)."""
        texts: list[str] = []
        refusals: list[str] = []
        for index in sorted(self.items):
            entry = self.items[index]
            if isinstance(entry, _Message):
                if entry.text.count:
                    texts.append(entry.text.text())
                if entry.refusal.count:
                    refusals.append(entry.refusal.text())
        calls = [self._call_json(entry) for entry in self.items.values() if isinstance(entry, _Call)]
        texts = [text for text in texts if text]
        if len(texts) > 1:
            self.notes.repair("message_items_joined")
            self.grow(utf8_size(MESSAGE_SEPARATOR) * (len(texts) - 1))
        message: dict[str, Any] = {"role": "assistant", "content": MESSAGE_SEPARATOR.join(texts) or None}
        if calls:
            message["tool_calls"] = calls
        if refusals:
            message["refusal"] = "".join(refusals)
        return message

    def _call_json(self, call: _Call) -> dict[str, Any]:
        call_id = call.call_id
        if not call_id:
            call_id = call.call_id = self.new_id()
            self.notes.repair("missing_call_id")
        arguments = call.final if call.final is not None else call.arguments.text()
        if arguments == "":
            arguments = "{}"
            self.notes.repair("empty_arguments")
        function: dict[str, Any] = {"arguments": arguments}
        if call.name is not None:
            function["name"] = call.name
        return {"id": call_id, "type": "function", "function": function}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _finalize(
    output: _Output, status: Any, incomplete: Any, usage: Usage | None, response: Mapping[str, Any]
) -> NormalizedResponse:
    """The shared tail of both paths: terminal status, refusal check, seam, stop-reason cross-validation."""
    finish_reason = _finish_reason(status, incomplete, usage)
    try:
        message = output.assistant_message()
        refusal = message.pop("refusal", None)
        if isinstance(refusal, str) and refusal.strip():
            if not message["content"] and "tool_calls" not in message:
                raise ContentFilteredError(f"The model refused: {refusal.strip()}")
            output.notes.dropped.setdefault("output.message.content.refusal", None)
        canonical = normalize_assistant_message(message)
        reason = stop_reason(finish_reason, canonical)
    except ProviderError as error:
        error.usage = usage
        raise
    notes = output.notes
    return NormalizedResponse(
        message=canonical,
        stop_reason=reason,
        usage=usage,
        repairs=tuple(notes.repairs),
        dropped=tuple(notes.dropped),
        response_id=_text(response.get("id")),
        model=_text(response.get("model")),
    )


def _finish_reason(status: Any, incomplete: Any, usage: Usage | None) -> str | None:
    """The Chat Completions finish reason a terminal ``status`` stands for (raising for failures)."""
    if status == "completed" or status is None:
        return None
    if status == "incomplete":
        reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            raise ContentFilteredError(
                "The provider's content filter stopped the response (incomplete: content_filter).", usage=usage
            )
        raise ProviderReportedError(f"The response is incomplete (reason: {reason!r}).", usage=usage)
    if status in ("queued", "in_progress"):
        raise MalformedResponseError(
            f"The response is still {status} (a background response?); this client waits for complete answers.",
            usage=usage,
        )
    raise ProviderReportedError(f"The response ended with status {status!r}.", usage=usage)


def _output_of(response: Mapping[str, Any], output: _Output) -> None:
    items = response.get("output")
    if items is None:
        return
    if not isinstance(items, list):
        raise MalformedResponseError("The response output is not a list.")
    for index, item in enumerate(items):
        output.finish_item(index, item)


def _check_failed(response: Mapping[str, Any], usage: Usage | None, what: str) -> None:
    if response.get("status") == "failed" or response.get("error") is not None:
        raise reported_error(response.get("error") or "no error details", what=what, usage=usage)


def normalize_response_body(
    body: bytes | str, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS
) -> NormalizedResponse:
    """Normalize a complete 2xx Responses JSON body (see the module docstring); raises typed provider errors."""
    value = load_json(body, "The provider response")
    if not isinstance(value, dict):
        raise MalformedResponseError("The provider response is not a JSON object.")
    notes = Notes()
    usage = usage_from_wire(value.get("usage"), notes)
    _check_failed(value, usage, "The provider reported a failed response")
    output = _Output(notes, limits, new_id)
    try:
        _output_of(value, output)
    except ProviderError as error:
        error.usage = usage
        raise
    return _finalize(output, value.get("status"), value.get("incomplete_details"), usage, value)


_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_HEADER_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})


class ResponsesAccumulator:
    """Accumulates a Responses SSE stream, event by event, into the same result as the JSON body.

    :meth:`feed` returns the deltas a view can show at once (text, tool-call pieces, usage) and raises a typed
    error as soon as the stream reports one; :meth:`finish` returns the
    :class:`~tiny_agent_core.providers.results.NormalizedResponse`. Each event costs O(its size); the message is
    held to ``limits`` as it grows.
    """

    def __init__(self, *, new_id: IdFactory = new_tool_call_id, limits: Limits = DEFAULT_LIMITS) -> None:
        self._notes = Notes()
        self._output = _Output(self._notes, limits, new_id)
        self._events = 0
        self._item_events = 0
        self._terminal: dict[str, Any] | None = None
        self._response: dict[str, Any] = {}
        self._usage: Usage | None = None
        self._text_started: set[int] = set()

    @property
    def done(self) -> bool:
        """True once the terminal event arrived; later events are ignored."""
        return self._terminal is not None

    @property
    def usage(self) -> Usage | None:
        """The usage reported so far (for recording what a failed stream cost)."""
        return self._usage

    def feed(self, event: str, data: str) -> list[StreamDelta]:
        """Process one SSE event (its ``event`` name and ``data``); return the deltas it carried."""
        if self._terminal is not None or data.strip() == "[DONE]":
            return []
        if event == "error" and not data.lstrip().startswith("{"):
            raise ProviderReportedError(f"The provider reported an error mid-stream: {data.strip()[:500]}")
        payload = load_json(data, f"Stream event {self._events + 1}")
        self._events += 1
        if not isinstance(payload, dict):
            raise MalformedResponseError(f"Stream event {self._events} is not a JSON object.", usage=self._usage)
        kind = payload["type"] if isinstance(payload.get("type"), str) else event
        try:
            return self._apply(kind, payload)
        except ProviderError as error:
            error.usage = error.usage or self._usage
            raise

    def _apply(self, kind: str, payload: dict[str, Any]) -> list[StreamDelta]:
        if kind == "error":
            error = payload.get("error") if payload.get("error") is not None else payload
            raise reported_error(error, what="The provider reported an error mid-stream")
        if kind in _HEADER_EVENTS or kind in _TERMINAL:
            return self._response_event(kind, payload)
        if kind == "response.output_item.added":
            self._item_events += 1
            return self._item_added(self._index(payload, "item"), payload.get("item"))
        if kind == "response.output_item.done":
            self._item_events += 1
            return self._item_done(self._index(payload, "item"), payload.get("item"))
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            self._item_events += 1
            return self._text_delta(kind, payload)
        if kind in ("response.function_call_arguments.delta", "response.function_call_arguments.done"):
            self._item_events += 1
            return self._arguments_event(kind, payload)
        if kind.startswith(("response.reasoning", "response.reasoning_summary")):
            self._notes.dropped.setdefault("output.reasoning", None)
        return []  # content_part.*, output_text.done, annotations, progress events: nothing to add

    def _item_added(self, index: int, item: Any) -> list[StreamDelta]:
        """A new output item; a tool call is shown at once (its id and name, no arguments yet)."""
        entry = self._output.add(index, item)
        if isinstance(entry, _Call):
            return [StreamedToolCall(entry.ordinal, entry.call_id, entry.name, "")]
        return []

    def _text_delta(self, kind: str, payload: dict[str, Any]) -> list[StreamDelta]:
        """A piece of a message's text (shown) or of its refusal (kept, not shown)."""
        message = self._message(payload)
        delta = payload.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError("invalid assistant content")
        if kind == "response.refusal.delta":
            self._output.add_text(message, delta, refusal=True)
            return []
        return self._append_text(message, delta)

    def _arguments_event(self, kind: str, payload: dict[str, Any]) -> list[StreamDelta]:
        """A piece of a call's arguments, or (``.done``) the whole: shown only when no piece came before it."""
        call = self._call(payload)
        if kind.endswith(".done"):
            before = call.arguments.size
            self._output.final_arguments(call, payload.get("arguments"))
            added = call.arguments.text() if before == 0 and call.arguments.size else ""
            return [StreamedToolCall(call.ordinal, None, None, added)] if added else []
        delta = payload.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError("invalid assistant tool call function")
        self._output.add_arguments(call, delta)
        return [StreamedToolCall(call.ordinal, None, None, delta)] if delta else []

    def _append_text(self, message: _Message, delta: str) -> list[StreamDelta]:
        """A text delta; the first text of a second message item is preceded by the separator, as in the result."""
        out: list[StreamDelta] = []
        if not delta:
            return out
        index = message.index
        if index not in self._text_started:
            if self._text_started:
                out.append(StreamedText(MESSAGE_SEPARATOR))
            self._text_started.add(index)
        self._output.add_text(message, delta)
        out.append(StreamedText(delta))
        return out

    def _item_done(self, index: int, item: Any) -> list[StreamDelta]:
        entry = self._output.items.get(index)
        before = entry.text.size if isinstance(entry, _Message) else entry.arguments.size if entry else 0
        self._output.finish_item(index, item)
        entry = self._output.items[index]
        if isinstance(entry, _Message) and before == 0 and entry.text.size:
            return self._shown_late(index, entry.text.text())
        if isinstance(entry, _Call) and before == 0 and entry.arguments.size:
            return [StreamedToolCall(entry.ordinal, entry.call_id, entry.name, entry.final or "")]
        return []

    def _shown_late(self, index: int, text: str) -> list[StreamDelta]:
        """Text that arrived only with the finished item (no deltas): shown now, in one piece."""
        out: list[StreamDelta] = []
        if self._text_started:
            out.append(StreamedText(MESSAGE_SEPARATOR))
        self._text_started.add(index)
        out.append(StreamedText(text))
        return out

    def _response_event(self, kind: str, payload: dict[str, Any]) -> list[StreamDelta]:
        response = payload.get("response")
        if not isinstance(response, dict):
            raise MalformedResponseError(f"The {kind} event has no response object.")
        for key in ("id", "model"):
            if _text(response.get(key)):
                self._response[key] = response[key]
        if kind not in _TERMINAL:
            return []
        self._terminal = response
        out: list[StreamDelta] = []
        usage = usage_from_wire(response.get("usage"), self._notes)
        if usage is not None:
            self._usage = usage
            out.append(UsageReported(usage))
        if kind == "response.failed":
            _check_failed({**response, "status": "failed"}, usage, "The provider reported a failed response")
        if self._item_events == 0 and response.get("output"):
            self._notes.repair("output_only_in_final_event")
            _output_of(response, self._output)
            out.extend(self._deltas_of_output())
        return out

    def _deltas_of_output(self) -> list[StreamDelta]:
        """The deltas an output that arrived in one piece stands for, in output order."""
        out: list[StreamDelta] = []
        for index in sorted(self._output.items):
            entry = self._output.items[index]
            if isinstance(entry, _Message) and entry.text.size:
                out.extend(self._shown_late(index, entry.text.text()))
            elif isinstance(entry, _Call):
                out.append(StreamedToolCall(entry.ordinal, entry.call_id, entry.name, entry.arguments.text()))
        return out

    def _index(self, payload: Mapping[str, Any], item_key: str | None) -> int:
        index = payload.get("output_index")
        if type(index) is int and 0 <= index <= MAX_SAFE_INTEGER:
            return index
        if index is not None:
            raise MalformedResponseError(f"invalid output_index {index!r}")
        self._notes.repair("missing_output_index")
        item = payload.get(item_key) if item_key else None
        item_id = item.get("id") if isinstance(item, dict) else payload.get("item_id")
        if isinstance(item_id, str) and item_id in self._output.ids:
            return self._output.ids[item_id]
        if item_key is not None:  # a new item: after every known one
            return max(self._output.items, default=-1) + 1
        return max(self._output.items, default=0)

    def _entry(self, payload: Mapping[str, Any], kind: str) -> _Item:
        """The entry a delta event belongs to; a delta before its ``output_item.added`` starts the item."""
        index = self._index(payload, None)
        if index not in self._output.items:
            return self._output.add(index, {"type": kind})
        entry = self._output.items[index]
        if (kind == "message") != isinstance(entry, _Message) or entry is None:
            raise MalformedResponseError(f"A stream event refers to output item {index}, which is of another kind.")
        return entry

    def _message(self, payload: Mapping[str, Any]) -> _Message:
        entry = self._entry(payload, "message")
        assert isinstance(entry, _Message)
        return entry

    def _call(self, payload: Mapping[str, Any]) -> _Call:
        entry = self._entry(payload, "function_call")
        assert isinstance(entry, _Call)
        return entry

    def finish(self) -> NormalizedResponse:
        """The canonical result of the whole stream; raises if it was incomplete or invalid."""
        if self._events == 0:
            raise EmptyStreamError("The stream ended before any complete event arrived.")
        if self._terminal is None:
            raise MalformedResponseError(
                "The stream ended before the response completed (no response.completed, response.incomplete or "
                "response.failed event).",
                usage=self._usage,
            )
        terminal = self._terminal
        response = {**terminal, **self._response}
        return _finalize(
            self._output, terminal.get("status", "completed"), terminal.get("incomplete_details"), self._usage, response
        )


@dataclass(frozen=True)
class ResponsesAdapter:
    """The Responses API as a wire adapter (API kind ``openai-responses``), able to chain from server state."""

    kind: str = KIND
    """See :data:`KIND`."""

    def request_url(self, profile: ProviderProfile) -> str:
        """See :func:`request_url`."""
        return request_url(profile)

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
        """See :func:`build_request_body`."""
        return build_request_body(profile, model, messages, tools, extra, state=state)

    def new_accumulator(self, limits: Limits, new_id: IdFactory = new_tool_call_id) -> ResponsesAccumulator:
        """A fresh :class:`ResponsesAccumulator`."""
        return ResponsesAccumulator(new_id=new_id, limits=limits)

    def normalize_body(
        self, body: bytes | str, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id
    ) -> NormalizedResponse:
        """See :func:`normalize_response_body`."""
        return normalize_response_body(body, new_id=new_id, limits=limits)

    def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> ProviderHTTPError:
        """See :func:`http_error`."""
        return http_error(status, body, headers)

    def state_lost(self, error: ProviderError) -> bool:
        """See :func:`state_lost`."""
        return state_lost(error)


ADAPTER = ResponsesAdapter()
"""The adapter instance the API-kind registry holds."""
