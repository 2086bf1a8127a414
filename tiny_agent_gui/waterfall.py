"""The session as a waterfall: each run on its own clock, a bar per model request and per tool call.

A thin view of the core's :class:`~tiny_agent_core.trace.Trace` (built there, never here): one row per run, per
request and per call. A request's bar is split into time to first token (light) and generation (dark); a call's
bar has its outcome's colour (the transcript cards' colours); each row shows its tokens and cost, or its
duration, and the header the session's totals. Rows are painted by a delegate in a list view with uniform rows,
so a 5,000-message session scrolls as fast as a short one. Click a row (or press Enter or Space on it) to inspect
what it stands for: :attr:`WaterfallPane.row_activated` carries the timeline index of its item.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QKeyEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.timeline import Timeline
from tiny_agent_core.trace import CallSpan, RunSpan, StepSpan, Trace, TraceRow, build_trace
from tiny_agent_core.usage import Usage
from tiny_agent_gui.cost.formatting import cost_text
from tiny_agent_gui.status_bar import plural
from tiny_agent_gui.transcript.model import format_duration, tool_state
from tiny_agent_gui.transcript.outcome_style import outcome_colour, outcome_mark

ROW_ROLE = Qt.ItemDataRole.UserRole + 1
"""Custom role: the row's :data:`~tiny_agent_core.trace.TraceRow`."""

ModelIndex = QModelIndex | QPersistentModelIndex

_TTFT = QColor("#64b5f6")
"""Waiting for the first token."""
_GENERATION = QColor("#1565c0")
"""Generating the response (or the whole request when its first token time is not recorded)."""
_FAILED = QColor("#c62828")


def _tokens(usage: Usage | None) -> str:
    if usage is None:
        return "tokens unknown"
    return f"{_short(usage.prompt)} in / {_short(usage.output)} out"


def _short(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def _compact_tokens(usage: Usage | None) -> str:
    return "?" if usage is None else f"{_short(usage.prompt)}→{_short(usage.output)}"


def _figures(row: TraceRow) -> str:
    """The right-hand column: tokens (in→out) and cost of a run or request, the duration of a call."""
    if isinstance(row, CallSpan):
        return format_duration(row.duration_ms) or "—"
    if isinstance(row, RunSpan):
        return f"{_compact_tokens(row.usage)} · {cost_text(row.cost, row.unknown_costs, unknown='?')}"
    return f"{_compact_tokens(row.step.usage)} · {cost_text(row.step.cost, unknown='?')}"


def _row_label(row: StepSpan | CallSpan) -> str:
    """A request's model (without its provider prefix), or a call's outcome mark and summary."""
    if isinstance(row, StepSpan):
        return row.step.model.rsplit("/", 1)[-1]
    return f"{outcome_mark(row.item)} {row.item.summary}"


def row_text(row: TraceRow, number: int = 0) -> str:
    """A row in words (display, accessibility and tooltips); ``number`` is a run's position in the session."""
    if isinstance(row, RunSpan):
        return (
            f"Run {number}: {row.title or '(no prompt)'} — {format_duration(row.duration_ms) or '0 ms'} — "
            f"{_tokens(row.usage)} — {cost_text(row.cost, row.unknown_costs)}"
        )
    if isinstance(row, StepSpan):
        step = row.step
        state = step.stop_reason or step.status
        if step.error is not None:
            state = f"failed: {step.error.message}"
        return (
            f"Model request {step.model} — {state} — first token {format_duration(step.ttft_ms) or 'not recorded'}"
            f" — {format_duration(row.duration_ms) or 'running'} — {_tokens(step.usage)} — {cost_text(step.cost)}"
        )
    item = row.item
    duration = format_duration(row.duration_ms)
    return f"Tool call {tool_state(item)} — {item.summary}" + (f" — {duration}" if duration else "")


class WaterfallModel(QAbstractListModel):
    """The rows of one trace (runs, requests, calls); replaced whole by :meth:`set_trace`."""

    def __init__(self, parent: QObject | None = None) -> None:
        """An empty waterfall."""
        super().__init__(parent)
        self._trace: Trace | None = None
        self._rows: list[TraceRow] = []
        self._runs: list[tuple[RunSpan, int]] = []
        """Per row: its run and that run's number."""

    def trace(self) -> Trace | None:
        """The trace shown."""
        return self._trace

    def set_trace(self, trace: Trace | None) -> None:
        """Show ``trace`` (``None``: nothing)."""
        self.beginResetModel()
        self._trace = trace
        self._rows = trace.rows() if trace is not None else []
        self._runs = []
        run: RunSpan | None = None
        number = 0
        for row in self._rows:
            if isinstance(row, RunSpan):
                run, number = row, number + 1
            assert run is not None
            self._runs.append((run, number))
        self.endResetModel()

    def row(self, row: int) -> TraceRow:
        """The trace row at ``row``."""
        return self._rows[row]

    def run_of(self, row: int) -> tuple[RunSpan, int]:
        """The run a row belongs to, and its number."""
        return self._runs[row]

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        """One row per run, request and call."""
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        """The trace row under :data:`ROW_ROLE`; its words for display, tooltips and accessibility."""
        if not index.isValid() or index.parent().isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if role == ROW_ROLE:
            return row
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.ToolTipRole):
            return row_text(row, self._runs[index.row()][1])
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Rows are enabled and selectable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


