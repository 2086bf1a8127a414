"""Append-only, named schema migrations of the index and ledger database (STYLE practice 7).

Each migration is a function ``mNNN_<name>(conn)`` registered with :func:`migration`, applied once, in order,
inside its own ``BEGIN IMMEDIATE`` transaction, and recorded in ``_migrations(name, applied_at)``. Never edit or
reorder a released migration: append a new one.

``PRAGMA user_version`` holds ``major << 16 | minor`` of the schema the database was last written with. A
database whose *major* is newer than :data:`SCHEMA_MAJOR` is refused with :class:`LedgerVersionError` before
anything is written (:func:`~tiny_agent_core.ledger.database.connect` then moves it aside and rebuilds a new one
from the session files); a newer *minor* means compatible additions by a newer app and is accepted. Bump the
major only when an older app could no longer read or write the database correctly.

Schema (all times are integer milliseconds since the Unix epoch, UTC; money is ``TEXT`` holding a
``decimal.Decimal`` string, never a float; ``NULL`` token or cost columns mean *unknown*, never zero):

``workspaces``
    ``id`` INTEGER PK; ``path`` TEXT UNIQUE, the resolved folder; ``added_at``; ``last_scanned_at`` (NULL =
    never scanned).
``sessions`` (one row per valid session file; derivable from the JSONL, except the cost columns which are
    recomputed from ``requests``)
    ``id`` TEXT PK, the header's session UUIDv7; ``workspace_id`` FK → workspaces (cascade); ``path`` TEXT UNIQUE,
    the absolute file path; ``title``, the first user message with whitespace collapsed, at most 80 characters (''
    before the first message); ``created_at`` (header ``createdAt``); ``updated_at`` (last fact timestamp, else
    ``created_at``); ``provider`` (header); ``model`` (the last step's configuration model, else the header's);
    ``operation`` 'idle' | 'run' | 'compaction', the open operation when the file was indexed (a non-idle session
    that nobody has open needs recovery); ``abort_requested`` 0/1 for that operation; ``last_outcome`` 'completed' |
    'aborted' | 'failed' of the last finished run (compactions aside) or NULL; ``facts``, the number of facts;
    ``input_tokens`` / ``output_tokens`` / ``cache_read_tokens`` / ``cache_write_tokens``, the sums of every usage
    fact (model attempts and tools), so known usage only; ``requests``, the number of physical model requests (step
    attempts); ``usage_unknown_requests``, how many of them have no usage fact (their tokens are not in the sums);
    ``cost_total`` TEXT Decimal, the sum of the known request costs, NULL when no request has a known cost (it is
    '0' only for a session without requests); ``cost_unknown_requests``, how many requests have no known cost;
    ``file_size`` / ``file_mtime_ns``, the file's stat when indexed (an unchanged file is not re-read);
    ``indexed_at``; ``pinned`` 0/1 (m005: from the session's metadata sidecar, :mod:`tiny_agent_core.session_meta`,
    whose title, when set, is also the ``title``); ``origin_session_id`` (m005: the session a fork was cut from,
    from its origin sidecar, :func:`tiny_agent_core.fork.read_origin`; NULL when it is not a fork).
``requests`` (one row per physical model request; keyed by the ``stepAttempt`` attempt id)
    Derivable from the JSONL (rewritten by every re-index and rebuild): ``attempt_id`` TEXT PK; ``session_id``
    FK → sessions (cascade); ``operation_id``; ``step_id``; ``attempt`` 1 | 2; ``step_kind`` 'assistant' |
    'compaction'; ``provider`` (header); ``model`` (the attempt's configuration snapshot); the four token
    columns (NULL = no usage fact for this attempt = unknown; several usage facts are summed); ``stop_reason``
    ('stop' | 'toolUse' | 'length' for a settled assistant step, NULL otherwise); ``error_code`` (the
    ``stepFailed`` code, e.g. 'model_error', 'aborted'); ``outcome`` 'open' | 'settled' | 'failed' |
    'superseded' (attempt 1 replaced by attempt 2); ``started_at`` (``stepAttempt`` timestamp);
    ``finished_at`` (timestamp of the closing fact, NULL while open).
    Priced at every (re-)index (m004, :mod:`tiny_agent_core.ledger.repricing`): ``cost`` TEXT Decimal (NULL =
    unknown); ``cost_source`` 'provider' | 'price_table' | 'override' | 'not_billed' | 'local' (NULL exactly when
    ``cost`` is NULL; 'not_billed' and 'local' have cost '0'); ``price_data_version`` (the price table's data
    version when ``cost_source`` is 'price_table'); ``cache_savings`` TEXT Decimal (m004: what the cache reads
    saved against uncached input at the same model's rates; '0' without cache reads; NULL when those rates are
    unknown).
    Live-only (written by the agent as the request happens, kept across re-index and rebuild while the attempt
    id still exists in the file; ``provider_cost`` and ``local`` also in the session's cost side file, see
    :mod:`tiny_agent_core.ledger.sidecar`, so they survive a deleted index): ``provider_cost`` TEXT Decimal (m004:
    the provider's own figure, e.g. OpenRouter ``usage.cost``); ``local`` 0/1 (m004: the request went to a
    server on this machine or the local network); ``response_model`` (the model the provider says answered);
    ``latency_ms`` (request sent → response complete); ``ttft_ms`` (request sent → first token);
    ``http_status`` (also derived, m004, from a ``stepFailed`` message ``HTTP <status>: …``); ``error_kind`` (the
    :class:`~tiny_agent_core.errors.ProviderError` ``kind``); ``dialect_repairs`` (JSON array text of the seam's
    repairs, NULL = none recorded); ``dropped_fields`` (m003: JSON array text of the provider-only fields the
    seam dropped, e.g. ``message.reasoning``; NULL = not recorded).
    ``copy_of`` (m006, derivable: from the session's copies sidecar, :func:`tiny_agent_core.fork.read_copies`): the
    attempt id of the request this row copies (a fork or a duplicate holds copies of its origin's requests; the
    cost reports count a copy only when the row it copies is gone); NULL for a request the session made.
``raw_captures`` (live-only)
    ``id`` INTEGER PK; ``attempt_id`` FK → requests (cascade); ``captured_at``; ``body``, the redacted JSON
    text of the exchange (request body, status, kept headers, response body or SSE text; no credentials), at
    most the capture cap; when the payload was larger, ``body`` is a JSON object ``{"truncated": true,
    "originalSize": n, "prefix": "<text>"}`` and ``truncated`` is 1; ``original_size``, the redacted payload's
    size in UTF-8 bytes; ``pruned`` 0/1 (m007: only the newest
    :data:`~tiny_agent_core.ledger.requests.CAPTURES_KEPT` captures keep their body; an older one's ``body`` is
    ``{"pruned": true, "note": "<why, for people>", "originalSize": n, "capturedAt": ms}``). The partial index
    ``raw_captures_whole`` lists the captures not pruned, so the rule counts and finds them without reading a body.
``tool_timings`` (derivable: ``toolStarted`` → its result entry)
    ``tool_started_id`` TEXT PK; ``session_id`` FK → sessions (cascade); ``operation_id``; ``step_id``;
    ``tool_call_id``; ``tool_name``; ``started_at``; ``finished_at`` / ``duration_ms`` (NULL while pending);
    ``outcome`` 'success' | 'error' | 'interrupted' (NULL while pending).
``session_text`` (derivable, m002: the searchable content of a session)
    ``id`` INTEGER PK (stable rowid of the full-text index); ``session_id`` TEXT UNIQUE FK → sessions (cascade);
    ``body``, the text of the user and assistant messages and the tool calls' names and arguments, in order,
    whitespace collapsed, one message per line, at most :data:`~tiny_agent_core.ledger.extract.CONTENT_MAX`
    characters.
``pricing_inputs`` (m004: one row, what the stored costs were priced with)
    ``id`` 1; ``overrides`` JSON text of the user's price overrides (``[[provider, model, input, output,
    cache_read, cache_write], …]``, rates as decimal strings or null), compared with the settings before a cost
    is read and re-applied when they changed.
``session_text_fts`` (m002)
    An FTS5 index over ``session_text.body`` (external content, ``trigram`` tokenizer, case-insensitive), kept
    in step by triggers: a quoted phrase query of three or more characters finds every body containing it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable

from tiny_agent_core.errors import LedgerError, LedgerVersionError

SCHEMA_MAJOR = 1
"""Incompatible schema generation; a database with a larger major is refused."""

SCHEMA_MINOR = 6
"""Compatible revision within the major; a larger minor from a newer app is accepted (1: ``session_text``;
2: ``requests.dropped_fields``; 3: recomputable costs; 4: ``sessions.pinned`` and ``origin_session_id``;
5: ``requests.copy_of``; 6: ``raw_captures.pruned``)."""

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []
"""Every migration in the order it is applied. Append only."""

_NAME = re.compile(r"^m(\d{3})_[a-z0-9_]+$")


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its name must be ``m<NNN>_<what>`` with NNN the next number."""
    match = _NAME.match(fn.__name__)
    if match is None or int(match.group(1)) != len(MIGRATIONS) + 1:
        raise ValueError(f"migration {fn.__name__!r} must be named m{len(MIGRATIONS) + 1:03d}_<what>")
    MIGRATIONS.append(fn)
    return fn


