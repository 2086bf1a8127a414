"""The session index: known workspaces, one row per session file, cheap re-indexing, newest-first listing.

:func:`scan_workspace` looks at ``<workspace>/.tiny-agent/sessions/*.jsonl``: a file whose size and mtime match
its row is not read again; a new or changed file is reduced and its rows (session, requests, tool timings)
rewritten; rows of files that are gone are removed. A corrupt file is reported and skipped, never fatal.

The user's metadata of a session (:mod:`tiny_agent_core.session_meta`: a title of their own, pinned) is read from
its sidecar whenever the session is (re)indexed, so it survives a rebuild; :func:`set_session_meta` changes it
(sidecar first, then the row) without touching the session file.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from tiny_agent_core.errors import LedgerError, SessionCorruption, SessionError, SessionTooLargeError
from tiny_agent_core.fork import read_copies, read_origin
from tiny_agent_core.ledger import sidecar
from tiny_agent_core.ledger.extract import RequestFacts, SessionFacts, extract_session
from tiny_agent_core.ledger.repricing import refresh_prices, reprice_request, reprice_session
from tiny_agent_core.ledger.totals import decimal_from_text
from tiny_agent_core.ledger.transactions import transaction
from tiny_agent_core.session.store import read_session_file, session_workspace, sessions_directory
from tiny_agent_core.session_meta import SessionMeta, read_meta, write_meta
from tiny_agent_core.usage import Usage


@dataclass(frozen=True, slots=True)
class CorruptFile:
    """A session file the index skipped: its path and the reducer's code and line (``FILE_TOO_LARGE``, line 1, for a
    file over :data:`~tiny_agent_core.session.store.SESSION_FILE_MAX`)."""

    path: Path
    code: str
    line: int

    def as_json(self) -> dict[str, Any]:
        """``{"path", "code", "line"}``."""
        return {"path": str(self.path), "code": self.code, "line": self.line}


@dataclass(slots=True)
class ScanReport:
    """What one scan did."""

    indexed: int = 0
    """New or changed files read and (re)indexed."""
    unchanged: int = 0
    """Files skipped because their size and mtime matched the index."""
    removed: int = 0
    """Rows dropped because their file is gone (or became corrupt)."""
    corrupt: list[CorruptFile] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """A ``sessions`` row, as listed."""

    id: str
    workspace: Path
    path: Path
    title: str
    created_at: int
    updated_at: int
    provider: str
    model: str
    operation: str
    """'idle' | 'run' | 'compaction': the operation open when the file was indexed."""
    abort_requested: bool
    last_outcome: str | None
    facts: int
    usage: Usage
    """Sums of the known usage facts."""
    requests: int
    usage_unknown_requests: int
    """Requests without usage: their tokens are not in :attr:`usage`."""
    cost: Decimal | None
    """Sum of the known request costs; ``None`` when no request's cost is known."""
    cost_unknown_requests: int
    pinned: bool = False
    """The user pinned it (its metadata sidecar)."""
    origin_id: str | None = None
    """The session this one was forked from ("Re-run on…"), ``None`` when it is not a fork."""

    def as_json(self) -> dict[str, Any]:
        """The ``tiny-agent sessions --json`` element (cost as an exact decimal string or null)."""
        return {
            "id": self.id,
            "title": self.title,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "workspace": str(self.workspace),
            "path": str(self.path),
            "provider": self.provider,
            "model": self.model,
            "operation": self.operation,
            "abortRequested": self.abort_requested,
            "lastOutcome": self.last_outcome,
            "facts": self.facts,
            "usage": self.usage.as_dict(),
            "requests": self.requests,
            "usageUnknownRequests": self.usage_unknown_requests,
            "cost": None if self.cost is None else str(self.cost),
            "costUnknownRequests": self.cost_unknown_requests,
            "pinned": self.pinned,
            "originSessionId": self.origin_id,
        }


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def resolve_workspace(path: Path) -> Path:
    """The canonical form of a workspace path (absolute, symlinks resolved)."""
    return Path(os.path.realpath(path))


