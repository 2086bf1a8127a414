"""What every wire adapter shares: the canonical result, the stream deltas, the limits, bounded JSON.

Each adapter (one per API kind: Chat Completions, Anthropic Messages, OpenAI Responses) turns its provider's bytes
into the same things, defined here and nowhere else:

- :class:`NormalizedResponse`: the canonical outcome of one model response (assistant message, stop reason,
  usage, the repairs applied, the fields dropped).
- The stream deltas an adapter's accumulator reports as events arrive (:data:`StreamDelta`):
  :class:`StreamedText`, :class:`StreamedToolCall`, :class:`UsageReported`. They are named apart from the agent's
  canonical events (:mod:`tiny_agent_core.agent.events`), which carry a step id.
- :class:`ConversationState`: what a server holds of the conversation already (for APIs that chain responses).
- :class:`Notes`: the repair names and dropped fields collected while processing one response.

Limits (:class:`Limits`, each default a module constant): a broken or hostile provider cannot make the app hold
more than a bounded amount of memory or parse unbounded JSON. A response over a limit is refused with
:class:`~tiny_agent_core.errors.ResponseTooLargeError` (kind ``malformed``, built by :func:`too_many_calls`,
:func:`arguments_too_large`, :func:`message_too_large`); JSON nested deeper than :data:`MAX_JSON_DEPTH` or with
more than :data:`MAX_JSON_VALUES` values is malformed before it is parsed (:func:`parse_json`, :func:`load_json`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tiny_agent_core.errors import MalformedResponseError, ResponseTooLargeError
from tiny_agent_core.messages import AssistantMessage
from tiny_agent_core.providers.transport import describe_size
from tiny_agent_core.stop_reasons import StopReason
from tiny_agent_core.usage import MAX_SAFE_INTEGER, Usage

_MIB = 1024 * 1024

MAX_RESPONSE_BYTES = 32 * _MIB
"""The largest response body read without streaming (a JSON answer, an HTTP error body, a model list). A real
answer is at most a few MiB (a long answer with several large tool calls). An error body over it is cut at it."""
MAX_STREAM_BYTES = 256 * _MIB
"""The largest streamed (SSE) response. Streams carry ~200–500 bytes of framing per token, so even a 128k-token
reasoning answer stays far below it."""
MAX_SSE_EVENT_BYTES = 16 * _MIB
"""The largest single SSE event, and so the longest line, enforced on the bytes before any line is assembled. A
real event carries one small delta (a few hundred bytes); a tool call sent in one piece is bounded by
:data:`MAX_TOOL_CALL_ARGUMENT_BYTES`."""
MAX_MESSAGE_BYTES = 32 * _MIB
"""The largest assistant message (text, refusal and tool-call arguments together, in UTF-8 bytes), streamed or not:
about 8 million tokens, far beyond any model's output limit."""
MAX_TOOL_CALLS = 128
"""The most tool calls one assistant message may carry (models make a handful; OpenAI allows 128 tools)."""
MAX_TOOL_CALL_ARGUMENT_BYTES = 4 * _MIB
"""The largest arguments of one tool call (UTF-8 bytes): a whole file written in one call fits easily."""
MAX_JSON_DEPTH = 128
"""The deepest nesting of arrays and objects accepted in any provider JSON (responses nest fewer than 10 levels);
checked before parsing, so a hostile body cannot exhaust the parser's recursion."""
MAX_JSON_VALUES = 1_000_000
"""The most arrays, objects and list/object members in one provider JSON document (a response has a few dozen),
checked before parsing: a 32 MiB body of ``[{},{},…]`` would otherwise become ~800 MB of Python objects."""


@dataclass(frozen=True)
class Limits:
    """The size limits applied to one response; the defaults are the module constants, far above real traffic."""

    response_bytes: int = MAX_RESPONSE_BYTES
    """See :data:`MAX_RESPONSE_BYTES`."""
    stream_bytes: int = MAX_STREAM_BYTES
    """See :data:`MAX_STREAM_BYTES`."""
    sse_event_bytes: int = MAX_SSE_EVENT_BYTES
    """See :data:`MAX_SSE_EVENT_BYTES`."""
    message_bytes: int = MAX_MESSAGE_BYTES
    """See :data:`MAX_MESSAGE_BYTES`."""
    tool_calls: int = MAX_TOOL_CALLS
    """See :data:`MAX_TOOL_CALLS`."""
    tool_call_argument_bytes: int = MAX_TOOL_CALL_ARGUMENT_BYTES
    """See :data:`MAX_TOOL_CALL_ARGUMENT_BYTES`."""


