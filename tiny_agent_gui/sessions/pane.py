"""The left pane: search box, workspace filter, the lazily loaded session list and a "New session" button; the
actions on a session (context menu and keys) and importing one.

Actions on the current session — Rename (F2), Pin/Unpin, Delete (Del), Reveal file, Export as Markdown or as the
v2 file, Duplicate, Open in cost view — are in its context menu (right click, the Menu key, Shift+F10). Their file
work runs in worker threads (``asyncio.to_thread``) with an index connection of their own; the results come back
to the list. Deleting moves the session to the desktop trash (:mod:`tiny_agent_gui.sessions.trash`) and offers
Undo for :data:`UNDO_SECONDS`; only then is it dropped from the index (until then it is only hidden, so Undo
brings back everything the index knew). Messages and Undo show in a strip at the bottom of the pane.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tiny_agent_core.errors import SessionCorruption, TinyAgentError
from tiny_agent_core.export import ExportFormat, export_session, import_session
from tiny_agent_core.fork import fork_whole
from tiny_agent_core.ledger import SessionSummary, index_session_file, known_workspaces, opened
from tiny_agent_core.ledger.index import forget_session, set_session_meta
from tiny_agent_core.session_meta import SessionMeta, read_meta
from tiny_agent_gui.sessions.delegate import SessionRowDelegate
from tiny_agent_gui.sessions.model import SessionListModel
from tiny_agent_gui.sessions.trash import Trashed, move_to_trash, restore

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

UNDO_SECONDS = 10
"""How long a deleted session can be brought back with Undo."""

EXPORT_SUFFIXES: dict[ExportFormat, tuple[str, str]] = {
    "md": (".md", "Markdown (*.md)"),
    "jsonl": (".jsonl", "tiny-agent session v2 (*.jsonl)"),
}

SEARCH_DELAY_MS = 200
"""Typing pause after which the search runs."""

POINT_DELAY_MS = 150
"""How long the mouse rests on a row (or the keyboard stays on it) before :attr:`SessionListPane.session_pointed`."""

ALL_WORKSPACES = "All workspaces"


class SessionListPane(QWidget):
    """Sessions of one workspace or all, newest first, searchable over titles and content.

    Grouping by workspace is a filter above the list ("All workspaces" or one folder): with lazy loading a
    newest-first list stays one query per page, and each row names its workspace when all are shown.

    Signals: :attr:`session_activated` (a row was clicked, double-clicked or entered), :attr:`session_pointed`,
    :attr:`new_session_requested` (the "New session" button, Alt+N) and :attr:`cost_view_requested`. Ctrl+F (a
    window shortcut) focuses the search box; Down moves from it into the list; Escape clears it.

    The window sets :attr:`before_delete` to release a session it has open before it goes to the trash.
    """

    session_activated = Signal(object)
    """Emitted with the :class:`~tiny_agent_core.ledger.SessionSummary` of the row the user opened (may repeat)."""

    session_pointed = Signal(object)
    """The :class:`~tiny_agent_core.ledger.SessionSummary` of a row the mouse rested on or the keyboard moved to for
    :data:`POINT_DELAY_MS`: the user may open it next (the window reads it ahead)."""

    new_session_requested = Signal()
    """The user asked for a new session."""

    cost_view_requested = Signal(str)
    """"Open in cost view" on a session: its id."""

    operation_done = Signal()
    """A session action's file work finished (tests wait for it)."""

    def __init__(
        self, conn: sqlite3.Connection, parent: QWidget | None = None, *, clock: Callable[[], int] | None = None
    ) -> None:
        """``conn``: the index database, used on the GUI thread (the pane does not close it); ``clock``: now in ms,
        for the relative times and date groups (tests pin it)."""
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
        self.model = SessionListModel(conn, self, clock=clock)
        self.list_view = QListView(self)
        self.list_view.setAccessibleName("Session list")
        self.list_view.setModel(self.model)
        self.list_view.setItemDelegate(SessionRowDelegate(self.list_view))
        self.list_view.setUniformItemSizes(False)  # a group's first row also holds the group's header
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
        self.notice = QWidget(self)
        self.notice.setAccessibleName("Session list notice")
        self.notice_label = QLabel(self.notice)
        self.notice_label.setWordWrap(True)
        self.notice_label.setAccessibleName("Session list message")
        self.undo_button = QPushButton("&Undo", self.notice)
        self.undo_button.setAccessibleName("Undo delete")
        self.notice_close = QPushButton("×", self.notice)
        self.notice_close.setAccessibleName("Dismiss the message")
        self.notice_close.setFlat(True)
        notice_layout = QHBoxLayout(self.notice)
        notice_layout.setContentsMargins(0, 0, 0, 0)
        notice_layout.addWidget(self.notice_label, 1)
        notice_layout.addWidget(self.undo_button)
        notice_layout.addWidget(self.notice_close)
        self.notice.hide()
        self._running = False
        self.before_delete: Callable[[SessionSummary], str | None] = lambda _summary: None
        """Called before a session goes to the trash: ``None`` to go on, else why not (shown to the user)."""
        self.context_menu: QMenu | None = None
        self.rename_dialog: QInputDialog | None = None
        self.file_dialog: QFileDialog | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._trashed: Trashed | None = None
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.setInterval(UNDO_SECONDS * 1000)
        self._undo_timer.timeout.connect(self._forget_trashed)
        self.rename_action = self._action("&Rename…", QKeySequence(Qt.Key.Key_F2), self.rename_current)
        self.pin_action = self._action("&Pin", None, self.toggle_pin_current)
        self.delete_action = self._action("&Delete", QKeySequence(QKeySequence.StandardKey.Delete), self.delete_current)
        self.reveal_action = self._action("Re&veal File", None, self.reveal_current)
        self.export_md_action = self._action("Export as &Markdown…", None, lambda: self.export_current_dialog("md"))
        self.export_jsonl_action = self._action(
            "Export as &Session File (v2)…", None, lambda: self.export_current_dialog("jsonl")
        )
        self.duplicate_action = self._action("D&uplicate", None, self.duplicate_current)
        self.cost_action = self._action("Open in &Cost View", None, self._cost_view_current)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search_box)
        layout.addWidget(self.workspace_combo)
        layout.addWidget(self.list_view, 1)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.notice)
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
        self._pointed: QPersistentModelIndex | None = None
        self._point_timer = QTimer(self)
        self._point_timer.setSingleShot(True)
        self._point_timer.setInterval(POINT_DELAY_MS)
        self._point_timer.timeout.connect(self._emit_pointed)
        self.list_view.setMouseTracking(True)  # for ``entered``
        self.list_view.entered.connect(self._point)
        self.list_view.selectionModel().currentChanged.connect(lambda current, _previous: self._point(current))
        self.new_button.clicked.connect(self.new_session_requested)
        self.model.modelReset.connect(self._update_empty)
        self.model.rowsInserted.connect(self._update_empty)
        self.model.rowsRemoved.connect(self._update_empty)
        self.list_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list_view.customContextMenuRequested.connect(self._menu_requested)
        for keys in (QKeySequence(Qt.Key.Key_Menu), QKeySequence("Shift+F10")):
            menu_key = QShortcut(keys, self.list_view, context=Qt.ShortcutContext.WidgetShortcut)
            menu_key.activated.connect(self.open_context_menu)
        self.undo_button.clicked.connect(self.undo_delete)
        self.notice_close.clicked.connect(self._dismiss_notice)
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
        running = list(session_ids)
        self.model.set_running(running)
        self._running = bool(running)
        self._update_empty()

    def set_workspace(self, workspace: Path | None) -> None:
        """Show one workspace's sessions (``None``: all)."""
        self._fill_workspaces()
        position = 0 if workspace is None else self.workspace_combo.findData(str(workspace))
        if position < 0:
            position = 0
        self.workspace_combo.setCurrentIndex(position)
        self._workspace_chosen(position)

    def first_listed(self) -> SessionSummary | None:
        """The session at the top of the list (pinned ones come first, then the newest), or ``None``."""
        return self.model.summary(0) if self.model.rowCount() > 0 else None

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

    def _point(self, index: QModelIndex) -> None:
        self._pointed = QPersistentModelIndex(index)
        self._point_timer.start()

    def _emit_pointed(self) -> None:
        pointed = self._pointed
        if pointed is not None and pointed.isValid():  # the row may have gone meanwhile (a reload, a delete)
            self.session_pointed.emit(self.model.summary(pointed.row()))

    def _focus_list(self) -> None:
        self.list_view.setFocus(Qt.FocusReason.OtherFocusReason)
        if not self.list_view.currentIndex().isValid() and self.model.rowCount() > 0:
            self.list_view.setCurrentIndex(self.model.index(0))

    def _update_empty(self) -> None:
        # A session being started is listed once its first prompt is saved; never "No sessions yet" beside it.
        empty = self.model.rowCount() == 0 and not self._running
        if self.model.search:
            self.empty_label.setText(f"No session matches “{self.model.search}”.")
        else:
            self.empty_label.setText("No sessions yet. Start one with “New session”.")
        self.empty_label.setVisible(empty)
        self.list_view.setVisible(not empty)

    # -- session actions -----------------------------------------------------------------------------------------

    def _action(self, text: str, keys: QKeySequence | None, slot: Callable[[], object]) -> QAction:
        """An action on the current session: in the context menu, and on its keys while the list has focus."""
        action = QAction(text, self.list_view)
        if keys is not None:
            action.setShortcut(keys)
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        action.triggered.connect(slot)
        self.list_view.addAction(action)
        return action

    def current_summary(self) -> SessionSummary | None:
        """The session of the current row, if any."""
        index = self.list_view.currentIndex()
        return index.data(SessionListModel.SessionRole) if index.isValid() else None

    def open_context_menu(self) -> None:
        """Open the current session's context menu under its row (the Menu key, Shift+F10)."""
        index = self.list_view.currentIndex()
        if not index.isValid() and self.model.rowCount() > 0:
            index = self.model.index(0)
            self.list_view.setCurrentIndex(index)
        if index.isValid():
            rect = self.list_view.visualRect(index)
            self._popup(self.list_view.viewport().mapToGlobal(rect.bottomLeft()))

    def _menu_requested(self, position: QPoint) -> None:
        index = self.list_view.indexAt(position)
        if index.isValid():
            self.list_view.setCurrentIndex(index)
            self._popup(self.list_view.viewport().mapToGlobal(position))

    def _popup(self, where: QPoint) -> None:
        summary = self.current_summary()
        if summary is None:
            return
        self.pin_action.setText("Un&pin" if summary.pinned else "&Pin")
        menu = QMenu(self)
        menu.setAccessibleName("Session actions")
        menu.addActions([self.rename_action, self.pin_action])
        menu.addSeparator()
        menu.addActions([self.duplicate_action, self.export_md_action, self.export_jsonl_action])
        menu.addSeparator()
        menu.addActions([self.reveal_action, self.cost_action])
        menu.addSeparator()
        menu.addAction(self.delete_action)
        menu.aboutToHide.connect(menu.deleteLater)
        self.context_menu = menu
        menu.popup(where)

    def show_message(self, text: str, *, undo: bool = False) -> None:
        """Show ``text`` at the bottom of the pane (with Undo for a delete)."""
        self.notice_label.setText(text)
        self.undo_button.setVisible(undo)
        self.notice.show()

    def _dismiss_notice(self) -> None:
        self.notice.hide()
        if self._trashed is not None:  # dismissing the offer to undo: the delete is final now
            self._undo_timer.stop()
            self._forget_trashed()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("session action failed", exc_info=task.exception())
            self.show_message(f"That did not work: {task.exception()}")
        self.operation_done.emit()

    async def wait_idle(self) -> None:
        """Wait until every session action's file work has finished (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _in_worker(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` with an index connection of its own in a worker thread."""
        database = Path(self._conn.execute("PRAGMA database_list").fetchone()[2])

        def run() -> _T:
            with opened(database) as conn:
                return work(conn)

        return await asyncio.to_thread(run)

    # Rename and pin ---------------------------------------------------------------------------------------------

    def rename_current(self) -> None:
        """Ask for a new title of the current session (F2); an empty one gives it back its first message."""
        summary = self.current_summary()
        if summary is None:
            return
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename Session")
        dialog.setLabelText("Title (empty: the first message):")
        dialog.setTextValue(summary.title)
        dialog.textValueSelected.connect(lambda text: self._spawn(self.rename(summary, text)))
        dialog.finished.connect(dialog.deleteLater)
        self.rename_dialog = dialog
        dialog.open()

    async def rename(self, summary: SessionSummary, title: str) -> None:
        """Give ``summary`` the title ``title`` (its metadata sidecar; the session file is not touched)."""
        await self._set_meta(summary, lambda meta: replace(meta, title=title))

    def toggle_pin_current(self) -> None:
        """Pin the current session (it moves to the "Pinned" group on top), or unpin it."""
        summary = self.current_summary()
        if summary is not None:
            self._spawn(self._set_meta(summary, lambda meta: replace(meta, pinned=not summary.pinned)))

    async def _set_meta(self, summary: SessionSummary, change: Callable[[SessionMeta], SessionMeta]) -> None:
        try:
            updated = await self._in_worker(
                lambda conn: set_session_meta(conn, summary.path, change(read_meta(summary.path)))
            )
        except (OSError, TinyAgentError) as error:
            self.show_message(f"“{summary.title}” could not be changed: {error}")
            return
        self.refresh_session(updated.id)
        self.select_session(updated.id)

    # Delete and undo --------------------------------------------------------------------------------------------

    def delete_current(self) -> None:
        """Move the current session to the desktop trash (Del), with Undo for :data:`UNDO_SECONDS`."""
        summary = self.current_summary()
        if summary is None:
            return
        refusal = self.before_delete(summary)
        if refusal is not None:
            self.show_message(refusal)
            return
        self._spawn(self.delete(summary))

    async def delete(self, summary: SessionSummary) -> None:
        """Move ``summary``'s files to the trash and hide it; it leaves the index when Undo is no longer offered."""
        if self._trashed is not None:  # one Undo at a time: the previous delete becomes final
            self._undo_timer.stop()
            await self._forget(self._trashed)
        try:
            trashed = await asyncio.to_thread(move_to_trash, summary.id, summary.path)
        except OSError as error:
            self.show_message(str(error))
            return
        self._trashed = trashed
        self.model.hide(summary.id)
        self.show_message(f"Moved “{summary.title or 'the session'}” to the trash.", undo=True)
        self._undo_timer.start()

    def undo_delete(self) -> None:
        """Bring the last deleted session back from the trash (the Undo button)."""
        trashed = self._trashed
        if trashed is None:
            return
        self._trashed = None
        self._undo_timer.stop()
        self._spawn(self._restore(trashed))

    async def _restore(self, trashed: Trashed) -> None:
        session_file = trashed.moved[0][0]
        try:
            await asyncio.to_thread(restore, trashed)
            await self._in_worker(lambda conn: index_session_file(conn, session_file))
        except (OSError, TinyAgentError) as error:
            self.show_message(f"The session could not be brought back: {error}")
            return
        self.model.unhide(trashed.session_id)
        self.select_session(trashed.session_id)
        self.show_message("The session is back.")

    def _forget_trashed(self) -> None:
        trashed = self._trashed
        if trashed is not None:
            self._spawn(self._forget(trashed))

    async def _forget(self, trashed: Trashed) -> None:
        if self._trashed is trashed:
            self._trashed = None
            self.undo_button.hide()
        await self._in_worker(lambda conn: forget_session(conn, trashed.session_id))

    # Reveal, export, duplicate, cost view -------------------------------------------------------------------------

    def reveal_current(self) -> None:
        """Show the folder holding the current session's file in the file manager."""
        summary = self.current_summary()
        if summary is not None and not QDesktopServices.openUrl(QUrl.fromLocalFile(str(summary.path.parent))):
            self.show_message(f"No file manager could be opened. The file is {summary.path}")

    def export_current_dialog(self, fmt: ExportFormat) -> None:
        """Ask where to export the current session as ``fmt``, then export it."""
        summary = self.current_summary()
        if summary is None:
            return
        suffix, name_filter = EXPORT_SUFFIXES[fmt]
        stem = "".join(c if c.isalnum() or c in " -_" else "_" for c in (summary.title or summary.id))[:60].strip()
        dialog = QFileDialog(self, "Export Session", str(Path.home() / f"{stem or summary.id}{suffix}"), name_filter)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(suffix.lstrip("."))
        dialog.fileSelected.connect(lambda path: self._spawn(self.export(summary, fmt, Path(path))))
        dialog.finished.connect(dialog.deleteLater)
        self.file_dialog = dialog
        dialog.open()

    async def export(self, summary: SessionSummary, fmt: ExportFormat, target: Path) -> None:
        """Export ``summary`` to ``target`` as ``fmt`` (Markdown with costs from the index, or the v2 file)."""
        try:
            await self._in_worker(lambda conn: export_session(summary.path, target, fmt, conn))
        except (OSError, TinyAgentError) as error:
            self.show_message(f"The session was not exported: {error}")
            return
        self.show_message(f"Exported to {target}")

    def duplicate_current(self) -> None:
        """Copy the current session as a new session (every id new) and select the copy."""
        summary = self.current_summary()
        if summary is not None:
            self._spawn(self.duplicate(summary))

    async def duplicate(self, summary: SessionSummary) -> None:
        """Copy ``summary`` as a new session, index it and select it."""

        def work(conn: sqlite3.Connection) -> SessionSummary:
            store = fork_whole(summary.path)
            store.close()
            return index_session_file(conn, store.path)

        try:
            copy = await self._in_worker(work)
        except (OSError, TinyAgentError) as error:
            self.show_message(f"The session was not duplicated: {error}")
            return
        self.reload()
        self.select_session(copy.id)
        self.show_message(f"Duplicated “{summary.title or 'the session'}”.")

    def _cost_view_current(self) -> None:
        summary = self.current_summary()
        if summary is not None:
            self.cost_view_requested.emit(summary.id)

    # Import -------------------------------------------------------------------------------------------------------

    def import_dialog(self, workspace: Path) -> None:
        """Ask for a v2 session file and import it into ``workspace`` (File → Import Session…)."""
        dialog = QFileDialog(self, "Import Session", str(Path.home()), "tiny-agent session v2 (*.jsonl);;All files (*)")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda path: self._spawn(self.import_file(Path(path), workspace)))
        dialog.finished.connect(dialog.deleteLater)
        self.file_dialog = dialog
        dialog.open()

    async def import_file(self, source: Path, workspace: Path) -> None:
        """Import ``source`` into ``workspace``: checked by the strict reducer first; a rejected file is explained
        and nothing is written."""
        try:
            imported = await self._in_worker(lambda conn: import_session(source, workspace, conn))
        except SessionCorruption as error:
            detail = "" if str(error) == error.code else f": {error}"
            self.show_message(
                f"{source.name} was not imported: it is not a valid session file ({error.code} at line "
                f"{error.line}{detail}). Nothing was written."
            )
            return
        except (OSError, TinyAgentError) as error:
            self.show_message(f"{source.name} was not imported: {error}")
            return
        self.reload()
        self.select_session(imported.session_id)
        note = " as a copy (that session is here already)" if imported.copied_as_new else ""
        self.show_message(f"Imported {source.name}{note}.")
