"""One streamed model request at a time, and what the answers teach the agent for the next ones.

:class:`Streamer` sends a request through the :class:`~tiny_agent_core.providers.client.ProviderClient`, turns the
stream's text and tool-call pieces into :class:`~tiny_agent_core.agent.events.TextDelta` and
:class:`~tiny_agent_core.agent.events.ToolCallDelta` events, and returns the completed answer. It keeps, in memory
only (a new agent starts afresh):

- the learned dialect: when the server refused a form of the request and accepted it repaired, the profile keeps
  the repair for the rest of the agent's life and :class:`~tiny_agent_core.agent.events.DialectLearned` says so;
- the server's conversation state (server-state profiles, e.g. OpenAI Responses ``previous_response_id``): the
  next request passes it only when the transcript it covers is unchanged and the model is the same;
- the last answered request's size and prompt tokens, which anchor the ``max_tokens`` a local server gets so the
  answer fits after the prompt (:func:`~tiny_agent_core.agent.context.answer_room`; never for cloud models);
- the wire capture of the last request, for the ledger of a request that ended without an answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from typing import Any

from tiny_agent_core.agent.context import PromptMeasure, request_bytes, room_for_size
from tiny_agent_core.agent.events import DialectLearned, EventSink, TextDelta, ToolCallDelta
from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.capture import RawCapture
from tiny_agent_core.providers.client import ChatCompleted, ChatStream, ProviderClient
from tiny_agent_core.providers.openai_dialect import DIALECT_REPAIRS
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.results import ConversationState, NormalizedResponse, StreamedText, StreamedToolCall
from tiny_agent_core.providers.transport import Timeouts
from tiny_agent_core.usage import Usage

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServerState:
    """What a server-state profile's server holds (:class:`ConversationState`), the canonical messages it covers
    (after the system prompt), and the model that answered."""

    state: ConversationState
    messages: list[dict[str, Any]]
    model: str


class Streamer:
    """Streams the agent's model requests to ``profile``'s server; see the module docstring for what it keeps.

    ``profile`` and ``model`` may be replaced between requests; ``emit`` receives the stream's events.
    """

    def __init__(
        self,
        *,
        client: ProviderClient,
        profile: ProviderProfile,
        model: str,
        api_key: str | None,
        timeouts: Timeouts | None,
        emit: EventSink,
    ) -> None:
        self.client = client
        self.profile = profile
        self.model = model
        self._api_key = api_key
        self._timeouts = timeouts
        self._emit = emit
        self.capture: RawCapture | None = None
        """The wire capture of the last request (``None`` until one was sent)."""
        self._server_state: ServerState | None = None
        self._last_prompt: PromptMeasure | None = None
        self._sent_size: int | None = None
        """The size of the last request sent to a local server (:func:`request_bytes`), measured once."""

    async def stream(
        self, messages: list[dict[str, Any]], step_id: str, tools: list[dict[str, Any]] | None, *, chained: bool
    ) -> ChatCompleted:
        """Send one request and return its answer; ``chained``: the profile keeps server state and this request
        continues the conversation (not a compaction)."""
        window = self.profile.context_length
        room = self._sent_size = None
        if self.profile.is_local:  # measured even without a window yet: it may be known by the next request
            self._sent_size = request_bytes(messages, tools)
            if window is not None:
                room = room_for_size(window, self._sent_size, self._last_prompt)
        stream = self.client.stream_chat(
            self.profile,
            model=self.model,
            messages=messages,
            tools=tools,
            api_key=self._api_key,
            timeouts=self._timeouts,
            extra=None if room is None else {"max_tokens": room},
            state=self._held_state(messages, chained),
        )
        try:
            async with stream:
                async for event in stream:
                    if isinstance(event, ChatCompleted):
                        if chained:
                            self._keep_state(messages, event.response)
                        return event
                    if isinstance(event, StreamedText):
                        self._emit(TextDelta(step_id, event.text))
                    elif isinstance(event, StreamedToolCall):
                        self._emit(ToolCallDelta(step_id, event.index, event.name, event.arguments))
        finally:
            self.capture = stream.capture
            self._learn(stream)
        raise ProviderError("The provider stream ended without a result.")  # pragma: no cover - client guarantees

    def measure(self, usage: Usage) -> None:
        """Remember the size and prompt tokens of the request just answered (only :func:`room_for_size`, for local
        servers, reads them)."""
        if self._sent_size is not None:
            self._last_prompt = PromptMeasure(self._sent_size, usage.prompt)

    def _held_state(self, messages: list[dict[str, Any]], chained: bool) -> ConversationState | None:
        """What the server still holds of ``messages`` (after the system prompt), for a profile that keeps server
        state: the previous response's, when the transcript it covered is unchanged and the model is the same."""
        held = self._server_state
        if not chained or held is None or held.model != self.model:
            return None
        covered = held.state.covered
        return held.state if messages[1 : 1 + covered] == held.messages else None

    def _keep_state(self, messages: list[dict[str, Any]], response: NormalizedResponse) -> None:
        """After an answer of a server-state profile: the server now holds the request's messages and the answer
        (under the response's id); the answer must be in the transcript as given for the state to be used."""
        if response.response_id is None:
            self._server_state = None
            return
        held = [*messages[1:], response.message.as_dict()]
        self._server_state = ServerState(ConversationState(response.response_id, len(held)), held, self.model)

    def _learn(self, stream: ChatStream) -> None:
        """Keep a dialect the server taught during ``stream`` for the following requests, and say so."""
        old, new = self.profile.dialect, stream.dialect
        if new == old:
            return
        self.profile = replace(self.profile, dialect=new)
        changes = {f.name: getattr(new, f.name) for f in fields(new) if getattr(new, f.name) != getattr(old, f.name)}
        repairs = tuple(DIALECT_REPAIRS[name] for name in changes)
        _log.info("profile %s: the server needs %s", self.profile.id, ", ".join(repairs))
        self._emit(DialectLearned(self.profile.id, self.profile.base_url, changes, repairs))
