"""Paints a session row: its date group's header above the group's first row, then two lines — status mark and
title; the model's short tag, what the row came from (a re-run's origin, the workspace when all are shown), and
cost · time at the right.

Room on the second line goes first to the model tag (elided only when it alone is wider than the row), then to
the time, then to the cost (in full, else its short form, else left out: an amount is never cut, and never pushes
the model out), and what is left to the workspace (:func:`second_line`, measured with the row's font).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from tiny_agent_gui.sessions.model import SessionListModel, SessionStatus

MARKS: dict[SessionStatus, tuple[str, str]] = {
    SessionStatus.RUNNING: ("●", "#2e9d4f"),
    SessionStatus.INTERRUPTED: ("◐", "#d9822b"),
    SessionStatus.FAILED: ("✕", "#d64545"),
    SessionStatus.ABORTED: ("■", "#8a8a8a"),
}
"""The glyph and colour of each status mark (the status word is in the tooltip and the accessible text)."""

_PAD = 6
SEPARATOR = " · "
"""Between the cost and the time, and before the workspace."""
GAP = "   "
"""The least room between the model tag (or workspace) and the right-aligned cost · time."""


@dataclass(frozen=True, slots=True)
class SecondLine:
    """What the second line shows at a given width: each part as drawn (possibly elided or empty)."""

    model: str
    middle: str
    right: str


def second_line(
    metrics: QFontMetrics, width: int, model: str, middle: str, costs: tuple[str, ...], when: str
) -> SecondLine:
    """Fit the second line into ``width`` pixels: the model tag first, then the time, then the first of ``costs``
    (the cost text, then shorter forms of it) that fits, then ``middle`` (the workspace)."""
    elide = Qt.TextElideMode.ElideRight
    model_text = model if metrics.horizontalAdvance(model) <= width else metrics.elidedText(model, elide, width)
    room = width - metrics.horizontalAdvance(model_text) - metrics.horizontalAdvance(GAP)
    candidates = [f"{cost}{SEPARATOR}{when}" for cost in costs] + [when]
    right = next((text for text in candidates if metrics.horizontalAdvance(text) <= room), "")
    room -= metrics.horizontalAdvance(right) + metrics.horizontalAdvance(SEPARATOR)
    middle_text = ""
    if middle and room > metrics.horizontalAdvance("…") * 4:
        middle_text = metrics.elidedText(middle, elide, room)
    return SecondLine(model_text, middle_text, right)


class SessionRowDelegate(QStyledItemDelegate):
    """Rows of two lines (plus a group header above a group's first row), elided to the view's width; colours
    from the palette."""

    def __init__(self, parent: QWidget | None = None, *, show_workspace: bool = True) -> None:
        """``show_workspace``: name each row's workspace (when the list shows all workspaces)."""
        super().__init__(parent)
        self.show_workspace = show_workspace
        self._heights: tuple[int, int] | None = None
        """(row height, header height) in the view's font: a list of rows of two heights asks every row's size
        whenever rows are added, so this is kept (and dropped when the view's font or style changes)."""
        if parent is not None:
            parent.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Forget the row heights when the view's font or style changes."""
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._heights = None
        return False

    @staticmethod
    def header_height(metrics: QFontMetrics) -> int:
        """Height of a group header above a row."""
        return metrics.height() + _PAD * 2

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        """Two text lines and padding, and the group header when the row starts its group."""
        heights = self._heights
        if heights is None:
            metrics = QFontMetrics(option.font)
            heights = self._heights = (metrics.height() * 2 + 3 * _PAD, self.header_height(metrics))
        model = index.model()
        starts = model.starts_group(index.row()) if isinstance(model, SessionListModel) else False
        return QSize(200, heights[0] + heights[1] if starts else heights[0])

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        """The group header, then background and focus from the style (the row only), then the two lines."""
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        palette: QPalette = opt.palette
        base_font: QFont = opt.font
        metrics = QFontMetrics(base_font)
        line = metrics.height()
        painter.save()
        if index.data(SessionListModel.GroupStartRole):
            header = QRect(opt.rect)
            header.setHeight(self.header_height(metrics))
            header_font = QFont(base_font)
            header_font.setBold(True)
            header_font.setPointSizeF(max(6.0, base_font.pointSizeF() * 0.9))
            painter.setFont(header_font)
            painter.setPen(palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.PlaceholderText))
            painter.drawText(
                header.adjusted(_PAD, _PAD, -_PAD, 0),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                str(index.data(SessionListModel.GroupRole)),
            )
            opt.rect = opt.rect.adjusted(0, header.height(), 0, 0)
        widget = opt.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect: QRect = opt.rect.adjusted(_PAD, _PAD, -_PAD, -_PAD)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        x = rect.left()
        mark = MARKS.get(index.data(SessionListModel.StatusRole))
        if mark is not None:
            glyph, colour = mark
            painter.setPen(palette.color(text_role) if selected else QColor(colour))
            painter.setFont(base_font)
            width = metrics.horizontalAdvance(glyph) + _PAD
            painter.drawText(QRect(x, rect.top(), width, line), Qt.AlignmentFlag.AlignVCenter, glyph)
            x += width
        title_font = QFont(base_font)
        title_font.setBold(True)
        painter.setFont(title_font)
        painter.setPen(palette.color(text_role))
        title = QFontMetrics(title_font).elidedText(str(index.data()), Qt.TextElideMode.ElideRight, rect.right() - x)
        painter.drawText(QRect(x, rect.top(), rect.right() - x, line), Qt.AlignmentFlag.AlignVCenter, title)

        parts = second_line(
            metrics,
            rect.width(),
            str(index.data(SessionListModel.ModelNameRole)),
            str(index.data(SessionListModel.WorkspaceRole)) if self.show_workspace else "",
            (str(index.data(SessionListModel.CostTextRole)), str(index.data(SessionListModel.ShortCostRole))),
            str(index.data(SessionListModel.RelativeTimeRole)),
        )
        painter.setFont(base_font)
        top = rect.top() + line + _PAD
        model_width = metrics.horizontalAdvance(parts.model)
        painter.drawText(QRect(rect.left(), top, model_width + 1, line), Qt.AlignmentFlag.AlignVCenter, parts.model)
        if not selected:
            painter.setPen(palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.PlaceholderText))
        if parts.middle:
            left = rect.left() + model_width
            text = SEPARATOR + parts.middle
            painter.drawText(
                QRect(left, top, metrics.horizontalAdvance(text) + 1, line), Qt.AlignmentFlag.AlignVCenter, text
            )
        if parts.right:
            right_width = metrics.horizontalAdvance(parts.right)
            painter.drawText(
                QRect(rect.right() - right_width, top, right_width + 1, line),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                parts.right,
            )
        painter.restore()
