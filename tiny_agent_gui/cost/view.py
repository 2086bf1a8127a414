"""The cost view (SPEC §7): sessions as rows with their date, a date range, sessions side by side with a what-if
estimate on another model, totals by model, day and week, a chart of cost per day by model, and CSV export.

Every number comes from the core (:func:`tiny_agent_core.ledger.costs.cost_overview` and friends), read on a worker
thread (:class:`~tiny_agent_gui.cost.loader.CostLoader`); the view only shows it. Requests of unknown cost are
counted, never shown as $0, and the view offers the way to fix them: "set a price →" asks the window to open
Settings → Prices for that provider and model (:attr:`CostView.set_price_requested`).
"""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from PySide6.QtCore import QDate, QItemSelection, QModelIndex, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDateEdit,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.ledger.costs import (
    CostOverview,
    CostRow,
    Selection,
    WhatIf,
    cost_overview,
    cost_rows,
    what_if,
    write_costs_csv,
)
from tiny_agent_core.ledger.repricing import refresh_prices
from tiny_agent_gui.cost.chart import Bar, CostBarChart, DailyCostChart, Day, DaySegment
from tiny_agent_gui.cost.loader import CostLoader
from tiny_agent_gui.cost.models import (
    ComparisonModel,
    CostRowsModel,
    model_model,
    period_model,
    savings_text,
    session_model,
    total_text,
)

MAX_BARS = 20
"""Most bars the per-session and per-model charts show."""

MAX_COMPARED = 12
"""Most sessions shown side by side."""

PER_DAY = "Cost per day by model"
PER_SESSION = "Cost per session"
PER_MODEL = "Cost per model"

RANGES = ("All time", "Last 7 days", "Last 30 days", "This month", "Custom")
"""Date range presets; Custom enables the two date fields."""

NO_WHAT_IF = "What if on…"


def _table(name: str, model: CostRowsModel | ComparisonModel) -> QTableView:
    table = QTableView()
    table.setAccessibleName(name)
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    table.horizontalHeader().setStretchLastSection(False)
    return table


def _fit_columns(table: QTableView, stretch: int, samples: dict[int, str] | None = None) -> None:
    """Column widths from the header and a sample text per column (never measured over the rows: with thousands
    of rows that would stall the window); column ``stretch`` takes the rest and elides."""
    header = table.horizontalHeader()
    metrics = table.fontMetrics()
    model = table.model()
    for column in range(header.count()):
        if column == stretch:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
            continue
        title = str(model.headerData(column, Qt.Orientation.Horizontal))
        sample = (samples or {}).get(column, "9,999,999")
        width = max(metrics.horizontalAdvance(title), metrics.horizontalAdvance(sample)) + 24
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(column, width)


def _qdate(day: date) -> QDate:
    return QDate(day.year, day.month, day.day)


def _pydate(day: QDate) -> date:
    return date(day.year(), day.month(), day.day())