def user_version() -> int:
    """The ``PRAGMA user_version`` this app writes."""
    return SCHEMA_MAJOR << 16 | SCHEMA_MINOR


def _execute_all(conn: sqlite3.Connection, statements: list[str]) -> None:
    # Not executescript(): it would COMMIT the migration's transaction first.
    for statement in statements:
        conn.execute(statement)


@migration
def m001_initial(conn: sqlite3.Connection) -> None:
    """Workspaces, sessions, requests, raw captures and tool timings, with their listing indexes."""
    _execute_all(
        conn,
        [
            """
            CREATE TABLE workspaces (
                id INTEGER PRIMARY KEY,
                path TEXT NOT NULL UNIQUE,
                added_at INTEGER NOT NULL,
                last_scanned_at INTEGER
            )
            """,
            """
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                workspace_id INTEGER NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
                path TEXT NOT NULL UNIQUE,
                title TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                operation TEXT NOT NULL CHECK (operation IN ('idle', 'run', 'compaction')),
                abort_requested INTEGER NOT NULL CHECK (abort_requested IN (0, 1)),
                last_outcome TEXT CHECK (last_outcome IN ('completed', 'aborted', 'failed')),
                facts INTEGER NOT NULL,
                input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                cache_read_tokens INTEGER NOT NULL,
                cache_write_tokens INTEGER NOT NULL,
                requests INTEGER NOT NULL,
                usage_unknown_requests INTEGER NOT NULL,
                cost_total TEXT,
                cost_unknown_requests INTEGER NOT NULL,
                file_size INTEGER NOT NULL,
                file_mtime_ns INTEGER NOT NULL,
                indexed_at INTEGER NOT NULL
            )
            """,
            "CREATE INDEX sessions_by_workspace_newest ON sessions (workspace_id, created_at DESC, id DESC)",
            "CREATE INDEX sessions_newest ON sessions (created_at DESC, id DESC)",
            "CREATE INDEX sessions_by_title ON sessions (title COLLATE NOCASE)",
            """
            CREATE TABLE requests (
                attempt_id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                operation_id TEXT NOT NULL,
                step_id TEXT NOT NULL,
                attempt INTEGER NOT NULL CHECK (attempt IN (1, 2)),
                step_kind TEXT NOT NULL CHECK (step_kind IN ('assistant', 'compaction')),
                provider TEXT NOT NULL,
                model TEXT NOT NULL,
                input_tokens INTEGER,
                output_tokens INTEGER,
                cache_read_tokens INTEGER,
                cache_write_tokens INTEGER,
                stop_reason TEXT,
                error_code TEXT,
                outcome TEXT NOT NULL CHECK (outcome IN ('open', 'settled', 'failed', 'superseded')),
                started_at INTEGER NOT NULL,
                finished_at INTEGER,
                cost TEXT,
                cost_source TEXT CHECK (cost_source IN ('provider', 'price_table', 'override')),
                price_data_version TEXT,
                response_model TEXT,
                latency_ms INTEGER,
                ttft_ms INTEGER,
                http_status INTEGER,
                error_kind TEXT,
                dialect_repairs TEXT,
                CHECK ((cost IS NULL) = (cost_source IS NULL)),
                CHECK ((input_tokens IS NULL) = (output_tokens IS NULL)
                       AND (input_tokens IS NULL) = (cache_read_tokens IS NULL)
                       AND (input_tokens IS NULL) = (cache_write_tokens IS NULL))
            )
            """,
            "CREATE INDEX requests_by_session ON requests (session_id, started_at)",
            "CREATE INDEX requests_by_model ON requests (model, started_at)",
            """
            CREATE TABLE raw_captures (
                id INTEGER PRIMARY KEY,
                attempt_id TEXT NOT NULL REFERENCES requests(attempt_id) ON DELETE CASCADE,
                captured_at INTEGER NOT NULL,
                body TEXT NOT NULL,
                truncated INTEGER NOT NULL CHECK (truncated IN (0, 1)),
                original_size INTEGER NOT NULL
            )
            """,
            "CREATE INDEX raw_captures_by_attempt ON raw_captures (attempt_id)",
            """
            CREATE TABLE tool_timings (
                tool_started_id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                operation_id TEXT NOT NULL,
                step_id TEXT NOT NULL,
                tool_call_id TEXT NOT NULL,
                tool_name TEXT NOT NULL,
                started_at INTEGER NOT NULL,
                finished_at INTEGER,
                duration_ms INTEGER,
                outcome TEXT CHECK (outcome IN ('success', 'error', 'interrupted'))
            )
            """,
            "CREATE INDEX tool_timings_by_session ON tool_timings (session_id, started_at)",
            "CREATE INDEX tool_timings_by_name ON tool_timings (tool_name)",
        ],
    )


