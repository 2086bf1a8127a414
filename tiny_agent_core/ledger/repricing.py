"""Pricing the ``requests`` rows: every cost in the ledger can be recomputed from the session files (SPEC §4).

Each time a request row is written (a scan, a rebuild, the agent's live record), its cost is priced again with
:func:`tiny_agent_core.pricing.price_request` from what the row holds: provider, model, usage, start time, the
provider's own figure and locality (live, kept in :mod:`tiny_agent_core.ledger.sidecar` too) and the HTTP status
of a failed request. So a deleted index, a rebuild, or a session the tiny-agent CLIs wrote gets the same costs as
the live run did: the provider's figure where it sent one, else the user's override, else a local server's "no
API charge", else the price table; a failed request without usage is ``not_billed``.

The user's overrides come from the settings file. The ones the rows were priced with are kept in
``pricing_inputs``; :func:`refresh_prices` compares them with the settings and re-prices the rows of the
providers whose overrides changed (scans and cost reports call it first, so a new override applies everywhere).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from tiny_agent_core.ledger.totals import decimal_from_text, refresh_request_totals
from tiny_agent_core.ledger.transactions import transaction
from tiny_agent_core.pricing import Cost, Overrides, PriceOverride, price_request
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.timestamps import utc_datetime
from tiny_agent_core.usage import Usage

_ROW_SQL = (
    "SELECT attempt_id, session_id, provider, model, input_tokens, output_tokens, cache_read_tokens, "
    "cache_write_tokens, started_at, provider_cost, local, http_status FROM requests"
)
_UPDATE_SQL = (
    "UPDATE requests SET cost = ?, cost_source = ?, price_data_version = ?, cache_savings = ? WHERE attempt_id = ?"
)


def settings_overrides() -> Overrides:
    """The user's price overrides from the settings file (none when it cannot be used)."""
    settings = AppSettings.load()
    return {} if settings.load_error is not None else settings.price_overrides


def _rate(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def _overrides_text(overrides: Overrides) -> str:
    rows = [
        [provider, model, _rate(p.input), _rate(p.output), _rate(p.cache_read), _rate(p.cache_write)]
        for (provider, model), p in sorted(overrides.items())
    ]
    return json.dumps(rows, separators=(",", ":"))


def stored_overrides(conn: sqlite3.Connection) -> Overrides:
    """The overrides the stored costs were priced with."""
    row = conn.execute("SELECT overrides FROM pricing_inputs WHERE id = 1").fetchone()
    overrides: dict[tuple[str, str], PriceOverride] = {}
    for provider, model, *rates in json.loads(row[0]) if row is not None else []:
        values = [None if rate is None else Decimal(rate) for rate in rates]
        overrides[(provider, model)] = PriceOverride(values[0] or Decimal(0), values[1] or Decimal(0), *values[2:])
    return overrides


def price_row(
    overrides: Overrides,
    *,
    provider: str,
    model: str,
    usage: Usage | None,
    started_at: int,
    provider_cost: Decimal | None = None,
    local: bool = False,
    http_status: int | None = None,
) -> tuple[Cost, Decimal | None]:
    """A request's cost and its cache savings: what its cache reads saved against uncached input at the same
    model's rates (0 without cache reads or when the request cost nothing; ``None`` when the rates are unknown)."""
    at = utc_datetime(started_at)
    options: dict[str, Any] = {"provider": provider, "model": model, "overrides": overrides, "at": at, "local": local}
    cost = price_request(usage=usage, provider_cost=provider_cost, http_status=http_status, **options)
    if usage is None:
        return cost, Decimal(0) if cost.source in ("not_billed", "local") else None
    if usage.cache_read == 0:
        return cost, Decimal(0)
    actual = price_request(usage=usage, provider_cost=None, **options).amount
    uncached = Usage(usage.input + usage.cache_read, usage.output, 0, usage.cache_write)
    without_cache = price_request(usage=uncached, provider_cost=None, **options).amount
    if actual is None or without_cache is None:
        return cost, None
    return cost, without_cache - actual


def _usage(row: tuple[Any, ...]) -> Usage | None:
    return None if row[4] is None else Usage(row[4], row[5], row[6], row[7])


def _reprice(conn: sqlite3.Connection, where: str, params: Iterable[Any], overrides: Overrides) -> set[str]:
    """Re-price the rows matching ``where`` (call inside a transaction); returns their session ids."""
    updates: list[tuple[Any, ...]] = []
    sessions: set[str] = set()
    for row in conn.execute(f"{_ROW_SQL} WHERE {where}", tuple(params)).fetchall():
        cost, savings = price_row(
            overrides,
            provider=row[2],
            model=row[3],
            usage=_usage(row),
            started_at=row[8],
            provider_cost=None if row[9] is None else decimal_from_text(row[9]),
            local=bool(row[10]),
            http_status=row[11],
        )
        amount = None if cost.amount is None else format(cost.amount, "f")
        version = cost.data_version if cost.source == "price_table" else None
        updates.append((amount, cost.source, version, None if savings is None else format(savings, "f"), row[0]))
        sessions.add(row[1])
    conn.executemany(_UPDATE_SQL, updates)
    return sessions


def reprice_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Price a session's rows with the stored overrides and refresh its totals (call inside a transaction)."""
    _reprice(conn, "session_id = ?", (session_id,), stored_overrides(conn))
    refresh_request_totals(conn, session_id)


def reprice_request(conn: sqlite3.Connection, attempt_id: str) -> None:
    """Price one row with the stored overrides and refresh its session's totals (call inside a transaction)."""
    for session_id in _reprice(conn, "attempt_id = ?", (attempt_id,), stored_overrides(conn)):
        refresh_request_totals(conn, session_id)


def refresh_prices(conn: sqlite3.Connection, overrides: Overrides | None = None) -> int:
    """Bring the stored costs in line with ``overrides`` (default: the settings file's); returns how many rows were
    re-priced (0, and no write, when the overrides did not change)."""
    current = settings_overrides() if overrides is None else overrides
    text = _overrides_text(current)
    row = conn.execute("SELECT overrides FROM pricing_inputs WHERE id = 1").fetchone()
    if row is not None and row[0] == text:
        return 0
    before = stored_overrides(conn)
    changed = sorted({key[0] for key in {*before, *current} if before.get(key) != current.get(key)})
    with transaction(conn):
        conn.execute("UPDATE pricing_inputs SET overrides = ? WHERE id = 1", (text,))
        marks = ", ".join("?" * len(changed))
        count = conn.execute(f"SELECT count(*) FROM requests WHERE provider IN ({marks})", changed).fetchone()[0]
        for session_id in _reprice(conn, f"provider IN ({marks})", changed, current):
            refresh_request_totals(conn, session_id)
    return int(count)
