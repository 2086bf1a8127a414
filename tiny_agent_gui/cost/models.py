"""Thin table models over the core's cost rows: sessions, models, and a side-by-side comparison."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from tiny_agent_core.ledger.costs import ModelCostRow, SessionCostRow
from tiny_agent_gui.cost.formatting import NOT_APPLICABLE, cost_text, format_money, rate_text, tokens_text

ModelIndex = QModelIndex | QPersistentModelIndex
RowT = TypeVar("RowT", SessionCostRow, ModelCostRow)

RowRole = Qt.ItemDataRole.UserRole + 1
"""The core row object (:class:`SessionCostRow` / :class:`ModelCostRow`) of a table row."""

_NUMBER = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


def _per_run_text(row: SessionCostRow) -> str:
    per_run = row.cost_per_run
    if per_run is None:
        return NOT_APPLICABLE if row.runs == 0 or row.requests == 0 else "unknown"
    return format_money(per_run) if row.cost_complete else f"≥ {format_money(per_run)}"


def _unknown_text(unknown_cost: int, unknown_usage: int) -> str:
    if unknown_usage:
        return f"{unknown_cost} cost, {unknown_usage} usage"
    return str(unknown_cost)


def _sort_number(value: Decimal | float | int | None) -> tuple[bool, Decimal | float | int]:
    return (value is None, 0 if value is None else value)


@dataclass(frozen=True)
class Column(Generic[RowT]):
    """One table column: header, display text, sort key, and whether it is a number."""

    header: str
    text: Callable[[RowT], str]
    key: Callable[[RowT], Any]
    numeric: bool = True
    exact: Callable[[RowT], str] | None = None
    """Tooltip with the exact value, if it differs from the display."""


def _exact_cost(cost: Decimal | None, unknown_requests: int) -> str:
    if cost is None:
        return "Cost unknown: no request of it has a known cost"
    text = f"${cost:f} exactly"
    if unknown_requests:
        text += f"; {unknown_requests} request(s) of unknown cost are not included"
    return text


SESSION_COLUMNS: tuple[Column[SessionCostRow], ...] = (
    Column("Title", lambda r: r.title or "(untitled session)", lambda r: r.title.casefold(), numeric=False),
    Column("Models", lambda r: ", ".join(r.models) or NOT_APPLICABLE, lambda r: r.models, numeric=False),
    Column("Input", lambda r: tokens_text(r.usage.input), lambda r: r.usage.input),
    Column("Output", lambda r: tokens_text(r.usage.output), lambda r: r.usage.output),
    Column("Cache read", lambda r: tokens_text(r.usage.cache_read), lambda r: r.usage.cache_read),
    Column("Cache write", lambda r: tokens_text(r.usage.cache_write), lambda r: r.usage.cache_write),
    Column("Cache hit", lambda r: rate_text(r.cache_hit_rate), lambda r: _sort_number(r.cache_hit_rate)),
    Column(
        "Cost",
        lambda r: cost_text(r.cost, r.unknown_cost_requests, unknown="unknown"),
        lambda r: _sort_number(r.cost),
        exact=lambda r: _exact_cost(r.cost, r.unknown_cost_requests),
    ),
    Column("Cost / run", _per_run_text, lambda r: _sort_number(r.cost_per_run)),
    Column(
        "Unknown",
        lambda r: _unknown_text(r.unknown_cost_requests, r.unknown_usage_requests),
        lambda r: (r.unknown_cost_requests, r.unknown_usage_requests),
    ),
)
"""Columns of the sessions table."""

MODEL_COLUMNS: tuple[Column[ModelCostRow], ...] = (
    Column("Model", lambda r: f"{r.provider} · {r.model}", lambda r: (r.provider, r.model), numeric=False),
    Column("Sessions", lambda r: tokens_text(r.sessions), lambda r: r.sessions),
    Column("Requests", lambda r: tokens_text(r.requests), lambda r: r.requests),
    Column("Input", lambda r: tokens_text(r.usage.input), lambda r: r.usage.input),
    Column("Output", lambda r: tokens_text(r.usage.output), lambda r: r.usage.output),
    Column("Cache read", lambda r: tokens_text(r.usage.cache_read), lambda r: r.usage.cache_read),
    Column("Cache write", lambda r: tokens_text(r.usage.cache_write), lambda r: r.usage.cache_write),
    Column("Cache hit", lambda r: rate_text(r.cache_hit_rate), lambda r: _sort_number(r.cache_hit_rate)),
    Column(
        "Cost",
        lambda r: cost_text(r.cost, r.unknown_cost_requests, unknown="unknown"),
        lambda r: _sort_number(r.cost),
        exact=lambda r: _exact_cost(r.cost, r.unknown_cost_requests),
    ),
    Column(
        "Unknown",
        lambda r: _unknown_text(r.unknown_cost_requests, r.unknown_usage_requests),
        lambda r: (r.unknown_cost_requests, r.unknown_usage_requests),
    ),
)
"""Columns of the per-model table."""


class CostRowsModel(QAbstractTableModel, Generic[RowT]):
    """A sortable table over a list of core cost rows; the row object is under :data:`RowRole`."""

    def __init__(self, columns: Sequence[Column[RowT]], parent: QObject | None = None) -> None:
        """``columns``: :data:`SESSION_COLUMNS` or :data:`MODEL_COLUMNS`."""
        super().__init__(parent)
        self._columns: tuple[Column[RowT], ...] = tuple(columns)
        self._rows: list[RowT] = []

    def set_rows(self, rows: Sequence[RowT]) -> None:
        """Replace every row (in the order given)."""
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rows(self) -> list[RowT]:
        """The rows in their current (sorted) order."""
        return list(self._rows)

    def row(self, number: int) -> RowT:
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
        """Display text, alignment, the exact cost as a tooltip, italics for unknown costs, the row object."""
        if not index.isValid() or index.row() >= len(self._rows) or index.column() >= len(self._columns):
            return None
        row = self._rows[index.row()]
        column = self._columns[index.column()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return column.text(row)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(_NUMBER) if column.numeric else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.exact(row) if column.exact is not None else column.text(row)
        if role == Qt.ItemDataRole.FontRole and column.exact is not None and row.cost is None:
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


class SessionCostModel(CostRowsModel[SessionCostRow]):
    """Sessions as rows (:data:`SESSION_COLUMNS`)."""

    def __init__(self, parent: QObject | None = None) -> None:
        """An empty table; fill it with :meth:`set_rows`."""
        super().__init__(SESSION_COLUMNS, parent)


class ModelCostModel(CostRowsModel[ModelCostRow]):
    """Provider and model totals as rows (:data:`MODEL_COLUMNS`)."""

    def __init__(self, parent: QObject | None = None) -> None:
        """An empty table; fill it with :meth:`set_rows`."""
        super().__init__(MODEL_COLUMNS, parent)


COMPARISON_METRICS: tuple[tuple[str, Callable[[SessionCostRow], str]], ...] = (
    ("Models", lambda r: ", ".join(r.models) or NOT_APPLICABLE),
    ("Requests", lambda r: tokens_text(r.requests)),
    ("Runs", lambda r: tokens_text(r.runs)),
    ("Input tokens", lambda r: tokens_text(r.usage.input)),
    ("Output tokens", lambda r: tokens_text(r.usage.output)),
    ("Cache read tokens", lambda r: tokens_text(r.usage.cache_read)),
    ("Cache write tokens", lambda r: tokens_text(r.usage.cache_write)),
    ("Cache hit rate", lambda r: rate_text(r.cache_hit_rate)),
    ("Cost", lambda r: cost_text(r.cost, r.unknown_cost_requests, unknown="unknown")),
    ("Cost per run", _per_run_text),
    ("Requests of unknown cost", lambda r: str(r.unknown_cost_requests)),
    ("Requests without usage", lambda r: str(r.unknown_usage_requests)),
)
"""Rows of the side-by-side comparison."""


class ComparisonModel(QAbstractTableModel):
    """Selected sessions side by side: one column per session, one row per metric."""

    def __init__(self, parent: QObject | None = None) -> None:
        """Empty until :meth:`set_sessions`."""
        super().__init__(parent)
        self._sessions: list[SessionCostRow] = []

    def set_sessions(self, sessions: Sequence[SessionCostRow]) -> None:
        """The sessions to compare, in column order."""
        self.beginResetModel()
        self._sessions = list(sessions)
        self.endResetModel()

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """One row per metric (none without sessions)."""
        return 0 if parent.isValid() or not self._sessions else len(COMPARISON_METRICS)

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
        return COMPARISON_METRICS[section][0] if 0 <= section < len(COMPARISON_METRICS) else None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """A metric of a session."""
        if not index.isValid() or index.row() >= self.rowCount() or index.column() >= len(self._sessions):
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return COMPARISON_METRICS[index.row()][1](self._sessions[index.column()])
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(_NUMBER)
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Selectable (to copy), not editable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