class CostView(QWidget):
    """Sessions with their date, tokens, cache hit rate and cost; select several to compare them.

    The chart shows the cost per day stacked by model (default), the selected sessions (else the first
    :data:`MAX_BARS` rows in the table's order), or the per-model totals of the selection. :attr:`loaded` is
    emitted when a reload has been shown, :attr:`selection_loaded` when the bottom half follows a new selection.
    """

    session_activated = Signal(str)
    """A session row was double-clicked or entered: its session id."""
    set_price_requested = Signal(str, str)
    """The user asked to set a price for (provider id, model): open Settings → Prices prefilled with it."""
    loaded = Signal()
    """A reload's results are shown."""
    selection_loaded = Signal()
    """The comparison, per-model totals and chart follow the current selection."""
    exported = Signal()
    """An export (:meth:`export_csv`) ended; the summary line says how."""

    def __init__(self, conn: sqlite3.Connection, parent: QWidget | None = None, *, load: bool = True) -> None:
        """``conn``: the index database; its file is read on a worker thread with a connection of its own (the
        view never queries on the GUI thread). Loads at once unless ``load`` is False (the window loads it when
        first shown)."""
        super().__init__(parent)
        self.setAccessibleName("Cost view")
        database = Path(conn.execute("PRAGMA database_list").fetchone()[2])
        self._loader = CostLoader(database)
        self.destroyed.connect(self._loader.close)
        self._loader.finished.connect(self._finished)
        self._workspace: Path | None = None
        self._overview: CostOverview | None = None
        self._overview_request = 0
        self._selection_request = 0
        self._export_request = 0
        self._export_target = Path()
        self._unknown_model: tuple[str, str] | None = None

        self.sessions_model = session_model(self)
        self.model_totals = model_model(self)
        self.day_totals = period_model(self)
        self.week_totals = period_model(self)
        self.comparison_model = ComparisonModel(self)

        self.summary_label = QLabel(self)
        self.summary_label.setAccessibleName("Cost summary")
        self.range_combo = QComboBox(self)
        self.range_combo.addItems(list(RANGES))
        self.range_combo.setAccessibleName("Date range")
        range_label = QLabel("&Dates:", self)
        range_label.setBuddy(self.range_combo)
        today = date.today()
        self.since_edit = QDateEdit(_qdate(today - timedelta(days=29)), self)
        self.until_edit = QDateEdit(_qdate(today), self)
        for edit, name in ((self.since_edit, "From date"), (self.until_edit, "To date")):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setAccessibleName(name)
            edit.setEnabled(False)
        self.chart_mode = QComboBox(self)
        self.chart_mode.addItems([PER_DAY, PER_SESSION, PER_MODEL])
        self.chart_mode.setAccessibleName("Chart")
        self.refresh_button = QPushButton("&Refresh", self)
        self.refresh_button.setAccessibleName("Refresh costs")
        self.refresh_button.setShortcut(QKeySequence(QKeySequence.StandardKey.Refresh))
        self.export_button = QPushButton("&Export CSV…", self)
        self.export_button.setAccessibleName("Export CSV")
        self.export_button.setToolTip("Save the listed sessions' costs as CSV")
        self.unknown_label = QLabel(self)
        self.unknown_label.setAccessibleName("Requests of unknown cost")
        self.unknown_label.setTextFormat(Qt.TextFormat.RichText)
        self.unknown_label.linkActivated.connect(self._set_price)
        self.unknown_label.setVisible(False)

        self.table = _table("Session costs", self.sessions_model)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        samples = {
            0: "2026-12-31",
            2: "anthropic/claude-sonnet-4.5",
            3: "local — no API charge",
            4: "≥ $0.00012",
            9: "100.0%",
        }
        _fit_columns(self.table, stretch=1, samples=samples)
        self.comparison = _table("Selected sessions side by side", self.comparison_model)
        self.comparison.verticalHeader().setVisible(True)
        self.what_if_combo = QComboBox(self)
        self.what_if_combo.setAccessibleName("What if on another model")
        self.what_if_combo.setToolTip(
            "Price the selected sessions' token counts at another model's rates — an estimate: tokenizers differ"
        )
        self.what_if_combo.addItem(NO_WHAT_IF, None)
        self.by_model = _table("Cost by model", self.model_totals)
        self.by_model.setSortingEnabled(True)
        _fit_columns(self.by_model, stretch=-1, samples={0: "openrouter · anthropic/claude", 1: "≥ $0.12 + 3 unknown"})
        self.by_day = _table("Cost by day", self.day_totals)
        self.by_week = _table("Cost by week", self.week_totals)
        for table in (self.by_day, self.by_week):
            _fit_columns(table, stretch=4, samples={0: "week of 2026-12-31", 1: "≥ $0.12 + 3 unknown"})
        self.bar_chart = CostBarChart(self)
        self.daily_chart = DailyCostChart(self)
        self.charts = QStackedWidget(self)
        self.charts.addWidget(self.daily_chart)
        self.charts.addWidget(self.bar_chart)

        side = QWidget(self)
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.what_if_combo)
        side_layout.addWidget(self.comparison, 1)
        self.compare_hint = QLabel(
            "Select sessions in the list above to compare their cost, tokens and cache use here, side by side "
            f"(Ctrl+click or Shift+click for several, up to {MAX_COMPARED}). Double-click one to open it.",
            self,
        )
        self.compare_hint.setWordWrap(True)
        self.compare_hint.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.compare_hint.setContentsMargins(8, 8, 8, 8)
        side_layout.addWidget(self.compare_hint, 1)
        self._show_compare_hint(True)
        self.tabs = QTabWidget(self)
        self.tabs.setAccessibleName("Comparison")
        self.tabs.addTab(side, "Side by side")
        self.tabs.addTab(self.by_model, "By model")
        self.tabs.addTab(self.by_day, "By day")
        self.tabs.addTab(self.by_week, "By week")
        bottom = QSplitter(Qt.Orientation.Horizontal, self)
        bottom.addWidget(self.tabs)
        bottom.addWidget(self.charts)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)
        bottom.setSizes([600, 400])  # proportions: the side-by-side table needs the width of several sessions
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.table)
        split.addWidget(bottom)
        split.setSizes([500, 500])  # the comparison's dozen rows fit without scrolling at 900 px

        bar = QHBoxLayout()
        bar.addWidget(range_label)
        bar.addWidget(self.range_combo)
        bar.addWidget(self.since_edit)
        bar.addWidget(QLabel("–", self))
        bar.addWidget(self.until_edit)
        bar.addStretch(1)
        bar.addWidget(self.chart_mode)
        bar.addWidget(self.refresh_button)
        bar.addWidget(self.export_button)
        for label in (self.summary_label, self.unknown_label):  # long lines never widen the window
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary_label)
        layout.addWidget(self.unknown_label)
        layout.addWidget(split, 1)

        self.refresh_button.clicked.connect(self.reload)
        self.export_button.clicked.connect(self.export_csv_dialog)
        self.range_combo.currentIndexChanged.connect(self._range_changed)
        self.since_edit.dateChanged.connect(self._dates_changed)
        self.until_edit.dateChanged.connect(self._dates_changed)
        self.chart_mode.currentIndexChanged.connect(self._update_selection)
        self.what_if_combo.currentIndexChanged.connect(self._update_selection)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.sessions_model.layoutChanged.connect(self._update_selection)
        self.table.activated.connect(self._activate)
        self.by_model.activated.connect(self._model_activated)
        if load:
            self.reload()

    # -- slots for the window ------------------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read the costs of the listed range (on the worker; :attr:`loaded` follows; the selection is cleared).

        Changed price overrides in the settings are applied first."""
        selection = self.selection()

        def work(conn: sqlite3.Connection) -> CostOverview:
            refresh_prices(conn)
            return cost_overview(conn, selection)

        self.summary_label.setText("Loading costs…")
        self._overview_request = self._loader.submit(work)

    def set_workspace(self, workspace: Path | None) -> None:
        """Show one workspace's sessions (``None``: all) and reload."""
        self._workspace = workspace
        self.reload()

    def selection(self) -> Selection:
        """What the view lists: the workspace and the date range."""
        since: date | None = None
        until: date | None = None
        preset = self.range_combo.currentText()
        today = date.today()
        if preset == "Last 7 days":
            since = today - timedelta(days=6)
        elif preset == "Last 30 days":
            since = today - timedelta(days=29)
        elif preset == "This month":
            since = today.replace(day=1)
        elif preset == "Custom":
            since, until = _pydate(self.since_edit.date()), _pydate(self.until_edit.date())
        workspaces = None if self._workspace is None else [self._workspace]
        return Selection(workspaces=workspaces, since=since, until=until)

    def selected_rows(self) -> list[CostRow]:
        """The selected sessions, in table order."""
        numbers = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.sessions_model.row(number) for number in numbers]

    def export_csv(self, path: Path | str) -> None:
        """Write every listed session, in table order, as CSV (UTF-8) to ``path``, in the cost worker thread (the
        folder may be slow or remote). The summary line says how many were exported, or why nothing was; then
        :attr:`exported` is emitted."""
        rows, target = self.sessions_model.rows(), Path(path)
        self._export_target = target
        self._export_request = self._loader.submit(lambda _conn: _write_csv(rows, target))

    def export_csv_dialog(self) -> None:
        """Ask where to save, then :meth:`export_csv`."""
        path, _ = QFileDialog.getSaveFileName(self, "Export costs as CSV", "tiny-agent-costs.csv", "CSV (*.csv)")
        if path:
            self.export_csv(path)

    # -- results -------------------------------------------------------------------------------------------------

    def _finished(self, number: int, result: Any) -> None:
        if number == self._export_request:
            name = self._export_target.name
            if isinstance(result, OSError):
                reason = result.strerror or str(result)
                self.summary_label.setText(f"Nothing was exported to {name}: {reason}. Choose another folder.")
            elif isinstance(result, Exception):  # e.g. the worker could not open the index
                self.summary_label.setText(f"Nothing was exported to {name}: {result}")
            else:
                self.summary_label.setText(f"Exported {result:,} sessions to {name}")
            self.exported.emit()
        elif number == self._overview_request:
            if isinstance(result, Exception):
                self.summary_label.setText(f"Could not read the costs: {result}")
                return
            self._show_overview(result)
        elif number == self._selection_request and not isinstance(result, Exception):
            models, estimates = result
            self.model_totals.set_rows(models)
            target = self.what_if_combo.currentData()
            if estimates and target is not None:
                self.comparison_model.set_what_if(" · ".join(target), estimates)
            self.comparison.resizeColumnsToContents()
            if self.chart_mode.currentText() == PER_MODEL:
                self._model_bars(models)
            self.selection_loaded.emit()

    def _show_overview(self, overview: CostOverview) -> None:
        self._overview = overview
        header = self.table.horizontalHeader()
        self.sessions_model.set_rows(overview.sessions)
        if header.sortIndicatorSection() >= 0:
            self.sessions_model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self.day_totals.set_rows(overview.days)
        self.week_totals.set_rows(overview.weeks)
        total = overview.total
        saved = "" if not total.cache_savings else f" · cache saved {savings_text(total)}"
        self.summary_label.setText(f"{len(overview.sessions):,} sessions · total {total_text(total)}{saved}")
        self._show_unknown(overview)
        chosen = self.what_if_combo.currentData()
        self.what_if_combo.blockSignals(True)
        self.what_if_combo.clear()
        self.what_if_combo.addItem(NO_WHAT_IF, None)
        for row in overview.models:
            self.what_if_combo.addItem(f"What if on {row.label}", (row.provider, row.model))
        found = self.what_if_combo.findData(chosen) if chosen is not None else 0
        self.what_if_combo.setCurrentIndex(max(0, found))
        self.what_if_combo.blockSignals(False)
        self.loaded.emit()
        self._update_selection()

    def _show_unknown(self, overview: CostOverview) -> None:
        """The notice above the table: how many requests have no known cost and a link to set a price."""
        unknown = overview.total.unknown_cost_requests
        culprits = sorted(
            (row for row in overview.models if row.unknown_cost_requests),
            key=lambda row: -row.unknown_cost_requests,
        )
        self._unknown_model = None
        if not unknown or not culprits:
            self.unknown_label.setVisible(False)
            return
        worst = culprits[0]
        self._unknown_model = (worst.provider or "", worst.model or "")
        more = f" and {len(culprits) - 1} more model(s)" if len(culprits) > 1 else ""
        self.unknown_label.setText(
            f"⚑ {unknown:,} request(s) of unknown cost — {worst.label}{more}: not in the totals. "
            f'<a href="set-price">Set a price →</a>'
        )
        self.unknown_label.setVisible(True)

    # -- internals -----------------------------------------------------------------------------------------------

    def _set_price(self, _link: str = "") -> None:
        if self._unknown_model is not None:
            self.set_price_requested.emit(*self._unknown_model)

    def _model_activated(self, index: QModelIndex) -> None:
        row = self.model_totals.row(index.row())
        if index.isValid() and row.unknown_cost_requests and row.provider and row.model:
            self.set_price_requested.emit(row.provider, row.model)

    def _range_changed(self) -> None:
        custom = self.range_combo.currentText() == "Custom"
        self.since_edit.setEnabled(custom)
        self.until_edit.setEnabled(custom)
        self.reload()

    def _show_compare_hint(self, shown: bool) -> None:
        """Nothing selected: say how to compare instead of showing an empty table."""
        self.compare_hint.setVisible(shown)
        self.comparison.setVisible(not shown)
        self.what_if_combo.setEnabled(not shown)

    def _dates_changed(self) -> None:
        if self.range_combo.currentText() == "Custom":
            self.reload()

    def _selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        self._update_selection()

    def _update_selection(self) -> None:
        if self._overview is None:
            return
        chosen = self.selected_rows()
        self.comparison_model.set_sessions(chosen[:MAX_COMPARED])
        self.comparison.resizeColumnsToContents()
        self._show_compare_hint(not chosen)
        mode = self.chart_mode.currentText()
        self.charts.setCurrentWidget(self.daily_chart if mode == PER_DAY else self.bar_chart)
        scope = "selected" if chosen else "listed"
        if mode == PER_DAY:
            self._daily_bars()
        elif mode == PER_SESSION:
            shown = chosen[:MAX_BARS] if chosen else self.sessions_model.rows()[:MAX_BARS]
            bars = [Bar(row.label or "(untitled session)", row.cost, row.unknown_cost_requests) for row in shown]
            self.bar_chart.set_bars(f"Cost per session ({scope})", bars)
        base = self.selection()
        target = self.what_if_combo.currentData()
        if not chosen and target is None:
            self.model_totals.set_rows(self._overview.models)
            if mode == PER_MODEL:
                self._model_bars(self._overview.models)
            self.selection_loaded.emit()
            return
        ids = [row.key for row in chosen]
        compared = ids[:MAX_COMPARED]

        def work(conn: sqlite3.Connection) -> tuple[list[CostRow], list[WhatIf]]:
            scoped = Selection(base.workspaces, ids or None, base.since, base.until)
            models = cost_rows(conn, "model", scoped) if ids else list(self._all_models())
            estimates: list[WhatIf] = []
            if target is not None:
                provider, model = target
                for session_id in compared:
                    one = Selection(base.workspaces, [session_id], base.since, base.until)
                    estimates.append(what_if(conn, one, provider, model))
            return models, estimates

        self._selection_request = self._loader.submit(work)

    def _all_models(self) -> list[CostRow]:
        return [] if self._overview is None else self._overview.models

    def _model_bars(self, models: list[CostRow]) -> None:
        scope = "selected" if self.selected_rows() else "listed"
        bars = [Bar(row.label, row.cost, row.unknown_cost_requests) for row in models[:MAX_BARS]]
        self.bar_chart.set_bars(f"Cost per model ({scope} sessions)", bars)

    def _daily_bars(self) -> None:
        if self._overview is None:
            return
        days: dict[date, list[DaySegment]] = {}
        unknown: dict[date, int] = {}
        for cell in self._overview.daily:
            days.setdefault(cell.day, [])
            if cell.cost is not None and cell.cost > 0:
                days[cell.day].append(DaySegment(cell.model, cell.cost))
            unknown[cell.day] = unknown.get(cell.day, 0) + cell.unknown_cost_requests
        if days:
            first, last = min(days), max(days)
            span = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        else:
            span = []
        columns = [Day(day, tuple(days.get(day, ())), unknown.get(day, 0)) for day in span]
        self.daily_chart.set_days("Cost per day by model (listed sessions)", columns)

    def _activate(self, index: QModelIndex) -> None:
        if index.isValid():
            self.session_activated.emit(self.sessions_model.row(index.row()).key)


def _write_csv(rows: list[CostRow], path: Path) -> int:
    with path.open("w", newline="", encoding="utf-8") as handle:
        write_costs_csv(rows, handle)
    return len(rows)
