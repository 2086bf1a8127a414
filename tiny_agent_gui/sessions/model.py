"""A thin, lazily filled list model over the session index (STYLE practice 10), in date groups.

Rows are the pinned sessions (all of them, at most :data:`PINNED_MAX`) and then the others, newest first, fetched a
page at a time. Each row knows its group — "Pinned", "Today", "Yesterday", "Previous 7 days", then one per month
("November 2026") — in local time (:func:`date_group`); the delegate paints a group's header above its first row,
so headers are never rows: they cannot be selected and the keyboard moves from session to session.
"""

from __future__ import annotations

import enum
import sqlite3
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import QAbstractListModel, QByteArray, QModelIndex, QObject, QPersistentModelIndex, Qt

from tiny_agent_core.ledger import SessionSummary, get_session, list_sessions
from tiny_agent_core.ledger.costs import cost_text
from tiny_agent_core.model_names import short_model_tag
from tiny_agent_core.timestamps import local_datetime
from tiny_agent_gui.cost.formatting import UNKNOWN_COST, format_money, local_time_text, relative_time

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

PINNED = "Pinned"
TODAY = "Today"
YESTERDAY = "Yesterday"
PREVIOUS_7_DAYS = "Previous 7 days"

PINNED_MAX = 500
"""Most pinned sessions listed (they are loaded at once, above the pages)."""


def short_cost_text(cost: Decimal | None, unknown_requests: int) -> str:
    """The cost in few characters, for a narrow row: ``$0.12``, ``≥ $0.12`` (some requests' costs unknown),
    ``$?`` (none known) — never an amount cut short."""
    if cost is None:
        return "$?"
    return f"≥ {format_money(cost)}" if unknown_requests else format_money(cost)


def date_group(created_at: int, now: int) -> str:
    """The date group of a session created at ``created_at`` (ms) seen at ``now`` (ms), by local calendar day:
    :data:`TODAY` (also for a clock that went back), :data:`YESTERDAY`, :data:`PREVIOUS_7_DAYS` (2–7 days ago), else
    the month, e.g. ``November 2026``."""
    created = local_datetime(created_at).date()
    days = (local_datetime(now).date() - created).days
    if days <= 0:
        return TODAY
    if days == 1:
        return YESTERDAY
    if days <= 7:
        return PREVIOUS_7_DAYS
    return f"{created:%B %Y}"


