"""Help › Keyboard Shortcuts: every menu action with its keys, and the keys the composer and panes understand."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QMenu,
    QMenuBar,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

__all__ = ["FIXED_KEYS", "ShortcutsDialog", "menu_shortcuts"]

FIXED_KEYS: tuple[tuple[str, str, str], ...] = (
    ("Composer", "Send the prompt", "Enter"),
    ("Composer", "New line", "Shift+Enter"),
    ("Composer", "Stop the running operation, or a waiting retry", "Esc"),
    ("Window", "Next / previous pane or control (left to right)", "Tab / Shift+Tab"),
    ("Transcript", "Expand or collapse the selected tool card", "Enter or Space"),
    ("Transcript", "Retry a failed operation (on its notice)", "Enter"),
    ("Transcript", "Copy the selected message", "Ctrl+C"),
    ("Transcript", "Actions of the selected message or tool call", "Menu"),
    ("Session list", "Rename the selected session", "F2"),
    ("Session list", "Move the selected session to the trash (Undo follows)", "Del"),
    ("Session list", "Actions of the selected session", "Menu or Shift+F10"),
    ("Model picker", "Filter / move / choose", "type / ↑↓ / Enter"),
    ("Compare", "Stop every run", "Esc"),
    ("Dialogs", "Close without saving", "Esc"),
)
"""Keys handled by widgets rather than menu actions: (where, what, keys)."""


def menu_shortcuts(menu_bar: QMenuBar) -> list[tuple[str, str, str]]:
    """``(menu, action, keys)`` for every action of every menu that has a shortcut, in menu order."""
    rows: list[tuple[str, str, str]] = []
    for top in menu_bar.actions():
        menu = top.menu()
        if not isinstance(menu, QMenu):
            continue
        for action in menu.actions():
            if not isinstance(action, QAction) or action.isSeparator():
                continue
            keys = " or ".join(
                key.toString(QKeySequence.SequenceFormat.NativeText) for key in action.shortcuts() if not key.isEmpty()
            )
            if keys:
                rows.append((top.text().replace("&", ""), action.text().replace("&", ""), keys))
    return rows


class ShortcutsDialog(QDialog):
    """A read-only table of shortcuts (built from the menus, so it never disagrees with them)."""

    def __init__(self, menu_bar: QMenuBar, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        rows = menu_shortcuts(menu_bar) + list(FIXED_KEYS)
        self.table = QTableWidget(len(rows), 3)
        self.table.setAccessibleName("Shortcuts")
        self.table.setHorizontalHeaderLabels(["Where", "Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.table.resizeRowsToContents()
        self.resize(640, 560)
