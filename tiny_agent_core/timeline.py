"""The display model of one session: what the window's transcript and inspector show (no Qt here).

A :class:`Timeline` is built from the committed facts of a v2 session file (reference notes §5.4–§5.6) and kept
current by feeding it every later committed transaction (``SessionStore.observe_commits(timeline.apply)``). It
turns facts into a flat list of immutable items, in file order:

* :class:`UserItem` — a user message;
* :class:`AssistantItem` — an assistant message with the :class:`StepInfo` of the model request that produced it;
* :class:`ToolItem` — one tool call of an assistant message, inserted right after it (status ``pending``), then
  updated in place as it is started (``running``) and answered (``success``, ``error`` or a synthetic reason
  such as ``interrupted`` or ``aborted``), with the :class:`~tiny_agent_core.tool_outcomes.Outcome` a person means
  (a ``bash`` exit code, a denial) and a one-line summary;
* :class:`CompactionItem` — a ``/compact`` result;
* :class:`NoticeItem` — an operation that failed or was aborted (the error shown inline).

Items are only ever appended or replaced, never removed or moved, so an item's index is stable. Listeners
(:class:`TimelineListener`) hear ``inserting``/``inserted`` around every append and ``changed`` after a
replacement: exactly what a Qt item model needs for ``beginInsertRows``/``endInsertRows``/``dataChanged``.
Listeners run on the thread that appends to the store.

What the session file does not hold (cost and its source, latency, time to first token, HTTP status, dialect
repairs, dropped provider fields) comes from the ledger (:meth:`Timeline.enrich`, :meth:`Timeline.enrich_request`)
or, live, from the agent's :class:`~tiny_agent_core.agent.events.StepFinished` event (:meth:`Timeline.apply_event`).
Unknown values stay ``None``; nothing unknown is ever shown as zero.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, TypeVar

from tiny_agent_core.agent.events import AgentEvent, StepFinished
from tiny_agent_core.errors import StepLimitError
from tiny_agent_core.ledger.requests import RequestRow, session_requests
from tiny_agent_core.session.reducer import reduce_session
from tiny_agent_core.session.state import SessionHeader, SessionState
from tiny_agent_core.tool_outcomes import FileDiff, Outcome, call_diff, call_outcome, call_summary
from tiny_agent_core.usage import Usage

__all__ = [
    "CONTINUE_PROMPT",
    "AssistantItem",
    "CallRef",
    "CompactionItem",
    "NoticeItem",
    "StepError",
    "StepInfo",
    "Timeline",
    "TimelineItem",
    "TimelineListener",
    "ToolItem",
    "UserItem",
]

CONTINUE_PROMPT = "Continue where you stopped."
"""What "Continue" sends after a run stopped at its step limit."""

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class StepError:
    """Why a model attempt failed (the ``stepFailed`` record's error)."""

    code: str
    """E.g. ``model_error`` or ``aborted``."""
    message: str


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One physical model request (a ``stepAttempt``) and everything known about it."""

    step_id: str
    attempt_id: str
    attempt: int
    """1, or 2 for a recovery retry of the same step."""
    operation_id: str
    step_kind: str
    """``assistant`` or ``compaction``."""
    model: str
    """The model of the attempt's configuration snapshot."""
    started_at: int
    """``stepAttempt`` timestamp, ms since the epoch."""
    status: str = "attempting"
    """``attempting`` | ``settled`` | ``failed`` | ``superseded`` (attempt 1 replaced by attempt 2)."""
    finished_at: int | None = None
    stop_reason: str | None = None
    """``stop`` | ``toolUse`` | ``length`` once settled."""
    usage: Usage | None = None
    """Sum of the attempt's usage facts; ``None`` = unknown (the provider reported none)."""
    cost: Decimal | None = None
    """US dollars; ``None`` = unknown."""
    cost_source: str | None = None
    """``provider`` | ``price_table`` | ``override``; ``None`` when the cost is unknown."""
    price_data_version: str | None = None
    response_model: str | None = None
    """The model the provider says answered (ledger)."""
    latency_ms: int | None = None
    """Request sent → response complete."""
    ttft_ms: int | None = None
    """Request sent → first token."""
    http_status: int | None = None
    error_kind: str | None = None
    """The provider error kind of a failed request (ledger)."""
    repairs: tuple[str, ...] | None = None
    """Dialect repairs the adapter applied; ``None`` = not recorded."""
    dropped: tuple[str, ...] | None = None
    """Provider fields the seam dropped; ``None`` = not recorded (only known live)."""
    error: StepError | None = None


@dataclass(frozen=True, slots=True)
class CallRef:
    """A tool call as the assistant message states it."""

    call_id: str
    name: str
    arguments_text: str
    """The model's argument string, verbatim."""


@dataclass(frozen=True, slots=True)
class UserItem:
    """A user message."""

    entry_id: str
    text: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class AssistantItem:
    """An assistant message and the step that produced it."""

    entry_id: str
    text: str
    """The message content (``""`` when the model sent ``null``)."""
    step: StepInfo
    calls: tuple[CallRef, ...]
    timestamp: int


@dataclass(frozen=True, slots=True)
class ToolItem:
    """One tool call: what was asked, what ran, and how it ended."""

    call_id: str
    name: str
    arguments_text: str
    """The model's argument string, verbatim."""
    arguments: JsonObject | None
    """The executed arguments (``toolStarted``), else the parsed model arguments; ``None`` if not a JSON object."""
    status: str
    """``pending`` | ``running`` | ``success`` | ``error`` | a synthetic reason (``interrupted``, ``aborted``,
    ``invalidArguments``, ``unknownTool``, ``truncated``)."""
    step_id: str
    assistant_entry_id: str
    tool_index: int
    arguments_edited: bool = False
    """The executed arguments differ from the model's (edited at approval)."""
    result_text: str | None = None
    """The tool message content once answered."""
    replay: str | None = None
    """``safe`` | ``never`` once started."""
    replay_key: str | None = None
    started_at: int | None = None
    """``toolStarted`` timestamp, ms since the epoch (``None`` if never started)."""
    finished_at: int | None = None
    """Result entry timestamp."""
    duration_ms: int | None = None
    """``finished_at - started_at`` for a started tool that has a result."""
    tool_started_id: str | None = None
    result_entry_id: str | None = None
    outcome: Outcome | None = None
    """How the call ended (``ok``, ``exit``, ``denied``, …), derived from the result; ``None`` until answered."""

    @property
    def summary(self) -> str:
        """The call in one line: ``edit greet.py +1 −1``, ``bash pytest -q → exit 1 · 401 lines``, …"""
        return call_summary(self.name, self.arguments, self.arguments_text, self.outcome, self.result_text)

    @property
    def diff(self) -> FileDiff | None:
        """What an ``edit`` or ``write`` changes (from the executed arguments); ``None`` for other calls."""
        return call_diff(self.name, self.arguments)

    @property
    def synthetic(self) -> bool:
        """Whether the result is one of the fixed synthetic results (the tool did not run to a real result)."""
        return self.status not in ("pending", "running", "success", "error")

    @property
    def finished(self) -> bool:
        """Whether the call has a result."""
        return self.status not in ("pending", "running")


@dataclass(frozen=True, slots=True)
class CompactionItem:
    """A compaction result: earlier messages were summarized."""

    entry_id: str
    summary: str
    compacted: int
    """How many message entries the summary replaces."""
    retained: int
    """How many recent message entries were kept verbatim."""
    step: StepInfo | None
    timestamp: int


@dataclass(frozen=True, slots=True)
class NoticeItem:
    """An operation that failed or was aborted, shown inline."""

    kind: str
    """``failed`` | ``aborted``."""
    text: str
    """What happened, for people."""
    operation_id: str
    operation_kind: str
    """``run`` | ``compaction``."""
    timestamp: int
    code: str | None = None
    """The failure code (``model_error``, ``empty_response``, …) of a failed operation."""
    step: StepInfo | None = None
    """The operation's last model request, if any (for the inspector)."""
    input_text: str | None = None
    """The prompt of a failed or aborted run (what a retry would send again)."""

    @property
    def retryable(self) -> bool:
        """Whether offering "Retry" (or "Continue") makes sense: a failed run or compaction."""
        return self.kind == "failed"

    @property
    def retry_label(self) -> str:
        """The retry button's words: "Continue" for a run stopped at its step limit, else "Retry"."""
        return "Continue" if self.code == StepLimitError.kind else "Retry"

    @property
    def retry_prompt(self) -> str | None:
        """What the retry button sends: a request to go on after the step limit, else the failed prompt again."""
        return CONTINUE_PROMPT if self.code == StepLimitError.kind else self.input_text


TimelineItem = UserItem | AssistantItem | ToolItem | CompactionItem | NoticeItem
"""Anything in :attr:`Timeline.items`."""


class TimelineListener(Protocol):
    """Hears every change of a :class:`Timeline`'s item list."""

    def on_inserting(self, index: int, count: int) -> None:
        """``count`` items are about to be appended at ``index`` (the list still has its old length)."""

    def on_inserted(self, index: int, count: int) -> None:
        """``count`` items were appended at ``index``."""

    def on_changed(self, index: int) -> None:
        """The item at ``index`` was replaced by an updated one."""


class _Operation:
    """What the timeline remembers about an operation while it runs."""

    __slots__ = ("compacted", "input_text", "kind", "last_attempt_id", "retained")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.input_text: str | None = None
        self.last_attempt_id: str | None = None
        self.compacted = 0
        self.retained = 0


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}