class WaterfallDelegate(QStyledItemDelegate):
    """Paints a row: its label (indented by level), its bar on the run's clock, its figures."""

    def __init__(self, view: QListView, model: WaterfallModel) -> None:
        """A delegate for ``view`` showing ``model``."""
        super().__init__(view)
        self._view = view
        self._model = model

    def sizeHint(self, option: QStyleOptionViewItem, index: ModelIndex) -> QSize:
        """Every row is two lines high: its words, then its bar."""
        return QSize(self._view.viewport().width(), 2 * QFontMetrics(self._view.font()).height() + 10)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        """Draw one row: label and figures on the first line, the bar on the run's clock below."""
        row = self._model.row(index.row())
        run, number = self._model.run_of(index.row())
        palette = option.palette
        rect = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        if selected:
            painter.fillRect(rect, palette.color(QPalette.ColorRole.Highlight))
        elif isinstance(row, RunSpan):
            painter.fillRect(rect, palette.color(QPalette.ColorRole.AlternateBase))
        text_colour = palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        muted = palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.PlaceholderText)
        font = QFont(self._view.font())
        metrics = QFontMetrics(font)
        inner = rect.adjusted(6, 3, -6, -3)
        line = QRect(inner.left(), inner.top(), inner.width(), metrics.height() + 2)
        below = QRect(inner.left(), line.bottom() + 1, inner.width(), inner.bottom() - line.bottom())
        figures = _figures(row)
        figures_width = min(metrics.horizontalAdvance(figures) + 4, line.width() // 2)
        figures_rect = QRect(line.right() - figures_width, line.top(), figures_width, line.height())
        indent = {RunSpan: 0, StepSpan: 10, CallSpan: 22}[type(row)]
        label_rect = QRect(
            line.left() + indent, line.top(), figures_rect.left() - line.left() - indent - 8, line.height()
        )
        if isinstance(row, RunSpan):
            font.setBold(True)
            label = f"Run {number}: {row.title or '(no prompt)'}"
            detail = (
                f"{format_duration(row.duration_ms) or '0 ms'} · {plural(len(row.steps), 'request')} · "
                f"{plural(sum(len(step.calls) for step in row.steps), 'tool call')}"
            )
            painter.setFont(self._view.font())
            painter.setPen(muted)
            detail_rect = below.adjusted(10, 0, 0, 0)
            painter.drawText(
                detail_rect,
                Qt.AlignmentFlag.AlignVCenter,
                metrics.elidedText(detail, Qt.TextElideMode.ElideRight, detail_rect.width()),
            )
        else:
            label = _row_label(row)
            self._paint_bar(painter, below.adjusted(10, 3, 0, -3), row, run, palette)
        painter.setFont(font)
        painter.setPen(text_colour)
        painter.drawText(
            label_rect,
            Qt.AlignmentFlag.AlignVCenter,
            QFontMetrics(font).elidedText(label, Qt.TextElideMode.ElideRight, label_rect.width()),
        )
        painter.setFont(self._view.font())
        painter.setPen(muted)
        painter.drawText(
            figures_rect,
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
            metrics.elidedText(figures, Qt.TextElideMode.ElideLeft, figures_rect.width()),
        )
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(rect.adjusted(0, 0, -1, -1))
        painter.restore()

    @staticmethod
    def _paint_bar(painter: QPainter, area: QRect, row: StepSpan | CallSpan, run: RunSpan, palette: QPalette) -> None:
        if area.width() <= 4:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        guide = QColor(palette.color(QPalette.ColorRole.Mid))
        guide.setAlpha(60)
        painter.fillRect(area, guide)
        span = max(run.duration_ms, 1)

        def x(ms: int) -> int:
            return area.left() + round(area.width() * min(max(ms, 0), span) / span)

        if isinstance(row, StepSpan):
            start = row.start_ms
            end = start + (row.duration_ms if row.duration_ms is not None else span - start)
            if row.step.error is not None:
                painter.fillRect(QRect(x(start), area.top(), max(2, x(end) - x(start)), area.height()), _FAILED)
                return
            ttft = row.ttft_ms
            if ttft is not None:
                split = min(start + ttft, end)
                painter.fillRect(QRect(x(start), area.top(), max(1, x(split) - x(start)), area.height()), _TTFT)
                start = split
            painter.fillRect(QRect(x(start), area.top(), max(2, x(end) - x(start)), area.height()), _GENERATION)
            return
        if row.start_ms is None:
            return
        width = x(row.start_ms + row.duration_ms) - x(row.start_ms) if row.duration_ms is not None else 0
        painter.fillRect(QRect(x(row.start_ms), area.top(), max(2, width), area.height()), outcome_colour(row.item))


class WaterfallView(QListView):
    """The rows; a click, Enter or Space on one emits :attr:`row_activated`."""

    row_activated = Signal(object)
    """The activated :data:`~tiny_agent_core.trace.TraceRow`."""

    def __init__(self, model: WaterfallModel, parent: QWidget | None = None) -> None:
        """A view of ``model``."""
        super().__init__(parent)
        self.setModel(model)
        self.setItemDelegate(WaterfallDelegate(self, model))
        self.setUniformItemSizes(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMouseTracking(True)
        self.setAccessibleName("Waterfall")
        self.setAccessibleDescription(
            "One row per run, model request and tool call, on each run's clock; Enter inspects the row"
        )
        self.clicked.connect(self._activate)
        self.activated.connect(self._activate)

    def _activate(self, index: QModelIndex) -> None:
        if index.isValid():
            self.row_activated.emit(index.data(ROW_ROLE))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Space inspects the current row, like Enter."""
        if event.key() == Qt.Key.Key_Space and self.currentIndex().isValid():
            self._activate(self.currentIndex())
            return
        super().keyPressEvent(event)


def totals_text(trace: Trace) -> str:
    """The session's totals in one line: requests, calls, time, tokens, cost."""
    steps = trace.steps()
    calls = sum(len(step.calls) for step in steps)
    failed = sum(
        1 for step in steps for call in step.calls if call.item.outcome is not None and call.item.outcome.kind != "ok"
    )
    return (
        f"{plural(len(steps), 'model request')} · {plural(calls, 'tool call')}"
        + (f" ({failed} not ok)" if failed else "")
        + f" · {format_duration(trace.duration_ms) or '0 ms'} working · {_tokens(trace.usage)} · "
        + cost_text(trace.cost, trace.unknown_costs)
    )


class WaterfallPane(QWidget):
    """The waterfall of a session with its totals; :meth:`refresh` rebuilds it from the timeline."""

    row_activated = Signal(int)
    """The timeline index of the item an activated row stands for (a request's message, or a call)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        """An empty waterfall."""
        super().__init__(parent)
        self.setAccessibleName("Session waterfall")
        self._timeline: Timeline | None = None
        self.totals = QLabel()
        """The session's totals."""
        self.totals.setAccessibleName("Session totals")
        self.totals.setWordWrap(True)
        self.totals.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.legend = QLabel(
            f'<span style="color:{_TTFT.name()}">■</span> waiting for the first token '
            f'<span style="color:{_GENERATION.name()}">■</span> generating · tool calls in their outcome colour · '
            "tokens in→out"
        )
        self.legend.setAccessibleName("Waterfall legend")
        self.legend.setWordWrap(True)
        self.model = WaterfallModel(self)
        self.view = WaterfallView(self.model, self)
        self.view.row_activated.connect(self._row_activated)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.totals)
        layout.addWidget(self.legend)
        layout.addWidget(self.view, 1)

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Show the trace of ``timeline``."""
        self._timeline = timeline
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the trace from the timeline as it is now (keeps the current row and scroll position)."""
        current = self.view.currentIndex().row()
        scroll = self.view.verticalScrollBar().value()
        trace = build_trace(self._timeline) if self._timeline is not None else None
        self.model.set_trace(trace)
        if trace is None or not trace.runs:
            self.totals.setText("No model requests yet. The waterfall shows each run's requests and tool calls.")
            return
        self.totals.setText(totals_text(trace))
        if 0 <= current < self.model.rowCount():
            self.view.setCurrentIndex(self.model.index(current))
        self.view.verticalScrollBar().setValue(scroll)

    def _row_activated(self, row: TraceRow) -> None:
        if isinstance(row, CallSpan) or (isinstance(row, StepSpan) and row.index is not None):
            self.row_activated.emit(row.index)
        elif isinstance(row, RunSpan) and row.steps and row.steps[0].index is not None:
            self.row_activated.emit(row.steps[0].index)
