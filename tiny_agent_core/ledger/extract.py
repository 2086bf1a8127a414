"""What the index derives from one session file: the session row, its physical requests and tool timings.

:func:`extract_session` validates the bytes with the strict reducer and then walks the facts once, in order
(reference notes §5.4–§5.6, §5.13): the title is the first user message, each ``stepAttempt`` is one physical
request whose usage is the sum of the usage facts that name its attempt id (none = unknown), each
``toolStarted`` opens a tool timing closed by its result entry. Linear in the file size.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tiny_agent_core.session import reduce_session
from tiny_agent_core.usage import Usage

TITLE_MAX = 80
"""Longest title kept in the index (characters, an ellipsis included)."""

_HTTP_STATUS = re.compile(r"HTTP ([1-5][0-9][0-9])\b")
"""How a provider's HTTP error starts its message (:func:`tiny_agent_core.providers.openai_chat.http_error`)."""

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
    """Validate a session file's bytes with the strict reducer and derive its index rows.

    Raises :class:`~tiny_agent_core.errors.SessionCorruption` (the reducer's code, line and seq) for an invalid
    file. The header, usage totals, open operation and fact count come from the reducer's state; the walk adds
    the title, the requests, the tool timings, the last outcome and the latest model.
    """
    state = reduce_session(data)
    header = state.header
    operation = state.operation
    result = SessionFacts(
        id=header.id,
        created_at=header.created_at,
        cwd=header.cwd,
        provider=header.provider,
        model=header.model,
        updated_at=header.created_at,
        operation=operation.kind,
        abort_requested=bool(getattr(operation, "abort_requested", False)),
        facts=state.next_seq - 1,
        usage=state.usage,
        committed_length=state.repaired_length,
    )
    walker = _Walker(result)
    lines = data[: state.repaired_length].decode("utf-8").split("\n")[1:-1]
    for line in lines:
        value = json.loads(line)
        for fact in value if isinstance(value, list) else [value]:
            walker.apply(fact)
    result.text = walker.text()
    return result


class _Walker:
    """Applies facts in order to a :class:`SessionFacts` (the file is already validated)."""

    def __init__(self, out: SessionFacts) -> None:
        self.out = out
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

    def apply(self, fact: dict[str, Any]) -> None:
        timestamp = fact["timestamp"]
        self.out.updated_at = max(self.out.updated_at, timestamp)
        kind = fact["kind"]
        if kind == "usage":
            self._usage(fact)
        elif kind == "entry":
            self._entry(fact["entry"], timestamp)
        elif kind == "record":
            self._record(fact["id"], fact["record"], timestamp)

    def _usage(self, fact: dict[str, Any]) -> None:
        request = self.requests.get(fact.get("attemptId", ""))
        if request is not None:
            usage = Usage.from_dict(fact["usage"])
            request.usage = usage if request.usage is None else request.usage + usage

    def _entry(self, entry: dict[str, Any], timestamp: int) -> None:
        if entry.get("type") != "message":
            if entry.get("type") == "compaction":
                self._close_attempt_of_operation(entry.get("operationId"), timestamp)
            return
        message = entry.get("message", {})
        role = message.get("role")
        if role in ("user", "assistant"):
            self._message_text(message)
        if role == "user" and not self.out.title and isinstance(message.get("content"), str):
            self.out.title = make_title(message["content"])
        elif role == "assistant":
            request = self.requests.get(entry.get("attemptId", ""))
            if request is not None:
                request.outcome = "settled"
                request.stop_reason = entry.get("stopReason")
                request.finished_at = timestamp
        elif role == "tool":
            tool = self.tools.get(entry.get("toolStartedId", ""))
            if tool is not None:
                result = entry.get("result", {})
                tool.outcome = "interrupted" if result.get("type") == "synthetic" else result.get("type")
                tool.finished_at = timestamp

    def _message_text(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        if isinstance(content, str):
            self._add_text(content)
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            self._add_text(f"{function.get('name', '')} {function.get('arguments', '')}")

    def _close_attempt_of_operation(self, operation_id: Any, timestamp: int) -> None:
        for request in reversed(self.out.requests):
            if request.operation_id == operation_id:
                if request.outcome == "open":
                    request.outcome = "settled"
                    request.finished_at = timestamp
                return

    def _record(self, fact_id: str, record: dict[str, Any], timestamp: int) -> None:
        out = self.out
        kind = record.get("type")
        if kind == "stepAttempt":
            if record["attempt"] == 2:
                for previous in self.out.requests:
                    if previous.step_id == record["stepId"] and previous.outcome == "open":
                        previous.outcome = "superseded"
                        previous.finished_at = timestamp
            request = RequestFacts(
                attempt_id=record["attemptId"],
                operation_id=record["operationId"],
                step_id=record["stepId"],
                attempt=record["attempt"],
                step_kind=record["stepKind"],
                model=record["configurationSnapshot"]["model"],
                started_at=timestamp,
            )
            self.requests[request.attempt_id] = request
            out.requests.append(request)
            out.model = request.model
        elif kind == "stepFailed":
            failed = self.requests.get(record.get("attemptId", ""))
            if failed is not None:
                failed.outcome = "failed"
                failed.error_code = record["error"]["code"]
                failed.finished_at = timestamp
                status = _HTTP_STATUS.match(record["error"].get("message", ""))
                failed.http_status = int(status.group(1)) if status else None
        elif kind == "toolStarted":
            tool = ToolFacts(
                tool_started_id=fact_id,
                operation_id=record["operationId"],
                step_id=record["stepId"],
                tool_call_id=record["toolCallId"],
                tool_name=record["toolName"],
                started_at=timestamp,
            )
            self.tools[fact_id] = tool
            out.tools.append(tool)
        elif kind == "operationFinished" and record.get("operationKind", "run") == "run":
            out.last_outcome = record["outcome"]
