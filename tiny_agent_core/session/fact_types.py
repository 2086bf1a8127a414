"""The typed v2 session facts: what the strict reducer returns for each fact it accepted (reference notes §5.4–5.6).

A session file is a header and transactions of facts, each ``{"kind", "seq", "id", "timestamp", ...}``. The
reducer (:mod:`tiny_agent_core.session.reducer`) checks every fact in the reference's order and, as the result of
that check, builds one of the types below from the values it accepted: there is no second pass that reads a raw
fact again. Whoever needs the facts of a file in order (the ledger's extraction, the window's timeline) gets them
from the reducer's walk (``reduce_session(data, observer)``, ``apply_transaction``, ``SessionStore``'s commit
observers) and dispatches on the type.

Every fact starts with ``seq``, ``id`` and ``timestamp`` (ms since the epoch). Messages, tool arguments and
configuration snapshots are the validated JSON objects themselves (shared with the reduced state: read-only).
The types are :class:`typing.NamedTuple`\\ s: immutable, typed, and the cheapest records Python builds (a load
makes one per fact, so their cost is part of every load).

Entries (``kind: "entry"``): :class:`UserEntry`, :class:`AssistantEntry`, :class:`ToolResultEntry`,
:class:`CompactionEntry`. Records (``kind: "record"``): :class:`RunStarted`, :class:`CompactionStarted`,
:class:`StepAttempt`, :class:`StepFailed`, :class:`ToolStarted`, :class:`AbortRequested`,
:class:`OperationFinished`. Usage (``kind: "usage"``): :class:`UsageRecorded`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from tiny_agent_core.usage import Usage

__all__ = [
    "AbortRequested",
    "AssistantEntry",
    "CompactionEntry",
    "CompactionStarted",
    "OperationFinished",
    "RunStarted",
    "SessionFact",
    "StepAttempt",
    "StepFailed",
    "ToolResultEntry",
    "ToolStarted",
    "UsageRecorded",
    "UserEntry",
]

JsonObject = dict[str, Any]


# --- entries -------------------------------------------------------------------------------------------------------


class UserEntry(NamedTuple):
    """A user message entry."""

    seq: int
    id: str
    timestamp: int
    message: JsonObject
    """``{"role": "user", "content": <non-empty str>}``."""

    @property
    def content(self) -> str:
        """The message text."""
        text: str = self.message["content"]
        return text


class AssistantEntry(NamedTuple):
    """The assistant message that settled a model attempt."""

    seq: int
    id: str
    timestamp: int
    step_id: str
    attempt_id: str
    stop_reason: str
    """``stop`` | ``toolUse`` | ``length``."""
    message: JsonObject
    """``{"role": "assistant", "content": str | None, "tool_calls"?: [...]}``."""

    @property
    def content(self) -> str | None:
        """The message text (``None`` when the model sent none)."""
        text: str | None = self.message["content"]
        return text

    @property
    def tool_calls(self) -> list[JsonObject]:
        """The message's tool calls, ``{"id", "type": "function", "function": {"name", "arguments"}}`` each."""
        calls: list[JsonObject] = self.message.get("tool_calls") or []
        return calls


class ToolResultEntry(NamedTuple):
    """A tool message answering one call: a started tool's result, or a result written without running it."""

    seq: int
    id: str
    timestamp: int
    step_id: str
    tool_name: str
    message: JsonObject
    """``{"role": "tool", "content": str, "tool_call_id": str}``."""
    result_type: str
    """``success`` | ``error`` | ``synthetic``."""
    reason: str | None
    """A synthetic result's reason (``interrupted`` after a start; ``invalidArguments``, ``unknownTool``,
    ``truncated`` or ``aborted`` before any), else ``None``."""
    tool_started_id: str | None
    """The ``toolStarted`` this answers; ``None`` for a pre-execution result."""
    assistant_entry_id: str | None
    """A pre-execution result's assistant entry (else ``None``: see the ``toolStarted``)."""
    tool_index: int | None
    """A pre-execution result's index among the assistant's calls (else ``None``)."""

    @property
    def content(self) -> str:
        """The tool message text."""
        text: str = self.message["content"]
        return text

    @property
    def tool_call_id(self) -> str:
        """The call this answers."""
        call_id: str = self.message["tool_call_id"]
        return call_id

    @property
    def status(self) -> str:
        """``success``, ``error``, or the synthetic reason."""
        return self.reason if self.reason is not None else self.result_type


