"""What the index derives from one session file: the session row, its physical requests and tool timings.

:func:`extract_session` validates the bytes (see :func:`_validate`) and then walks the facts once, in order
(reference notes §5.4–§5.6, §5.13): the title is the first user message, each ``stepAttempt`` is one physical
request whose usage is the sum of the usage facts that name its attempt id (none = unknown), each
``toolStarted`` opens a tool timing closed by its result entry. Linear in the file size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.usage import Usage

TITLE_MAX = 80
"""Longest title kept in the index (characters, an ellipsis included)."""

_HEADER_KEYS = frozenset({"kind", "version", "id", "createdAt", "cwd", "provider", "model", "environmentIdentity"})
_FACT_KINDS = frozenset({"entry", "record", "usage"})


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
    committed_length: int = 0
    """Bytes up to and including the last LF; a torn tail after it is ignored."""


def make_title(text: str) -> str:
    """Collapse whitespace and cut to :data:`TITLE_MAX` characters (ending with an ellipsis when cut)."""
    title = " ".join(text.split())
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1].rstrip() + "…"


def _corrupt(code: str, line: int, seq: int | None = None) -> SessionCorruption:
    return SessionCorruption(code, line, seq)


def _validate(data: bytes) -> int:
    """Validate ``data`` as a v2 session and return the committed length.

    Uses the strict reducer of ``tiny_agent_core.session`` when it is available. Otherwise a minimal check:
    framing (LF, no CR, no blank line, strict UTF-8), JSON per line, the header's exact keys and version,
    non-empty transactions, known fact kinds and contiguous ``seq``; deeper rules are not checked then.
    """
    reducer = _strict_reducer()
    if reducer is not None:
        reducer(data)
    last_lf = data.rfind(b"\n")
    if last_lf < 0:
        raise _corrupt("MISSING_HEADER", 1)
    committed = data[: last_lf + 1]
    if reducer is not None:
        return len(committed)
    try:
        text = committed.decode("utf-8")
    except UnicodeDecodeError:
        raise _corrupt("INVALID_UTF8", 1) from None
    lines = text[:-1].split("\n")
    if not lines[0]:
        raise _corrupt("MISSING_HEADER", 1)
    seq = 0
    for number, line in enumerate(lines, start=1):
        if not line:
            raise _corrupt("BLANK_LINE", number)
        if line.endswith("\r"):
            raise _corrupt("CRLF_NOT_ALLOWED", number)
        try:
            value = json.loads(line)
        except ValueError:
            raise _corrupt("MALFORMED_JSON", number) from None
        if number == 1:
            if not isinstance(value, dict) or set(value) != _HEADER_KEYS or value["kind"] != "header":
                raise _corrupt("INVALID_HEADER", 1)
            if value["version"] != 2:
                raise _corrupt("UNSUPPORTED_VERSION", 1)
            continue
        facts = value if isinstance(value, list) else [value]
        if not facts:
            raise _corrupt("EMPTY_TRANSACTION", number)
        for fact in facts:
            seq += 1
            if not isinstance(fact, dict) or fact.get("kind") not in _FACT_KINDS:
                raise _corrupt("INVALID_FACT", number, seq)
            if fact.get("seq") != seq:
                raise _corrupt("SEQ_MISMATCH", number, seq)
    return len(committed)


def _strict_reducer() -> Any:
    """``tiny_agent_core.session.reduce_session`` if that module provides it, else ``None``."""
    try:
        from tiny_agent_core import session
    except ImportError:  # pragma: no cover - the package exists; only its contents may be missing
        return None
    return getattr(session, "reduce_session", None)


def extract_session(data: bytes) -> SessionFacts:
    """Validate a session file's bytes and derive its index rows; raises ``SessionCorruption``."""
    committed_length = _validate(data)
    lines = data[:committed_length].decode("utf-8").split("\n")[:-1]
    header = json.loads(lines[0])
    result = SessionFacts(
        id=header["id"],
        created_at=header["createdAt"],
        cwd=header["cwd"],
        provider=header["provider"],
        model=header["model"],
        updated_at=header["createdAt"],
        committed_length=committed_length,
    )
    walker = _Walker(result)
    for number, line in enumerate(lines[1:], start=2):
        value = json.loads(line)
        for fact in value if isinstance(value, list) else [value]:
            try:
                walker.apply(fact, number)
            except (KeyError, TypeError, AttributeError):
                # Only reachable without the strict reducer (the minimal check does not know every shape).
                raise _corrupt("INVALID_FACT", number, fact.get("seq")) from None
    return result


class _Walker:
    """Applies facts in order to a :class:`SessionFacts` (the file is already validated)."""

    def __init__(self, out: SessionFacts) -> None:
        self.out = out
        self.requests: dict[str, RequestFacts] = {}
        self.tools: dict[str, ToolFacts] = {}

    def apply(self, fact: dict[str, Any], line: int) -> None:
        out = self.out
        out.facts += 1
        timestamp = fact["timestamp"]
        out.updated_at = max(out.updated_at, timestamp)
        kind = fact["kind"]
        if kind == "usage":
            self._usage(fact, line)
        elif kind == "entry":
            self._entry(fact["entry"], timestamp)
        elif kind == "record":
            self._record(fact["id"], fact["record"], timestamp)

    def _usage(self, fact: dict[str, Any], line: int) -> None:
        try:
            usage = Usage.from_dict(fact["usage"])
            self.out.usage = self.out.usage + usage
            request = self.requests.get(fact.get("attemptId", ""))
            if request is not None:
                request.usage = usage if request.usage is None else request.usage + usage
        except (ValueError, KeyError, TypeError):
            raise _corrupt("INVALID_FACT", line, fact.get("seq")) from None

    def _entry(self, entry: dict[str, Any], timestamp: int) -> None:
        if entry.get("type") != "message":
            if entry.get("type") == "compaction":
                self._close_attempt_of_operation(entry.get("operationId"), timestamp)
            return
        message = entry.get("message", {})
        role = message.get("role")
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
        if kind in ("runStarted", "compactionStarted"):
            out.operation = "run" if kind == "runStarted" else "compaction"
            out.abort_requested = False
        elif kind == "stepAttempt":
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
        elif kind == "abortRequested":
            out.abort_requested = True
        elif kind == "operationFinished":
            out.operation = "idle"
            out.abort_requested = False
            out.last_outcome = record["outcome"]
