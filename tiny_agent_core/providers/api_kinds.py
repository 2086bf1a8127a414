"""API kinds: the wire dialects a provider profile can speak, and the one seam the client talks through.

A profile names its kind (:attr:`~tiny_agent_core.providers.profiles.ProviderProfile.api`); :func:`adapter_for`
gives the :class:`WireAdapter` registered for it in :data:`API_KINDS`. The client
(:mod:`~tiny_agent_core.providers.client`) knows nothing of any wire shape: it asks the adapter for the URL, the
headers, the body, a stream accumulator, the normalization of a JSON body and the typed HTTP error, and records
each dialect's own bytes in the raw capture.

The protocol every adapter implements (a frozen dataclass with these methods is the usual form)::

    class WireAdapter(Protocol):
        kind: str                                   # read-only: "openai-chat", "anthropic", "openai-responses"
        def request_url(self, profile: ProviderProfile) -> str
        def request_headers(self, profile: ProviderProfile, api_key: str | None) -> dict[str, str]
        def build_body(self, profile: ProviderProfile, model: str, messages: Sequence[Mapping[str, Any]],
                       tools: Sequence[Mapping[str, Any]] | None, extra: Mapping[str, Any] | None,
                       *, state: ConversationState | None = None) -> dict[str, Any]
        def new_accumulator(self, limits: Limits, new_id: IdFactory = new_tool_call_id) -> StreamAssembler
        def normalize_body(self, body: bytes | str, limits: Limits = DEFAULT_LIMITS,
                           new_id: IdFactory = new_tool_call_id) -> NormalizedResponse
        def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> ProviderHTTPError

    class StreamAssembler(Protocol):                # one per streamed response
        done: bool                                  # read-only: the stream's end marker arrived
        usage: Usage | None                         # read-only: the latest usage reported so far
        def feed(self, event: str, data: str) -> list[StreamDelta]   # one SSE event (name, data)
        def finish(self) -> NormalizedResponse                       # after the stream ended; raises if incomplete

``messages`` are canonical transcript messages as JSON (OpenAI-chat-shaped: ``system``/``user``/``assistant`` with
``tool_calls``/``tool`` with ``tool_call_id``) and ``tools`` the canonical function-tool dicts; each adapter turns
them into its own wire form. ``build_body`` puts ``"stream": true`` in the body when it asks for a stream (the
client reads that key to choose SSE or JSON and the ``Accept`` header).

Two optional capabilities, detected structurally (:func:`isinstance` with these runtime-checkable protocols):

- :class:`RepairsRequests` (``openai-chat`` only): ``repair_request(body, dialect)`` gives the body as the
  profile's :class:`~tiny_agent_core.providers.openai_dialect.Dialect` needs it and the outbound repairs applied;
  ``fallback(error, body, dialect)`` gives the dialect to resend with once when the server refused a valid form,
  else ``None``.
- :class:`KeepsServerState` (``openai-responses``): ``state_lost(error)`` is true when the server no longer holds
  the :class:`~tiny_agent_core.providers.results.ConversationState` the request chained from; the client then
  sends, once, the request built without state (the whole transcript) and names the outbound repair
  :data:`SERVER_STATE_LOST` in the result.

Registering a kind is one line in :data:`API_KINDS` (``<module>.ADAPTER.kind: <module>.ADAPTER``). Adapter modules
import :class:`~tiny_agent_core.providers.profiles.ProviderProfile` only under ``TYPE_CHECKING``, so this
registry can import them without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx
from httpx_sse import EventSource

from tiny_agent_core.errors import ProviderConfigurationError, ProviderError, ProviderHTTPError
from tiny_agent_core.providers import anthropic, openai_chat, openai_responses
from tiny_agent_core.providers.results import (
    DEFAULT_LIMITS,
    ConversationState,
    IdFactory,
    Limits,
    NormalizedResponse,
    StreamDelta,
    new_tool_call_id,
)

if TYPE_CHECKING:
    from tiny_agent_core.providers.openai_dialect import Dialect
    from tiny_agent_core.providers.profiles import ProviderProfile
    from tiny_agent_core.usage import Usage

SERVER_STATE_LOST = "server_state_lost"
"""The outbound repair named when a request chained from server state was resent with the whole transcript."""


class StreamAssembler(Protocol):
    """Turns one streamed response, SSE event by SSE event, into deltas and then the canonical result."""

    @property
    def done(self) -> bool:
        """True once the stream's end marker arrived; the client stops reading."""
        ...

    @property
    def usage(self) -> Usage | None:
        """The latest usage reported so far (for recording what a failed stream cost)."""
        ...

    def feed(self, event: str, data: str) -> list[StreamDelta]:
        """Process one SSE event (its ``event`` name and ``data``); return the deltas it carried."""
        ...

    def finish(self) -> NormalizedResponse:
        """The canonical result of the whole stream; raises a typed error if it was incomplete or invalid."""
        ...


