"""The reduced state of a v2 session (reference notes §5.7) and its golden JSON form.

:class:`SessionState` is mutable: the reducer (:mod:`tiny_agent_core.session.reducer`) applies one transaction at
a time to it, in place, and undoes a rejected transaction. Besides the public fields of the reference's
``SessionState`` (``header``, ``transcript``, ``active_context``, ``usage``, ``operation``,
``repaired_length``) it keeps the indexes that make every check O(1) in the session length
(:class:`SessionIndex`, read-only outside the reducer). Treat everything reachable from a state as read-only:
messages and tool arguments are the parsed JSON objects themselves, not copies.

:func:`state_to_json` gives the reference's golden ``state`` object (camelCase keys), e.g. for
``tiny-agent session check``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from tiny_agent_core.usage import Usage

__all__ = [
    "IDLE",
    "Attempt",
    "CompactionOperation",
    "IdleOperation",
    "Operation",
    "RunOperation",
    "SessionHeader",
    "SessionIndex",
    "SessionState",
    "ToolCallState",
    "state_to_json",
]

JsonObject = dict[str, Any]


class SessionHeader(NamedTuple):
    """Line 1 of a session file, without ``kind``/``version`` (always ``"header"``/``2``)."""

    id: str
    """The session id (a UUIDv7, also the end of the file name)."""
    created_at: int
    """Creation time, milliseconds since the epoch."""
    cwd: str
    """The workspace the session was created in."""
    provider: str
    """Always ``"openrouter"`` in the reference."""
    model: str
    """The model at creation."""
    environment_identity: str
    """``TINY_AGENT_ENVIRONMENT_IDENTITY`` or the realpath of the workspace (§5.9)."""

    def as_json(self) -> JsonObject:
        """The reference's ``state.header`` object."""
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "cwd": self.cwd,
            "provider": self.provider,
            "model": self.model,
            "environmentIdentity": self.environment_identity,
        }


class Attempt:
    """One model attempt of a step (``stepAttempt``); the operation's ``step`` is its latest attempt."""

    __slots__ = (
        "attempt",
        "attempt_id",
        "closed",
        "configuration_digest",
        "configuration_snapshot",
        "context_through_entry_id",
        "failed",
        "operation_id",
        "settled_entry_id",
        "status",
        "step_id",
        "step_kind",
        "stop_reason",
        "tool_names",
    )

    def __init__(
        self,
        operation_id: str,
        step_id: str,
        attempt_id: str,
        attempt: int,
        step_kind: str,
        context_through_entry_id: str,
        configuration_snapshot: JsonObject,
        configuration_digest: str,
        tool_names: frozenset[str],
    ) -> None:
        self.operation_id = operation_id
        self.step_id = step_id
        self.attempt_id = attempt_id
        self.attempt = attempt
        self.step_kind: Literal["assistant", "compaction"] = step_kind  # type: ignore[assignment]
        self.status: Literal["attempting", "settled", "failed"] = "attempting"
        self.context_through_entry_id = context_through_entry_id
        self.configuration_snapshot = configuration_snapshot
        self.configuration_digest = configuration_digest
        self.tool_names = tool_names
        """The names of the tools ``configuration_snapshot`` declares."""
        self.settled_entry_id: str | None = None
        self.stop_reason: str | None = None
        self.closed = False
        """Settled, failed, or superseded by attempt 2."""
        self.failed = False

    def as_json(self) -> JsonObject:
        """The reference's ``operation.step`` object."""
        out: JsonObject = {
            "operationId": self.operation_id,
            "stepId": self.step_id,
            "attemptId": self.attempt_id,
            "attempt": self.attempt,
            "stepKind": self.step_kind,
            "status": self.status,
            "contextThroughEntryId": self.context_through_entry_id,
            "configurationSnapshot": self.configuration_snapshot,
            "configurationDigest": self.configuration_digest,
        }
        if self.settled_entry_id is not None:
            out["settledEntryId"] = self.settled_entry_id
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        return out


