"""Cost charts drawn with QPainter (PySide6-Essentials has no QtCharts): horizontal bars per session or model, and
cost per day stacked by model.

Unknown is never drawn as zero, and never as a bar: a bar stops at its known cost, and requests of unknown cost
are a small hatched marker after it with ``+ n unknown`` (a bar entirely unknown is the marker alone, labelled
``unknown``), so a model without a price never looks like the most expensive one. Text is drawn in the palette's
text colour, never on the hatching, so it reads in light and dark palettes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from tiny_agent_core.ledger.costs import cost_text
from tiny_agent_gui.cost.formatting import format_money

UNKNOWN_LABEL = "unknown"

SERIES_COLORS = ("#4a7fc1", "#e07b39", "#3aa67a", "#c94f7c", "#8c6bc8", "#b8a038", "#3fa7b8")
"""Colours of the models in the stacked chart (readable on light and dark backgrounds); the rest share grey."""
OTHER_COLOR = "#8a8a8a"


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: a label, the known cost (``None`` = unknown) and how many requests' costs are unknown."""

    label: str
    cost: Decimal | None
    unknown_requests: int = 0

    @property
    def value_text(self) -> str:
        """The text at the bar's end: ``$0.12``, ``≥ $0.12 + 2 unknown`` or ``unknown``."""
        return cost_text(self.cost, self.unknown_requests, unknown=UNKNOWN_LABEL)


@dataclass(frozen=True, slots=True)
class DaySegment:
    """One model's known cost on one day."""

    series: str
    """The model's legend label."""
    cost: Decimal


@dataclass(frozen=True, slots=True)
class Day:
    """One column of the stacked chart."""

    day: date
    segments: tuple[DaySegment, ...]
    unknown_requests: int = 0

    @property
    def cost(self) -> Decimal:
        """The day's known cost."""
        return sum((segment.cost for segment in self.segments), Decimal(0))


def _hatch(painter: QPainter, box: QRectF, colour: QColor) -> None:
    painter.save()
    painter.setBrush(QBrush(colour, Qt.BrushStyle.BDiagPattern))
    painter.setPen(QPen(colour, 1, Qt.PenStyle.DashLine))
    painter.drawRect(box)
    painter.restore()