class SessionListModel(QAbstractListModel):
    """Indexed sessions, newest first, fetched page by page as the view scrolls (``canFetchMore``/``fetchMore``).

    Filters: one workspace (or all) and a search text over titles and content
    (:func:`tiny_agent_core.ledger.list_sessions` ``search``). Rows carry the :class:`SessionSummary` under
    :attr:`SessionRole`; the other custom roles hold display strings for the delegate: the model as a short tag
    (:func:`~tiny_agent_core.model_names.short_model_tag`), the group and whether the row starts it, and for a fork
    "re-run of <origin title>". Sessions being deleted (awaiting undo) are hidden (:meth:`hide`).
    """

    SessionRole = Qt.ItemDataRole.UserRole + 1
    StatusRole = Qt.ItemDataRole.UserRole + 2
    ModelNameRole = Qt.ItemDataRole.UserRole + 3
    CostTextRole = Qt.ItemDataRole.UserRole + 4
    RelativeTimeRole = Qt.ItemDataRole.UserRole + 5
    WorkspaceRole = Qt.ItemDataRole.UserRole + 6
    GroupRole = Qt.ItemDataRole.UserRole + 7
    GroupStartRole = Qt.ItemDataRole.UserRole + 8
    OriginRole = Qt.ItemDataRole.UserRole + 9
    ShortCostRole = Qt.ItemDataRole.UserRole + 10

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
        self._pinned = 0
        """Loaded pinned rows (they come first)."""
        self._groups: list[str] = []
        self._origins: dict[str, str] = {}
        """Origin session id → its title, for the forks loaded."""
        self._exhausted = False
        self._search = ""
        self._workspace: Path | None = None
        self._running: frozenset[str] = frozenset()
        self._hidden: set[str] = set()
        self._load_first()

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
        """Drop every loaded row and fetch the pinned sessions and the first page again."""
        self.beginResetModel()
        self._load_first()
        self.endResetModel()

    def hide(self, session_id: str) -> None:
        """Stop listing a session (it is being deleted; :meth:`unhide` brings it back)."""
        self._hidden.add(session_id)
        row = self._rows_by_id.get(session_id)
        if row is not None:
            self._remove(row)

    def unhide(self, session_id: str) -> None:
        """List a hidden session again (from the index, where it must be)."""
        self._hidden.discard(session_id)
        self.reload()

    def refresh_session(self, session_id: str) -> bool:
        """Re-read one loaded session's row (e.g. its cost changed); ``False`` when it is not loaded."""
        row = self._rows_by_id.get(session_id)
        if row is None:
            return False
        summary = get_session(self._conn, session_id)
        if summary is None:
            self._remove(row)
            return True
        if summary.pinned != self._rows[row].pinned:  # it moves to or from the top group
            self.reload()
            return True
        self._rows[row] = summary
        index = self.index(row)
        self.dataChanged.emit(index, index)
        return True

    def refresh_times(self) -> None:
        """Tell views the relative times (and, after midnight, the date groups) changed (call once a minute)."""
        if not self._rows:
            return
        groups = self._group_names(self._rows)
        if groups != self._groups:
            self.layoutAboutToBeChanged.emit()
            self._groups = groups
            self.layoutChanged.emit()
        self.dataChanged.emit(self.index(0), self.index(len(self._rows) - 1), [self.RelativeTimeRole])

    def summary(self, row: int) -> SessionSummary:
        """The session at ``row``."""
        return self._rows[row]

    def row_of(self, session_id: str) -> int | None:
        """The row of a loaded session, or ``None``."""
        return self._rows_by_id.get(session_id)

    def starts_group(self, row: int) -> bool:
        """Whether ``row`` is the first of its date group (its header is painted above it)."""
        return row == 0 or (0 < row < len(self._groups) and self._groups[row] != self._groups[row - 1])

    def status(self, summary: SessionSummary) -> SessionStatus:
        """The status mark of a session as this model shows it."""
        return status_of(summary, summary.id in self._running)

    # -- lazy loading --------------------------------------------------------------------------------------------

    def _list(self, *, pinned: bool, limit: int, offset: int = 0) -> list[SessionSummary]:
        return list_sessions(
            self._conn, self._workspace, search=self._search or None, pinned=pinned, limit=limit, offset=offset
        )

    def _load_first(self) -> None:
        """The pinned sessions and the first page of the others (no notifications: inside a reset)."""
        self._rows = []
        self._rows_by_id = {}
        self._groups = []
        self._origins = {}
        self._exhausted = False
        self._pinned = self._add([s for s in self._list(pinned=True, limit=PINNED_MAX) if s.id not in self._hidden])
        self._fetch_page(notify=False)

    def _fetch_page(self, *, notify: bool = True) -> None:
        page = self._list(pinned=False, limit=self._page_size, offset=len(self._rows) - self._pinned)
        if len(page) < self._page_size:
            self._exhausted = True
        # A session indexed meanwhile shifts the offsets: never show a row twice.
        fresh = [summary for summary in page if summary.id not in self._rows_by_id and summary.id not in self._hidden]
        if not fresh:
            return
        first = len(self._rows)
        if notify:
            self.beginInsertRows(QModelIndex(), first, first + len(fresh) - 1)
        self._add(fresh)
        if notify:
            self.endInsertRows()

    def _add(self, summaries: list[SessionSummary]) -> int:
        """Append loaded rows (their groups, and the titles of their forks' origins); returns how many."""
        for number, summary in enumerate(summaries, start=len(self._rows)):
            self._rows_by_id[summary.id] = number
        self._rows.extend(summaries)
        self._groups.extend(self._group_names(summaries))
        for summary in summaries:
            origin = summary.origin_id
            if origin is not None and origin not in self._origins:
                found = get_session(self._conn, origin)
                self._origins[origin] = (found.title or UNTITLED) if found is not None else "a deleted session"
        return len(summaries)

    def _remove(self, row: int) -> None:
        self.beginRemoveRows(QModelIndex(), row, row)
        if row < self._pinned:
            self._pinned -= 1
        del self._rows[row]
        del self._groups[row]
        self._rows_by_id = {s.id: i for i, s in enumerate(self._rows)}
        self.endRemoveRows()

    def _group_names(self, summaries: list[SessionSummary]) -> list[str]:
        now = self._clock()
        return [PINNED if s.pinned else date_group(s.created_at, now) for s in summaries]

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
            (self.GroupRole, b"group"),
            (self.GroupStartRole, b"groupStart"),
            (self.OriginRole, b"origin"),
            (self.ShortCostRole, b"shortCost"),
        ):
            names[int(role)] = QByteArray(name)
        return names

    _ROLE_VALUES: ClassVar[dict[int, Callable[[SessionListModel, int, SessionSummary], Any]]] = {
        Qt.ItemDataRole.DisplayRole: lambda model, row, summary: model._title(summary),
        SessionRole: lambda model, row, summary: summary,
        StatusRole: lambda model, row, summary: model.status(summary),
        ModelNameRole: lambda model, row, summary: short_model_tag(summary.model),
        CostTextRole: lambda model, row, summary: cost_text(
            summary.cost, summary.cost_unknown_requests, unknown=UNKNOWN_COST
        ),
        ShortCostRole: lambda model, row, summary: short_cost_text(summary.cost, summary.cost_unknown_requests),
        RelativeTimeRole: lambda model, row, summary: relative_time(summary.created_at, model._clock()),
        WorkspaceRole: lambda model, row, summary: summary.workspace.name or str(summary.workspace),
        GroupRole: lambda model, row, summary: model._groups[row],
        GroupStartRole: lambda model, row, summary: model.starts_group(row),
        OriginRole: lambda model, row, summary: model._origin_text(summary),
        Qt.ItemDataRole.ToolTipRole: lambda model, row, summary: model._tooltip(summary),
        Qt.ItemDataRole.AccessibleTextRole: lambda model, row, summary: model._spoken(summary),
    }
    """What :meth:`data` gives for each role it answers, from the model, the row and the row's summary."""

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Display strings and the summary of a row; ``None`` for other roles."""
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        value = self._ROLE_VALUES.get(role)
        if value is None:
            return None
        return value(self, index.row(), self._rows[index.row()])

    def _title(self, summary: SessionSummary) -> str:
        """The title shown: a re-run whose title is its origin's (the same first message) says what it re-ran."""
        title = summary.title or UNTITLED
        if summary.origin_id is not None and self._origins.get(summary.origin_id) == title:
            return self._origin_text(summary)
        return title

    def _origin_text(self, summary: SessionSummary) -> str:
        """``re-run of <origin title>`` for a fork, else ``""``."""
        if summary.origin_id is None:
            return ""
        return f"re-run of {self._origins.get(summary.origin_id, 'another session')}"

    def _spoken(self, summary: SessionSummary) -> str:
        parts = [self._title(summary)]
        status = self.status(summary)
        if status is not SessionStatus.NONE:
            parts.append(status.value)
        if summary.pinned:
            parts.append("pinned")
        if summary.origin_id is not None and parts[0] != self._origin_text(summary):
            parts.append(self._origin_text(summary))
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
            *([f"R{self._origin_text(summary)[1:]}"] if summary.origin_id is not None else []),
            f"Cost: {exact}",
            f"Requests: {summary.requests}",
            f"Started: {local_time_text(summary.created_at)}",
        ]
        if status is not SessionStatus.NONE:
            lines.append(f"Status: {status.value}")
        return "\n".join(lines)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Rows are enabled and selectable; nothing is editable."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