class ToolCallState:
    """A ``toolStarted`` record and whether its result entry has been written."""

    __slots__ = (
        "arguments",
        "assistant_entry_id",
        "environment_identity",
        "operation",
        "operation_id",
        "replay",
        "replay_key",
        "result_entry_id",
        "status",
        "step_id",
        "tool_call_id",
        "tool_index",
        "tool_name",
        "tool_started_id",
    )

    def __init__(
        self,
        operation: RunOperation,
        tool_started_id: str,
        step_id: str,
        assistant_entry_id: str,
        tool_index: int,
        tool_call_id: str,
        tool_name: str,
        arguments: JsonObject,
        replay: str,
        replay_key: str,
        environment_identity: str,
        result_entry_id: str,
    ) -> None:
        self.operation = operation
        self.operation_id = operation.operation_id
        self.tool_started_id = tool_started_id
        self.step_id = step_id
        self.assistant_entry_id = assistant_entry_id
        self.tool_index = tool_index
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.arguments = arguments
        self.replay: Literal["safe", "never"] = replay  # type: ignore[assignment]
        self.replay_key = replay_key
        self.environment_identity = environment_identity
        self.result_entry_id = result_entry_id
        self.status: Literal["pending", "completed"] = "pending"

    def as_json(self) -> JsonObject:
        """The reference's ``ToolCallState`` object."""
        return {
            "operationId": self.operation_id,
            "toolStartedId": self.tool_started_id,
            "stepId": self.step_id,
            "assistantEntryId": self.assistant_entry_id,
            "toolIndex": self.tool_index,
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "arguments": self.arguments,
            "replay": self.replay,
            "replayKey": self.replay_key,
            "environmentIdentity": self.environment_identity,
            "resultEntryId": self.result_entry_id,
            "status": self.status,
        }


class IdleOperation:
    """No operation is active."""

    __slots__ = ()
    kind: Literal["idle"] = "idle"

    def as_json(self) -> JsonObject:
        """``{"kind": "idle"}``."""
        return {"kind": "idle"}

    def __repr__(self) -> str:
        return "IDLE"


IDLE = IdleOperation()
"""The idle operation (a singleton)."""


class RunOperation:
    """A run: a user message and the model steps and tool calls it caused."""

    __slots__ = (
        "abort_requested",
        "finished",
        "input_entry_id",
        "latest_step_id",
        "operation_id",
        "pending_tools",
        "step",
        "tool_calls",
    )
    kind: Literal["run"] = "run"

    def __init__(self, operation_id: str, input_entry_id: str) -> None:
        self.operation_id = operation_id
        self.input_entry_id = input_entry_id
        self.step: Attempt | None = None
        self.tool_calls: list[ToolCallState] = []
        self.abort_requested = False
        self.finished = False
        self.latest_step_id: str | None = None
        self.pending_tools = 0
        """How many of ``tool_calls`` are still pending (kept, never recounted)."""

    @property
    def input_through_entry_id(self) -> str:
        """The run's input entry (the reference's ``OperationInfo.inputThroughEntryId``)."""
        return self.input_entry_id

    def as_json(self) -> JsonObject:
        """The reference's ``operation`` object of a run."""
        out: JsonObject = {
            "kind": "run",
            "operationId": self.operation_id,
            "inputEntryId": self.input_entry_id,
            "toolCalls": [tool.as_json() for tool in self.tool_calls],
            "abortRequested": self.abort_requested,
        }
        if self.step is not None:
            out["step"] = self.step.as_json()
        return out


