"""The transcript's item model: a thin Qt adapter over a :class:`~tiny_agent_core.timeline.Timeline`.

It holds no copy of the items: ``rowCount``/``data`` read the timeline, and the timeline's listener calls are
forwarded to ``beginInsertRows``/``endInsertRows``/``dataChanged`` (STYLE practice 10). The one thing it owns is
the in-flight assistant text: :meth:`TranscriptModel.append_text_delta` appends a delta in O(1) and a single-shot
timer repaints the streaming row at most every :data:`REPAINT_INTERVAL_MS` (practice 11), so 500 deltas a second
cost a few dozen repaints, never a re-render of the transcript per token. The streaming row is the last row; it
goes away when the committed assistant message of its step arrives (or on :meth:`TranscriptModel.end_stream`).

A long timeline (more than :data:`LONG_TIMELINE` items) is shown tail first: :meth:`TranscriptModel.set_timeline`
exposes only its last :data:`TAIL_ROWS` items, so the view lays out and paints one screenful of the newest
messages at once instead of laying out thousands of rows from the top before the newest can be shown; the view then
asks for the rest (:meth:`TranscriptModel.reveal_all`, one insertion at the top). Rows are positions among the
shown items: :meth:`TranscriptModel.row_of` maps a timeline index to its row.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal, Slot

from tiny_agent_core.timeline import (
    AssistantItem,
    CompactionItem,
    NoticeItem,
    StepInfo,
    Timeline,
    TimelineItem,
    ToolItem,
    UserItem,
)
from tiny_agent_core.trace import duration_text
from tiny_agent_gui.cost.formatting import cost_text
from tiny_agent_gui.status_bar import plural

ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
"""Custom role: the row's item (a timeline item, or a :class:`StreamingItem` for the in-flight text)."""

REPAINT_INTERVAL_MS = 33
"""Streaming repaints are coalesced to about 30 Hz."""

LONG_TIMELINE = 2000
"""Timelines longer than this open tail first (below it the view's batched layout reaches the end quickly)."""

TAIL_ROWS = 60
"""How many of the newest items a long timeline shows first: more than a screenful on a tall window."""

ModelIndex = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True, slots=True)
class StreamingItem:
    """The assistant text of a step while it streams (a new object per repaint)."""

    step_id: str
    text: str


def format_duration(ms: int | None) -> str:
    """``850 ms``, ``1.2 s``, ``2 min 5 s``; ``""`` for unknown."""
    return "" if ms is None else duration_text(ms)


def tool_state(item: ToolItem) -> str:
    """How a call stands, in words: its outcome (``exit 1``, ``denied: not now``), else ``running``/``pending``."""
    return item.outcome.description if item.outcome is not None else item.status


def item_text(item: TimelineItem | StreamingItem) -> str:
    """The plain text a row stands for (display role, accessibility, tests)."""
    if isinstance(item, UserItem | AssistantItem | StreamingItem):
        return item.text
    if isinstance(item, ToolItem):
        parts = [f"{item.name} tool call", tool_state(item), item.summary]
        duration = format_duration(item.duration_ms)
        if duration:
            parts.append(duration)
        return " — ".join(parts)
    if isinstance(item, CompactionItem):
        return f"History compacted ({item.compacted} messages summarized, {item.retained} kept): {item.summary}"
    return item.text


def step_usage_text(step: StepInfo) -> str:
    """A step's tokens in the words the status bar uses: the whole prompt and the output (or "usage unknown")."""
    if step.usage is None:
        return "usage unknown"
    return f"prompt {step.usage.prompt:,} · output {step.usage.output:,}"


def accessible_text(item: TimelineItem | StreamingItem) -> str:
    """What a screen reader says for a row: who speaks, and for a model step its model, tokens and cost."""
    if isinstance(item, UserItem):
        return f"You: {item.text}"
    if isinstance(item, AssistantItem):
        step = f"{item.step.model}, {step_usage_text(item.step)}, {cost_text(item.step.cost)}"
        if item.text.strip():
            return f"Assistant ({step}): {item.text}"
        return f"Assistant step ({step}) calling {plural(len(item.calls), 'tool')}"
    if isinstance(item, StreamingItem):
        return f"Assistant, streaming: {item.text}"
    if isinstance(item, NoticeItem) and item.retryable:
        return f"{item.text} Press Enter to {item.retry_label.lower()}."
    return item_text(item)