def add_workspace(conn: sqlite3.Connection, workspace: Path) -> int:
    """Remember a workspace folder (idempotent); returns its id."""
    resolved = str(resolve_workspace(workspace))
    conn.execute(
        "INSERT INTO workspaces (path, added_at) VALUES (?, ?) ON CONFLICT(path) DO NOTHING",
        (resolved, _now_ms()),
    )
    row = conn.execute("SELECT id FROM workspaces WHERE path = ?", (resolved,)).fetchone()
    return int(row[0])


def known_workspaces(conn: sqlite3.Connection) -> list[Path]:
    """Every workspace the index knows, in the order they were added."""
    return [Path(path) for (path,) in conn.execute("SELECT path FROM workspaces ORDER BY id")]


_SESSION_COLUMNS = (
    "id, workspace_id, path, title, created_at, updated_at, provider, model, operation, abort_requested, "
    "last_outcome, facts, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, requests, "
    "usage_unknown_requests, cost_total, cost_unknown_requests, file_size, file_mtime_ns, indexed_at, pinned, "
    "origin_session_id"
)
_DERIVED_SESSION = [
    name.strip()
    for name in _SESSION_COLUMNS.split(",")
    if name.strip() not in ("id", "cost_total", "cost_unknown_requests")
]

_REQUEST_COLUMNS = (
    "attempt_id",
    "session_id",
    "operation_id",
    "step_id",
    "attempt",
    "step_kind",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "stop_reason",
    "error_code",
    "outcome",
    "started_at",
    "finished_at",
    "http_status",
)
_UPSERT_REQUEST = (
    f"INSERT INTO requests ({', '.join(_REQUEST_COLUMNS)}) VALUES ({', '.join('?' * len(_REQUEST_COLUMNS))}) "
    "ON CONFLICT(attempt_id) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in _REQUEST_COLUMNS[1:-1])
    + ", http_status = coalesce(requests.http_status, excluded.http_status)"  # the live status, else the file's
)
_UPSERT_SESSION = (
    f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({', '.join('?' * 25)}) ON CONFLICT(id) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in _DERIVED_SESSION)
)


def _request_row(session_id: str, provider: str, request: RequestFacts) -> tuple[Any, ...]:
    tokens: tuple[int | None, ...] = (None, None, None, None)
    if request.usage is not None:
        u = request.usage
        tokens = (u.input, u.output, u.cache_read, u.cache_write)
    return (
        request.attempt_id,
        session_id,
        request.operation_id,
        request.step_id,
        request.attempt,
        request.step_kind,
        provider,
        request.model,
        *tokens,
        request.stop_reason,
        request.error_code,
        request.outcome,
        request.started_at,
        request.finished_at,
        request.http_status,
    )


