"""A thin, lazily filled list model over the session index (STYLE practice 10)."""

from __future__ import annotations

import enum
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractListModel, QByteArray, QModelIndex, QObject, QPersistentModelIndex, Qt

from tiny_agent_core.ledger import SessionSummary, get_session, list_sessions
from tiny_agent_core.ledger.costs import cost_text
from tiny_agent_gui.cost.formatting import UNKNOWN_COST, local_datetime, relative_time

ModelIndex = QModelIndex | QPersistentModelIndex


class SessionStatus(enum.Enum):
    """The mark a session row shows."""

    NONE = ""
    RUNNING = "running"
    """An operation is open and this app is running it."""
    INTERRUPTED = "interrupted"
    """An operation is open in the file and nobody is running it: it needs recovery."""
    FAILED = "failed"
    """The last operation failed."""
    ABORTED = "aborted"
    """The last operation was aborted."""


def status_of(summary: SessionSummary, running: bool) -> SessionStatus:
    """The status mark of an indexed session; ``running`` says whether this app is running it now."""
    if summary.operation != "idle":
        return SessionStatus.RUNNING if running else SessionStatus.INTERRUPTED
    if summary.last_outcome == "failed":
        return SessionStatus.FAILED
    if summary.last_outcome == "aborted":
        return SessionStatus.ABORTED
    return SessionStatus.NONE


UNTITLED = "(untitled session)"
"""Shown for a session without a user message yet."""


