"""The transcript view: a ``QListView`` with a painting delegate for messages, tool chips and notices.

Rows are painted, not widgets, so thousands of messages stay cheap. Assistant text is Markdown rendered by a
cached :class:`~PySide6.QtGui.QTextDocument` per item (code highlighted with Pygments when available), under a
quiet one-line step header (model, tokens, cost; the rest on hover); user text, summaries and streaming text are
plain documents; fenced code has a background and a "Copy" button. Tool calls are cards: an outcome badge whose
colour and word tell ``ok``, ``exit N``, ``timed out``, ``error``, ``denied``, ``interrupted`` and ``not run``
apart, the core's one-line summary, the duration; Space, Enter or a click expands a card in place to the diff of an
edit or write, or to the first and last lines of the output (its context menu copies the command, path or output
and opens the file). Ctrl+C copies the selected message. Failed operations are red notices with a "Retry" button
(click it, or select the notice and press Enter). Layout runs in batches, so opening a long session paints the
first screen without measuring every row.

A long session opens at its newest message: the model shows its tail first (:class:`TranscriptModel`), the view
paints it, then measures the older rows' heights in short slices per event-loop turn (the tail stays usable) and
reveals them in one insertion at the top. While the batched layout of all rows runs (quick: every height is
known), the viewport keeps the picture of the tail (its updates are suspended, for at most :data:`REVEAL_LIMIT_MS`)
and shows the whole transcript once the layout reaches the last row, still at the newest message (or, if the user
scrolled, at the row they were looking at). The delegate remembers each row's height (:class:`HeightCache`), so
a relayout measures only rows it has not measured at this width, never re-renders every document.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from pathlib import Path

from PySide6.QtCore import (
    QAbstractItemModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    QUrl,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QDesktopServices,
    QFont,
    QFontDatabase,
    QFontMetrics,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QPolygon,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from tiny_agent_core.openable import openable_file
from tiny_agent_core.timeline import AssistantItem, CompactionItem, NoticeItem, TimelineItem, ToolItem, UserItem
from tiny_agent_core.tool_outcomes import output_excerpt
from tiny_agent_gui.cost.formatting import cost_text
from tiny_agent_gui.status_bar import plural
from tiny_agent_gui.transcript.model import (
    ITEM_ROLE,
    StreamingItem,
    TranscriptModel,
    format_duration,
    item_text,
    step_usage_text,
)
from tiny_agent_gui.transcript.outcome_style import badge_text, outcome_colour
from tiny_agent_gui.transcript.render import (
    DocumentCache,
    code_blocks,
    code_runs,
    diff_document,
    markdown_document,
    plain_document,
)

MARGIN = 10
"""Horizontal margin of a row's content."""
PADDING = 6
"""Padding inside a bubble."""
GAP = 4
"""Vertical space between rows."""
STREAM_MARKDOWN_LIMIT = 8000
"""Streaming text up to this length is rendered as Markdown at each repaint; longer text as plain text."""

ModelIndex = QModelIndex | QPersistentModelIndex

CARD_BODY_LINES = 6
"""An expanded card shows this many first and last lines of a call's output."""

REVEAL_LIMIT_MS = 10_000
"""Longest time the viewport keeps the tail's picture while the older rows are laid out (a bound, not a delay)."""

REVEAL_FALLBACK_MS = 250
"""A view that is not painted (hidden) starts on the older rows after this long anyway."""

MEASURE_SLICE_S = 0.008
"""The older rows are measured in slices of about this long per event-loop turn (the window stays responsive)."""