def record_attempt(conn: sqlite3.Connection, session_id: str, request: RequestFacts) -> None:
    """Record (or update) one request of an indexed session as the agent commits it, without reading the file.

    The live path's O(1) alternative to :func:`index_session_file`: call it after committing a ``stepAttempt``
    (and again after its closing facts), then :func:`~tiny_agent_core.ledger.requests.record_live`. The session's
    token totals catch up at the next scan (the file changed); the request is priced and the session's request
    counts and cost are refreshed now.
    Raises ``LedgerError`` when the session is not indexed.
    """
    with transaction(conn):
        row = conn.execute("SELECT provider FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise LedgerError(f"Session {session_id} is not in the index; index its file first.")
        conn.execute(_UPSERT_REQUEST, _request_row(session_id, str(row[0]), request))
        reprice_request(conn, request.attempt_id)


def write_session(
    conn: sqlite3.Connection, workspace_id: int, path: Path, size: int, mtime_ns: int, facts: SessionFacts
) -> None:
    """Replace everything derivable about one session file (call inside a transaction).

    Live-only request columns and captures of attempts still in the file are kept, the cost side file's
    provider figures and locality are merged in, and every request is priced again; requests and tool timings
    that are no longer in the file are removed; the searchable text (``session_text``) is replaced. The user's
    title and pin come from the metadata sidecar (:func:`~tiny_agent_core.session_meta.read_meta`), a fork's
    origin from its origin sidecar (:func:`~tiny_agent_core.fork.read_origin`).
    """
    conn.execute("DELETE FROM sessions WHERE path = ? AND id <> ?", (str(path), facts.id))
    meta = read_meta(path)
    origin = read_origin(path)
    unknown_usage = sum(1 for request in facts.requests if request.usage is None)
    usage = facts.usage
    conn.execute(
        _UPSERT_SESSION,
        (
            facts.id,
            workspace_id,
            str(path),
            meta.title or facts.title,
            facts.created_at,
            facts.updated_at,
            facts.provider,
            facts.model,
            facts.operation,
            int(facts.abort_requested),
            facts.last_outcome,
            facts.facts,
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write,
            len(facts.requests),
            unknown_usage,
            None,
            0,
            size,
            mtime_ns,
            _now_ms(),
            int(meta.pinned),
            None if origin is None else origin.origin_session_id,
        ),
    )
    keep = {request.attempt_id for request in facts.requests}
    stale = [
        attempt_id
        for (attempt_id,) in conn.execute("SELECT attempt_id FROM requests WHERE session_id = ?", (facts.id,))
        if attempt_id not in keep
    ]
    conn.executemany("DELETE FROM requests WHERE attempt_id = ?", [(attempt_id,) for attempt_id in stale])
    conn.executemany(_UPSERT_REQUEST, [_request_row(facts.id, facts.provider, r) for r in facts.requests])
    kept = [(attempt_id, live) for attempt_id, live in sidecar.read(path).items() if attempt_id in keep]
    conn.executemany(
        "UPDATE requests SET provider_cost = coalesce(?, provider_cost), local = max(local, ?) WHERE attempt_id = ?",
        [
            (None if live.provider_cost is None else format(live.provider_cost, "f"), int(live.local), attempt_id)
            for attempt_id, live in kept
        ],
    )
    copies = read_copies(path)  # a fork's copies of its origin's requests (counted once, see ledger.costs)
    conn.execute("UPDATE requests SET copy_of = NULL WHERE session_id = ? AND copy_of IS NOT NULL", (facts.id,))
    conn.executemany(
        "UPDATE requests SET copy_of = ? WHERE attempt_id = ? AND session_id = ?",
        [(original, attempt_id, facts.id) for attempt_id, original in copies.items() if attempt_id in keep],
    )
    conn.execute(
        "INSERT INTO session_text (session_id, body) VALUES (?, ?) "
        "ON CONFLICT(session_id) DO UPDATE SET body = excluded.body WHERE body <> excluded.body",
        (facts.id, facts.text),
    )
    conn.execute("DELETE FROM tool_timings WHERE session_id = ?", (facts.id,))
    conn.executemany(
        "INSERT INTO tool_timings (tool_started_id, session_id, operation_id, step_id, tool_call_id, tool_name, "
        "started_at, finished_at, duration_ms, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                tool.tool_started_id,
                facts.id,
                tool.operation_id,
                tool.step_id,
                tool.tool_call_id,
                tool.tool_name,
                tool.started_at,
                tool.finished_at,
                None if tool.finished_at is None else tool.finished_at - tool.started_at,
                tool.outcome,
            )
            for tool in facts.tools
        ],
    )
    reprice_session(conn, facts.id)


def _skip(conn: sqlite3.Connection, corrupt: CorruptFile, report: ScanReport) -> None:
    """A file the index cannot hold: reported, and its old row (if any) removed."""
    report.corrupt.append(corrupt)
    report.removed += conn.execute("DELETE FROM sessions WHERE path = ?", (str(corrupt.path),)).rowcount


