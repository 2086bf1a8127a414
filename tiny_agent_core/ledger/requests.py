"""One ledger row per physical model request: usage, cost and where it came from, timings, captures (SPEC §4).

Captures are bounded twice (SPEC §9): each body at :data:`CAPTURE_LIMIT`, and only the newest
:data:`CAPTURES_KEPT` keep their body (older ones become a note saying so, pruned as new ones arrive).

The JSONL session file is the source of truth for what is derivable (attempt, model, usage facts, outcome), and
the cost is priced from it again at every index (:mod:`tiny_agent_core.ledger.repricing`); the agent adds what
only the live request knows (:class:`LiveRequest`: the provider's own cost figure, whether the server was local,
latency, time to first token, HTTP status, dialect repairs, the raw capture). Live data survives re-indexing and
``index rebuild`` as long as the attempt id is still in the session file; the provider's figure and locality
also survive a deleted index (:mod:`tiny_agent_core.ledger.sidecar`).

Unknown is never zero: a request without usage has ``NULL`` token columns and a request without a known cost a
``NULL`` cost; session totals count such requests instead of adding 0. Money is :class:`decimal.Decimal`, stored
as its exact string.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import sidecar
from tiny_agent_core.ledger.repricing import reprice_request
from tiny_agent_core.ledger.totals import decimal_from_text
from tiny_agent_core.ledger.transactions import transaction
from tiny_agent_core.pricing import Cost as Cost  # re-exported: the ledger keeps the core's one Cost
from tiny_agent_core.usage import Usage

_log = logging.getLogger(__name__)

CAPTURE_LIMIT = 256 * 1024
"""Largest raw capture body stored, in UTF-8 bytes of redacted JSON text."""

CAPTURES_KEPT = 1000
"""Raw captures kept whole, the newest by insertion; an older one is pruned: its body becomes a note
(``{"pruned": true, "note": …, "originalSize": n, "capturedAt": ms}``) and the request row keeps everything else.