@migration
def m002_session_text(conn: sqlite3.Connection) -> None:
    """Searchable session content (``session_text`` + its trigram FTS5 index); sessions indexed before are re-read.

    Existing rows get their stat columns invalidated (``file_size = -1``) so the next scan re-reads each file
    once and fills in its text; everything else in the row is kept.
    """
    _execute_all(
        conn,
        [
            """
            CREATE TABLE session_text (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL UNIQUE REFERENCES sessions(id) ON DELETE CASCADE,
                body TEXT NOT NULL
            )
            """,
            """
            CREATE VIRTUAL TABLE session_text_fts USING fts5(
                body, content = 'session_text', content_rowid = 'id', tokenize = 'trigram'
            )
            """,
            """
            CREATE TRIGGER session_text_inserted AFTER INSERT ON session_text BEGIN
                INSERT INTO session_text_fts (rowid, body) VALUES (new.id, new.body);
            END
            """,
            """
            CREATE TRIGGER session_text_deleted AFTER DELETE ON session_text BEGIN
                INSERT INTO session_text_fts (session_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
            END
            """,
            """
            CREATE TRIGGER session_text_updated AFTER UPDATE ON session_text BEGIN
                INSERT INTO session_text_fts (session_text_fts, rowid, body) VALUES ('delete', old.id, old.body);
                INSERT INTO session_text_fts (rowid, body) VALUES (new.id, new.body);
            END
            """,
            "UPDATE sessions SET file_size = -1",
        ],
    )


