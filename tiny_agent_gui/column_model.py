"""A flat table model with fixed column titles, the base of the picker's and the compare view's tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

ModelIndex = QModelIndex | QPersistentModelIndex


class ColumnModel(QAbstractTableModel):
    """Rows under fixed ``columns``; a subclass says how many rows (:meth:`row_count`) and implements ``data``."""

    def __init__(self, columns: Sequence[str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = tuple(columns)

    def row_count(self) -> int:
        """How many rows are shown."""
        raise NotImplementedError

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        """:meth:`row_count` at the top level."""
        return 0 if parent.isValid() else self.row_count()

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """One per column title."""
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """The column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section]
        return None