Why a count: the inspector reads the captures of recent steps, and an agent run makes tens of requests, so the
newest 1,000 cover the last dozens of runs; a count is also what the index can enforce without reading a body
(a byte budget would have to sum them). With :data:`CAPTURE_LIMIT` it bounds the bodies at 256 MiB. Measured on
10,000 requests with agent-like captures (a conversation growing over 15-step runs plus a streamed answer, 85 KB
on average): an 860 MB index without the rule, 117 MB with it (88 MB of bodies), for +0.3 ms per insert (median
2.8 ms). Freed pages are reused by the next captures, so the file stops growing rather than shrinking
(``VACUUM`` gives the space back)."""

PRUNE_BATCH = 4
"""Most captures one new capture prunes: bounded work per insert, which runs on the agent's loop (the window's
thread). Freeing a body walks its overflow pages, up to 256 KiB each: 64 at a time took 72–96 ms on a 738 MB
index, 4 stay within a few ms. An index from before the rule (thousands of captures) catches up over as many
inserts as it takes; each insert still prunes more than it adds."""

REDACTED = "[redacted]"

_SECRET_KEYS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "api_key",
        "apikey",
        "x-api-key",
        "cookie",
        "set-cookie",
        "password",
        "secret",
        "client_secret",
        "access_token",
        "refresh_token",
    }
)
_SECRET_VALUE = re.compile(r"(?i)\bbearer\s+\S+|\bsk-[A-Za-z0-9_-]{16,}")


@dataclass(frozen=True, slots=True)
class LiveRequest:
    """What the agent learned about a physical request that the session file does not record."""

    attempt_id: str
    cost: Cost | None = None
    """What the agent priced. Only a ``provider`` figure and a ``local`` request are kept (as the provider's figure
    and the request's locality); every other cost is priced by the ledger itself, as a rebuild would."""
    response_model: str | None = None
    latency_ms: int | None = None
    ttft_ms: int | None = None
    http_status: int | None = None
    error_kind: str | None = None
    """:attr:`tiny_agent_core.errors.ProviderError.kind` of a failed request."""
    dialect_repairs: Sequence[str] | None = None
    """Names of the seam's dialect repairs; ``None`` = not recorded."""
    dropped_fields: Sequence[str] | None = None
    """Provider-only fields the seam dropped (e.g. ``message.reasoning``); ``None`` = not recorded."""


@dataclass(frozen=True, slots=True)
class RequestRow:
    """A ``requests`` row as read back."""

    attempt_id: str
    session_id: str
    operation_id: str
    step_id: str
    attempt: int
    step_kind: str
    provider: str
    model: str
    usage: Usage | None
    stop_reason: str | None
    error_code: str | None
    outcome: str
    started_at: int
    finished_at: int | None
    cost: Cost | None
    response_model: str | None
    latency_ms: int | None
    ttft_ms: int | None
    http_status: int | None
    error_kind: str | None
    dialect_repairs: list[str] | None
    dropped_fields: list[str] | None = None
    """Provider-only fields the seam dropped (m003); ``None`` when not recorded."""


def record_live(conn: sqlite3.Connection, live: LiveRequest) -> None:
    """Store the live-only facts of a request whose attempt is already indexed, then price it again and refresh its
    session's cost.

    Only the fields that are not ``None`` are written (a later call can add the cost to an earlier call's
    timings). A provider figure or a local request is also appended to the session's cost side file (a failure
    to write it is logged, not raised: the row has it). Raises
    ``LedgerError`` when the attempt id is not in the index: index the session file first
    (:func:`tiny_agent_core.ledger.index.index_session_file`).
    """
    columns: dict[str, Any] = {}
    provider_cost = live.cost.amount if live.cost is not None and live.cost.source == "provider" else None
    local = live.cost is not None and live.cost.source == "local"
    if provider_cost is not None:
        columns["provider_cost"] = format(provider_cost, "f")
    if local:
        columns["local"] = 1
    for name in ("response_model", "latency_ms", "ttft_ms", "http_status", "error_kind"):
        value = getattr(live, name)
        if value is not None:
            columns[name] = value
    if live.dialect_repairs is not None:
        columns["dialect_repairs"] = json.dumps(list(live.dialect_repairs))
    if live.dropped_fields is not None:
        columns["dropped_fields"] = json.dumps(list(live.dropped_fields))
    with transaction(conn):
        row = conn.execute(
            "SELECT s.path FROM requests AS r JOIN sessions AS s ON s.id = r.session_id WHERE r.attempt_id = ?",
            (live.attempt_id,),
        ).fetchone()
        if row is None:
            raise LedgerError(f"Request {live.attempt_id} is not in the index; index its session first.")
        if columns:
            assignments = ", ".join(f"{name} = ?" for name in columns)
            conn.execute(
                f"UPDATE requests SET {assignments} WHERE attempt_id = ?",
                (*columns.values(), live.attempt_id),
            )
        reprice_request(conn, live.attempt_id)
    if provider_cost is not None or local:
        try:
            sidecar.append(Path(row[0]), live.attempt_id, provider_cost=provider_cost, local=local)
        except OSError as error:  # the ledger row has it; only a deleted index would lose it
            _log.warning("could not keep the cost of request %s beside its session: %s", live.attempt_id, error)


def _row(values: Mapping[str, Any]) -> RequestRow:
    usage = None
    if values["input_tokens"] is not None:
        usage = Usage(
            values["input_tokens"],
            values["output_tokens"],
            values["cache_read_tokens"],
            values["cache_write_tokens"],
        )
    cost = None
    if values["cost"] is not None:
        cost = Cost(decimal_from_text(values["cost"]), values["cost_source"], values["price_data_version"])
    repairs = values["dialect_repairs"]
    return RequestRow(
        attempt_id=values["attempt_id"],
        session_id=values["session_id"],
        operation_id=values["operation_id"],
        step_id=values["step_id"],
        attempt=values["attempt"],
        step_kind=values["step_kind"],
        provider=values["provider"],
        model=values["model"],
        usage=usage,
        stop_reason=values["stop_reason"],
        error_code=values["error_code"],
        outcome=values["outcome"],
        started_at=values["started_at"],
        finished_at=values["finished_at"],
        cost=cost,
        response_model=values["response_model"],
        latency_ms=values["latency_ms"],
        ttft_ms=values["ttft_ms"],
        http_status=values["http_status"],
        error_kind=values["error_kind"],
        dialect_repairs=None if repairs is None else list(json.loads(repairs)),
        dropped_fields=None if values["dropped_fields"] is None else list(json.loads(values["dropped_fields"])),
    )


def _select(conn: sqlite3.Connection, where: str, params: Iterable[Any]) -> list[RequestRow]:
    cursor = conn.execute(f"SELECT * FROM requests WHERE {where} ORDER BY started_at, attempt_id", tuple(params))
    names = [column[0] for column in cursor.description]
    return [_row(dict(zip(names, values, strict=True))) for values in cursor.fetchall()]


def get_request(conn: sqlite3.Connection, attempt_id: str) -> RequestRow | None:
    """The request row of an attempt id, or ``None``."""
    rows = _select(conn, "attempt_id = ?", (attempt_id,))
    return rows[0] if rows else None


def session_requests(conn: sqlite3.Connection, session_id: str) -> list[RequestRow]:
    """A session's requests in the order they started."""
    return _select(conn, "session_id = ?", (session_id,))


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of a JSON value without credentials.

    Object members whose key names a credential (``authorization``, ``api_key``, ``cookie``, …) have their value
    replaced by :data:`REDACTED`; every string has the given ``secrets`` and anything shaped like a bearer token
    or an ``sk-…`` key replaced too.
    """
    secret_list = [secret for secret in secrets if secret]

    def clean(item: Any) -> Any:
        if isinstance(item, dict):
            return {key: REDACTED if str(key).lower() in _SECRET_KEYS else clean(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [clean(inner) for inner in item]
        if isinstance(item, str):
            for secret in secret_list:
                item = item.replace(secret, REDACTED)
            return _SECRET_VALUE.sub(REDACTED, item)
        return item

    return clean(value)


def add_raw_capture(
    conn: sqlite3.Connection,
    attempt_id: str,
    payload: Any,
    *,
    secrets: Iterable[str] = (),
    limit: int = CAPTURE_LIMIT,
    kept: int = CAPTURES_KEPT,
) -> int:
    """Store the redacted JSON text of a request's raw exchange (capped at ``limit`` bytes); returns its row id.

    ``payload`` is any JSON-serializable value (e.g. a provider capture's dict); ``secrets`` are strings to scrub
    wherever they appear (the API key). In the same transaction, captures older than the newest ``kept`` are
    pruned (:data:`CAPTURES_KEPT`, at most :data:`PRUNE_BATCH` of them). Raises ``LedgerError`` when the attempt
    is not indexed.
    """
    text = json.dumps(redact(payload, secrets), ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode("utf-8"))
    truncated = size > limit
    if truncated:
        encoded = text.encode("utf-8")
        keep = limit
        while True:  # escaping can grow the prefix: shrink until the wrapper fits
            prefix = encoded[: max(0, keep)].decode("utf-8", errors="ignore")
            text = json.dumps({"truncated": True, "originalSize": size, "prefix": prefix}, ensure_ascii=False)
            over = len(text.encode("utf-8")) - limit
            if over <= 0 or keep <= 0:
                break
            keep -= over
    with transaction(conn):
        if conn.execute("SELECT 1 FROM requests WHERE attempt_id = ?", (attempt_id,)).fetchone() is None:
            raise LedgerError(f"Request {attempt_id} is not in the index; index its session first.")
        cursor = conn.execute(
            "INSERT INTO raw_captures (attempt_id, captured_at, body, truncated, original_size) VALUES (?, ?, ?, ?, ?)",
            (attempt_id, time.time_ns() // 1_000_000, text, int(truncated), size),
        )
        _prune_captures(conn, kept)
    return int(cursor.lastrowid or 0)


def pruned_note(kept: int) -> str:
    """What a pruned capture says in place of its body."""
    return (
        f"Raw capture pruned: it is older than the newest {kept:,} captures, the only ones the index keeps whole "
        f"(each at most {CAPTURE_LIMIT // 1024} KiB), so that the index stays bounded. The request's usage, cost and "
        "timings are kept."
    )


def _prune_captures(conn: sqlite3.Connection, kept: int) -> int:
    """Prune the oldest whole captures beyond the newest ``kept`` (at most :data:`PRUNE_BATCH`); how many. Both
    statements read only the partial index ``raw_captures_whole`` (m007), never a body."""
    (whole,) = conn.execute("SELECT count(*) FROM raw_captures WHERE pruned = 0").fetchone()
    excess = min(int(whole) - max(kept, 0), PRUNE_BATCH)
    if excess <= 0:
        return 0
    conn.execute(
        "UPDATE raw_captures SET pruned = 1, body = json_object('pruned', json('true'), 'note', ?, "
        "'originalSize', original_size, 'capturedAt', captured_at) "
        "WHERE id IN (SELECT id FROM raw_captures WHERE pruned = 0 ORDER BY id LIMIT ?)",
        (pruned_note(kept), excess),
    )
    return excess


def raw_captures(conn: sqlite3.Connection, attempt_id: str) -> list[Any]:
    """The stored capture bodies of a request (parsed JSON), oldest first; a pruned one is its note
    (:data:`CAPTURES_KEPT`)."""
    rows = conn.execute("SELECT body FROM raw_captures WHERE attempt_id = ? ORDER BY id", (attempt_id,))
    return [json.loads(body) for (body,) in rows]