@migration
def m003_dropped_fields(conn: sqlite3.Connection) -> None:
    """``requests.dropped_fields``: what the normalization seam removed from each response, for the inspector."""
    _execute_all(conn, ["ALTER TABLE requests ADD COLUMN dropped_fields TEXT"])


_REQUESTS_V4 = """
    CREATE TABLE requests (
        attempt_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        operation_id TEXT NOT NULL,
        step_id TEXT NOT NULL,
        attempt INTEGER NOT NULL CHECK (attempt IN (1, 2)),
        step_kind TEXT NOT NULL CHECK (step_kind IN ('assistant', 'compaction')),
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cache_read_tokens INTEGER,
        cache_write_tokens INTEGER,
        stop_reason TEXT,
        error_code TEXT,
        outcome TEXT NOT NULL CHECK (outcome IN ('open', 'settled', 'failed', 'superseded')),
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        cost TEXT,
        cost_source TEXT CHECK (cost_source IN ('provider', 'price_table', 'override', 'not_billed', 'local')),
        price_data_version TEXT,
        response_model TEXT,
        latency_ms INTEGER,
        ttft_ms INTEGER,
        http_status INTEGER,
        error_kind TEXT,
        dialect_repairs TEXT,
        dropped_fields TEXT,
        provider_cost TEXT,
        local INTEGER NOT NULL DEFAULT 0 CHECK (local IN (0, 1)),
        cache_savings TEXT,
        CHECK ((cost IS NULL) = (cost_source IS NULL)),
        CHECK ((input_tokens IS NULL) = (output_tokens IS NULL)
               AND (input_tokens IS NULL) = (cache_read_tokens IS NULL)
               AND (input_tokens IS NULL) = (cache_write_tokens IS NULL))
    )
"""