class WireAdapter(Protocol):
    """One wire dialect (API kind): how to send a request and read its answer (see the module docstring)."""

    @property
    def kind(self) -> str:
        """The API kind's name, the key in :data:`API_KINDS`."""
        ...

    def request_url(self, profile: ProviderProfile) -> str:
        """Where a request of ``profile`` is POSTed."""
        ...

    def request_headers(self, profile: ProviderProfile, api_key: str | None) -> dict[str, str]:
        """Headers for every request of ``profile``: its extras, authentication, API versions."""
        ...

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
        """The JSON request for the canonical ``messages`` and ``tools`` (``extra`` never overrides its keys)."""
        ...

    def new_accumulator(self, limits: Limits, new_id: IdFactory = new_tool_call_id) -> StreamAssembler:
        """A fresh accumulator for one streamed response, held to ``limits``."""
        ...

    def normalize_body(
        self, body: bytes | str, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id
    ) -> NormalizedResponse:
        """The canonical result of a complete 2xx JSON body; raises a typed error."""
        ...

    def http_error(self, status: int, body: bytes | str, headers: Mapping[str, str] | None) -> ProviderHTTPError:
        """The typed error for an HTTP error response (status ≥ 400)."""
        ...


@runtime_checkable
class RepairsRequests(Protocol):
    """An adapter whose requests follow the profile's dialect (outbound repairs) and learn from refusals."""

    def repair_request(self, body: Mapping[str, Any], dialect: Dialect) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``body`` as ``dialect`` needs it to be sent, and the names of the outbound repairs applied."""
        ...

    def fallback(self, error: ProviderError, body: Mapping[str, Any], dialect: Dialect) -> Dialect | None:
        """The dialect to resend ``body`` with when ``error`` shows a refused valid form, else ``None``."""
        ...


@runtime_checkable
class KeepsServerState(Protocol):
    """An adapter whose requests may chain from a response the server holds (:class:`ConversationState`)."""

    def state_lost(self, error: ProviderError) -> bool:
        """``error`` means the server no longer holds the state the request chained from."""
        ...


DEFAULT_API = openai_chat.ADAPTER.kind
"""The API kind of a profile that names none: ``openai-chat``."""

API_KINDS: dict[str, WireAdapter] = {
    openai_chat.ADAPTER.kind: openai_chat.ADAPTER,
    anthropic.ADAPTER.kind: anthropic.ADAPTER,
    openai_responses.ADAPTER.kind: openai_responses.ADAPTER,
}
"""Every API kind this client speaks, by name."""

API_LABELS: dict[str, str] = {
    "openai-chat": "OpenAI Chat Completions",
    "anthropic": "Anthropic Messages",
    "openai-responses": "OpenAI Responses",
}
"""What Settings shows for each API kind (a kind without a label shows its name)."""


def adapter_for(kind: str) -> WireAdapter:
    """The adapter of API kind ``kind``; :class:`~tiny_agent_core.errors.ProviderConfigurationError` naming the
    known kinds when there is none."""
    adapter = API_KINDS.get(kind)
    if adapter is None:
        known = ", ".join(sorted(API_KINDS))
        raise ProviderConfigurationError(
            f"Unknown API kind {kind!r}: this version speaks {known}. Choose one of them for the provider profile."
        )
    return adapter


def keeps_server_state(kind: str) -> bool:
    """The API ``kind`` can let the server keep the conversation (a profile's ``server_state`` applies to it)."""
    adapter = API_KINDS.get(kind)
    return adapter is not None and isinstance(adapter, KeepsServerState)


def normalize_sse_text(
    adapter: WireAdapter, text: str, *, limits: Limits = DEFAULT_LIMITS, new_id: IdFactory = new_tool_call_id
) -> NormalizedResponse:
    """Normalize a complete recorded SSE stream (the raw ``text/event-stream`` text) with ``adapter``'s
    accumulator, decoded by httpx-sse exactly as a live stream is, and read up to its end marker as the client
    reads it."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode("utf-8"))
    accumulator = adapter.new_accumulator(limits, new_id)
    for sse in EventSource(response).iter_sse():
        accumulator.feed(sse.event, sse.data)
        if accumulator.done:
            break
    return accumulator.finish()
