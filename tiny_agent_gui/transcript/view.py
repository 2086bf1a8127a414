"""The transcript view: a ``QListView`` with a painting delegate for messages, tool chips and notices.

Rows are painted, not widgets, so thousands of messages stay cheap. Assistant text is Markdown rendered by a
cached :class:`~PySide6.QtGui.QTextDocument` per item (code highlighted with Pygments when available); user text,
summaries and streaming text are plain documents. Tool calls are one-line chips (name, argument summary, status,
duration). Failed operations are red notices with a "Retry" button (click it, or select the notice and press
Enter). Layout runs in batches, so opening a long session paints the first screen without measuring every row.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QKeyEvent, QMouseEvent, QPainter, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from tiny_agent_core.timeline import AssistantItem, CompactionItem, NoticeItem, TimelineItem, ToolItem, UserItem
from tiny_agent_gui.cost.formatting import cost_text
from tiny_agent_gui.transcript.model import (
    ITEM_ROLE,
    StreamingItem,
    TranscriptModel,
    argument_summary,
    format_duration,
)
from tiny_agent_gui.transcript.render import DocumentCache, markdown_document, plain_document

MARGIN = 10
"""Horizontal margin of a row's content."""
PADDING = 6
"""Padding inside a bubble."""
GAP = 4
"""Vertical space between rows."""
STREAM_MARKDOWN_LIMIT = 8000
"""Streaming text up to this length is rendered as Markdown at each repaint; longer text as plain text."""

ModelIndex = QModelIndex | QPersistentModelIndex

_STATUS_COLOURS = {
    "pending": "#9e9e9e",
    "running": "#1e88e5",
    "success": "#43a047",
    "error": "#e53935",
}
_SYNTHETIC_COLOUR = "#fb8c00"


def _is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def _cost_text(item: AssistantItem) -> str:
    step = item.step
    parts = [step.model]
    if step.usage is not None:
        parts.append(f"{step.usage.prompt:,} in / {step.usage.output:,} out")
    else:
        parts.append("usage unknown")
    parts.append(cost_text(step.cost))
    return " · ".join(parts)