class _Chart(QWidget):
    """A titled chart: the title, then the chart itself (:meth:`_paint_chart`) or "No data"."""

    TITLE_GAP = 6.0
    """Space between the title and the chart."""

    def __init__(self, name: str, parent: QWidget | None) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self._title = ""

    def _has_data(self) -> bool:
        raise NotImplementedError

    def _paint_chart(self, painter: QPainter, metrics: QFontMetrics, area: QRectF, top: float, text: QColor) -> None:
        """Draw the chart in ``area`` below ``top`` (the title is drawn), with ``text`` as the text colour."""
        raise NotImplementedError

    def paintEvent(self, event: QPaintEvent) -> None:
        """The title, then the chart, or "No data"."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().color(QPalette.ColorRole.WindowText)
        metrics = QFontMetrics(self.font())
        line = metrics.height()
        area = QRectF(self.rect()).adjusted(8, 6, -8, -6)
        painter.setPen(text)
        painter.drawText(QRectF(area.left(), area.top(), area.width(), line), Qt.AlignmentFlag.AlignLeft, self._title)
        top = area.top() + line + self.TITLE_GAP
        if self._has_data():
            self._paint_chart(painter, metrics, area, top, text)
        else:
            painter.drawText(QRectF(area.left(), top, area.width(), line), Qt.AlignmentFlag.AlignLeft, "No data")
        painter.end()


class CostBarChart(_Chart):
    """Horizontal bars of cost, longest = largest known cost; colours from the palette (light and dark)."""

    BAR_COLOR = QColor(SERIES_COLORS[0])

    def __init__(self, parent: QWidget | None = None) -> None:
        """An empty chart ("No data")."""
        super().__init__("Cost chart", parent)
        self._bars: list[Bar] = []

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

    def _has_data(self) -> bool:
        return bool(self._bars)

    def _paint_chart(self, painter: QPainter, metrics: QFontMetrics, area: QRectF, top: float, text: QColor) -> None:
        """One row per bar: label, bar, unknown marker, value."""
        line = metrics.height()
        row = max(6.0, min(line + 8.0, (area.bottom() - top) / len(self._bars)))
        marker = float(line - 4)
        label_width = min(area.width() * 0.35, max(metrics.horizontalAdvance(b.label) for b in self._bars) + 8)
        value_width = max(metrics.horizontalAdvance(b.value_text) for b in self._bars) + 8
        plot_left = area.left() + label_width
        plot_width = max(10.0, area.width() - label_width - value_width - marker - 8)
        largest = max((bar.cost for bar in self._bars if bar.cost is not None), default=Decimal(0))
        for number, bar in enumerate(self._bars):
            y = top + number * row
            height = max(4.0, row - 6)
            painter.setPen(text)
            label = metrics.elidedText(bar.label, Qt.TextElideMode.ElideRight, int(label_width - 8))
            painter.drawText(QRectF(area.left(), y, label_width - 8, row), Qt.AlignmentFlag.AlignVCenter, label)
            bar_top = y + (row - height) / 2
            known = bar.cost or Decimal(0)
            length = 0.0 if largest == 0 else float(known / largest) * plot_width
            if known > 0:
                length = max(length, 2.0)  # a tiny known cost stays visible, never looks like zero
            painter.fillRect(QRectF(plot_left, bar_top, length, height), self.BAR_COLOR)
            end = plot_left + length
            if bar.cost is None or bar.unknown_requests:
                size = min(marker, height)
                _hatch(painter, QRectF(end + 3, y + (row - size) / 2, size, size), text)
                end += size + 3
            painter.setPen(text)
            value_box = QRectF(end + 4, y, value_width, row)
            painter.drawText(value_box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, bar.value_text)


class DailyCostChart(_Chart):
    """Cost per day, one column per day, stacked by model (a legend names the colours); a day with requests of
    unknown cost carries a small hatched marker above its column."""

    MAX_SERIES = len(SERIES_COLORS)
    """Models with their own colour (the most expensive); the others are grouped as "other"."""

    TITLE_GAP = 4.0

    def __init__(self, parent: QWidget | None = None) -> None:
        """An empty chart ("No data")."""
        super().__init__("Cost per day chart", parent)
        self._days: list[Day] = []
        self._series: list[str] = []

    @property
    def days(self) -> list[Day]:
        """The columns shown, oldest first."""
        return list(self._days)

    @property
    def series(self) -> list[str]:
        """The legend, in stacking order (bottom first)."""
        return list(self._series)

    def set_days(self, title: str, days: Sequence[Day]) -> None:
        """Show ``days`` (oldest first) under ``title``; the legend follows the total cost of each series."""
        totals: dict[str, Decimal] = {}
        for day in days:
            for segment in day.segments:
                totals[segment.series] = totals.get(segment.series, Decimal(0)) + segment.cost
        ranked = sorted(totals, key=lambda name: (-totals[name], name))
        keep = set(ranked[: self.MAX_SERIES])
        merged: list[Day] = []
        for day in days:
            other = sum((s.cost for s in day.segments if s.series not in keep), Decimal(0))
            segments = [s for s in day.segments if s.series in keep]
            if other:
                segments.append(DaySegment("other", other))
            merged.append(Day(day.day, tuple(segments), day.unknown_requests))
        self._series = ranked[: self.MAX_SERIES] + (["other"] if len(ranked) > self.MAX_SERIES else [])
        self._days = merged
        self._title = title
        described = "; ".join(
            f"{day.day}: {format_money(day.cost)}"
            + (f" + {day.unknown_requests} unknown" if day.unknown_requests else "")
            for day in merged
        )
        self.setAccessibleDescription(f"{title}. {described}" if described else f"{title}. No data.")
        self.update()

    def color(self, series: str) -> QColor:
        """The colour of a legend entry."""
        index = self._series.index(series) if series in self._series else len(SERIES_COLORS)
        return QColor(SERIES_COLORS[index] if index < len(SERIES_COLORS) and series != "other" else OTHER_COLOR)

    def minimumSizeHint(self) -> QSize:
        """Room for the title, the legend and a few columns."""
        line = QFontMetrics(self.font()).height()
        return QSize(240, line * 8)

    def sizeHint(self) -> QSize:
        """A comfortable chart."""
        line = QFontMetrics(self.font()).height()
        return QSize(420, line * 14)

    def _has_data(self) -> bool:
        return bool(self._days)

    def _paint_chart(self, painter: QPainter, metrics: QFontMetrics, area: QRectF, top: float, text: QColor) -> None:
        """Legend, axis with the largest day's cost, the columns and their dates."""
        line = metrics.height()
        top = self._legend(painter, metrics, QRectF(area.left(), top, area.width(), line), text)
        largest = max((day.cost for day in self._days), default=Decimal(0))
        axis_text = format_money(largest)
        axis_width = metrics.horizontalAdvance(axis_text) + 6
        plot = QRectF(
            area.left() + axis_width, top + line, area.width() - axis_width, area.bottom() - top - 2 * line - 4
        )
        if plot.height() < 8:
            return
        painter.setPen(QPen(text, 1))
        painter.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        painter.drawText(
            QRectF(area.left(), plot.top() - line / 2, axis_width - 6, line), Qt.AlignmentFlag.AlignRight, axis_text
        )
        painter.drawText(
            QRectF(area.left(), plot.bottom() - line / 2, axis_width - 6, line), Qt.AlignmentFlag.AlignRight, "$0"
        )
        slot = plot.width() / len(self._days)
        width = max(2.0, min(slot * 0.7, 4.0 * line))
        marker = min(float(line - 4), max(4.0, slot * 0.6))
        for index, day in enumerate(self._days):
            x = plot.left() + index * slot + (slot - width) / 2
            y = plot.bottom()
            for segment in day.segments:
                height = 0.0 if largest == 0 else float(segment.cost / largest) * (plot.height() - marker - 2)
                height = max(height, 1.0) if segment.cost > 0 else 0.0
                painter.fillRect(QRectF(x, y - height, width, height), self.color(segment.series))
                y -= height
            if day.unknown_requests:
                _hatch(painter, QRectF(x + (width - marker) / 2, y - marker - 2, marker, marker), text)
        self._dates(painter, metrics, plot, slot, text)

    def _legend(self, painter: QPainter, metrics: QFontMetrics, row: QRectF, text: QColor) -> float:
        """Draw the legend, wrapping as needed; returns the y below it."""
        x, y = row.left(), row.top()
        swatch = metrics.height() - 6
        entries = [*self._series]
        if any(day.unknown_requests for day in self._days):
            entries.append(UNKNOWN_LABEL)
        for name in entries:
            width = swatch + 4 + metrics.horizontalAdvance(name) + 12
            if x + width > row.right() and x > row.left():
                x, y = row.left(), y + metrics.height()
            box = QRectF(x, y + 3, swatch, swatch)
            if name == UNKNOWN_LABEL:
                _hatch(painter, box, text)
            else:
                painter.fillRect(box, self.color(name))
            painter.setPen(text)
            painter.drawText(QRectF(x + swatch + 4, y, width, metrics.height()), Qt.AlignmentFlag.AlignLeft, name)
            x += width
        return y + metrics.height() + 2

    def _dates(self, painter: QPainter, metrics: QFontMetrics, plot: QRectF, slot: float, text: QColor) -> None:
        """Date labels under the columns, as many as fit without overlapping."""
        painter.setPen(text)
        label_width = metrics.horizontalAdvance("00-00") + 8
        step = max(1, int(label_width // max(slot, 1.0)) + 1)
        for index in range(0, len(self._days), step):
            centre = plot.left() + index * slot + slot / 2
            box = QRectF(centre - label_width / 2, plot.bottom() + 2, label_width, metrics.height())
            painter.drawText(box, Qt.AlignmentFlag.AlignHCenter, self._days[index].day.strftime("%m-%d"))
