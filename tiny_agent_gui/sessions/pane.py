"""The left pane: search box, workspace filter, the lazily loaded session list and a "New session" button."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QLabel,
    QLineEdit,
    QListView,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.ledger import SessionSummary, known_workspaces
from tiny_agent_gui.sessions.delegate import SessionRowDelegate
from tiny_agent_gui.sessions.model import SessionListModel

SEARCH_DELAY_MS = 200
"""Typing pause after which the search runs."""

ALL_WORKSPACES = "All workspaces"


class SessionListPane(QWidget):
    """Sessions of one workspace or all, newest first, searchable over titles and content.

    Grouping by workspace is a filter above the list ("All workspaces" or one folder): with lazy loading a
    newest-first list stays one query per page, and each row names its workspace when all are shown.

    Signals: :attr:`session_activated` (a row was clicked, double-clicked or entered) and
    :attr:`new_session_requested` (the "New session" button, Alt+N). Ctrl+F (a window shortcut) focuses the
    search box; Down moves from it into the list; Escape clears it.
    """

    session_activated = Signal(object)
    """Emitted with the :class:`~tiny_agent_core.ledger.SessionSummary` of the row the user opened (may repeat)."""

    new_session_requested = Signal()
    """The user asked for a new session."""

    def __init__(self, conn: sqlite3.Connection, parent: QWidget | None = None) -> None:
        """``conn``: the index database, used on the GUI thread (the pane does not close it)."""
        super().__init__(parent)
        self.setAccessibleName("Sessions")
        self._conn = conn
        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText("Search sessions (Ctrl+F)")
        self.search_box.setAccessibleName("Search sessions")
        self.search_box.setAccessibleDescription("Filters the session list by title and content")
        self.search_box.setClearButtonEnabled(True)
        self.workspace_combo = QComboBox(self)
        self.workspace_combo.setAccessibleName("Workspace")
        self.workspace_combo.setToolTip("Show the sessions of one workspace, or of all")
        self.model = SessionListModel(conn, self)
        self.list_view = QListView(self)
        self.list_view.setAccessibleName("Session list")
        self.list_view.setModel(self.model)
        self.list_view.setItemDelegate(SessionRowDelegate(self.list_view))
        self.list_view.setUniformItemSizes(True)
        self.list_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list_view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.empty_label = QLabel(self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setAccessibleName("No sessions")
        self.new_button = QPushButton("&New session", self)
        self.new_button.setAccessibleName("New session")
        self.new_button.setToolTip("Start a new session (Alt+N)")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search_box)
        layout.addWidget(self.workspace_combo)
        layout.addWidget(self.list_view, 1)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.new_button)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self.apply_search)
        self.search_box.textChanged.connect(self._search_timer.start)
        self.search_box.returnPressed.connect(self.apply_search)
        self.workspace_combo.activated.connect(self._workspace_chosen)
        self.list_view.activated.connect(self._activate)
        self.list_view.clicked.connect(self._activate)
        self.new_button.clicked.connect(self.new_session_requested)
        self.model.modelReset.connect(self._update_empty)
        self.model.rowsInserted.connect(self._update_empty)
        self.model.rowsRemoved.connect(self._update_empty)
        find = QShortcut(QKeySequence(QKeySequence.StandardKey.Find), self, context=Qt.ShortcutContext.WindowShortcut)
        find.activated.connect(self.focus_search)
        clear = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.search_box, context=Qt.ShortcutContext.WidgetShortcut)
        clear.activated.connect(self.search_box.clear)
        down = QShortcut(QKeySequence(Qt.Key.Key_Down), self.search_box, context=Qt.ShortcutContext.WidgetShortcut)
        down.activated.connect(self._focus_list)

        self._times = QTimer(self)
        self._times.setInterval(60_000)
        self._times.timeout.connect(self.model.refresh_times)
        self._times.start()
        self._fill_workspaces()
        self._update_empty()

    # -- slots for the window ------------------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read the workspaces and the list from the index (after a scan, or when a session was created)."""
        self._fill_workspaces()
        self.model.reload()

    def refresh_session(self, session_id: str) -> None:
        """Update one session's row (cost, status, title); reloads the list when the session is not loaded yet."""
        if not self.model.refresh_session(session_id):
            self.reload()

    def set_running_sessions(self, session_ids: Iterable[str]) -> None:
        """The sessions this app is running now: their open operation shows as running, not interrupted."""
        self.model.set_running(session_ids)

    def set_workspace(self, workspace: Path | None) -> None:
        """Show one workspace's sessions (``None``: all)."""
        self._fill_workspaces()
        position = 0 if workspace is None else self.workspace_combo.findData(str(workspace))
        if position < 0:
            position = 0
        self.workspace_combo.setCurrentIndex(position)
        self._workspace_chosen(position)

    def select_session(self, session_id: str) -> bool:
        """Make a loaded session the current row (without emitting :attr:`session_activated`)."""
        row = self.model.row_of(session_id)
        if row is None:
            return False
        index = self.model.index(row)
        self.list_view.setCurrentIndex(index)
        self.list_view.scrollTo(index)
        return True

    def focus_search(self) -> None:
        """Focus the search box and select its text (Ctrl+F)."""
        self.search_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_box.selectAll()

    def apply_search(self) -> None:
        """Run the search box's text now (it also runs after a short typing pause)."""
        self._search_timer.stop()
        self.model.set_search(self.search_box.text().strip())

    # -- internals -----------------------------------------------------------------------------------------------

    def _fill_workspaces(self) -> None:
        current = self.workspace_combo.currentData()
        self.workspace_combo.blockSignals(True)
        self.workspace_combo.clear()
        self.workspace_combo.addItem(ALL_WORKSPACES, None)
        for path in known_workspaces(self._conn):
            self.workspace_combo.addItem(path.name or str(path), str(path))
            self.workspace_combo.setItemData(self.workspace_combo.count() - 1, str(path), Qt.ItemDataRole.ToolTipRole)
        position = self.workspace_combo.findData(current) if current is not None else 0
        self.workspace_combo.setCurrentIndex(max(position, 0))
        self.workspace_combo.blockSignals(False)

    def _workspace_chosen(self, position: int) -> None:
        data = self.workspace_combo.itemData(position)
        delegate = self.list_view.itemDelegate()
        if isinstance(delegate, SessionRowDelegate):
            delegate.show_workspace = data is None
        self.model.set_workspace(None if data is None else Path(data))
        self.list_view.viewport().update()

    def _activate(self, index: QModelIndex) -> None:
        if index.isValid():
            summary: SessionSummary = index.data(SessionListModel.SessionRole)
            self.session_activated.emit(summary)

    def _focus_list(self) -> None:
        self.list_view.setFocus(Qt.FocusReason.OtherFocusReason)
        if not self.list_view.currentIndex().isValid() and self.model.rowCount() > 0:
            self.list_view.setCurrentIndex(self.model.index(0))

    def _update_empty(self) -> None:
        empty = self.model.rowCount() == 0
        if self.model.search:
            self.empty_label.setText(f"No session matches “{self.model.search}”.")
        else:
            self.empty_label.setText("No sessions yet. Start one with “New session”.")
        self.empty_label.setVisible(empty)
        self.list_view.setVisible(not empty)