@migration
def m004_recomputable_cost(conn: sqlite3.Connection) -> None:
    """Costs priced at every index from the session files (new sources ``not_billed`` and ``local``), the provider's
    own figure and locality kept apart, cache savings, and ``pricing_inputs``; every session is re-read once.

    SQLite cannot change a CHECK constraint in place, so ``requests`` is rebuilt; ``raw_captures`` references it,
    so its rows are set aside and put back (dropping ``requests`` would cascade into them). A provider-sourced
    cost becomes ``provider_cost``; every other cost is recomputed by the next scan (``file_size = -1``).
    """
    columns = (
        "attempt_id, session_id, operation_id, step_id, attempt, step_kind, provider, model, input_tokens, "
        "output_tokens, cache_read_tokens, cache_write_tokens, stop_reason, error_code, outcome, started_at, "
        "finished_at, cost, cost_source, price_data_version, response_model, latency_ms, ttft_ms, http_status, "
        "error_kind, dialect_repairs, dropped_fields"
    )
    _execute_all(
        conn,
        [
            "CREATE TEMP TABLE raw_captures_kept AS SELECT * FROM raw_captures",
            "DROP TABLE raw_captures",
            "ALTER TABLE requests RENAME TO requests_v3",
            _REQUESTS_V4,
            f"INSERT INTO requests ({columns}, provider_cost) SELECT {columns}, "
            "CASE WHEN cost_source = 'provider' THEN cost END FROM requests_v3",
            "DROP TABLE requests_v3",
            "CREATE INDEX requests_by_session ON requests (session_id, started_at)",
            "CREATE INDEX requests_by_model ON requests (model, started_at)",
            "CREATE INDEX requests_by_time ON requests (started_at)",
            """
            CREATE TABLE raw_captures (
                id INTEGER PRIMARY KEY,
                attempt_id TEXT NOT NULL REFERENCES requests(attempt_id) ON DELETE CASCADE,
                captured_at INTEGER NOT NULL,
                body TEXT NOT NULL,
                truncated INTEGER NOT NULL CHECK (truncated IN (0, 1)),
                original_size INTEGER NOT NULL
            )
            """,
            "INSERT INTO raw_captures SELECT * FROM raw_captures_kept",
            "DROP TABLE raw_captures_kept",
            "CREATE INDEX raw_captures_by_attempt ON raw_captures (attempt_id)",
            "CREATE TABLE pricing_inputs (id INTEGER PRIMARY KEY CHECK (id = 1), overrides TEXT NOT NULL)",
            "INSERT INTO pricing_inputs (id, overrides) VALUES (1, '[]')",
            "UPDATE sessions SET file_size = -1",
        ],
    )