class HeightCache:
    """Row heights per item object (held, so its ``id`` cannot be reused) and layout key, LRU-bounded.

    Timeline items are immutable and replaced on change, so an item's height at one width (and expansion) never
    changes; a palette or font change clears the cache.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        """Keep at most ``capacity`` heights."""
        self._capacity = capacity
        self._entries: OrderedDict[int, tuple[object, tuple[int, bool], int]] = OrderedDict()

    def get(self, item: object, key: tuple[int, bool]) -> int | None:
        """The height of ``item`` measured under ``key`` (width, expanded), if known."""
        entry = self._entries.get(id(item))
        if entry is None or entry[0] is not item or entry[1] != key:
            return None
        self._entries.move_to_end(id(item))
        return entry[2]

    def put(self, item: object, key: tuple[int, bool], height: int) -> None:
        """Remember ``height`` of ``item`` under ``key``."""
        self._entries[id(item)] = (item, key, height)
        self._entries.move_to_end(id(item))
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every height."""
        self._entries.clear()


def _is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def _cost_text(item: AssistantItem) -> str:
    step = item.step
    parts = [step.model, step_usage_text(step), cost_text(step.cost)]
    return " · ".join(parts)


def _card_text(item: ToolItem) -> str:
    """What an expanded card of a call without a diff shows: why it did not run, or the ends of its output."""
    outcome = item.outcome
    if outcome is None:
        return "Running… (its live output is in the inspector)" if item.status == "running" else "Not started yet."
    if outcome.kind == "denied":
        return f"Denied: {outcome.reason}" if outcome.reason else "Denied (no reason given)."
    if outcome.kind == "error" and item.diff is not None:
        return item.result_text or outcome.description
    if outcome.kind in ("not_run", "interrupted"):
        return item.result_text or outcome.description
    return output_excerpt(item.result_text or "", CARD_BODY_LINES, CARD_BODY_LINES) or "(no output)"


