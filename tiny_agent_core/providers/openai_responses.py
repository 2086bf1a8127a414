"""The OpenAI Responses adapter (API kind ``openai-responses``): canonical transcript → request, provider bytes →
a canonical result or a typed error.

This module and its three helpers are the only ones that know the Responses API wire shapes (``POST
<base_url>/responses``). The request is built in :mod:`~tiny_agent_core.providers.openai_responses_request`
(input items, tools, server state), a response's output items are assembled in
:mod:`~tiny_agent_core.providers.openai_responses_output`, and errors (HTTP error bodies, reported errors, lost
server state) are typed in :mod:`~tiny_agent_core.providers.openai_responses_errors`. This module normalizes a
complete JSON body (:func:`normalize_response_body`) and a stream event by event (:class:`ResponsesAccumulator`, fed
by httpx-sse both for live responses and for recorded text); :data:`ADAPTER` is this API kind as the client uses
it (:mod:`~tiny_agent_core.providers.api_kinds`).

Responses. A response is a list of output items (what each item type gives, and which ones fail closed:
:mod:`~tiny_agent_core.providers.openai_responses_output`); a refusal with no text and no call is a
:class:`~tiny_agent_core.errors.ContentFilteredError`. The assistant message then goes through the normalization
seam (:func:`tiny_agent_core.seam.normalize_assistant_message`) and the stop-reason cross-validation, exactly as a
Chat Completions answer. ``status``: ``completed`` → ``stop``/``toolUse``; ``incomplete`` with reason
``max_output_tokens`` → ``length``, with ``content_filter`` → :class:`~tiny_agent_core.errors.ContentFilteredError`;
``failed`` → the typed error of its ``error``
(:func:`~tiny_agent_core.providers.openai_responses_errors.reported_error`).

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
number of output items by :data:`~tiny_agent_core.providers.openai_responses_output.MAX_OUTPUT_ITEMS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import (
    ContentFilteredError,
    EmptyStreamError,
    MalformedResponseError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
)
from tiny_agent_core.providers.openai_responses_errors import http_error, reported_error, state_lost
from tiny_agent_core.providers.openai_responses_output import (
    MESSAGE_SEPARATOR,
    CallItem,
    MessageItem,
    OutputItem,
    OutputItems,
    text_or_none,
)
from tiny_agent_core.providers.openai_responses_request import build_request_body, request_url
from tiny_agent_core.providers.results import (
    DEFAULT_LIMITS,
    ConversationState,
    IdFactory,
    Limits,
    NormalizedResponse,
    Notes,
    StreamDelta,
    StreamedText,
    StreamedToolCall,
    UsageReported,
    load_json,
    new_tool_call_id,
    usage_count,
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


def _finalize(
    output: OutputItems, status: Any, incomplete: Any, usage: Usage | None, response: Mapping[str, Any]
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
        response_id=text_or_none(response.get("id")),
        model=text_or_none(response.get("model")),
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


def _output_of(response: Mapping[str, Any], output: OutputItems) -> None:
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
    output = OutputItems(notes, limits, new_id)
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
        self._output = OutputItems(self._notes, limits, new_id)
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
        if isinstance(entry, CallItem):
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

    def _append_text(self, message: MessageItem, delta: str) -> list[StreamDelta]:
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
        before = entry.text.size if isinstance(entry, MessageItem) else entry.arguments.size if entry else 0
        self._output.finish_item(index, item)
        entry = self._output.items[index]
        if isinstance(entry, MessageItem) and before == 0 and entry.text.size:
            return self._shown_late(index, entry.text.text())
        if isinstance(entry, CallItem) and before == 0 and entry.arguments.size:
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
            if text_or_none(response.get(key)):
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
            if isinstance(entry, MessageItem) and entry.text.size:
                out.extend(self._shown_late(index, entry.text.text()))
            elif isinstance(entry, CallItem):
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

    def _entry(self, payload: Mapping[str, Any], kind: str) -> OutputItem:
        """The entry a delta event belongs to; a delta before its ``output_item.added`` starts the item."""
        index = self._index(payload, None)
        if index not in self._output.items:
            return self._output.add(index, {"type": kind})
        entry = self._output.items[index]
        if (kind == "message") != isinstance(entry, MessageItem) or entry is None:
            raise MalformedResponseError(f"A stream event refers to output item {index}, which is of another kind.")
        return entry

    def _message(self, payload: Mapping[str, Any]) -> MessageItem:
        entry = self._entry(payload, "message")
        assert isinstance(entry, MessageItem)
        return entry

    def _call(self, payload: Mapping[str, Any]) -> CallItem:
        entry = self._entry(payload, "function_call")
        assert isinstance(entry, CallItem)
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
        """See :func:`~tiny_agent_core.providers.openai_responses_request.request_url`."""
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
        """See :func:`~tiny_agent_core.providers.openai_responses_request.build_request_body`."""
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
        """See :func:`~tiny_agent_core.providers.openai_responses_errors.http_error`."""
        return http_error(status, body, headers)

    def state_lost(self, error: ProviderError) -> bool:
        """See :func:`~tiny_agent_core.providers.openai_responses_errors.state_lost`."""
        return state_lost(error)


ADAPTER = ResponsesAdapter()
"""The adapter instance the API-kind registry holds."""