DEFAULT_LIMITS = Limits()
"""The limits used when none are given."""

IdFactory = Callable[[], str]
"""Makes a fresh tool-call id (tests pass a deterministic one)."""


def new_tool_call_id() -> str:
    """A fresh, unique tool-call id for calls the provider sent without one."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class NormalizedResponse:
    """The canonical outcome of one model response."""

    message: AssistantMessage
    """The assistant message, rebuilt from the whitelist."""
    stop_reason: StopReason
    """Why the model stopped, cross-validated with the message."""
    usage: Usage | None
    """Provider-reported usage; ``None`` when the provider reported none (unknown, not zero)."""
    repairs: tuple[str, ...] = ()
    """Names of the dialect repairs applied (each adapter lists its own in ``REPAIRS``), in the order first
    applied."""
    dropped: tuple[str, ...] = ()
    """Provider-only message fields that carried a value and were not copied (e.g. ``message.reasoning``)."""
    provider_cost: Decimal | None = None
    """The provider's own cost figure (OpenRouter ``usage.cost``), when it sent a meaningful one."""
    response_id: str | None = None
    """The provider's response id, for support requests (and for chaining, where the API supports it)."""
    model: str | None = None
    """The model the provider says answered."""
    outbound_repairs: tuple[str, ...] = ()
    """Names of the outbound repairs applied to the request (each adapter lists its own); set by the client."""

    def to_json(self) -> dict[str, Any]:
        """The ``tiny-agent wire normalize`` success object."""
        return {
            "ok": True,
            "stopReason": self.stop_reason,
            "message": self.message.as_dict(),
            "usage": self.usage.as_dict() if self.usage else None,
            "repairs": list(self.repairs),
        }


@dataclass(frozen=True)
class ConversationState:
    """What a server already holds of the conversation: the first ``covered`` transcript messages, stored under
    ``response_id`` (OpenAI Responses ``previous_response_id``). Adapters without server state ignore it."""

    response_id: str
    """The id of the server-side response that holds the conversation so far."""
    covered: int
    """How many leading transcript messages that response covers (they need not be sent again)."""


@dataclass(frozen=True)
class StreamedText:
    """A piece of assistant text as it streams in."""

    text: str


@dataclass(frozen=True)
class StreamedToolCall:
    """A piece of a streamed tool call; ``index`` identifies the call, other fields arrive when known."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class UsageReported:
    """Usage arrived in the stream (often in a final chunk; some providers repeat it cumulatively)."""

    usage: Usage


StreamDelta = StreamedText | StreamedToolCall | UsageReported
"""What an adapter's stream accumulator reports as events arrive."""


class Notes:
    """Repairs and dropped fields collected while processing one response, each kept once, in first-seen order."""

    def __init__(self) -> None:
        self.repairs: dict[str, None] = {}
        """The repair names applied (a dict used as an ordered set)."""
        self.dropped: dict[str, None] = {}
        """The provider-only fields dropped, as dotted paths (a dict used as an ordered set)."""

    def repair(self, name: str) -> None:
        """Record that the repair ``name`` was applied."""
        self.repairs.setdefault(name, None)

    def drop_extras(self, value: Mapping[str, Any], allowed: Iterable[str], prefix: str) -> None:
        """Record every key of ``value`` outside ``allowed`` that carries a value, as ``prefix + key``."""
        keep = set(allowed)
        for key, item in value.items():
            if key not in keep and item is not None:
                self.dropped.setdefault(f"{prefix}{key}", None)


