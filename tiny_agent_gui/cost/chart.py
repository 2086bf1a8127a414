"""A horizontal bar chart of costs drawn with QPainter (PySide6-Essentials has no QtCharts).

Unknown is never drawn as zero: a bar whose cost is entirely unknown is a hatched, dashed box across the plot
labelled "unknown"; a bar whose cost is known only in part ends in a short hatched tail and is labelled "≥ $x".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from tiny_agent_gui.cost.formatting import format_money

UNKNOWN_LABEL = "unknown"


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: a label, the known cost (``None`` = unknown) and how many requests' costs are unknown."""

    label: str
    cost: Decimal | None
    unknown_requests: int = 0

    @property
    def value_text(self) -> str:
        """The text at the bar's end."""
        if self.cost is None:
            return UNKNOWN_LABEL
        return f"≥ {format_money(self.cost)}" if self.unknown_requests else format_money(self.cost)


class CostBarChart(QWidget):
    """Bars of cost, longest = largest known cost; colours from the palette (light and dark)."""

    BAR_COLOR = QColor("#4a7fc1")
    TAIL = 18
    """Width in pixels of the hatched tail of a partly unknown cost."""

    def __init__(self, parent: QWidget | None = None) -> None:
        """An empty chart ("No data")."""
        super().__init__(parent)
        self.setAccessibleName("Cost chart")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self._bars: list[Bar] = []
        self._title = ""

    @property
    def bars(self) -> list[Bar]:
        """The bars shown, top to bottom."""
        return list(self._bars)

    def set_bars(self, title: str, bars: Sequence[Bar]) -> None:
        """Show ``bars`` under ``title`` and describe them for assistive technology."""
        self._title = title
        self._bars = list(bars)
        described = "; ".join(f"{bar.label}: {bar.value_text}" for bar in self._bars)
        self.setAccessibleDescription(f"{title}. {described}" if described else f"{title}. No data.")
        self.updateGeometry()
        self.update()

    def minimumSizeHint(self) -> QSize:
        """Room for the title and a few bars."""
        line = QFontMetrics(self.font()).height()
        return QSize(240, line * 4)

    def sizeHint(self) -> QSize:
        """Room for every bar at a comfortable height."""
        line = QFontMetrics(self.font()).height()
        return QSize(420, line * 2 + max(1, len(self._bars)) * (line + 8))

    def paintEvent(self, event: QPaintEvent) -> None:
        """Title, then one row per bar: label, bar, value."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.WindowText)
        metrics = QFontMetrics(self.font())
        line = metrics.height()
        area = QRectF(self.rect()).adjusted(8, 6, -8, -6)
        painter.setPen(text)
        painter.drawText(QRectF(area.left(), area.top(), area.width(), line), Qt.AlignmentFlag.AlignLeft, self._title)
        top = area.top() + line + 6
        if not self._bars:
            painter.drawText(QRectF(area.left(), top, area.width(), line), Qt.AlignmentFlag.AlignLeft, "No data")
            painter.end()
            return
        row = max(6.0, min(line + 8.0, (area.bottom() - top) / len(self._bars)))
        label_width = min(area.width() * 0.35, max(metrics.horizontalAdvance(b.label) for b in self._bars) + 8)
        value_width = max(metrics.horizontalAdvance(b.value_text) for b in self._bars) + 8
        plot_left = area.left() + label_width
        plot_width = max(10.0, area.width() - label_width - value_width - self.TAIL)
        largest = max((bar.cost for bar in self._bars if bar.cost is not None), default=Decimal(0))
        for number, bar in enumerate(self._bars):
            y = top + number * row
            height = max(4.0, row - 6)
            painter.setPen(text)
            label = metrics.elidedText(bar.label, Qt.TextElideMode.ElideRight, int(label_width - 8))
            painter.drawText(QRectF(area.left(), y, label_width - 8, row), Qt.AlignmentFlag.AlignVCenter, label)
            bar_top = y + (row - height) / 2
            if bar.cost is None:
                box = QRectF(plot_left, bar_top, plot_width + self.TAIL, height)
                self._hatch(painter, box, text)
                painter.setPen(text)
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, UNKNOWN_LABEL)
                continue
            length = 0.0 if largest == 0 else float(bar.cost / largest) * plot_width
            if bar.cost > 0:
                length = max(length, 2.0)  # a tiny known cost stays visible, never looks like zero
            painter.fillRect(QRectF(plot_left, bar_top, length, height), self.BAR_COLOR)
            end = plot_left + length
            if bar.unknown_requests:
                self._hatch(painter, QRectF(end, bar_top, self.TAIL, height), text)
                end += self.TAIL
            painter.setPen(text)
            value_box = QRectF(end + 4, y, value_width, row)
            painter.drawText(value_box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, bar.value_text)
        painter.end()

    @staticmethod
    def _hatch(painter: QPainter, box: QRectF, colour: QColor) -> None:
        painter.save()
        painter.setBrush(QBrush(colour, Qt.BrushStyle.BDiagPattern))
        painter.setPen(QPen(colour, 1, Qt.PenStyle.DashLine))
        painter.drawRect(box)
        painter.restore()
