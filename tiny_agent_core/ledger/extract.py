"""What the index derives from one session file: the session row, its physical requests and tool timings.

:func:`extract_session` validates the bytes with the strict reducer and takes the typed facts of that same walk,
in order (reference notes §5.4–§5.6, §5.13): no line is read twice. The title is the first user message, each
``stepAttempt`` is one physical request whose usage is the sum of the usage facts that name its attempt id
(none = unknown), each ``toolStarted`` opens a tool timing closed by its result entry. Linear in the file size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tiny_agent_core.session.fact_types import (
    AssistantEntry,
    CompactionEntry,
    OperationFinished,
    SessionFact,
    StepAttempt,
    StepFailed,
    ToolResultEntry,
    ToolStarted,
    UsageRecorded,
    UserEntry,
)
from tiny_agent_core.session.reducer import reduce_session
from tiny_agent_core.usage import Usage

TITLE_MAX = 80
"""Longest title kept in the index (characters, an ellipsis included)."""

_HTTP_STATUS = re.compile(r"HTTP ([1-5][0-9][0-9])\b")
"""How a provider's HTTP error starts its message (:func:`tiny_agent_core.providers.http_errors.status_error`)."""

CONTENT_MAX = 200_000
"""Most characters of a session's searchable text kept in the index (the rest is not searchable)."""


@dataclass(slots=True)
class RequestFacts:
    """One physical model request: a ``stepAttempt`` and what the file says about it afterwards."""

    attempt_id: str
    operation_id: str
    step_id: str
    attempt: int
    step_kind: str
    model: str
    started_at: int
    usage: Usage | None = None
    """Sum of the usage facts owned by this attempt; ``None`` when there is none (unknown, not zero)."""
    stop_reason: str | None = None
    error_code: str | None = None
    outcome: str = "open"
    """'open' | 'settled' | 'failed' | 'superseded'."""
    finished_at: int | None = None
    http_status: int | None = None
    """The HTTP status a failed attempt's ``stepFailed`` message names (``HTTP 429: …``), else ``None``."""


@dataclass(slots=True)
class ToolFacts:
    """One started tool and, once its result entry exists, when and how it finished."""

    tool_started_id: str
    operation_id: str
    step_id: str
    tool_call_id: str
    tool_name: str
    started_at: int
    finished_at: int | None = None
    outcome: str | None = None
    """'success' | 'error' | 'interrupted'; ``None`` while pending."""


@dataclass(slots=True)
class SessionFacts:
    """Everything the index derives from one valid session file."""

    id: str
    created_at: int
    cwd: str
    provider: str
    model: str
    """The model of the last step attempt, else the header's."""
    title: str = ""
    updated_at: int = 0
    operation: str = "idle"
    abort_requested: bool = False
    last_outcome: str | None = None
    facts: int = 0
    usage: Usage = field(default_factory=lambda: Usage(0, 0))
    """Sum of every usage fact (attempts and tools): known usage only."""
    requests: list[RequestFacts] = field(default_factory=list)
    tools: list[ToolFacts] = field(default_factory=list)
    text: str = ""
    """Searchable content: user and assistant message text and tool calls (name and arguments), one message
    per line, whitespace collapsed, at most :data:`CONTENT_MAX` characters."""
    committed_length: int = 0
    """Bytes up to and including the last LF; a torn tail after it is ignored."""


def make_title(text: str) -> str:
    """Collapse whitespace and cut to :data:`TITLE_MAX` characters (ending with an ellipsis when cut)."""
    title = " ".join(text.split())
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1].rstrip() + "…"


def extract_session(data: bytes) -> SessionFacts:
    """Validate a session file's bytes with the strict reducer and derive its index rows, in one walk.

    Raises :class:`~tiny_agent_core.errors.SessionCorruption` (the reducer's code, line and seq) for an invalid
    file. The header, usage totals, open operation and fact count come from the reducer's state; the reducer's
    typed facts give the title, the requests, the tool timings, the last outcome and the latest model.
    """
    walker = _Walker()
    state = reduce_session(data, walker.apply)
    header = state.header
    operation = state.operation
    return SessionFacts(
        id=header.id,
        created_at=header.created_at,
        cwd=header.cwd,
        provider=header.provider,
        model=walker.model if walker.model is not None else header.model,
        title=walker.title,
        updated_at=max(header.created_at, walker.updated_at),
        operation=operation.kind,
        abort_requested=bool(getattr(operation, "abort_requested", False)),
        last_outcome=walker.last_outcome,
        facts=state.next_seq - 1,
        usage=state.usage,
        requests=walker.request_list,
        tools=walker.tool_list,
        text=walker.text(),
        committed_length=state.repaired_length,
    )


