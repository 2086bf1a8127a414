"""The cost view (SPEC §7): sessions as rows, a side-by-side comparison of a selection, per-model totals, a
bar chart, and CSV export."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

from PySide6.QtCore import QItemSelection, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.ledger.costs import SessionCostRow, model_cost_rows, session_cost_rows, write_costs_csv
from tiny_agent_gui.cost.chart import Bar, CostBarChart
from tiny_agent_gui.cost.formatting import cost_text
from tiny_agent_gui.cost.models import ComparisonModel, ModelCostModel, SessionCostModel

MAX_BARS = 20
"""Most bars the chart shows."""

MAX_COMPARED = 12
"""Most sessions shown side by side."""

PER_SESSION = "Cost per session"
PER_MODEL = "Cost per model"


def _table(name: str) -> QTableView:
    table = QTableView()
    table.setAccessibleName(name)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.horizontalHeader().setStretchLastSection(True)
    return table


class CostView(QWidget):
    """Sessions with their tokens, cache hit rate, cost and cost per run; select several to compare them.

    The chart shows the selected sessions (else the first :data:`MAX_BARS` rows in the table's order), or the
    per-model totals of the selection (else of every listed session). :attr:`session_activated` carries the id
    of a double-clicked (or entered) session.
    """

    session_activated = Signal(str)
    """A session row was double-clicked or entered: its session id."""

    def __init__(self, conn: sqlite3.Connection, parent: QWidget | None = None, *, load: bool = True) -> None:
        """``conn``: the index database, used on the GUI thread (not closed by the view). Loads at once unless
        ``load`` is False (the window loads it when first shown: with thousands of sessions that is 150 ms)."""
        super().__init__(parent)
        self.setAccessibleName("Cost view")
        self._conn = conn
        self._workspace: Path | None = None

        self.sessions_model = SessionCostModel(self)
        self.model_totals = ModelCostModel(self)
        self.comparison_model = ComparisonModel(self)

        self.summary_label = QLabel(self)
        self.summary_label.setAccessibleName("Cost summary")
        self.chart_mode = QComboBox(self)
        self.chart_mode.addItems([PER_SESSION, PER_MODEL])
        self.chart_mode.setAccessibleName("Chart")
        self.refresh_button = QPushButton("&Refresh", self)
        self.refresh_button.setAccessibleName("Refresh costs")
        self.refresh_button.setShortcut(QKeySequence(QKeySequence.StandardKey.Refresh))
        self.export_button = QPushButton("&Export CSV…", self)
        self.export_button.setAccessibleName("Export CSV")
        self.export_button.setToolTip("Save the listed sessions' costs as CSV")

        self.table = _table("Session costs")
        self.table.setModel(self.sessions_model)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setColumnWidth(0, 260)
        self.comparison = _table("Selected sessions side by side")
        self.comparison.setModel(self.comparison_model)
        self.comparison.verticalHeader().setVisible(True)
        self.by_model = _table("Cost by model")
        self.by_model.setModel(self.model_totals)
        self.by_model.setSortingEnabled(True)
        self.by_model.setColumnWidth(0, 220)
        self.chart = CostBarChart(self)

        self.tabs = QTabWidget(self)
        self.tabs.setAccessibleName("Comparison")
        self.tabs.addTab(self.comparison, "Side by side")
        self.tabs.addTab(self.by_model, "By model")
        bottom = QSplitter(Qt.Orientation.Horizontal, self)
        bottom.addWidget(self.tabs)
        bottom.addWidget(self.chart)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.table)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        bar = QHBoxLayout()
        bar.addWidget(self.summary_label, 1)
        bar.addWidget(self.chart_mode)
        bar.addWidget(self.refresh_button)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(split, 1)

        self.refresh_button.clicked.connect(self.reload)
        self.export_button.clicked.connect(self.export_csv_dialog)
        self.chart_mode.currentIndexChanged.connect(self._update_selection)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.sessions_model.layoutChanged.connect(self._update_selection)
        self.table.activated.connect(self._activate)
        if load:
            self.reload()

    # -- slots for the window ------------------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read every session's costs from the index (the selection is cleared)."""
        rows = session_cost_rows(self._conn, workspace=self._workspace)
        header = self.table.horizontalHeader()
        self.sessions_model.set_rows(rows)
        if header.sortIndicatorSection() >= 0:
            self.sessions_model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        known = [row.cost for row in rows if row.cost is not None]
        unknown = sum(row.unknown_cost_requests for row in rows)
        total = cost_text(sum(known, Decimal(0)) if known else None, unknown, unknown="unknown")
        self.summary_label.setText(f"{len(rows):,} sessions · total {total}")
        self._update_selection()

    def set_workspace(self, workspace: Path | None) -> None:
        """Show one workspace's sessions (``None``: all) and reload."""
        self._workspace = workspace
        self.reload()

    def selected_rows(self) -> list[SessionCostRow]:
        """The selected sessions, in table order."""
        numbers = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.sessions_model.row(number) for number in numbers]

    def export_csv(self, path: Path | str) -> int:
        """Write every listed session, in table order, as CSV (UTF-8) to ``path``; returns the number of rows."""
        rows = self.sessions_model.rows()
        with Path(path).open("w", newline="", encoding="utf-8") as handle:
            write_costs_csv(rows, handle)
        return len(rows)

    def export_csv_dialog(self) -> None:
        """Ask where to save, then :meth:`export_csv`."""
        path, _ = QFileDialog.getSaveFileName(self, "Export costs as CSV", "tiny-agent-costs.csv", "CSV (*.csv)")
        if path:
            count = self.export_csv(path)
            self.summary_label.setText(f"Exported {count:,} sessions to {Path(path).name}")

    # -- internals -----------------------------------------------------------------------------------------------

    def _selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        self._update_selection()

    def _update_selection(self) -> None:
        chosen = self.selected_rows()
        self.comparison_model.set_sessions(chosen[:MAX_COMPARED])
        self.comparison.resizeColumnsToContents()
        ids = [row.session_id for row in chosen] if chosen else None
        if ids is None and self._workspace is None:
            models = model_cost_rows(self._conn)
        else:
            ids = ids if ids is not None else [row.session_id for row in self.sessions_model.rows()]
            models = model_cost_rows(self._conn, ids)
        self.model_totals.set_rows(models)
        scope = "selected" if chosen else "listed"
        if self.chart_mode.currentText() == PER_MODEL:
            bars = [Bar(f"{m.provider} · {m.model}", m.cost, m.unknown_cost_requests) for m in models[:MAX_BARS]]
            self.chart.set_bars(f"Cost per model ({scope} sessions)", bars)
        else:
            shown = chosen[:MAX_BARS] if chosen else self.sessions_model.rows()[:MAX_BARS]
            bars = [Bar(row.title or "(untitled session)", row.cost, row.unknown_cost_requests) for row in shown]
            self.chart.set_bars(f"Cost per session ({scope})", bars)

    def _activate(self, index: QModelIndex) -> None:
        if index.isValid():
            self.session_activated.emit(self.sessions_model.row(index.row()).session_id)
