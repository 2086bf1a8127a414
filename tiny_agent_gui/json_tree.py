"""A JSON value as a collapsible tree (keys and values), for the inspector's raw wire bodies.

The value comes parsed from the core (:func:`~tiny_agent_core.wire_view.capture_values`); this only lays it out.
Objects and arrays are branches that say how much they hold; the first level is expanded. A tree stops after
:data:`NODE_LIMIT` nodes with a row saying how many were left out, so a 256 KB body stays quick to show.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeView, QWidget

from tiny_agent_gui.status_bar import plural

NODE_LIMIT = 20_000
"""Nodes shown at most."""


class JsonTree(QTreeView):
    """A read-only tree of one JSON value; arrow keys expand and collapse."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        """An empty tree, announced as ``name``."""
        super().__init__(parent)
        self.setAccessibleName(name)
        self._model = QStandardItemModel(self)
        self._model.setHorizontalHeaderLabels(["Key", "Value"])
        self.setModel(self._model)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.header().setStretchLastSection(True)
        self._budget = 0

    def set_value(self, value: Any) -> None:
        """Show ``value`` (``None``: nothing)."""
        self._model.removeRows(0, self._model.rowCount())
        if value is None:
            return
        self._budget = NODE_LIMIT
        root = self._model.invisibleRootItem()
        if isinstance(value, dict | list):
            self._children(root, value)
        else:
            root.appendRow([QStandardItem("value"), QStandardItem(_scalar(value))])
        if self._budget < 0:
            root.appendRow(
                [QStandardItem("…"), QStandardItem(f"more not shown (the tree stops at {NODE_LIMIT:,} nodes)")]
            )
        self.expandToDepth(0)

    def _children(self, parent: QStandardItem, value: dict[str, Any] | list[Any]) -> None:
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in pairs:
            self._budget -= 1
            if self._budget < 0:
                continue
            key_item = QStandardItem(str(key))
            if isinstance(child, dict):
                summary = f"{{{plural(len(child), 'key')}}}"
            elif isinstance(child, list):
                summary = f"[{plural(len(child), 'item')}]"
            else:
                summary = _scalar(child)
            value_item = QStandardItem(summary)
            value_item.setToolTip(summary if len(summary) <= 2000 else summary[:2000] + "…")
            parent.appendRow([key_item, value_item])
            if isinstance(child, dict | list):
                self._children(key_item, child)


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