class CompactionOperation:
    """A compaction: a summary step whose result entry replaces the active context."""

    __slots__ = (
        "abort_requested",
        "finished",
        "input_through_entry_id",
        "latest_step_id",
        "operation_id",
        "result_entry_id",
        "step",
    )
    kind: Literal["compaction"] = "compaction"

    def __init__(self, operation_id: str, input_through_entry_id: str, result_entry_id: str) -> None:
        self.operation_id = operation_id
        self.input_through_entry_id = input_through_entry_id
        self.result_entry_id = result_entry_id
        self.step: Attempt | None = None
        self.abort_requested = False
        self.finished = False
        self.latest_step_id: str | None = None

    def as_json(self) -> JsonObject:
        """The reference's ``operation`` object of a compaction."""
        out: JsonObject = {
            "kind": "compaction",
            "operationId": self.operation_id,
            "inputThroughEntryId": self.input_through_entry_id,
            "resultEntryId": self.result_entry_id,
            "abortRequested": self.abort_requested,
        }
        if self.step is not None:
            out["step"] = self.step.as_json()
        return out


Operation = IdleOperation | RunOperation | CompactionOperation


class EntryInfo:
    """What the reducer remembers about an entry fact (see :class:`SessionIndex`)."""

    __slots__ = ("attempt_id", "message", "message_index", "operation_id", "position", "step_id", "stop_reason")

    def __init__(
        self,
        message: JsonObject | None,
        position: int,
        message_index: int,
        operation_id: str | None = None,
        step_id: str | None = None,
        attempt_id: str | None = None,
        stop_reason: str | None = None,
    ) -> None:
        self.message = message
        """The message of a message entry; ``None`` for a compaction entry."""
        self.position = position
        """Index among all entries, in file order."""
        self.message_index = message_index
        """Index among message entries, or -1 for a compaction entry."""
        self.operation_id = operation_id
        self.step_id = step_id
        self.attempt_id = attempt_id
        self.stop_reason = stop_reason
        """The ``stopReason`` of an assistant entry."""


class SessionIndex:
    """The reducer's lookups over a state, so that every check is O(1) in the session length.

    Public to the reducer's rule modules (:mod:`tiny_agent_core.session.rules`), read-only for everyone else: a
    change made outside a rule is not journaled and cannot be undone. ``ids``, ``entries``, ``entry_ids``,
    ``message_ids``, ``operations``, ``attempts``, ``steps``, ``tools`` and ``tool_pairs`` only grow: a rule adds
    to them and never changes or removes what is there (see :meth:`SessionState.grow_only_parts`).
    """

    __slots__ = (
        "active_through",
        "attempts",
        "entries",
        "entry_ids",
        "ids",
        "message_ids",
        "operations",
        "pending_calls",
        "reserved",
        "source_digest",
        "steps",
        "tool_pairs",
        "tools",
        "usage_totals",
    )

    def __init__(self) -> None:
        self.usage_totals: tuple[int, ...] = (0, 0, 0, 0)
        """Sums of ``input``, ``output``, ``cacheRead``, ``cacheWrite`` over every usage fact."""
        self.ids: dict[str, int] = {}
        """Ids of committed facts, each with its fact's ``seq``."""
        self.reserved: dict[str, str] = {}
        """Pre-allocated ids not yet used by a fact, with what they are for (``identity``, ``toolResult``, …)."""
        self.entries: dict[str, EntryInfo] = {}
        """Every entry fact by id."""
        self.entry_ids: list[str] = []
        """Entry ids in file order."""
        self.message_ids: list[str] = []
        """Message entry ids in file order."""
        self.operations: dict[str, RunOperation | CompactionOperation] = {}
        """Every operation ever started, by id."""
        self.attempts: dict[str, Attempt] = {}
        """Every step attempt by attempt id."""
        self.steps: dict[str, list[Attempt]] = {}
        """The attempts of each step, by step id."""
        self.tools: dict[str, ToolCallState] = {}
        """Every ``toolStarted`` by its fact id."""
        self.tool_pairs: dict[tuple[str, int], str] = {}
        """``(assistant entry id, tool index)`` of every call answered or started, with the fact that did."""
        self.active_through: str | None = None
        """The entry the active context ends with (the next attempt-1 step's ``contextThroughEntryId``)."""
        self.pending_calls: set[str] = set()
        """Tool-call ids of the last assistant message not yet answered by a tool message."""
        self.source_digest: tuple[Any, int] = (hashlib.sha256(b"["), 0)
        """An open SHA-256 of the compaction source of the first ``n`` messages, and ``n``."""

    def attempt_of(self, info: EntryInfo) -> Attempt | None:
        """The attempt that settled an entry (``None`` for an entry no attempt wrote)."""
        return self.attempts.get(info.attempt_id) if info.attempt_id is not None else None