class CompactionEntry(NamedTuple):
    """A compaction's result: the summary and the retained messages that replace the active context."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    summary: str
    compacted_through_entry_id: str
    retained: list[JsonObject]
    """The retained tail's messages, in order."""


# --- records -------------------------------------------------------------------------------------------------------


class RunStarted(NamedTuple):
    """A run starts from a user entry."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    input_entry_id: str


class CompactionStarted(NamedTuple):
    """A compaction starts over every message entry through ``input_through_entry_id``."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    input_through_entry_id: str
    result_entry_id: str
    compacted_entry_ids: list[str]
    retained_entry_ids: list[str]
    source_digest: str


class StepAttempt(NamedTuple):
    """One physical model request: attempt 1 of a new step, or attempt 2 retrying an interrupted one."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    step_id: str
    attempt_id: str
    attempt: int
    """1 or 2."""
    step_kind: str
    """``assistant`` | ``compaction``."""
    context_through_entry_id: str
    configuration_snapshot: JsonObject
    configuration_digest: str

    @property
    def model(self) -> str:
        """The model of the attempt's configuration."""
        model: str = self.configuration_snapshot["model"]
        return model


class StepFailed(NamedTuple):
    """An open attempt ended with an error (a provider error, an abort)."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    step_id: str
    attempt_id: str
    code: str
    """E.g. ``model_error`` or ``aborted``."""
    message: str


class ToolStarted(NamedTuple):
    """Intent before effect: a call of the run's settled step is about to run (reserves its result id)."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    step_id: str
    assistant_entry_id: str
    tool_index: int
    tool_call_id: str
    tool_name: str
    arguments: JsonObject
    """The arguments the tool runs with (possibly edited at approval)."""
    replay: str
    """``safe`` | ``never``."""
    replay_key: str
    environment_identity: str
    result_entry_id: str


class AbortRequested(NamedTuple):
    """Escape: the active operation was asked to stop."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    operation_kind: str
    """``run`` | ``compaction``."""
    phase: str
    """``model`` | ``tool`` | ``compact``."""
    tool_call_id: str | None
    """The running call when ``phase == "tool"``."""


class OperationFinished(NamedTuple):
    """The active operation ended."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    operation_kind: str
    """``run`` | ``compaction``."""
    outcome: str
    """``completed`` | ``aborted`` | ``failed``."""
    completion: str | None
    """A completed run's ``normal`` | ``truncated``; else ``None``."""
    final_entry_id: str | None
    """A completed operation's final entry; else ``None``."""
    error_code: str | None
    """A failed operation's error code (``model_error``, ``step_limit``, …); else ``None``."""
    error_message: str | None


class UsageRecorded(NamedTuple):
    """The tokens of one model attempt or one started tool (exactly one of the two ids is set)."""

    seq: int
    id: str
    timestamp: int
    operation_id: str
    attempt_id: str | None
    tool_started_id: str | None
    input: int
    output: int
    cache_read: int
    cache_write: int

    @property
    def usage(self) -> Usage:
        """The four counts as a :class:`~tiny_agent_core.usage.Usage`."""
        from tiny_agent_core.usage import Usage  # on first use: the reducer itself never needs it

        return Usage(self.input, self.output, self.cache_read, self.cache_write)


SessionFact = (
    UserEntry
    | AssistantEntry
    | ToolResultEntry
    | CompactionEntry
    | RunStarted
    | CompactionStarted
    | StepAttempt
    | StepFailed
    | ToolStarted
    | AbortRequested
    | OperationFinished
    | UsageRecorded
)
"""Any accepted fact."""