class TranscriptModel(QAbstractListModel):
    """One row per timeline item, plus a last row for streaming text while a step streams."""

    stream_repainted = Signal()
    """Emitted after each coalesced repaint of the streaming row (one per timer tick, not per delta)."""

    def __init__(
        self,
        timeline: Timeline | None = None,
        parent: QObject | None = None,
        *,
        repaint_interval_ms: int = REPAINT_INTERVAL_MS,
    ) -> None:
        """Show ``timeline`` (or nothing until :meth:`set_timeline`)."""
        super().__init__(parent)
        self._timeline: Timeline | None = None
        self._first = 0
        """Timeline index of row 0: the items before it are not shown yet (a long timeline's tail first)."""
        self._stream_step: str | None = None
        self._stream_chunks: list[str] = []
        self._stream_item: StreamingItem | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(repaint_interval_ms)
        self._timer.timeout.connect(self.flush)
        if timeline is not None:
            self.set_timeline(timeline)

    # --- the timeline ------------------------------------------------------------------------------------------

    def timeline(self) -> Timeline | None:
        """The timeline shown."""
        return self._timeline

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Show another session's timeline (resets the model and drops any streaming text); a long one tail first."""
        self.beginResetModel()
        if self._timeline is not None:
            self._timeline.remove_listener(self)
        self._timeline = timeline
        self._drop_stream()
        self._first = 0
        if timeline is not None:
            timeline.add_listener(self)
            if len(timeline) > LONG_TIMELINE:
                self._first = len(timeline) - TAIL_ROWS
        self.endResetModel()

    def hidden_rows(self) -> int:
        """How many older items are not shown yet (see :meth:`reveal_all`)."""
        return self._first

    def reveal_all(self) -> None:
        """Show the older items a long timeline opened without: one insertion of rows at the top."""
        if not self._first:
            return
        self.beginInsertRows(QModelIndex(), 0, self._first - 1)
        self._first = 0
        self.endInsertRows()

    def row_of(self, timeline_index: int) -> int:
        """The row of the timeline's item ``timeline_index`` (every item is shown first, if it was not)."""
        self.reveal_all()
        return timeline_index

    def _count(self) -> int:
        return len(self._timeline) - self._first if self._timeline is not None else 0

    def on_inserting(self, index: int, count: int) -> None:
        """Timeline listener: rows are about to be appended (before the streaming row)."""
        row = index - self._first
        self.beginInsertRows(QModelIndex(), row, row + count - 1)

    def on_inserted(self, index: int, count: int) -> None:
        """Timeline listener: rows were appended; a committed answer of the streaming step ends the stream."""
        self.endInsertRows()
        if self._stream_step is None or self._timeline is None:
            return
        for item in self._timeline.items[index : index + count]:
            step = getattr(item, "step", None)
            if step is not None and step.step_id == self._stream_step:
                self.end_stream()
                return

    def on_changed(self, index: int) -> None:
        """Timeline listener: an item was replaced (a row not shown yet is read when it is)."""
        if index < self._first:
            return
        changed = self.index(index - self._first)
        self.dataChanged.emit(changed, changed)

    # --- streaming ---------------------------------------------------------------------------------------------

    @Slot(str, str)
    def append_text_delta(self, step_id: str, text: str) -> None:
        """Append streamed assistant text of ``step_id``: O(1); the repaint follows within one timer interval."""
        if step_id != self._stream_step:
            self.end_stream()
            row = self._count()
            self.beginInsertRows(QModelIndex(), row, row)
            self._stream_step = step_id
            self._stream_item = StreamingItem(step_id, "")
            self.endInsertRows()
        self._stream_chunks.append(text)
        if not self._timer.isActive():
            self._timer.start()

    @Slot()
    def flush(self) -> None:
        """Repaint the streaming row now with every delta received so far."""
        self._timer.stop()
        if self._stream_item is None or not self._stream_chunks:
            return
        self._stream_item = StreamingItem(
            self._stream_item.step_id, self._stream_item.text + "".join(self._stream_chunks)
        )
        self._stream_chunks.clear()
        row = self.index(self._count())
        self.dataChanged.emit(row, row)
        self.stream_repainted.emit()

    @Slot()
    def end_stream(self) -> None:
        """Remove the streaming row (its step was committed, failed or aborted, or a new step starts)."""
        if self._stream_item is None:
            return
        row = self._count()
        self.beginRemoveRows(QModelIndex(), row, row)
        self._drop_stream()
        self.endRemoveRows()

    def _drop_stream(self) -> None:
        self._timer.stop()
        self._stream_step = None
        self._stream_item = None
        self._stream_chunks.clear()

    def streaming_text(self) -> str | None:
        """All streamed text of the current step (including deltas not yet painted), or ``None``."""
        if self._stream_item is None:
            return None
        return self._stream_item.text + "".join(self._stream_chunks)

    # --- QAbstractListModel ------------------------------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        """Timeline items, plus one while text streams."""
        if parent.isValid():
            return 0
        return self._count() + (1 if self._stream_item is not None else 0)

    def item(self, row: int) -> TimelineItem | StreamingItem | None:
        """The item of ``row``."""
        count = self._count()
        if 0 <= row < count:
            assert self._timeline is not None
            return self._timeline.items[self._first + row]
        if row == count and self._stream_item is not None:
            return self._stream_item
        return None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        """The item under :data:`ITEM_ROLE`; its text for display, tooltips and accessibility."""
        if not index.isValid() or index.parent().isValid():
            return None
        item = self.item(index.row())
        if item is None:
            return None
        if role == ITEM_ROLE:
            return item
        if role == Qt.ItemDataRole.DisplayRole:
            return item_text(item)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return accessible_text(item)
        if role == Qt.ItemDataRole.ToolTipRole:
            return _tooltip(item)
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Rows are enabled and selectable (a selection opens the inspector)."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


def _tooltip(item: TimelineItem | StreamingItem) -> str | None:
    if isinstance(item, ToolItem):
        return f"{item.summary}\n{tool_state(item)}. Space or Enter expands the output or the diff; select to inspect."
    if isinstance(item, AssistantItem):
        step = item.step
        usage = step_usage_text(step)
        timing = f"first token {format_duration(step.ttft_ms) or 'not recorded'} · "
        timing += f"latency {format_duration(step.latency_ms) or 'not recorded'}"
        return (
            f"{step.model} · {step.stop_reason or step.status}\n{timing}\n{usage} · {cost_text(step.cost)}\n"
            "Select to inspect this step (usage, cost, raw wire)."
        )
    if isinstance(item, NoticeItem):
        if item.retryable:
            return f"Press Enter or click {item.retry_label} to run it again."
        return item.text
    if isinstance(item, StreamingItem):
        return "Streaming… (Esc stops)"
    return None