class SessionState:
    """A reduced session. Built by ``reduce_session`` and advanced by ``apply_transaction``."""

    __slots__ = (
        "active_context",
        "header",
        "index",
        "line_count",
        "next_seq",
        "operation",
        "repaired_length",
        "transcript",
    )

    def __init__(self, header: SessionHeader, repaired_length: int) -> None:
        self.header = header
        self.transcript: list[JsonObject] = []
        """Every persisted message, in order."""
        self.active_context: list[JsonObject] = []
        """What is sent to the model after the system message (after compaction: summary + retained tail)."""
        self.operation: Operation = IDLE
        self.repaired_length = repaired_length
        """Bytes of the committed prefix (everything through the last LF)."""
        self.next_seq = 1
        """The ``seq`` the next fact must carry."""
        self.line_count = 1
        """Physical lines committed so far (the header is line 1)."""
        self.index = SessionIndex()
        """The reducer's lookups (read-only outside the reducer)."""

    @property
    def usage(self) -> Usage:
        """Sum of every usage fact (model attempts and tools, any outcome)."""
        from tiny_agent_core.usage import Usage  # on first use: ``session check`` needs only the totals

        return Usage(*self.index.usage_totals)

    @property
    def fact_count(self) -> int:
        """Facts committed so far."""
        return self.next_seq - 1

    @property
    def session_id(self) -> str:
        """The header id."""
        return self.header.id

    def grow_only_parts(self) -> tuple[list[Any] | dict[Any, Any], ...]:
        """What a transaction only adds to, never changing or removing what is there: the transcript, the active
        context (which a compaction may also replace, through the journal), and the index's logs and tables. A
        rejected transaction is undone by cutting each back to its length before it
        (:class:`~tiny_agent_core.session.rules.journal.Journal`)."""
        index = self.index
        return (
            self.transcript,
            self.active_context,
            index.ids,
            index.entries,
            index.entry_ids,
            index.message_ids,
            index.operations,
            index.attempts,
            index.steps,
            index.tools,
            index.tool_pairs,
        )

    def is_reserved(self, fact_id: str) -> bool:
        """Whether ``fact_id`` is a pre-allocated id (an operation, step, attempt or pending result id)."""
        return fact_id in self.index.reserved

    def is_used(self, fact_id: str) -> bool:
        """Whether ``fact_id`` is the id of a committed fact or a reserved id."""
        return fact_id in self.index.ids or fact_id in self.index.reserved

    @property
    def context_boundary(self) -> str | None:
        """The entry the next attempt-1 ``stepAttempt`` must name as ``contextThroughEntryId``."""
        return self.index.active_through

    def message_entries(self) -> list[tuple[str, JsonObject]]:
        """Every message entry as ``(entry id, message)``, in file order (a compaction's durable source)."""
        entries = self.index.entries
        return [(entry_id, entries[entry_id].message or {}) for entry_id in self.index.message_ids]

    def entry_message(self, entry_id: str) -> JsonObject | None:
        """The message of a committed message entry (``None`` for an unknown id or a compaction entry)."""
        info = self.index.entries.get(entry_id)
        return info.message if info is not None else None


def state_to_json(state: SessionState) -> JsonObject:
    """The reference's golden ``state`` object: header, transcript, activeContext, usage, operation, length."""
    return {
        "header": state.header.as_json(),
        "transcript": list(state.transcript),
        "activeContext": list(state.active_context),
        "usage": dict(zip(("input", "output", "cacheRead", "cacheWrite"), state.index.usage_totals, strict=True)),
        "operation": state.operation.as_json(),
        "repairedLength": state.repaired_length,
    }