class TranscriptDelegate(QStyledItemDelegate):
    """Paints transcript rows and measures them for the view's width."""

    retry_clicked = Signal(object)
    """A notice's Retry button was clicked (the :class:`NoticeItem`)."""

    def __init__(self, view: QListView) -> None:
        """A delegate for ``view`` (rows are as wide as its viewport)."""
        super().__init__(view)
        self._view = view
        self._documents = DocumentCache()
        self._bold = QFont(view.font())
        self._bold.setBold(True)

    def clear_cache(self) -> None:
        """Forget every rendered document (after a font or palette change)."""
        self._documents.clear()

    # --- geometry ----------------------------------------------------------------------------------------------

    def _content_width(self) -> int:
        return max(120, self._view.viewport().width() - 2 * MARGIN - 2 * PADDING)

    def _header_height(self) -> int:
        return QFontMetrics(self._bold).height()

    def _chip_height(self) -> int:
        return QFontMetrics(self._view.font()).height() + 2 * PADDING

    def _document(self, item: TimelineItem | StreamingItem) -> QTextDocument | None:
        document = self._documents.get(item)
        if document is None:
            font = self._view.font()
            dark = _is_dark(self._view.palette())
            if isinstance(item, AssistantItem):
                if not item.text:
                    return None
                document = markdown_document(item.text, font, dark)
            elif isinstance(item, StreamingItem):
                if len(item.text) <= STREAM_MARKDOWN_LIMIT:
                    document = markdown_document(item.text, font, dark)
                else:
                    document = plain_document(item.text, font)
            elif isinstance(item, CompactionItem):
                document = markdown_document(item.summary, font, dark)
            elif isinstance(item, UserItem | NoticeItem):
                document = plain_document(item.text, font)
            else:
                return None
            self._documents.put(item, document)
        width = self._content_width()
        if isinstance(item, NoticeItem) and item.retryable:
            width -= self._retry_width() + PADDING
        if document.textWidth() != width:
            document.setTextWidth(width)
        return document

    def _retry_width(self) -> int:
        return QFontMetrics(self._view.font()).horizontalAdvance("Continue") + 3 * PADDING

    def sizeHint(self, option: QStyleOptionViewItem, index: ModelIndex) -> QSize:
        """Header plus document height for messages; one line for chips."""
        item = index.data(ITEM_ROLE)
        width = self._view.viewport().width()
        if isinstance(item, ToolItem):
            return QSize(width, self._chip_height() + GAP)
        document = self._document(item)
        body = int(document.size().height()) if document is not None else 0
        header = (
            self._header_height() if isinstance(item, UserItem | AssistantItem | CompactionItem | StreamingItem) else 0
        )
        if isinstance(item, NoticeItem):
            body = max(body, self._chip_height() - 2 * PADDING)
        return QSize(width, header + body + 2 * PADDING + GAP)

    def _bubble(self, option: QStyleOptionViewItem) -> QRect:
        return option.rect.adjusted(MARGIN, GAP // 2, -MARGIN, -GAP // 2)

    def retry_rect(self, option: QStyleOptionViewItem) -> QRect:
        """Where a notice's Retry button is drawn."""
        bubble = self._bubble(option)
        height = self._chip_height() - PADDING
        return QRect(
            bubble.right() - PADDING - self._retry_width(), bubble.top() + PADDING // 2, self._retry_width(), height
        )

    # --- painting ----------------------------------------------------------------------------------------------

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        """Draw one row."""
        item = index.data(ITEM_ROLE)
        palette = option.palette
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bubble = self._bubble(option)
        text_colour = palette.color(QPalette.ColorRole.Text)
        if isinstance(item, ToolItem):
            self._paint_chip(painter, bubble, item, palette, selected)
        else:
            background, title = self._frame(item, palette)
            if selected:  # a tint, so document text keeps its own (readable) colours
                background = QColor(palette.color(QPalette.ColorRole.Highlight))
                background.setAlpha(60)
            if background is not None:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(background)
                painter.drawRoundedRect(bubble, 6, 6)
            top = bubble.top() + PADDING
            if title:
                painter.setFont(self._bold)
                painter.setPen(text_colour)
                header = QRect(bubble.left() + PADDING, top, bubble.width() - 2 * PADDING, self._header_height())
                elided = QFontMetrics(self._bold).elidedText(title, Qt.TextElideMode.ElideRight, header.width())
                painter.drawText(header, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
                top += self._header_height()
            document = self._document(item)
            if document is not None:
                painter.translate(bubble.left() + PADDING, top)
                document.drawContents(painter)
                painter.translate(-(bubble.left() + PADDING), -top)
            if isinstance(item, NoticeItem) and item.retryable:
                self._paint_retry(painter, option, palette, item.retry_label)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(bubble.adjusted(0, 0, -1, -1), 6, 6)
        painter.restore()

    def _frame(self, item: object, palette: QPalette) -> tuple[QColor | None, str]:
        if isinstance(item, UserItem):
            return palette.color(QPalette.ColorRole.AlternateBase), "You"
        if isinstance(item, AssistantItem):
            calls = f" · {len(item.calls)} tool call{'s' if len(item.calls) != 1 else ''}" if item.calls else ""
            return None, f"Assistant — {_cost_text(item)}{calls}"
        if isinstance(item, StreamingItem):
            return None, "Assistant — streaming… (Esc stops)"
        if isinstance(item, CompactionItem):
            return (
                palette.color(QPalette.ColorRole.AlternateBase),
                f"History compacted — {item.compacted} messages summarized, {item.retained} kept",
            )
        if isinstance(item, NoticeItem):
            colour = QColor("#e53935" if item.kind == "failed" else "#9e9e9e")
            colour.setAlpha(60)
            return colour, ""
        return None, ""

    def _paint_chip(self, painter: QPainter, bubble: QRect, item: ToolItem, palette: QPalette, selected: bool) -> None:
        chip = QRect(bubble.left(), bubble.top(), bubble.width(), self._chip_height())
        border = palette.color(QPalette.ColorRole.Mid)
        painter.setPen(border)
        painter.setBrush(palette.color(QPalette.ColorRole.Highlight if selected else QPalette.ColorRole.Button))
        painter.drawRoundedRect(chip.adjusted(0, 0, -1, -1), chip.height() / 2, chip.height() / 2)
        dot = QColor(_STATUS_COLOURS.get(item.status, _SYNTHETIC_COLOUR))
        diameter = max(6, chip.height() // 3)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(dot)
        painter.drawEllipse(chip.left() + PADDING * 2, chip.center().y() - diameter // 2, diameter, diameter)
        text_colour = palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.ButtonText)
        left = chip.left() + PADDING * 3 + diameter
        font = self._view.font()
        metrics = QFontMetrics(font)
        status = item.status
        duration = format_duration(item.duration_ms)
        tail = f"{status} · {duration}" if duration else status
        tail_width = metrics.horizontalAdvance(tail)
        right = chip.right() - PADDING * 2
        painter.setPen(text_colour)
        painter.setFont(self._bold)
        name_width = QFontMetrics(self._bold).horizontalAdvance(item.name)
        painter.drawText(QRect(left, chip.top(), name_width, chip.height()), Qt.AlignmentFlag.AlignVCenter, item.name)
        painter.setFont(font)
        summary_left = left + name_width + PADDING
        summary_width = max(0, right - tail_width - PADDING - summary_left)
        summary = metrics.elidedText(argument_summary(item, 200), Qt.TextElideMode.ElideRight, summary_width)
        painter.drawText(
            QRect(summary_left, chip.top(), summary_width, chip.height()), Qt.AlignmentFlag.AlignVCenter, summary
        )
        painter.drawText(
            QRect(right - tail_width, chip.top(), tail_width, chip.height()), Qt.AlignmentFlag.AlignVCenter, tail
        )

    def _paint_retry(self, painter: QPainter, option: QStyleOptionViewItem, palette: QPalette, label: str) -> None:
        button = self.retry_rect(option)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Button))
        painter.drawRoundedRect(button, 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
        painter.setFont(self._view.font())
        painter.drawText(button, Qt.AlignmentFlag.AlignCenter, label)

    def editorEvent(self, event: QEvent, model: object, option: QStyleOptionViewItem, index: ModelIndex) -> bool:
        """A click on a notice's Retry button emits :attr:`retry_clicked`."""
        if event.type() == QEvent.Type.MouseButtonRelease and isinstance(event, QMouseEvent):
            item = index.data(ITEM_ROLE)
            if (
                isinstance(item, NoticeItem)
                and item.retryable
                and self.retry_rect(option).contains(event.position().toPoint())
            ):
                self.retry_clicked.emit(item)
                return True
        return False


class TranscriptView(QListView):
    """The centre pane: user and assistant messages, tool chips, streaming text and inline errors.

    ``item_selected(item)`` fires when the current row changes (a tool chip, an assistant step, a notice, …);
    ``retry_requested(notice)`` when the user asks to retry a failed operation. New rows keep the view scrolled to
    the bottom if it was there.
    """

    item_selected = Signal(object)
    """The current row's item (a timeline item or a ``StreamingItem``)."""
    retry_requested = Signal(object)
    """The :class:`~tiny_agent_core.timeline.NoticeItem` of a failed operation to retry."""

    def __init__(self, model: TranscriptModel | None = None, parent: QWidget | None = None) -> None:
        """A view of ``model`` (a new empty :class:`TranscriptModel` if none)."""
        super().__init__(parent)
        self.setAccessibleName("Transcript")
        self.setAccessibleDescription("Messages and tool calls of the open session")
        self.setToolTip("Transcript — ↑/↓ select a message or tool call, Enter on an error retries")
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(100)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(True)
        self.setMouseTracking(True)
        self._delegate = TranscriptDelegate(self)
        self._delegate.retry_clicked.connect(self.retry_requested)
        self.setItemDelegate(self._delegate)
        self._follow = True
        self._heights: dict[int, int] = {}
        # Deferred scrolls go through a child timer: it dies with the view. (A bare QTimer.singleShot aimed at a
        # bound method outlives a deleted view and crashed a later event loop turn.)
        self._scroll_timer = QTimer(self)
        self._scroll_timer.setSingleShot(True)
        self._scroll_timer.setInterval(0)
        self._scroll_timer.timeout.connect(self.scrollToBottom)
        self.setModel(model if model is not None else TranscriptModel(parent=self))

    def transcript_model(self) -> TranscriptModel:
        """The model shown."""
        model = self.model()
        assert isinstance(model, TranscriptModel)
        return model

    def setModel(self, model: QObject | None) -> None:
        """Show ``model`` (a :class:`TranscriptModel`) and follow its changes."""
        old = self.model()
        if old is not None:
            old.rowsAboutToBeInserted.disconnect(self._remember_follow)
            old.rowsInserted.disconnect(self._rows_inserted)
            old.dataChanged.disconnect(self._data_changed)
        super().setModel(model)
        self._delegate.clear_cache()
        if model is None:
            return
        assert isinstance(model, TranscriptModel)
        model.rowsAboutToBeInserted.connect(self._remember_follow)
        model.rowsInserted.connect(self._rows_inserted)
        model.dataChanged.connect(self._data_changed)
        self.selectionModel().currentChanged.connect(self._current_changed)
        self._scroll_timer.start()

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _remember_follow(self) -> None:
        self._follow = self._at_bottom()

    def _rows_inserted(self) -> None:
        if self._follow:
            self._scroll_timer.start()

    def _data_changed(self, top_left: QModelIndex, bottom_right: QModelIndex) -> None:
        follow = self._at_bottom()
        option = QStyleOptionViewItem()
        self.initViewItemOption(option)
        for row in range(top_left.row(), bottom_right.row() + 1):
            index = self.model().index(row, 0)
            height = self._delegate.sizeHint(option, index).height()
            if self._heights.get(row) != height:  # only a changed height costs a relayout
                self._heights[row] = height
                self._delegate.sizeHintChanged.emit(index)
        if follow:
            self._scroll_timer.start()

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.item_selected.emit(current.data(ITEM_ROLE))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Enter on a failed operation's notice retries it."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            item = self.currentIndex().data(ITEM_ROLE)
            if isinstance(item, NoticeItem) and item.retryable:
                self.retry_requested.emit(item)
                return
        super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        """Re-render after a palette or font change (light/dark switch)."""
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._delegate.clear_cache()
            self.scheduleDelayedItemsLayout()
        super().changeEvent(event)