class SessionListModel(QAbstractListModel):
    """Indexed sessions, newest first, fetched page by page as the view scrolls (``canFetchMore``/``fetchMore``).

    Filters: one workspace (or all) and a search text over titles and content
    (:func:`tiny_agent_core.ledger.list_sessions` ``search``). Rows carry the :class:`SessionSummary` under
    :attr:`SessionRole`; the other custom roles hold display strings for the delegate.
    """

    SessionRole = Qt.ItemDataRole.UserRole + 1
    StatusRole = Qt.ItemDataRole.UserRole + 2
    ModelNameRole = Qt.ItemDataRole.UserRole + 3
    CostTextRole = Qt.ItemDataRole.UserRole + 4
    RelativeTimeRole = Qt.ItemDataRole.UserRole + 5
    WorkspaceRole = Qt.ItemDataRole.UserRole + 6

    PAGE_SIZE = 200
    """Rows fetched per page."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        parent: QObject | None = None,
        *,
        page_size: int = PAGE_SIZE,
        clock: Callable[[], int] | None = None,
    ) -> None:
        """``conn``: the index database (used on the GUI thread); ``clock``: now in ms (tests pin it)."""
        super().__init__(parent)
        self._conn = conn
        self._page_size = page_size
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._rows: list[SessionSummary] = []
        self._rows_by_id: dict[str, int] = {}
        self._exhausted = False
        self._search = ""
        self._workspace: Path | None = None
        self._running: frozenset[str] = frozenset()
        self._fetch_page()

    # -- filters and refresh -------------------------------------------------------------------------------------

    @property
    def search(self) -> str:
        """The current search text ('' = none)."""
        return self._search

    @property
    def workspace(self) -> Path | None:
        """The workspace shown (``None`` = all)."""
        return self._workspace

    def set_search(self, text: str) -> None:
        """Show only sessions whose title or content contains ``text`` (reloads from the first page)."""
        if text != self._search:
            self._search = text
            self.reload()

    def set_workspace(self, workspace: Path | None) -> None:
        """Show one workspace's sessions, or all (``None``)."""
        if workspace != self._workspace:
            self._workspace = workspace
            self.reload()

    def set_running(self, session_ids: Iterable[str]) -> None:
        """The sessions this app is running now (their open operation is *running*, not *interrupted*)."""
        running = frozenset(session_ids)
        changed = running ^ self._running
        self._running = running
        for session_id in changed:
            row = self._rows_by_id.get(session_id)
            if row is not None:
                index = self.index(row)
                self.dataChanged.emit(index, index)

    def reload(self) -> None:
        """Drop every loaded row and fetch the first page again."""
        self.beginResetModel()
        self._rows = []
        self._rows_by_id = {}
        self._exhausted = False
        self._fetch_page(notify=False)
        self.endResetModel()

    def refresh_session(self, session_id: str) -> bool:
        """Re-read one loaded session's row (e.g. its cost changed); ``False`` when it is not loaded."""
        row = self._rows_by_id.get(session_id)
        if row is None:
            return False
        summary = get_session(self._conn, session_id)
        if summary is None:
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._rows[row]
            self._rows_by_id = {s.id: i for i, s in enumerate(self._rows)}
            self.endRemoveRows()
            return True
        self._rows[row] = summary
        index = self.index(row)
        self.dataChanged.emit(index, index)
        return True

    def refresh_times(self) -> None:
        """Tell views the relative times changed (call once a minute)."""
        if self._rows:
            self.dataChanged.emit(self.index(0), self.index(len(self._rows) - 1), [self.RelativeTimeRole])

    def summary(self, row: int) -> SessionSummary:
        """The session at ``row``."""
        return self._rows[row]

    def row_of(self, session_id: str) -> int | None:
        """The row of a loaded session, or ``None``."""
        return self._rows_by_id.get(session_id)

    def status(self, summary: SessionSummary) -> SessionStatus:
        """The status mark of a session as this model shows it."""
        return status_of(summary, summary.id in self._running)

    # -- lazy loading --------------------------------------------------------------------------------------------

    def _fetch_page(self, *, notify: bool = True) -> None:
        page = list_sessions(
            self._conn,
            self._workspace,
            search=self._search or None,
            limit=self._page_size,
            offset=len(self._rows),
        )
        if len(page) < self._page_size:
            self._exhausted = True
        # A session indexed meanwhile shifts the offsets: never show a row twice.
        fresh = [summary for summary in page if summary.id not in self._rows_by_id]
        if not fresh:
            return
        first = len(self._rows)
        if notify:
            self.beginInsertRows(QModelIndex(), first, first + len(fresh) - 1)
        for number, summary in enumerate(fresh, start=first):
            self._rows_by_id[summary.id] = number
        self._rows.extend(fresh)
        if notify:
            self.endInsertRows()

    def canFetchMore(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008  (Qt signature)
        """More sessions may be in the index beyond the loaded rows."""
        return not parent.isValid() and not self._exhausted

    def fetchMore(self, parent: ModelIndex = QModelIndex()) -> None:  # noqa: B008
        """Load the next page."""
        if not parent.isValid() and not self._exhausted:
            self._fetch_page()

    # -- QAbstractListModel --------------------------------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        """Loaded rows (0 under any valid parent: it is a flat list)."""
        return 0 if parent.isValid() else len(self._rows)

    def roleNames(self) -> dict[int, QByteArray]:
        """Qt role names, including the custom ones."""
        names = dict(super().roleNames())
        for role, name in (
            (self.SessionRole, b"session"),
            (self.StatusRole, b"status"),
            (self.ModelNameRole, b"model"),
            (self.CostTextRole, b"costText"),
            (self.RelativeTimeRole, b"relativeTime"),
            (self.WorkspaceRole, b"workspace"),
        ):
            names[int(role)] = QByteArray(name)
        return names

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Display strings and the summary of a row; ``None`` for other roles."""
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        summary = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return summary.title or UNTITLED
        if role == self.SessionRole:
            return summary
        if role == self.StatusRole:
            return self.status(summary)
        if role == self.ModelNameRole:
            return summary.model
        if role == self.CostTextRole:
            return cost_text(summary.cost, summary.cost_unknown_requests, unknown=UNKNOWN_COST)
        if role == self.RelativeTimeRole:
            return relative_time(summary.created_at, self._clock())
        if role == self.WorkspaceRole:
            return summary.workspace.name or str(summary.workspace)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(summary)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return self._spoken(summary)
        return None

    def _spoken(self, summary: SessionSummary) -> str:
        parts = [summary.title or UNTITLED]
        status = self.status(summary)
        if status is not SessionStatus.NONE:
            parts.append(status.value)
        parts += [
            summary.model,
            cost_text(summary.cost, summary.cost_unknown_requests, unknown=UNKNOWN_COST),
            relative_time(summary.created_at, self._clock()),
        ]
        return ", ".join(parts)

    def _tooltip(self, summary: SessionSummary) -> str:
        exact = "unknown" if summary.cost is None else f"${summary.cost}"
        if summary.cost is not None and summary.cost_unknown_requests:
            exact += f" (known requests only; {summary.cost_unknown_requests} unknown)"
        status = self.status(summary)
        lines = [
            summary.title or UNTITLED,
            f"Workspace: {summary.workspace}",
            f"Model: {summary.provider} · {summary.model}",
            f"Cost: {exact}",
            f"Requests: {summary.requests}",
            f"Started: {local_datetime(summary.created_at)}",
        ]
        if status is not SessionStatus.NONE:
            lines.append(f"Status: {status.value}")
        return "\n".join(lines)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Rows are enabled and selectable; nothing is editable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