_decode_json = json.JSONDecoder().decode
"""``json.loads`` for a ``str`` without its per-call checks (opening a session decodes every line)."""


_T = TypeVar("_T")


def _replace(item: _T, **changes: Any) -> _T:
    """``dataclasses.replace`` for the timeline's frozen dataclasses (every field is an init field), about twice as
    fast: opening a long session replaces each step and tool item a few times."""
    cls = type(item)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]
    values = {name: getattr(item, name) for name in names}
    values.update(changes)
    return cls(**values)


def _parse_arguments(text: str) -> JsonObject | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Timeline:
    """The items of one session, built from its committed facts and extended as more are committed."""

    def __init__(self, header: SessionHeader) -> None:
        """An empty timeline of the session with ``header``; see :meth:`from_bytes` and :meth:`apply`."""
        self.header = header
        self._items: list[TimelineItem] = []
        self._listeners: list[TimelineListener] = []
        self._steps: dict[str, StepInfo] = {}
        """attempt id → step."""
        self._latest_attempt: dict[str, str] = {}
        """step id → its latest attempt id."""
        self._step_items: dict[str, list[int]] = {}
        """attempt id → indexes of the items that show that step."""
        self._operations: dict[str, _Operation] = {}
        self._user_texts: dict[str, str] = {}
        """user entry id → text (for a run's input)."""
        self._tool_by_call: dict[tuple[str, int], int] = {}
        """(assistant entry id, tool index) → item index."""
        self._tool_by_started: dict[str, int] = {}
        """toolStarted id → item index."""

    # --- building ----------------------------------------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes) -> Timeline:
        """The timeline of a session file's bytes (a torn tail is ignored).

        The bytes are first validated by the strict reducer (``SessionCorruption`` if invalid), then each
        committed line is decoded once: linear in the file size.
        """
        return cls.from_state(reduce_session(data), data)

    @classmethod
    def from_state(cls, state: SessionState, data: bytes) -> Timeline:
        """The timeline of a file the strict reducer already accepted as ``state`` (e.g. an open store's), without
        validating it again; ``data`` are the file's bytes, at least ``state.repaired_length`` of them."""
        timeline = cls(state.header)
        committed = data[: state.repaired_length].decode("utf-8")  # the reducer accepted it as UTF-8
        start = committed.index("\n") + 1
        while start < len(committed):
            stop = committed.index("\n", start)
            value = _decode_json(committed[start:stop])
            timeline.apply(value if isinstance(value, list) else [value])
            start = stop + 1
        return timeline

    @property
    def session_id(self) -> str:
        """The session id."""
        return self.header.id

    @property
    def items(self) -> Sequence[TimelineItem]:
        """The items, in file order (read-only)."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def step(self, step_id: str) -> StepInfo | None:
        """The latest attempt of a step (the one that settled it, if any)."""
        attempt_id = self._latest_attempt.get(step_id)
        return self._steps.get(attempt_id) if attempt_id is not None else None

    def attempt(self, attempt_id: str) -> StepInfo | None:
        """A step attempt by its attempt id."""
        return self._steps.get(attempt_id)

    def steps(self) -> list[StepInfo]:
        """Every model request (attempt) of the session, in the order they started."""
        return list(self._steps.values())

    # --- listeners ---------------------------------------------------------------------------------------------

    def add_listener(self, listener: TimelineListener) -> None:
        """Call ``listener`` on every later change."""
        self._listeners.append(listener)

    def remove_listener(self, listener: TimelineListener) -> None:
        """Stop calling ``listener`` (no error if it was not added)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _append(self, items: Sequence[TimelineItem]) -> int:
        index = len(self._items)
        for listener in self._listeners:
            listener.on_inserting(index, len(items))
        self._items.extend(items)
        for listener in self._listeners:
            listener.on_inserted(index, len(items))
        return index

    def _replace(self, index: int, item: TimelineItem) -> None:
        self._items[index] = item
        for listener in self._listeners:
            listener.on_changed(index)

    # --- facts -------------------------------------------------------------------------------------------------

    def apply(self, facts: Iterable[Mapping[str, Any]]) -> None:
        """Extend the timeline with one committed transaction (the signature of ``observe_commits``).

        The facts must already be accepted by the strict reducer (committed by a store, or read from a file that
        :meth:`from_bytes` validated); they are not validated again.
        """
        for fact in facts:
            kind = fact["kind"]
            if kind == "entry":
                self._entry(fact["id"], fact["entry"], fact["timestamp"])
            elif kind == "record":
                self._record(fact["id"], fact["record"], fact["timestamp"])
            elif kind == "usage" and "attemptId" in fact:
                self._usage(fact["attemptId"], fact["usage"])

    def _entry(self, fact_id: str, entry: Mapping[str, Any], timestamp: int) -> None:
        if entry["type"] == "compaction":
            self._compaction(fact_id, entry, timestamp)
            return
        message = entry["message"]
        role = message["role"]
        if role == "user":
            self._user_texts[fact_id] = message["content"]
            self._append([UserItem(fact_id, message["content"], timestamp)])
        elif role == "assistant":
            self._assistant(fact_id, entry, message, timestamp)
        else:
            self._tool_result(fact_id, entry, message, timestamp)

    def _assistant(self, entry_id: str, entry: Mapping[str, Any], message: Mapping[str, Any], timestamp: int) -> None:
        attempt_id = entry["attemptId"]
        step = self._update_step(
            attempt_id, status="settled", stop_reason=entry["stopReason"], finished_at=timestamp, notify=False
        )
        calls = tuple(
            CallRef(call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or ()
        )
        items: list[TimelineItem] = [AssistantItem(entry_id, message["content"] or "", step, calls, timestamp)]
        items.extend(
            ToolItem(
                call_id=call.call_id,
                name=call.name,
                arguments_text=call.arguments_text,
                arguments=_parse_arguments(call.arguments_text),
                status="pending",
                step_id=entry["stepId"],
                assistant_entry_id=entry_id,
                tool_index=index,
            )
            for index, call in enumerate(calls)
        )
        index = self._append(items)
        self._step_items.setdefault(attempt_id, []).append(index)
        for offset in range(len(calls)):
            self._tool_by_call[(entry_id, offset)] = index + 1 + offset

    def _tool_result(self, entry_id: str, entry: Mapping[str, Any], message: Mapping[str, Any], timestamp: int) -> None:
        result = entry["result"]
        status = result["reason"] if result["type"] == "synthetic" else result["type"]
        started_id = entry.get("toolStartedId")
        if started_id is not None:
            index = self._tool_by_started[started_id]
        else:
            index = self._tool_by_call[(entry["assistantEntryId"], entry["toolIndex"])]
        item = self._items[index]
        assert isinstance(item, ToolItem)
        duration = timestamp - item.started_at if item.started_at is not None else None
        self._replace(
            index,
            _replace(
                item,
                status=status,
                result_text=message["content"],
                outcome=call_outcome(item.name, status, message["content"]),
                finished_at=timestamp,
                duration_ms=duration,
                result_entry_id=entry_id,
            ),
        )

    def _compaction(self, entry_id: str, entry: Mapping[str, Any], timestamp: int) -> None:
        operation = self._operations.get(entry["operationId"])
        step = None
        if operation is not None and operation.last_attempt_id is not None:
            step = self._steps.get(operation.last_attempt_id)
        item = CompactionItem(
            entry_id,
            entry["summary"],
            operation.compacted if operation is not None else 0,
            len(entry["retainedTail"]),
            step,
            timestamp,
        )
        index = self._append([item])
        if step is not None:
            self._step_items.setdefault(step.attempt_id, []).append(index)

    def _record(self, fact_id: str, record: Mapping[str, Any], timestamp: int) -> None:
        kind = record["type"]
        if kind == "runStarted":
            operation = _Operation("run")
            operation.input_text = self._user_texts.get(record["inputEntryId"])
            self._operations[record["operationId"]] = operation
        elif kind == "compactionStarted":
            operation = _Operation("compaction")
            operation.compacted = len(record["compactedEntryIds"])
            operation.retained = len(record["retainedEntryIds"])
            self._operations[record["operationId"]] = operation
        elif kind == "stepAttempt":
            self._step_attempt(record, timestamp)
        elif kind == "stepFailed":
            error = StepError(record["error"]["code"], record["error"]["message"])
            self._update_step(record["attemptId"], status="failed", error=error, finished_at=timestamp)
        elif kind == "toolStarted":
            self._tool_started(fact_id, record, timestamp)
        elif kind == "operationFinished" and record["outcome"] != "completed":
            self._operation_notice(record, timestamp)

    def _step_attempt(self, record: Mapping[str, Any], timestamp: int) -> None:
        step_id = record["stepId"]
        previous = self._latest_attempt.get(step_id)
        if previous is not None and self._steps[previous].status == "attempting":
            self._update_step(previous, status="superseded", finished_at=timestamp)
        attempt_id = record["attemptId"]
        self._steps[attempt_id] = StepInfo(
            step_id=step_id,
            attempt_id=attempt_id,
            attempt=record["attempt"],
            operation_id=record["operationId"],
            step_kind=record["stepKind"],
            model=record["configurationSnapshot"]["model"],
            started_at=timestamp,
        )
        self._latest_attempt[step_id] = attempt_id
        operation = self._operations.get(record["operationId"])
        if operation is not None:
            operation.last_attempt_id = attempt_id

    def _tool_started(self, fact_id: str, record: Mapping[str, Any], timestamp: int) -> None:
        index = self._tool_by_call[(record["assistantEntryId"], record["toolIndex"])]
        item = self._items[index]
        assert isinstance(item, ToolItem)
        arguments = record["arguments"]
        self._tool_by_started[fact_id] = index
        self._replace(
            index,
            _replace(
                item,
                status="running",
                arguments=arguments,
                arguments_edited=(
                    item.arguments if item.tool_started_id is None else _parse_arguments(item.arguments_text)
                )
                != arguments,  # before its first start, ``item.arguments`` are the parsed model arguments
                replay=record["replay"],
                replay_key=record["replayKey"],
                started_at=timestamp,
                tool_started_id=fact_id,
            ),
        )

    def _operation_notice(self, record: Mapping[str, Any], timestamp: int) -> None:
        operation = self._operations.get(record["operationId"])
        step = None
        if operation is not None and operation.last_attempt_id is not None:
            step = self._steps.get(operation.last_attempt_id)
        operation_kind = record["operationKind"]
        what = "Compaction" if operation_kind == "compaction" else "Run"
        if record["outcome"] == "failed":
            error = record["error"]
            item = NoticeItem(
                "failed",
                f"{what} failed: {error['message']}",
                record["operationId"],
                operation_kind,
                timestamp,
                code=error["code"],
                step=step,
                input_text=operation.input_text if operation is not None else None,
            )
        else:
            item = NoticeItem(
                "aborted",
                f"{what} aborted.",
                record["operationId"],
                operation_kind,
                timestamp,
                step=step,
                input_text=operation.input_text if operation is not None else None,
            )
        index = self._append([item])
        if step is not None:
            self._step_items.setdefault(step.attempt_id, []).append(index)
        self._operations.pop(record["operationId"], None)

    def _usage(self, attempt_id: str, usage: Mapping[str, int]) -> None:
        step = self._steps.get(attempt_id)
        if step is None:
            return
        added = Usage(usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"])
        self._update_step(attempt_id, usage=added if step.usage is None else step.usage + added)

    # --- step updates ------------------------------------------------------------------------------------------

    def _update_step(self, attempt_id: str, *, notify: bool = True, **changes: Any) -> StepInfo:
        step = _replace(self._steps[attempt_id], **changes)
        self._steps[attempt_id] = step
        if notify:
            for index in self._step_items.get(attempt_id, ()):
                item = self._items[index]
                assert isinstance(item, AssistantItem | CompactionItem | NoticeItem)
                self._replace(index, _replace(item, step=step))
        return step

    def enrich_request(self, row: RequestRow) -> bool:
        """Fill a step's live-only facts from its ledger row; returns whether the attempt is in this timeline."""
        if row.attempt_id not in self._steps:
            return False
        changes: dict[str, Any] = {
            "response_model": row.response_model,
            "latency_ms": row.latency_ms,
            "ttft_ms": row.ttft_ms,
            "http_status": row.http_status,
            "error_kind": row.error_kind,
        }
        if row.cost is not None:
            changes.update(
                cost=row.cost.amount, cost_source=row.cost.source, price_data_version=row.cost.price_data_version
            )
        if row.dialect_repairs is not None:
            changes["repairs"] = tuple(row.dialect_repairs)
        if row.dropped_fields is not None:
            changes["dropped"] = tuple(row.dropped_fields)
        step = self._steps[row.attempt_id]
        if any(getattr(step, name) != value for name, value in changes.items()):
            self._update_step(row.attempt_id, **changes)
        return True

    def enrich(self, conn: sqlite3.Connection) -> int:
        """Fill every step's cost, latency, time to first token, HTTP status and repairs from the ledger.

        Returns how many steps had a ledger row. Steps without one keep their unknowns.
        """
        return sum(self.enrich_request(row) for row in session_requests(conn, self.session_id))

    def apply_event(self, event: AgentEvent) -> None:
        """Take the live-only facts of a :class:`StepFinished` event (other events are ignored).

        The event follows the committed assistant entry, so its step is already known.
        """
        if not isinstance(event, StepFinished) or event.attempt_id not in self._steps:
            return
        changes: dict[str, Any] = {"repairs": tuple(event.repairs), "dropped": tuple(event.dropped)}
        if event.cost is not None:
            changes.update(cost=event.cost, cost_source=event.cost_source)
        if event.latency_ms is not None:
            changes["latency_ms"] = round(event.latency_ms)
        if event.ttft_ms is not None:
            changes["ttft_ms"] = round(event.ttft_ms)
        self._update_step(event.attempt_id, **changes)
