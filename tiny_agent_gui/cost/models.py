"""Thin table models over the core's cost rows: sessions, models, days or weeks, and a side-by-side comparison.

Every figure is computed in the core (:mod:`tiny_agent_core.ledger.costs`); these models only choose columns and
format. A cost of unknown requests is a lower bound with a count (``≥ $0.12 + 2 unknown``), never a 0; a row whose
requests all cost nothing says why (``not billed``, ``local — no API charge``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from tiny_agent_core.ledger.costs import SOURCES, CostRow, WhatIf, cost_text, row_cost_text
from tiny_agent_core.timestamps import local_datetime
from tiny_agent_gui.cost.formatting import NOT_APPLICABLE, format_money, rate_text, tokens_text

ModelIndex = QModelIndex | QPersistentModelIndex

RowRole = Qt.ItemDataRole.UserRole + 1
"""The core :class:`CostRow` of a table row."""

_NUMBER = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_SOURCE_NAMES = {"not_billed": "not billed", "computed": "price table"}


def _money(amount: Decimal | None, complete: bool) -> str:
    if amount is None:
        return NOT_APPLICABLE
    return format_money(amount) if complete else f"≥ {format_money(amount)}"


def savings_text(row: CostRow) -> str:
    """What cache reads saved (``≥`` when some requests' savings are unknown)."""
    return _money(row.cache_savings, row.unknown_savings_requests == 0)


def _sort_number(value: Decimal | float | int | None) -> tuple[bool, Decimal | float | int]:
    return (value is None, 0 if value is None else value)


def _date(row: CostRow) -> str:
    stamp = row.created_at if row.created_at is not None else row.first_at
    return NOT_APPLICABLE if stamp is None else local_datetime(stamp).strftime("%Y-%m-%d")


def sources_text(row: CostRow) -> str:
    """``2 price table, 1 not billed`` — how many requests' costs came from where."""
    parts = [f"{row.sources[key]} {_SOURCE_NAMES.get(key, key)}" for key in SOURCES if row.sources.get(key)]
    return ", ".join(parts) or "no requests"


def cost_tooltip(row: CostRow) -> str:
    """The exact cost, where it came from, and what is missing from it."""
    if row.cost is None:
        exact = "Cost unknown: no request of it has a known cost."
    else:
        exact = f"${row.cost:f} exactly"
        if row.unknown_cost_requests:
            exact += f" — a lower bound: {row.unknown_cost_requests} request(s) of unknown cost are not included"
    lines = [exact, f"Requests: {sources_text(row)}"]
    if row.unknown_cost_requests:
        lines.append("Set a price for the model in Settings → Prices to count them.")
    return "\n".join(lines)


def models_text(row: CostRow) -> str:
    """The row's models on one line (the table elides it; the tooltip has them all)."""
    return ", ".join(row.models) or NOT_APPLICABLE


@dataclass(frozen=True)
class Column:
    """One table column: header, display text, sort key, and whether it is a number."""

    header: str
    text: Callable[[CostRow], str]
    key: Callable[[CostRow], Any]
    numeric: bool = True
    tooltip: Callable[[CostRow], str] | None = None
    """Tooltip, if it says more than the display."""
    is_cost: bool = False
    """The cost column (italic when the cost is unknown)."""


def cost_per_run_text(row: CostRow) -> str:
    """What an answered run cost: :data:`NOT_APPLICABLE` when no run answered, ``unknown`` when no request's cost
    is known, a lower bound (``≥``) when some are unknown."""
    if row.successful_runs == 0:
        return NOT_APPLICABLE
    return cost_text(None) if row.cost is None else _money(row.cost_per_run, row.cost_complete)


def cost_per_run_tooltip(row: CostRow) -> str:
    """What the cost is divided by, then the cost's own tooltip."""
    return f"The cost over {row.successful_runs:,} answered run(s) of {row.runs:,}\n{cost_tooltip(row)}"


def _cost_column(
    header: str = "Cost",
    text: Callable[[CostRow], str] = row_cost_text,
    amount: Callable[[CostRow], Decimal | None] = lambda r: r.cost,
    tooltip: Callable[[CostRow], str] = cost_tooltip,
) -> Column:
    """A column of an amount of money: unknown amounts sort after known ones (ascending) and are shown in italics."""
    return Column(header, text, lambda r: _sort_number(amount(r)), tooltip=tooltip, is_cost=True)


def _cost_per_run_column(header: str) -> Column:
    return _cost_column(header, cost_per_run_text, lambda r: r.cost_per_run, cost_per_run_tooltip)


SESSION_COLUMNS: tuple[Column, ...] = (
    Column("Date", _date, lambda r: r.created_at or 0, numeric=False),
    Column("Title", lambda r: r.title or "(untitled session)", lambda r: (r.title or "").casefold(), numeric=False),
    Column("Models", models_text, lambda r: r.models, numeric=False, tooltip=models_text),
    _cost_column(),
    _cost_per_run_column("Cost per run"),
    Column("Input", lambda r: tokens_text(r.usage.input), lambda r: r.usage.input),
    Column("Output", lambda r: tokens_text(r.usage.output), lambda r: r.usage.output),
    Column("Cache read", lambda r: tokens_text(r.usage.cache_read), lambda r: r.usage.cache_read),
    Column("Cache write", lambda r: tokens_text(r.usage.cache_write), lambda r: r.usage.cache_write),
    Column("Cache hit", lambda r: rate_text(r.cache_hit_rate), lambda r: _sort_number(r.cache_hit_rate)),
)
"""Columns of the sessions table (SPEC §7: tokens by kind, cache hit rate, cost, cost per run, models)."""

MODEL_COLUMNS: tuple[Column, ...] = (
    Column("Model", lambda r: r.label, lambda r: r.key, numeric=False, tooltip=lambda r: r.label),
    _cost_column(),
    Column(
        "Per session", lambda r: _money(r.cost_per_session, r.cost_complete), lambda r: _sort_number(r.cost_per_session)
    ),
    _cost_per_run_column("Per run"),
    Column(
        "Tokens / run",
        lambda r: NOT_APPLICABLE if r.tokens_per_run is None else tokens_text(r.tokens_per_run),
        lambda r: _sort_number(r.tokens_per_run),
    ),
    Column("Cache hit", lambda r: rate_text(r.cache_hit_rate), lambda r: _sort_number(r.cache_hit_rate)),
    Column(
        "Cache saved",
        savings_text,
        lambda r: _sort_number(r.cache_savings),
    ),
    Column("Sessions", lambda r: tokens_text(r.sessions), lambda r: r.sessions),
    Column("Runs", lambda r: f"{r.successful_runs:,}/{r.runs:,}", lambda r: r.successful_runs),
)
"""Columns of the per-model table: cost first, so it is never behind a scrollbar. "Per run" divides by the runs
that answered (Runs shows answered/all)."""

PERIOD_COLUMNS: tuple[Column, ...] = (
    Column("Period", lambda r: r.label, lambda r: r.key, numeric=False),
    _cost_column(),
    Column("Sessions", lambda r: tokens_text(r.sessions), lambda r: r.sessions),
    Column("Requests", lambda r: tokens_text(r.requests), lambda r: r.requests),
    Column("Models", models_text, lambda r: r.models, numeric=False, tooltip=models_text),
    Column(
        "Cache saved",
        savings_text,
        lambda r: _sort_number(r.cache_savings),
    ),
)
"""Columns of the per-day and per-week tables."""


class CostRowsModel(QAbstractTableModel):
    """A sortable table over a list of core cost rows; the row object is under :data:`RowRole`."""

    def __init__(self, columns: Sequence[Column], parent: QObject | None = None) -> None:
        """``columns``: :data:`SESSION_COLUMNS`, :data:`MODEL_COLUMNS` or :data:`PERIOD_COLUMNS`."""
        super().__init__(parent)
        self._columns: tuple[Column, ...] = tuple(columns)
        self._rows: list[CostRow] = []

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns, left to right."""
        return self._columns

    def set_rows(self, rows: Sequence[CostRow]) -> None:
        """Replace every row (in the order given)."""
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rows(self) -> list[CostRow]:
        """The rows in their current (sorted) order."""
        return list(self._rows)

    def row(self, number: int) -> CostRow:
        """The core row shown at ``number``."""
        return self._rows[number]

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008  (Qt signature)
        """Rows (none under a valid parent)."""
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """Columns (none under a valid parent)."""
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Column headers; row numbers vertically."""
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self._columns[section].header if 0 <= section < len(self._columns) else None
        return section + 1

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Display text, alignment, tooltips (the exact cost and its sources), italics for unknown costs, the row."""
        if not index.isValid() or index.row() >= len(self._rows) or index.column() >= len(self._columns):
            return None
        row = self._rows[index.row()]
        column = self._columns[index.column()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return column.text(row)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(_NUMBER) if column.numeric else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.tooltip(row) if column.tooltip is not None else None
        if role == Qt.ItemDataRole.FontRole and column.is_cost and row.cost is None:
            font = QFont()
            font.setItalic(True)
            return font
        if role == RowRole:
            return row
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Selectable, not editable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort by a column; unknown values sort after known ones when ascending. Selections follow their rows."""
        if not 0 <= column < len(self._columns):
            return
        key = self._columns[column].key
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        old_rows = [index.row() for index in before]
        order_of = sorted(
            range(len(self._rows)),
            key=lambda number: key(self._rows[number]),
            reverse=order == Qt.SortOrder.DescendingOrder,
        )
        new_position = {old: new for new, old in enumerate(order_of)}
        self._rows = [self._rows[number] for number in order_of]
        self.changePersistentIndexList(
            before, [self.index(new_position[row], index.column()) for row, index in zip(old_rows, before, strict=True)]
        )
        self.layoutChanged.emit()


def session_model(parent: QObject | None = None) -> CostRowsModel:
    """Sessions as rows (:data:`SESSION_COLUMNS`)."""
    return CostRowsModel(SESSION_COLUMNS, parent)


def model_model(parent: QObject | None = None) -> CostRowsModel:
    """Provider and model totals as rows (:data:`MODEL_COLUMNS`)."""
    return CostRowsModel(MODEL_COLUMNS, parent)


def period_model(parent: QObject | None = None) -> CostRowsModel:
    """Days or weeks as rows (:data:`PERIOD_COLUMNS`)."""
    return CostRowsModel(PERIOD_COLUMNS, parent)


COMPARISON_METRICS: tuple[tuple[str, Callable[[CostRow], str]], ...] = (
    ("Date", _date),
    ("Models", models_text),
    ("Cost", row_cost_text),
    ("Cost per run", cost_per_run_text),
    ("Runs answered", lambda r: f"{r.successful_runs:,} of {r.runs:,}"),
    ("Requests", lambda r: tokens_text(r.requests)),
    ("Input tokens", lambda r: tokens_text(r.usage.input)),
    ("Output tokens", lambda r: tokens_text(r.usage.output)),
    ("Cache read tokens", lambda r: tokens_text(r.usage.cache_read)),
    ("Cache write tokens", lambda r: tokens_text(r.usage.cache_write)),
    ("Cache hit rate", lambda r: rate_text(r.cache_hit_rate)),
    ("Cache saved", savings_text),
    ("Cost sources", sources_text),
    ("Requests without usage", lambda r: str(r.unknown_usage_requests)),
)
"""Rows of the side-by-side comparison (a what-if row follows the cost when a model is chosen)."""

WHAT_IF_AFTER = 2
"""The what-if row comes right after this metric (the cost)."""


def what_if_text(estimate: WhatIf) -> str:
    """``≈ $0.012 (estimate)``, with the requests it leaves out; ``no price`` when the model has none."""
    if estimate.estimate is None:
        return "no price"
    text = f"≈ {format_money(estimate.estimate)} (estimate)"
    if estimate.estimate_unknown_requests:
        text += f" + {estimate.estimate_unknown_requests} without usage"
    return text


class ComparisonModel(QAbstractTableModel):
    """Selected sessions side by side: one column per session, one row per metric, and "On <model>" with the
    what-if estimate when one is set."""

    def __init__(self, parent: QObject | None = None) -> None:
        """Empty until :meth:`set_sessions`."""
        super().__init__(parent)
        self._sessions: list[CostRow] = []
        self._what_if: list[WhatIf] = []
        self._what_if_label = ""

    def set_sessions(self, sessions: Sequence[CostRow]) -> None:
        """The sessions to compare, in column order (any what-if row is dropped)."""
        self.beginResetModel()
        self._sessions = list(sessions)
        self._what_if = []
        self.endResetModel()

    def set_what_if(self, label: str, estimates: Sequence[WhatIf]) -> None:
        """One estimate per compared session (in column order), shown in a row "On ``label``"."""
        self.beginResetModel()
        self._what_if_label = label
        self._what_if = list(estimates) if len(estimates) == len(self._sessions) else []
        self.endResetModel()

    def _metrics(self) -> int:
        return len(COMPARISON_METRICS) + (1 if self._what_if else 0)

    def _metric(self, row: int) -> int | None:
        """The index in :data:`COMPARISON_METRICS` of a table row, ``None`` for the what-if row (right after
        the cost)."""
        if not self._what_if or row <= WHAT_IF_AFTER:
            return row
        return None if row == WHAT_IF_AFTER + 1 else row - 1

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """One row per metric (none without sessions)."""
        return 0 if parent.isValid() or not self._sessions else self._metrics()

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """One column per session."""
        return 0 if parent.isValid() else len(self._sessions)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Session titles across, metric names down."""
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        if orientation == Qt.Orientation.Horizontal:
            if not 0 <= section < len(self._sessions):
                return None
            title = self._sessions[section].title or "(untitled session)"
            return title if role == Qt.ItemDataRole.ToolTipRole or len(title) <= 28 else title[:27] + "…"
        if not 0 <= section < self._metrics():
            return None
        metric = self._metric(section)
        return f"On {self._what_if_label}" if metric is None else COMPARISON_METRICS[metric][0]

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """A metric of a session; the what-if row's tooltip says where its rates come from."""
        if not index.isValid() or index.row() >= self.rowCount() or index.column() >= len(self._sessions):
            return None
        metric = self._metric(index.row())
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            if metric is None:
                return what_if_text(self._what_if[index.column()])
            return COMPARISON_METRICS[metric][1](self._sessions[index.column()])
        if role == Qt.ItemDataRole.ToolTipRole and metric is None:
            return self._what_if[index.column()].detail
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(_NUMBER)
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Selectable (to copy), not editable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren


def total_text(total: CostRow) -> str:
    """The summary line's total: ``≥ $1.20 + 3 unknown`` or ``$1.20`` (never $0 for unknown)."""
    return cost_text(total.cost, total.unknown_cost_requests)