def _index_file(
    conn: sqlite3.Connection, workspace_id: int, path: Path, stat: os.stat_result, report: ScanReport
) -> None:
    try:
        data = read_session_file(path)
    except SessionTooLargeError:
        _skip(conn, CorruptFile(path, "FILE_TOO_LARGE", 1), report)
        return
    except (OSError, SessionError):
        return  # vanished, unreadable or no longer a regular file since the listing: the next scan sees it again
    try:
        facts = extract_session(data)
    except SessionCorruption as error:
        _skip(conn, CorruptFile(path, error.code, error.line), report)
        return
    other = conn.execute("SELECT path FROM sessions WHERE id = ? AND path <> ?", (facts.id, str(path))).fetchone()
    if other is not None and Path(other[0]).exists():
        report.corrupt.append(CorruptFile(path, "DUPLICATE_SESSION_ID", 1))
        return
    write_session(conn, workspace_id, path, stat.st_size, stat.st_mtime_ns, facts)
    report.indexed += 1


def scan_workspace(conn: sqlite3.Connection, workspace: Path, *, force: bool = False) -> ScanReport:
    """Bring a workspace's rows up to date with its session files (``force``: re-read every file), after bringing
    the stored costs in line with the settings' price overrides (:func:`~.repricing.refresh_prices`).

    A folder without ``.tiny-agent/sessions`` that the index does not know yet is not added to it; a workspace
    folder that is not there now (a disk not mounted, a folder renamed) is left as it was indexed, not emptied.
    """
    refresh_prices(conn)
    report = ScanReport()
    resolved = resolve_workspace(workspace)
    if not resolved.is_dir():
        return report
    folder = sessions_directory(resolved)
    known_row = conn.execute("SELECT id FROM workspaces WHERE path = ?", (str(resolved),)).fetchone()
    if known_row is None and not folder.is_dir():
        return report
    with transaction(conn):
        workspace_id = add_workspace(conn, resolved)
        known = {
            path: (size, mtime)
            for path, size, mtime in conn.execute(
                "SELECT path, file_size, file_mtime_ns FROM sessions WHERE workspace_id = ?", (workspace_id,)
            )
        }
        seen: set[str] = set()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            if not entry.name.endswith(".jsonl") or not entry.is_file(follow_symlinks=False):
                continue
            stat = entry.stat(follow_symlinks=False)
            seen.add(entry.path)
            if not force and known.get(entry.path) == (stat.st_size, stat.st_mtime_ns):
                report.unchanged += 1
                continue
            _index_file(conn, workspace_id, Path(entry.path), stat, report)
        gone = [path for path in known if path not in seen]
        conn.executemany("DELETE FROM sessions WHERE path = ?", [(path,) for path in gone])
        report.removed += len(gone)
        conn.execute("UPDATE workspaces SET last_scanned_at = ? WHERE id = ?", (_now_ms(), workspace_id))
    return report


def index_session_file(conn: sqlite3.Connection, path: Path, workspace: Path | None = None) -> SessionSummary:
    """(Re)index one session file now, e.g. right after the agent created or finished with it.

    ``workspace`` defaults to the folder holding ``.tiny-agent/sessions``. Raises ``SessionCorruption``.
    """
    path = Path(os.path.abspath(path))
    if workspace is None:
        workspace = session_workspace(path)
    with transaction(conn):
        workspace_id = add_workspace(conn, workspace)
        stat = path.stat()
        facts = extract_session(read_session_file(path))
        write_session(conn, workspace_id, path, stat.st_size, stat.st_mtime_ns, facts)
    summary = get_session(conn, facts.id)
    assert summary is not None
    return summary


_LIST_SQL = """
    SELECT s.id, w.path, s.path, s.title, s.created_at, s.updated_at, s.provider, s.model, s.operation,
           s.abort_requested, s.last_outcome, s.facts, s.input_tokens, s.output_tokens, s.cache_read_tokens,
           s.cache_write_tokens, s.requests, s.usage_unknown_requests, s.cost_total, s.cost_unknown_requests,
           s.pinned, s.origin_session_id
    FROM sessions AS s JOIN workspaces AS w ON w.id = s.workspace_id
"""


