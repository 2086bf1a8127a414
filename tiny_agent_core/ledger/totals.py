"""A session's request counts and exact cost total, recomputed from its ``requests`` rows; stored amounts parsed."""

from __future__ import annotations

import sqlite3
from decimal import Decimal, InvalidOperation, localcontext

from tiny_agent_core.errors import LedgerError

COUNTED = "NOT EXISTS (SELECT 1 FROM requests AS original WHERE original.attempt_id = r.copy_of)"
"""The condition on a request row ``r`` that it is counted: not a copy of a request that is itself in the index."""


def decimal_from_text(text: str) -> Decimal:
    """Parse a stored money string; raises ``LedgerError`` if the database holds something else."""
    try:
        value = Decimal(text)
    except (InvalidOperation, TypeError):
        raise LedgerError(f"The index database holds an invalid amount: {text!r}.") from None
    return value


def refresh_request_totals(conn: sqlite3.Connection, session_id: str) -> None:
    """Recompute a session's request counts and its exact (Decimal) cost total from its ``requests`` rows: its own
    physical requests, so a fork's copies of requests still in the index are left out (:data:`COUNTED`, as in the
    cost reports)."""
    known: list[Decimal] = []
    count = unknown_cost = unknown_usage = 0
    for cost, input_tokens in conn.execute(
        f"SELECT cost, input_tokens FROM requests AS r WHERE session_id = ? AND {COUNTED}", (session_id,)
    ):
        count += 1
        unknown_usage += input_tokens is None
        if cost is None:
            unknown_cost += 1
        else:
            known.append(decimal_from_text(cost))
    if known:
        with localcontext() as context:
            context.prec = 60  # far beyond any realistic sum: addition stays exact
            total: str | None = str(sum(known, Decimal(0)))
    else:
        total = "0" if unknown_cost == 0 else None
    conn.execute(
        "UPDATE sessions SET requests = ?, usage_unknown_requests = ?, cost_total = ?, cost_unknown_requests = ? "
        "WHERE id = ?",
        (count, unknown_usage, total, unknown_cost, session_id),
    )