_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _json_bounds_error(text: str) -> str | None:
    """Why ``text`` exceeds :data:`MAX_JSON_DEPTH` or :data:`MAX_JSON_VALUES`, else ``None``; linear time.

    Exact for any text ``json.loads`` accepts (escapes, then strings, are removed, leaving the structure); for
    anything else the answer does not matter, as the parse fails anyway.
    """
    opened = text.count("[") + text.count("{")
    if opened <= MAX_JSON_DEPTH and opened + text.count(",") <= MAX_JSON_VALUES:
        return None  # the common case, at the cost of three C-speed scans
    structure = _STRING.sub("", _ESCAPE.sub("", text))
    if structure.count("[") + structure.count("{") + structure.count(",") > MAX_JSON_VALUES:
        return f"it has more than {MAX_JSON_VALUES:,} values"
    depth = 0
    for bracket in _NOT_BRACKET.sub("", structure):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return f"it is nested more than {MAX_JSON_DEPTH} levels deep"
    return None


def parse_json(data: bytes | str) -> Any:
    """Provider JSON, parsed like ``json.loads`` but within :data:`MAX_JSON_DEPTH` and :data:`MAX_JSON_VALUES`;
    ``ValueError`` (with the reason) for anything it cannot accept, never ``RecursionError``."""
    text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(data, bytes) else data
    reason = _json_bounds_error(text)
    if reason is not None:
        raise ValueError(reason)
    return json.loads(text)


def load_json(data: bytes | str, what: str) -> Any:
    """:func:`parse_json`, failing with :class:`~tiny_agent_core.errors.MalformedResponseError` that names
    ``what`` was being read (``"The provider response"``, ``"Stream chunk 3"``)."""
    try:
        return parse_json(data)
    except ValueError as error:
        raise MalformedResponseError(f"{what} is not valid JSON: {error}.") from error


def utf8_size(text: str) -> int:
    """The size of ``text`` in UTF-8 bytes (lone surrogates count as their 3-byte encoding)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_GROUP = 256
"""Streamed pieces joined into one string at a time (see :class:`Pieces`)."""


class Pieces:
    """Streamed text in arrival order, joined in groups of :data:`_GROUP`: millions of tiny deltas do not each keep
    a string object alive. ``count`` is how many pieces were added, ``size`` their UTF-8 bytes."""

    def __init__(self) -> None:
        self._groups: list[str] = []
        self._open: list[str] = []
        self.count = 0
        self.size = 0

    def add(self, piece: str) -> int:
        """Append ``piece``; return its size in bytes."""
        size = utf8_size(piece)
        self._open.append(piece)
        self.count += 1
        self.size += size
        if len(self._open) >= _GROUP:
            self._groups.append("".join(self._open))
            self._open.clear()
        return size

    def text(self) -> str:
        """Everything added, joined."""
        return "".join([*self._groups, *self._open])


def too_many_calls(limits: Limits) -> ResponseTooLargeError:
    """The error for a message with more than ``limits.tool_calls`` tool calls."""
    return ResponseTooLargeError(
        f"The response has more than {limits.tool_calls} tool calls in one message (the limit), so it was refused. "
        "The model or the server is misbehaving; retry.",
        limit=limits.tool_calls,
    )


def arguments_too_large(limits: Limits) -> ResponseTooLargeError:
    """The error for one tool call's arguments over ``limits.tool_call_argument_bytes``."""
    size = limits.tool_call_argument_bytes
    return ResponseTooLargeError(
        f"A tool call's arguments are larger than {describe_size(size)} (the limit for one call), so the response "
        "was refused. Retry; if the model keeps doing it, ask for the work in smaller steps.",
        limit=size,
    )


def message_too_large(limits: Limits) -> ResponseTooLargeError:
    """The error for an assistant message over ``limits.message_bytes``."""
    size = limits.message_bytes
    return ResponseTooLargeError(
        f"The assistant message is larger than {describe_size(size)} (the size limit of one message), so it was "
        "refused. Retry; if it keeps happening, lower max_tokens or check the base URL.",
        limit=size,
    )


def usage_count(owner: Mapping[str, Any], key: str, where: str = "") -> int | None:
    """The usage count ``owner[key]`` (``None`` when absent or null); anything but a non-negative safe integer is
    malformed, never coerced. ``where`` prefixes the field's name in the message (``input_tokens_details.``)."""
    value = owner.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
        raise MalformedResponseError(f"Provider usage field {where}{key} is not a non-negative integer: {value!r}.")
    return value