def _summary(row: tuple[Any, ...]) -> SessionSummary:
    return SessionSummary(
        id=row[0],
        workspace=Path(row[1]),
        path=Path(row[2]),
        title=row[3],
        created_at=row[4],
        updated_at=row[5],
        provider=row[6],
        model=row[7],
        operation=row[8],
        abort_requested=bool(row[9]),
        last_outcome=row[10],
        facts=row[11],
        usage=Usage(row[12], row[13], row[14], row[15]),
        requests=row[16],
        usage_unknown_requests=row[17],
        cost=None if row[18] is None else decimal_from_text(row[18]),
        cost_unknown_requests=row[19],
        pinned=bool(row[20]),
        origin_id=row[21],
    )


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionSummary | None:
    """One indexed session by id."""
    row = conn.execute(_LIST_SQL + " WHERE s.id = ?", (session_id,)).fetchone()
    return None if row is None else _summary(row)


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


SEARCH_MIN_CONTENT = 3
"""Shortest search text (characters, whitespace collapsed) also looked up in session content; shorter text
matches titles only (the content index is made of trigrams)."""


def _search_clause(text: str) -> tuple[str, list[Any]]:
    """SQL condition (and parameters) for :func:`list_sessions`' ``search``: title or content contains text."""
    collapsed = " ".join(text.split())
    title = "s.title LIKE ? ESCAPE '\\'"
    if len(collapsed) < SEARCH_MIN_CONTENT:
        return title, [_like_pattern(collapsed)]
    phrase = '"' + collapsed.replace('"', '""') + '"'
    content = (
        "s.id IN (SELECT t.session_id FROM session_text AS t WHERE t.id IN "
        "(SELECT rowid FROM session_text_fts WHERE session_text_fts MATCH ?))"
    )
    return f"({title} OR {content})", [_like_pattern(collapsed), phrase]


def list_sessions(
    conn: sqlite3.Connection,
    workspace: Path | None = None,
    *,
    title_contains: str | None = None,
    search: str | None = None,
    pinned: bool | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[SessionSummary]:
    """Indexed sessions, newest first (by creation time), optionally of one workspace or matching a title, only
    the pinned ones (``pinned=True``) or only the others (``pinned=False``).

    The title match is case-insensitive (ASCII) and literal (``%`` and ``_`` match themselves). ``search``
    (whitespace collapsed) matches a session whose title contains it or, for :data:`SEARCH_MIN_CONTENT` or more
    characters, whose content (:attr:`~tiny_agent_core.ledger.extract.SessionFacts.text`) contains it,
    case-insensitively, through the trigram full-text index.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if workspace is not None:
        row = conn.execute("SELECT id FROM workspaces WHERE path = ?", (str(resolve_workspace(workspace)),)).fetchone()
        if row is None:
            return []
        clauses.append("s.workspace_id = ?")
        params.append(row[0])
    if title_contains:
        clauses.append("s.title LIKE ? ESCAPE '\\'")
        params.append(_like_pattern(title_contains))
    if pinned is not None:
        clauses.append("s.pinned = ?")
        params.append(int(pinned))
    if search and search.strip():
        clause, search_params = _search_clause(search)
        clauses.append(clause)
        params += search_params
    sql = _LIST_SQL
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY s.created_at DESC, s.id DESC LIMIT ? OFFSET ?"
    params += [-1 if limit is None else limit, offset]
    return [_summary(row) for row in conn.execute(sql, params)]


def set_session_meta(conn: sqlite3.Connection, path: Path, meta: SessionMeta) -> SessionSummary:
    """Store the user's metadata of the session file ``path`` in its sidecar, then re-index the session so its row
    shows it (a cleared title is the first message again). The session file itself is only read.

    Raises ``OSError`` when the sidecar cannot be written, ``SessionCorruption`` for a corrupt session file.
    """
    write_meta(path, meta)
    return index_session_file(conn, path)


def forget_session(conn: sqlite3.Connection, session_id: str) -> bool:
    """Remove one session's rows from the index (its file was moved away); ``False`` when it was not indexed."""
    with transaction(conn):
        return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