class _Walker:
    """Takes the reducer's typed facts in order and keeps what the index derives from them."""

    def __init__(self) -> None:
        self.title = ""
        self.model: str | None = None
        """The model of the latest step attempt."""
        self.updated_at = 0
        self.last_outcome: str | None = None
        self.request_list: list[RequestFacts] = []
        self.tool_list: list[ToolFacts] = []
        self.requests: dict[str, RequestFacts] = {}
        self.tools: dict[str, ToolFacts] = {}
        self.lines: list[str] = []
        self.length = 0

    def text(self) -> str:
        """The searchable content collected so far (see :attr:`SessionFacts.text`)."""
        return "\n".join(self.lines)[:CONTENT_MAX]

    def _add_text(self, text: str) -> None:
        line = " ".join(text.split())
        if line and self.length < CONTENT_MAX:
            self.lines.append(line)
            self.length += len(line) + 1

    def apply(self, facts: list[SessionFact]) -> None:
        """Take one accepted transaction."""
        for fact in facts:
            self.updated_at = max(self.updated_at, fact.timestamp)
            if isinstance(fact, UsageRecorded):
                self._usage(fact)
            elif isinstance(fact, ToolResultEntry):
                self._tool_result(fact)
            elif isinstance(fact, AssistantEntry):
                self._assistant(fact)
            elif isinstance(fact, ToolStarted):
                self._tool_started(fact)
            elif isinstance(fact, StepAttempt):
                self._step_attempt(fact)
            elif isinstance(fact, UserEntry):
                self._add_text(fact.content)
                if not self.title:
                    self.title = make_title(fact.content)
            elif isinstance(fact, StepFailed):
                self._step_failed(fact)
            elif isinstance(fact, CompactionEntry):
                self._close_attempt_of_operation(fact.operation_id, fact.timestamp)
            elif isinstance(fact, OperationFinished) and fact.operation_kind == "run":
                self.last_outcome = fact.outcome

    def _usage(self, fact: UsageRecorded) -> None:
        request = self.requests.get(fact.attempt_id) if fact.attempt_id is not None else None
        if request is not None:
            usage = fact.usage
            request.usage = usage if request.usage is None else request.usage + usage

    def _assistant(self, entry: AssistantEntry) -> None:
        if entry.content is not None:
            self._add_text(entry.content)
        for call in entry.tool_calls:
            function = call["function"]
            self._add_text(f"{function['name']} {function['arguments']}")
        request = self.requests.get(entry.attempt_id)
        if request is not None:
            request.outcome = "settled"
            request.stop_reason = entry.stop_reason
            request.finished_at = entry.timestamp

    def _tool_result(self, entry: ToolResultEntry) -> None:
        tool = self.tools.get(entry.tool_started_id) if entry.tool_started_id is not None else None
        if tool is not None:
            tool.outcome = "interrupted" if entry.result_type == "synthetic" else entry.result_type
            tool.finished_at = entry.timestamp

    def _close_attempt_of_operation(self, operation_id: str, timestamp: int) -> None:
        for request in reversed(self.request_list):
            if request.operation_id == operation_id:
                if request.outcome == "open":
                    request.outcome = "settled"
                    request.finished_at = timestamp
                return

    def _step_attempt(self, record: StepAttempt) -> None:
        if record.attempt == 2:
            for previous in self.request_list:
                if previous.step_id == record.step_id and previous.outcome == "open":
                    previous.outcome = "superseded"
                    previous.finished_at = record.timestamp
        request = RequestFacts(
            attempt_id=record.attempt_id,
            operation_id=record.operation_id,
            step_id=record.step_id,
            attempt=record.attempt,
            step_kind=record.step_kind,
            model=record.model,
            started_at=record.timestamp,
        )
        self.requests[request.attempt_id] = request
        self.request_list.append(request)
        self.model = request.model

    def _step_failed(self, record: StepFailed) -> None:
        failed = self.requests.get(record.attempt_id)
        if failed is not None:
            failed.outcome = "failed"
            failed.error_code = record.code
            failed.finished_at = record.timestamp
            status = _HTTP_STATUS.match(record.message)
            failed.http_status = int(status.group(1)) if status else None

    def _tool_started(self, record: ToolStarted) -> None:
        tool = ToolFacts(
            tool_started_id=record.id,
            operation_id=record.operation_id,
            step_id=record.step_id,
            tool_call_id=record.tool_call_id,
            tool_name=record.tool_name,
            started_at=record.timestamp,
        )
        self.tools[record.id] = tool
        self.tool_list.append(tool)
