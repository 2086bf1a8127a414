"""The canonical transcript: an append-only message list whose role invariants hold after every append.

Rules (reference notes §1.3): every tool call of an assistant message is answered by exactly one tool message
with its id before any further assistant or user message; a tool message must answer a call that is still
pending; call ids are unique within one assistant message. Calls may be answered in any order, and calls still
pending at the end are legal (that is what an interrupted run looks like).

Each append costs O(number of calls in the message): the pending set is kept, never recomputed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tiny_agent_core.errors import TranscriptError
from tiny_agent_core.messages import AssistantMessage, Message, ToolMessage, UserMessage


class Transcript:
    """An ordered list of canonical messages that rejects any append breaking a role invariant.

    A rejected append raises :class:`TranscriptError` (its ``invariant`` names the rule) and changes nothing.
    """

    __slots__ = ("_messages", "_pending")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._pending: dict[str, int] = {}
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        """Append ``message`` if the transcript stays legal; otherwise raise and leave it unchanged."""
        if isinstance(message, UserMessage):
            self._require_nothing_pending("user")
        elif isinstance(message, AssistantMessage):
            self._require_nothing_pending("assistant")
            ids = [call.id for call in message.calls]
            if len(set(ids)) != len(ids):
                raise TranscriptError("duplicate_call_id", "An assistant message has two tool calls with the same id.")
            self._pending = {call_id: index for index, call_id in enumerate(ids)}
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in self._pending:
                raise TranscriptError(
                    "tool_result_not_pending",
                    f"Tool result for call {message.tool_call_id!r} does not answer a pending tool call "
                    "(unknown id, or already answered).",
                )
            del self._pending[message.tool_call_id]
        else:  # pragma: no cover - the type system rules this out; kept for untyped callers
            raise TranscriptError("unknown_role", f"Not a canonical message: {type(message).__name__}.")
        self._messages.append(message)

    def _require_nothing_pending(self, role: str) -> None:
        if self._pending:
            waiting = ", ".join(sorted(self._pending, key=self._pending.__getitem__))
            raise TranscriptError(
                "tool_call_pending",
                f"A new {role} message cannot follow while tool calls are unanswered: {waiting}.",
            )

    @property
    def pending_call_ids(self) -> tuple[str, ...]:
        """Ids of the calls of the last assistant message that have no result yet, in call order."""
        return tuple(sorted(self._pending, key=self._pending.__getitem__))

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages in order (a snapshot)."""
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(tuple(self._messages))

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]
