"""The display model of one session: what the window's transcript and inspector show (no Qt here).

A :class:`Timeline` is built from the committed facts of a v2 session file (reference notes §5.4–§5.6), as the
strict reducer's walk hands them out typed (:mod:`tiny_agent_core.session.fact_types`; no line is parsed twice),
and kept current by feeding it every later committed transaction (``SessionStore.observe_commits(timeline.apply)``;
:meth:`Timeline.open_store` does both from one walk). It turns facts into a flat list of immutable items, in file
order:

* :class:`UserItem` — a user message;
* :class:`AssistantItem` — an assistant message with the :class:`StepInfo` of the model request that produced it;
* :class:`ToolItem` — one tool call of an assistant message, inserted right after it (status ``pending``), then
  updated in place as it is started (``running``) and answered (``success``, ``error`` or a synthetic reason
  such as ``interrupted`` or ``aborted``), with the :class:`~tiny_agent_core.tool_outcomes.Outcome` a person means
  (a ``bash`` exit code, a denial) and a one-line summary;
* :class:`CompactionItem` — a ``/compact`` result;
* :class:`NoticeItem` — an operation that failed or was aborted (the error shown inline).

The items and their :class:`StepInfo` are :class:`typing.NamedTuple`\\ s, as the session facts are: immutable, and
the cheapest records Python builds (opening a 5,000-message session builds tens of thousands, updating a step or a tool
call by ``_replace``; frozen dataclasses made the timeline twice as slow to build).

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

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from tiny_agent_core.agent.events import AgentEvent, StepFinished
from tiny_agent_core.errors import SessionCorruption, SessionError, StepLimitError
from tiny_agent_core.ledger.requests import RequestRow, session_requests
from tiny_agent_core.session.fact_types import (
    AssistantEntry,
    CompactionEntry,
    CompactionStarted,
    OperationFinished,
    RunStarted,
    SessionFact,
    StepAttempt,
    StepFailed,
    ToolResultEntry,
    ToolStarted,
    UsageRecorded,
    UserEntry,
)
from tiny_agent_core.session.reducer import read_header, reduce_session
from tiny_agent_core.session.state import SessionHeader, SessionState
from tiny_agent_core.session.store import SessionStore, read_session_file
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


class StepError(NamedTuple):
    """Why a model attempt failed (the ``stepFailed`` record's error)."""

    code: str
    """E.g. ``model_error`` or ``aborted``."""
    message: str


class StepInfo(NamedTuple):
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


class CallRef(NamedTuple):
    """A tool call as the assistant message states it."""

    call_id: str
    name: str
    arguments_text: str
    """The model's argument string, verbatim."""


class UserItem(NamedTuple):
    """A user message."""

    entry_id: str
    text: str
    timestamp: int


class AssistantItem(NamedTuple):
    """An assistant message and the step that produced it."""

    entry_id: str
    text: str
    """The message content (``""`` when the model sent ``null``)."""
    step: StepInfo
    calls: tuple[CallRef, ...]
    timestamp: int


class ToolItem(NamedTuple):
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


class CompactionItem(NamedTuple):
    """A compaction result: earlier messages were summarized."""

    entry_id: str
    summary: str
    compacted: int
    """How many message entries the summary replaces."""
    retained: int
    """How many recent message entries were kept verbatim."""
    step: StepInfo | None
    timestamp: int


class NoticeItem(NamedTuple):
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


HEADER_LINE_MAX = 1 << 20
"""Most bytes :meth:`Timeline.open_store` reads looking for the end of line 1."""


def _first_header(path: Path) -> SessionHeader | None:
    """The header on line 1 of ``path``, or ``None`` when line 1 is not a complete, valid header (or cannot be
    read: the store's own open then reports why)."""
    try:
        start = read_session_file(path, limit=HEADER_LINE_MAX)
    except (OSError, SessionError):
        return None
    end = start.find(b"\n")
    if end < 0:
        return None
    first = start[: end + 1]
    try:
        return read_header(first)
    except SessionCorruption:
        return None


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

        One walk: the strict reducer validates each line (``SessionCorruption`` if the file is invalid) and hands
        its typed facts to :meth:`apply`. Linear in the file size.
        """
        timeline = cls(read_header(data))
        reduce_session(data, timeline.apply)
        return timeline

    @classmethod
    def from_state(cls, state: SessionState, data: bytes) -> Timeline:
        """The timeline of a file the strict reducer already accepted as ``state`` (e.g. an open store's); ``data``
        are the file's bytes, at least ``state.repaired_length`` of them.

        This walks the file with the reducer again; where the file is still to be opened, :meth:`open_store` gives
        the store and its timeline in one walk.
        """
        timeline = cls(state.header)
        reduce_session(data if len(data) == state.repaired_length else data[: state.repaired_length], timeline.apply)
        return timeline

    @classmethod
    def open_store(
        cls, path: str | os.PathLike[str], *, read_only: bool = False, resumable: bool = False
    ) -> tuple[SessionStore, Timeline]:
        """Open a session file as ``SessionStore.open(path, read_only=..., resumable=...)`` does (same errors) and
        build its timeline in the same walk: the reducer hands the timeline every transaction as the store loads the
        file, then the store every later commit (and, read-only, every transaction ``refresh`` applies).

        Line 1 is read first for the header the timeline needs (at most :data:`HEADER_LINE_MAX` bytes); when it
        is not a header the store's own verdict on the file is raised.
        """
        header = _first_header(Path(path))
        if header is None:  # the store says why (or, if it accepts the file after all, two walks)
            store = SessionStore.open(path, read_only=read_only, resumable=resumable)
            timeline = cls.from_state(store.state, read_session_file(store.path))
            store.observe_commits(timeline.apply)
            return store, timeline
        timeline = cls(header)
        return SessionStore.open(path, read_only=read_only, observer=timeline.apply, resumable=resumable), timeline

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

    def apply(self, facts: Iterable[SessionFact]) -> None:
        """Extend the timeline with one committed transaction's typed facts (a ``TransactionObserver``: give it to
        ``SessionStore.observe_commits``, ``SessionStore.open(observer=...)`` or ``reduce_session``).

        The facts are the strict reducer's (typed only once it accepted them); they are not checked again.
        """
        handlers = self._handlers
        for fact in facts:
            handler = handlers.get(type(fact))
            if handler is not None:
                handler(fact)

    @cached_property
    def _handlers(self) -> dict[type, Callable[[Any], None]]:
        """The method that applies each kind of fact (facts of other kinds do not show)."""
        return {
            UsageRecorded: self._usage_recorded,
            ToolResultEntry: self._tool_result,
            AssistantEntry: self._assistant,
            ToolStarted: self._tool_started,
            StepAttempt: self._step_attempt,
            UserEntry: self._user,
            StepFailed: self._step_failed,
            RunStarted: self._run_started,
            CompactionStarted: self._compaction_started,
            CompactionEntry: self._compaction,
            OperationFinished: self._operation_finished,
        }

    def _usage_recorded(self, fact: UsageRecorded) -> None:
        if fact.attempt_id is not None:
            self._usage(fact.attempt_id, fact.usage)

    def _user(self, fact: UserEntry) -> None:
        self._user_texts[fact.id] = fact.content
        self._append([UserItem(fact.id, fact.content, fact.timestamp)])

    def _step_failed(self, fact: StepFailed) -> None:
        error = StepError(fact.code, fact.message)
        self._update_step(fact.attempt_id, status="failed", error=error, finished_at=fact.timestamp)

    def _run_started(self, fact: RunStarted) -> None:
        operation = _Operation("run")
        operation.input_text = self._user_texts.get(fact.input_entry_id)
        self._operations[fact.operation_id] = operation

    def _compaction_started(self, fact: CompactionStarted) -> None:
        operation = _Operation("compaction")
        operation.compacted = len(fact.compacted_entry_ids)
        operation.retained = len(fact.retained_entry_ids)
        self._operations[fact.operation_id] = operation

    def _operation_finished(self, fact: OperationFinished) -> None:
        if fact.outcome != "completed":
            self._operation_notice(fact)

    def _assistant(self, entry: AssistantEntry) -> None:
        attempt_id, entry_id = entry.attempt_id, entry.id
        step = self._update_step(
            attempt_id, status="settled", stop_reason=entry.stop_reason, finished_at=entry.timestamp, notify=False
        )
        calls = tuple(
            CallRef(call["id"], call["function"]["name"], call["function"]["arguments"]) for call in entry.tool_calls
        )
        items: list[TimelineItem] = [AssistantItem(entry_id, entry.content or "", step, calls, entry.timestamp)]
        items.extend(
            ToolItem(
                call_id=call.call_id,
                name=call.name,
                arguments_text=call.arguments_text,
                arguments=_parse_arguments(call.arguments_text),
                status="pending",
                step_id=entry.step_id,
                assistant_entry_id=entry_id,
                tool_index=index,
            )
            for index, call in enumerate(calls)
        )
        index = self._append(items)
        self._step_items.setdefault(attempt_id, []).append(index)
        for offset in range(len(calls)):
            self._tool_by_call[(entry_id, offset)] = index + 1 + offset

    def _tool_result(self, entry: ToolResultEntry) -> None:
        if entry.tool_started_id is not None:
            index = self._tool_by_started[entry.tool_started_id]
        else:
            index = self._tool_by_call[(entry.assistant_entry_id, entry.tool_index)]  # type: ignore[index]
        item = self._items[index]
        assert isinstance(item, ToolItem)
        status, content, timestamp = entry.status, entry.content, entry.timestamp
        duration = timestamp - item.started_at if item.started_at is not None else None
        self._replace(
            index,
            item._replace(
                status=status,
                result_text=content,
                outcome=call_outcome(item.name, status, content),
                finished_at=timestamp,
                duration_ms=duration,
                result_entry_id=entry.id,
            ),
        )

    def _compaction(self, entry: CompactionEntry) -> None:
        operation = self._operations.get(entry.operation_id)
        step = None
        if operation is not None and operation.last_attempt_id in self._steps:
            # the summary is the compaction step's answer, as an assistant entry is a run step's
            step = self._update_step(
                operation.last_attempt_id, status="settled", finished_at=entry.timestamp, notify=False
            )
        item = CompactionItem(
            entry.id,
            entry.summary,
            operation.compacted if operation is not None else 0,
            len(entry.retained),
            step,
            entry.timestamp,
        )
        index = self._append([item])
        if step is not None:
            self._step_items.setdefault(step.attempt_id, []).append(index)

    def _step_attempt(self, record: StepAttempt) -> None:
        step_id, attempt_id, timestamp = record.step_id, record.attempt_id, record.timestamp
        previous = self._latest_attempt.get(step_id)
        if previous is not None and self._steps[previous].status == "attempting":
            self._update_step(previous, status="superseded", finished_at=timestamp)
        self._steps[attempt_id] = StepInfo(
            step_id=step_id,
            attempt_id=attempt_id,
            attempt=record.attempt,
            operation_id=record.operation_id,
            step_kind=record.step_kind,
            model=record.model,
            started_at=timestamp,
        )
        self._latest_attempt[step_id] = attempt_id
        operation = self._operations.get(record.operation_id)
        if operation is not None:
            operation.last_attempt_id = attempt_id

    def _tool_started(self, record: ToolStarted) -> None:
        index = self._tool_by_call[(record.assistant_entry_id, record.tool_index)]
        item = self._items[index]
        assert isinstance(item, ToolItem)
        arguments = record.arguments
        self._tool_by_started[record.id] = index
        self._replace(
            index,
            item._replace(
                status="running",
                arguments=arguments,
                arguments_edited=(
                    item.arguments if item.tool_started_id is None else _parse_arguments(item.arguments_text)
                )
                != arguments,  # before its first start, ``item.arguments`` are the parsed model arguments
                replay=record.replay,
                replay_key=record.replay_key,
                started_at=record.timestamp,
                tool_started_id=record.id,
            ),
        )

    def _operation_notice(self, record: OperationFinished) -> None:
        operation = self._operations.get(record.operation_id)
        step = None
        if operation is not None and operation.last_attempt_id is not None:
            step = self._steps.get(operation.last_attempt_id)
        operation_kind = record.operation_kind
        what = "Compaction" if operation_kind == "compaction" else "Run"
        input_text = operation.input_text if operation is not None else None
        if record.outcome == "failed":
            item = NoticeItem(
                "failed",
                f"{what} failed: {record.error_message}",
                record.operation_id,
                operation_kind,
                record.timestamp,
                code=record.error_code,
                step=step,
                input_text=input_text,
            )
        else:
            item = NoticeItem(
                "aborted",
                f"{what} aborted.",
                record.operation_id,
                operation_kind,
                record.timestamp,
                step=step,
                input_text=input_text,
            )
        index = self._append([item])
        if step is not None:
            self._step_items.setdefault(step.attempt_id, []).append(index)
        self._operations.pop(record.operation_id, None)

    def _usage(self, attempt_id: str, added: Usage) -> None:
        step = self._steps.get(attempt_id)
        if step is None:
            return
        self._update_step(attempt_id, usage=added if step.usage is None else step.usage + added)

    # --- step updates ------------------------------------------------------------------------------------------

    def _update_step(self, attempt_id: str, *, notify: bool = True, **changes: Any) -> StepInfo:
        step = self._steps[attempt_id]._replace(**changes)
        self._steps[attempt_id] = step
        if notify:
            for index in self._step_items.get(attempt_id, ()):
                item = self._items[index]
                assert isinstance(item, AssistantItem | CompactionItem | NoticeItem)
                self._replace(index, item._replace(step=step))
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
            changes.update(cost=row.cost.amount, cost_source=row.cost.source, price_data_version=row.cost.data_version)
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