@migration
def m005_session_meta(conn: sqlite3.Connection) -> None:
    """``sessions.pinned`` (the user pinned the session: its metadata sidecar says so) and
    ``sessions.origin_session_id`` (a fork's origin: its origin sidecar says so)."""
    _execute_all(
        conn,
        [
            "ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1))",
            "ALTER TABLE sessions ADD COLUMN origin_session_id TEXT",
        ],
    )


@migration
def m006_request_copies(conn: sqlite3.Connection) -> None:
    """``requests.copy_of``: the request a fork's (or a duplicate's) request copies, so it is counted once."""
    _execute_all(conn, ["ALTER TABLE requests ADD COLUMN copy_of TEXT"])


@migration
def m007_capture_retention(conn: sqlite3.Connection) -> None:
    """``raw_captures.pruned`` and the partial index ``raw_captures_whole`` of the captures that still have their
    body, for the retention rule (:data:`~tiny_agent_core.ledger.requests.CAPTURES_KEPT`). Existing captures stay
    whole here (no body is rewritten by a migration); the rule prunes the excess a bounded batch per new capture."""
    _execute_all(
        conn,
        [
            "ALTER TABLE raw_captures ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0 CHECK (pruned IN (0, 1))",
            "CREATE INDEX raw_captures_whole ON raw_captures (id) WHERE pruned = 0",
        ],
    )


def _read_user_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def check_version(conn: sqlite3.Connection) -> None:
    """Refuse a database written by an app with a newer schema major (raises :class:`LedgerVersionError`)."""
    found = _read_user_version(conn) >> 16
    if found > SCHEMA_MAJOR:
        raise LedgerVersionError(
            f"The index database was written by a newer version of tiny-agent desktop (schema {found}; this "
            f"version understands up to {SCHEMA_MAJOR}). Update the app, or move the database aside and run "
            "`tiny-agent index rebuild`.",
            found=found,
            supported=SCHEMA_MAJOR,
        )


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names recorded in ``_migrations``, in the order they were applied."""
    rows = conn.execute("SELECT name FROM _migrations ORDER BY rowid").fetchall()
    return [str(row[0]) for row in rows]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every pending migration in order; returns the names applied now (empty when up to date).

    ``conn`` must be in autocommit mode (``isolation_level=None``). Safe against a concurrent migrator: each
    migration re-checks ``_migrations`` inside its ``BEGIN IMMEDIATE`` transaction.
    """
    check_version(conn)
    applied_now: list[str] = []
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
        for fn in MIGRATIONS:
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (fn.__name__,)).fetchone()
                if done is None:
                    fn(conn)
                    conn.execute(
                        "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                        (fn.__name__, time.time_ns() // 1_000_000),
                    )
                    applied_now.append(fn.__name__)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        check_version(conn)  # another process may have upgraded it meanwhile
        if _read_user_version(conn) < user_version():
            conn.execute(f"PRAGMA user_version = {user_version()}")
    except sqlite3.Error as error:
        raise LedgerError(f"Could not migrate the index database: {error}.") from error
    return applied_now