class TranscriptDelegate(QStyledItemDelegate):
    """Paints transcript rows and measures them for the view's width."""

    retry_clicked = Signal(object)
    """A notice's Retry button was clicked (the :class:`NoticeItem`)."""

    def __init__(self, view: TranscriptView) -> None:
        """A delegate for ``view`` (rows are as wide as its viewport; it knows which cards are expanded)."""
        super().__init__(view)
        self._view = view
        self._documents = DocumentCache()
        self._bodies = DocumentCache(100)
        """Expanded cards' documents."""
        self._sizes = HeightCache()
        self._bold = QFont(view.font())
        self._bold.setBold(True)

    def clear_cache(self) -> None:
        """Forget every rendered document (after a font or palette change)."""
        self._documents.clear()
        self._bodies.clear()
        self._sizes.clear()
        self._bold = QFont(self._view.font())
        self._bold.setBold(True)

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

    def card_body(self, item: ToolItem) -> QTextDocument:
        """The document an expanded card shows: the diff of an edit or write, else the ends of the output."""
        document = self._bodies.get(item)
        if document is None:
            font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
            font.setPointSizeF(self._view.font().pointSizeF())
            diff = item.diff
            if diff is None:
                document = plain_document(_card_text(item), font)
            elif item.outcome is not None and item.outcome.kind != "ok":  # why it did not apply, then what it was
                document = diff_document(f"{_card_text(item)}\n\n{diff.text}", font)
            else:
                document = diff_document(diff.text, font)
            self._bodies.put(item, document)
        width = self._content_width() - 2 * PADDING
        if document.textWidth() != width:
            document.setTextWidth(width)
        return document

    def sizeHint(self, option: QStyleOptionViewItem, index: ModelIndex) -> QSize:
        """Header plus document height for messages; one line for cards, plus the body of an expanded one."""
        item = index.data(ITEM_ROLE)
        width = self._view.viewport().width()
        if item is None or isinstance(item, StreamingItem):  # a new object per repaint: nothing to remember
            return self._measure(item, width)
        return QSize(width, self.height_of(item))

    def height_of(self, item: TimelineItem) -> int:
        """The row height of ``item`` at the view's width, measured once (see :class:`HeightCache`)."""
        width = self._view.viewport().width()
        key = (width, isinstance(item, ToolItem) and self._view.is_expanded(item.call_id))
        height = self._sizes.get(item, key)
        if height is None:
            height = self._measure(item, width).height()
            self._sizes.put(item, key, height)
        return height

    def _measure(self, item: TimelineItem | StreamingItem | None, width: int) -> QSize:
        if isinstance(item, ToolItem):
            body = 0
            if self._view.is_expanded(item.call_id):
                body = int(self.card_body(item).size().height()) + 2 * PADDING
            return QSize(width, self._chip_height() + body + GAP)
        document = self._document(item) if item is not None else None
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
                quiet = isinstance(item, AssistantItem)  # one per model turn: a muted line, details on hover
                font = self._view.font() if quiet else self._bold
                painter.setFont(font)
                painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText) if quiet else text_colour)
                header = QRect(bubble.left() + PADDING, top, bubble.width() - 2 * PADDING, self._header_height())
                elided = QFontMetrics(font).elidedText(title, Qt.TextElideMode.ElideRight, header.width())
                painter.drawText(header, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
                top += self._header_height()
            document = self._document(item)
            if document is not None:
                painter.translate(bubble.left() + PADDING, top)
                document.drawContents(painter)
                if isinstance(item, AssistantItem):
                    self._paint_copy_buttons(painter, document, palette)
                painter.translate(-(bubble.left() + PADDING), -top)
            if isinstance(item, NoticeItem) and item.retryable:
                self._paint_retry(painter, option, palette, item.retry_label)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(bubble.adjusted(0, 0, -1, -1), 6, 6)
        painter.restore()

    def copy_buttons(self, document: QTextDocument) -> list[tuple[QRect, str]]:
        """Where each code block's "Copy" button is drawn (relative to the document) and the code it copies."""
        metrics = QFontMetrics(self._view.font())
        width, height = metrics.horizontalAdvance("Copy") + 2 * PADDING, metrics.height() + 2
        layout = document.documentLayout()
        buttons = []
        for start, _language, code in code_runs(document):
            block = layout.blockBoundingRect(document.findBlock(start))
            right = int(document.textWidth())
            buttons.append((QRect(right - width - 2, int(block.top()) + 1, width, height), code))
        return buttons

    def _paint_copy_buttons(self, painter: QPainter, document: QTextDocument, palette: QPalette) -> None:
        painter.setFont(self._view.font())
        for rect, _code in self.copy_buttons(document):
            painter.setPen(palette.color(QPalette.ColorRole.Mid))
            painter.setBrush(palette.color(QPalette.ColorRole.Button))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, "Copy")

    def document_origin(self, option: QStyleOptionViewItem) -> QPoint:
        """Where a message's document is drawn (below its header)."""
        bubble = self._bubble(option)
        return QPoint(bubble.left() + PADDING, bubble.top() + PADDING + self._header_height())

    def _frame(self, item: object, palette: QPalette) -> tuple[QColor | None, str]:
        if isinstance(item, UserItem):
            return palette.color(QPalette.ColorRole.AlternateBase), "You"
        if isinstance(item, AssistantItem):
            calls = f" · {plural(len(item.calls), 'tool call')}" if item.calls else ""
            return None, f"{_cost_text(item)}{calls}"
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
        expanded = self._view.is_expanded(item.call_id)
        card = bubble.adjusted(0, 0, -1, -1)
        colour = outcome_colour(item)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Highlight if selected else QPalette.ColorRole.Button))
        painter.drawRoundedRect(card, 6, 6)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(QRect(card.left(), card.top(), 4, card.height()), 2, 2)  # the outcome stripe
        header = QRect(card.left(), card.top(), card.width(), self._chip_height())
        text_colour = palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.ButtonText)
        metrics = QFontMetrics(self._view.font())
        left = header.left() + PADDING * 2
        self._paint_disclosure(painter, QRect(left, header.top(), metrics.height() // 2, header.height()), expanded)
        left += metrics.height() // 2 + PADDING
        badge = badge_text(item)
        bold_metrics = QFontMetrics(self._bold)
        badge_rect = QRect(
            left,
            header.top() + PADDING // 2,
            bold_metrics.horizontalAdvance(badge) + 2 * PADDING,
            header.height() - PADDING,
        )
        painter.setBrush(colour)
        painter.drawRoundedRect(badge_rect, 4, 4)
        painter.setPen(QColor("white"))
        painter.setFont(self._bold)
        painter.drawText(badge_rect, Qt.AlignmentFlag.AlignCenter, badge)
        painter.setFont(self._view.font())
        duration = format_duration(item.duration_ms)
        duration_width = metrics.horizontalAdvance(duration)
        right = header.right() - PADDING * 2
        summary_left = badge_rect.right() + PADDING * 2
        summary_width = max(0, right - (duration_width + PADDING if duration else 0) - summary_left)
        painter.setPen(text_colour)
        summary = metrics.elidedText(item.summary, Qt.TextElideMode.ElideRight, summary_width)
        painter.drawText(
            QRect(summary_left, header.top(), summary_width, header.height()), Qt.AlignmentFlag.AlignVCenter, summary
        )
        if duration:
            muted = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.PlaceholderText
            painter.setPen(palette.color(muted))
            painter.drawText(
                QRect(right - duration_width, header.top(), duration_width, header.height()),
                Qt.AlignmentFlag.AlignVCenter,
                duration,
            )
        if expanded:
            body = QRect(
                card.left() + PADDING, header.bottom() + 1, card.width() - 2 * PADDING, card.bottom() - header.bottom()
            )
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(palette.color(QPalette.ColorRole.Base))
            painter.drawRect(body.adjusted(0, 0, 0, -PADDING // 2))
            painter.translate(body.left() + PADDING, body.top() + PADDING)
            self.card_body(item).drawContents(painter)
            painter.translate(-(body.left() + PADDING), -(body.top() + PADDING))

    def _paint_disclosure(self, painter: QPainter, area: QRect, expanded: bool) -> None:
        """A small triangle: pointing right when collapsed, down when expanded."""
        size = max(6, area.width())
        x, y = area.left(), area.center().y()
        half = size // 2
        if expanded:
            points = [QPoint(x, y - half // 2), QPoint(x + size, y - half // 2), QPoint(x + half, y + half)]
        else:
            points = [QPoint(x + half // 2, y - half), QPoint(x + half // 2, y + half), QPoint(x + size, y)]
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._view.palette().color(QPalette.ColorRole.PlaceholderText))
        painter.drawPolygon(QPolygon(points))

    def card_header_rect(self, option: QStyleOptionViewItem) -> QRect:
        """Where a card's header (the part a click expands or collapses) is drawn."""
        bubble = self._bubble(option)
        return QRect(bubble.left(), bubble.top(), bubble.width(), self._chip_height())

    def _paint_retry(self, painter: QPainter, option: QStyleOptionViewItem, palette: QPalette, label: str) -> None:
        button = self.retry_rect(option)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Button))
        painter.drawRoundedRect(button, 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
        painter.setFont(self._view.font())
        painter.drawText(button, Qt.AlignmentFlag.AlignCenter, label)

    def editorEvent(self, event: QEvent, model: object, option: QStyleOptionViewItem, index: ModelIndex) -> bool:
        """A click on a notice's Retry button emits :attr:`retry_clicked`; one on a card's header expands it or
        collapses it (the row is selected as well); one on a code block's "Copy" copies the code."""
        if event.type() == QEvent.Type.MouseButtonRelease and isinstance(event, QMouseEvent):
            item = index.data(ITEM_ROLE)
            if isinstance(item, AssistantItem):
                document = self._document(item)
                where = event.position().toPoint() - self.document_origin(option)
                for rect, code in self.copy_buttons(document) if document is not None else ():
                    if rect.contains(where):
                        QGuiApplication.clipboard().setText(code)
                        return True
            if isinstance(item, ToolItem) and self.card_header_rect(option).contains(event.position().toPoint()):
                self._view.toggle_expanded(index)
                return False
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
    rerun_requested = Signal(object)
    """The :class:`~tiny_agent_core.timeline.UserItem` to run again on another model (a fork before it)."""

    def __init__(self, model: TranscriptModel | None = None, parent: QWidget | None = None) -> None:
        """A view of ``model`` (a new empty :class:`TranscriptModel` if none)."""
        super().__init__(parent)
        self.setAccessibleName("Transcript")
        self.setAccessibleDescription("Messages and tool calls of the open session")
        self.setToolTip(
            "Transcript — ↑/↓ select a message or tool call; Space or Enter expands a tool call; Enter on an error "
            "retries; Ctrl+C copies the selected message; the Menu key copies a call's command or an answer's code"
        )
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
        self._expanded: set[str] = set()
        """Call ids of the expanded cards."""
        self._heights: dict[int, int] = {}
        # Deferred scrolls go through a child timer: it dies with the view. (A bare QTimer.singleShot aimed at a
        # bound method outlives a deleted view and crashed a later event loop turn.)
        self._scroll_timer = QTimer(self)
        self._scroll_timer.setSingleShot(True)
        self._scroll_timer.setInterval(0)
        self._scroll_timer.timeout.connect(self._scroll_to_bottom)
        self._scrolling = False
        # The batched layout grows the scroll range after the first paint (a 5,000-message session: for a second
        # or more); while the view follows the newest message, every growth scrolls down again.
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._range_changed)
        bar.valueChanged.connect(self._value_changed)
        # A long timeline's older rows: revealed after the tail's first paint (see the module docstring).
        self._reveal_timer = QTimer(self)
        self._reveal_timer.setSingleShot(True)
        self._reveal_timer.timeout.connect(self._reveal)
        self._reveal_limit = QTimer(self)
        self._reveal_limit.setSingleShot(True)
        self._reveal_limit.setInterval(REVEAL_LIMIT_MS)
        self._reveal_limit.timeout.connect(self._revealed)
        self._revealing: tuple[int, tuple[int, int] | None] | None = None
        self._measured = 0
        """Of a long timeline's older rows, how many (counted back from the tail) have their height cached."""
        """While the older rows are laid out: how many were added, and the (row, top) the user was looking at
        (``None``: at the newest message)."""
        self.setModel(model if model is not None else TranscriptModel(parent=self))

    def transcript_model(self) -> TranscriptModel:
        """The model shown."""
        model = self.model()
        assert isinstance(model, TranscriptModel)
        return model

    def setModel(self, model: QAbstractItemModel | None) -> None:
        """Show ``model`` (a :class:`TranscriptModel`) and follow its changes."""
        old = self.model()
        if old is not None:
            old.rowsInserted.disconnect(self._rows_inserted)
            old.dataChanged.disconnect(self._data_changed)
            old.modelReset.disconnect(self._model_reset)
        super().setModel(model)
        self._delegate.clear_cache()
        if model is None:
            return
        assert isinstance(model, TranscriptModel)
        model.rowsInserted.connect(self._rows_inserted)
        model.dataChanged.connect(self._data_changed)
        model.modelReset.connect(self._model_reset)
        self.selectionModel().currentChanged.connect(self._current_changed)
        self._scroll_timer.start()
        self._model_reset()

    # --- a long timeline: the tail first, then the older rows --------------------------------------------------

    def _model_reset(self) -> None:
        """Another timeline: end a reveal in progress; reveal the new one's older rows once the tail is painted."""
        if self._revealing is not None:
            self._revealing = None
            self._reveal_limit.stop()
            self.viewport().setUpdatesEnabled(True)
        self._reveal_timer.stop()
        self._measured = 0
        self._heights.clear()
        if self.transcript_model().hidden_rows():
            self._reveal_timer.start(REVEAL_FALLBACK_MS)

    def paintEvent(self, event: QPaintEvent) -> None:
        """Paint; right after the first paint of a long timeline's tail, reveal its older rows."""
        super().paintEvent(event)
        if self._revealing is None and self.transcript_model().hidden_rows():
            self._reveal_timer.start(0)

    def _reveal(self) -> None:
        """Measure the older rows a slice per turn (the tail stays usable), then show them all at once."""
        model = self.transcript_model()
        added = model.hidden_rows()
        timeline = model.timeline()
        if not added or self._revealing is not None or timeline is None:
            return
        items = timeline.items
        deadline = time.perf_counter() + MEASURE_SLICE_S
        while self._measured < added:
            self._delegate.height_of(items[added - 1 - self._measured])
            self._measured += 1
            if time.perf_counter() > deadline:
                self._reveal_timer.start(0)
                return
        anchor = None
        if not self._follow:
            top = self.indexAt(QPoint(0, 0))
            if top.isValid():
                anchor = (top.row(), self.visualRect(top).top())
        self._revealing = (added, anchor)
        self.viewport().setUpdatesEnabled(False)  # the tail stays on screen while every row is laid out
        self._reveal_limit.start()
        self._heights.clear()  # rows move down: the heights noted by row are no one's now
        model.reveal_all()

    def _laid_out_to_the_end(self) -> bool:
        model = self.model()
        rows = model.rowCount()
        return rows == 0 or self.visualRect(model.index(rows - 1, 0)).isValid()

    def _revealed(self) -> None:
        """The layout reached the last row (or the limit passed): show the transcript where the user was."""
        if self._revealing is None:
            return
        added, anchor = self._revealing
        self._revealing = None
        self._reveal_limit.stop()
        if anchor is None:
            self._scroll_to_bottom()
        else:
            row, top = anchor
            index = self.model().index(row + added, 0)
            self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtTop)
            bar = self.verticalScrollBar()
            bar.setValue(bar.value() - top)
        self.viewport().setUpdatesEnabled(True)

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _scroll_to_bottom(self) -> None:
        self._scrolling = True
        try:
            self.scrollToBottom()
        finally:
            self._scrolling = False
        self._follow = True

    def _value_changed(self) -> None:
        """The user scrolled (or selected a row away from the end): follow again only from the bottom."""
        if not self._scrolling:
            self._follow = self._at_bottom()

    def _range_changed(self) -> None:
        if self._revealing is not None:
            if self._laid_out_to_the_end():
                self._revealed()
            return
        if self._follow:
            self._scroll_timer.start()

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

    def is_expanded(self, call_id: str) -> bool:
        """Whether the card of ``call_id`` is expanded."""
        return call_id in self._expanded

    def set_expanded(self, index: QModelIndex | QPersistentModelIndex, expanded: bool) -> None:
        """Expand or collapse the card at ``index`` (other rows are left alone)."""
        item = index.data(ITEM_ROLE)
        if not isinstance(item, ToolItem) or self.is_expanded(item.call_id) == expanded:
            return
        if expanded:
            self._expanded.add(item.call_id)
        else:
            self._expanded.discard(item.call_id)
        self._heights.pop(index.row(), None)
        self._delegate.sizeHintChanged.emit(self.model().index(index.row(), 0))
        self.viewport().update()

    def toggle_expanded(self, index: QModelIndex | QPersistentModelIndex) -> None:
        """Expand a collapsed card, collapse an expanded one."""
        item = index.data(ITEM_ROLE)
        if isinstance(item, ToolItem):
            self.set_expanded(index, not self.is_expanded(item.call_id))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Enter on a failed operation's notice retries it; Space or Enter on a tool card expands or collapses it;
        Ctrl+C copies the selected message's text (a call's summary)."""
        item = self.currentIndex().data(ITEM_ROLE)
        if event.matches(QKeySequence.StandardKey.Copy) and item is not None:
            QGuiApplication.clipboard().setText(item.summary if isinstance(item, ToolItem) else item_text(item))
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            if isinstance(item, ToolItem):
                self.toggle_expanded(self.currentIndex())
                return
            if isinstance(item, NoticeItem) and item.retryable and event.key() != Qt.Key.Key_Space:
                self.retry_requested.emit(item)
                return
        super().keyPressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """A tool card's menu (mouse or the Menu key): copy the command, path, summary or output; open the file."""
        index = self.indexAt(event.pos()) if event.reason() == QContextMenuEvent.Reason.Mouse else self.currentIndex()
        item = index.data(ITEM_ROLE) if index.isValid() else None
        if isinstance(item, ToolItem):
            menu = self.card_menu(item)
        elif isinstance(item, UserItem | AssistantItem | CompactionItem | NoticeItem | StreamingItem):
            menu = self.message_menu(item)
        else:
            super().contextMenuEvent(event)
            return
        where = event.globalPos() if event.reason() == QContextMenuEvent.Reason.Mouse else None
        menu.exec(where or self.viewport().mapToGlobal(self.visualRect(index).bottomLeft()))

    def card_menu(self, item: ToolItem) -> QMenu:
        """The actions of a tool card."""
        menu = QMenu(self)
        menu.setAccessibleName(f"Actions of the {item.name} call")
        clipboard = QGuiApplication.clipboard()
        arguments = item.arguments or {}
        command, path = arguments.get("command"), arguments.get("path")
        if isinstance(command, str):
            menu.addAction("Copy &Command", lambda: clipboard.setText(command))
        if isinstance(path, str):
            menu.addAction("Copy &Path", lambda: clipboard.setText(path))
            target = self._file_of(path)
            open_file = menu.addAction("&Open File", lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(target))))
            open_file.setEnabled(target is not None)
            if target is None:
                open_file.setStatusTip("Only a document inside the session's workspace opens, not a program")
        menu.addAction("Copy &Summary", lambda: clipboard.setText(item.summary))
        if item.result_text is not None:
            result = item.result_text
            menu.addAction("Copy &Output", lambda: clipboard.setText(result))
        expanded = self.is_expanded(item.call_id)
        row = self.currentIndex()
        menu.addAction("Co&llapse" if expanded else "&Expand", lambda: self.set_expanded(row, not expanded))
        return menu

    def message_menu(self, item: TimelineItem | StreamingItem) -> QMenu:
        """The actions of a message: copy its text (Markdown as written); for a prompt, re-run it on another model;
        for an answer, copy its code blocks."""
        menu = QMenu(self)
        menu.setAccessibleName("Message actions")
        clipboard = QGuiApplication.clipboard()
        text = item_text(item)
        menu.addAction("&Copy Text", lambda: clipboard.setText(text))
        if isinstance(item, UserItem):
            rerun = menu.addAction("&Re-run on…", lambda: self.rerun_requested.emit(item))
            rerun.setStatusTip("Run this prompt again on another model, in a new session forked before it")
        if isinstance(item, AssistantItem | StreamingItem):
            blocks = code_blocks(item.text)
            copy_code = menu.addAction(
                "Copy C&ode" + (f" ({len(blocks)} blocks)" if len(blocks) > 1 else ""),
                lambda: clipboard.setText("\n\n".join(blocks)),
            )
            copy_code.setEnabled(bool(blocks))
        return menu

    def _file_of(self, path: str) -> Path | None:
        """The file ``path`` names in the session's workspace, when the desktop may open it: a plain document there,
        not a program or a launcher, not outside (:func:`~tiny_agent_core.openable.openable_file`)."""
        timeline = self.transcript_model().timeline()
        if timeline is None:
            return None
        return openable_file(timeline.header.cwd, path)

    def changeEvent(self, event: QEvent) -> None:
        """Re-render after a palette or font change (light/dark switch)."""
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._delegate.clear_cache()
            self.scheduleDelayedItemsLayout()
        super().changeEvent(event)
