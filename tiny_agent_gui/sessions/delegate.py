"""Paints a session row in two lines: status mark and title; model, then cost · time (· workspace) at the right."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
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


class SessionRowDelegate(QStyledItemDelegate):
    """Two-line rows of constant height, elided to the view's width; colours from the palette."""

    def __init__(self, parent: QWidget | None = None, *, show_workspace: bool = True) -> None:
        """``show_workspace``: add the workspace's folder name to the second line."""
        super().__init__(parent)
        self.show_workspace = show_workspace

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        """Two text lines and padding."""
        metrics = QFontMetrics(option.font)
        return QSize(200, metrics.height() * 2 + 3 * _PAD)

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        """Background and focus from the style, then the two lines."""
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect: QRect = opt.rect.adjusted(_PAD, _PAD, -_PAD, -_PAD)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        palette: QPalette = opt.palette
        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        base_font: QFont = opt.font
        metrics = QFontMetrics(base_font)
        line = metrics.height()
        painter.save()
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
        # Cost and time are never elided: the model name gives way.
        facts = [str(index.data(SessionListModel.CostTextRole)), str(index.data(SessionListModel.RelativeTimeRole))]
        if self.show_workspace:
            facts.append(str(index.data(SessionListModel.WorkspaceRole)))
        right = "  ·  ".join(facts)
        painter.setFont(base_font)
        if not selected:
            painter.setPen(palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.PlaceholderText))
        top = rect.top() + line + _PAD
        right_width = min(metrics.horizontalAdvance(right) + 4, rect.width())
        model_width = rect.width() - right_width - 2 * _PAD
        if model_width > metrics.horizontalAdvance("…") * 3:
            model = metrics.elidedText(
                str(index.data(SessionListModel.ModelNameRole)), Qt.TextElideMode.ElideMiddle, model_width
            )
            painter.drawText(QRect(rect.left(), top, model_width, line), Qt.AlignmentFlag.AlignVCenter, model)
        right = metrics.elidedText(right, Qt.TextElideMode.ElideRight, right_width)
        painter.drawText(
            QRect(rect.right() - right_width, top, right_width + 1, line),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
            right,
        )
        painter.restore()
