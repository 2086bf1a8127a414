"""Cost comparison across sessions and models (SPEC §4, §7 cost view), and its CSV export.

Everything here is read from the ``requests`` rows, so the per-session and the per-model figures always add up
to the same totals. Tokens are sums of the *known* usage (a request without usage is counted in
``unknown_usage_requests``, never as zero tokens); costs are exact :class:`~decimal.Decimal` sums of the *known*
request costs and ``None`` when no request's cost is known (a session without requests costs exactly 0).
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from pathlib import Path
from typing import Any, TextIO

from tiny_agent_core.ledger.index import resolve_workspace
from tiny_agent_core.ledger.totals import decimal_from_text
from tiny_agent_core.usage import Usage

UNKNOWN = "unknown"
"""How an unknown value is written in CSV exports (never 0)."""

PER_RUN_QUANTUM = Decimal("1e-10")
"""Cost per run is a quotient: it is rounded (half even) to this many dollars; every other amount is exact."""


@dataclass(frozen=True, slots=True)
class SessionCostRow:
    """One session in the cost view."""

    session_id: str
    title: str
    workspace: Path
    created_at: int
    models: tuple[str, ...]
    """Models of the session's requests, sorted; empty when it made none."""
    usage: Usage
    """Sums of the known request usage."""
    requests: int
    unknown_usage_requests: int
    """Requests without usage (their tokens are not in :attr:`usage`)."""
    cost: Decimal | None
    """Sum of the known request costs; ``None`` when none is known."""
    unknown_cost_requests: int
    runs: int
    """Run operations that made at least one model request."""

    @property
    def known_cost_requests(self) -> int:
        """Requests whose cost is known."""
        return self.requests - self.unknown_cost_requests

    @property
    def cost_complete(self) -> bool:
        """Every request's cost is known, so :attr:`cost` is the whole cost (not a lower bound)."""
        return self.unknown_cost_requests == 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cumulative cache hit rate from the sums: cacheRead / (input + cacheRead + cacheWrite)."""
        return self.usage.cache_hit_rate

    @property
    def cost_per_run(self) -> Decimal | None:
        """:attr:`cost` / :attr:`runs` rounded to :data:`PER_RUN_QUANTUM`; ``None`` without runs or known cost.

        When :attr:`cost_complete` is false this is a lower bound, as :attr:`cost` is.
        """
        if self.cost is None or self.runs == 0:
            return None
        with localcontext() as context:
            context.prec = 60
            quotient = (self.cost / self.runs).quantize(PER_RUN_QUANTUM, rounding=ROUND_HALF_EVEN)
        text = format(quotient, "f").rstrip("0").rstrip(".")
        return Decimal(text)


@dataclass(frozen=True, slots=True)
class ModelCostRow:
    """The requests of one provider and model, summed over a selection of sessions."""

    provider: str
    model: str
    sessions: int
    requests: int
    usage: Usage
    """Sums of the known request usage."""
    unknown_usage_requests: int
    cost: Decimal | None
    """Sum of the known request costs; ``None`` when none is known."""
    unknown_cost_requests: int

    @property
    def cost_complete(self) -> bool:
        """Every request's cost is known."""
        return self.unknown_cost_requests == 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cumulative cache hit rate from the sums."""
        return self.usage.cache_hit_rate


def _exact_sum(amounts: Iterable[Decimal]) -> Decimal:
    with localcontext() as context:
        context.prec = 60  # addition of stored amounts stays exact
        return sum(amounts, Decimal(0))


def _costs(joined: str | None) -> list[Decimal]:
    return [] if not joined else [decimal_from_text(text) for text in joined.split(" ")]


def _selection(session_ids: Sequence[str] | None, workspace: Path | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if session_ids is not None:
        clauses.append("s.id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(session_ids)))
    if workspace is not None:
        clauses.append("w.path = ?")
        params.append(str(resolve_workspace(workspace)))
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


_SESSION_SQL = """
    SELECT s.id, s.title, w.path, s.created_at,
           group_concat(DISTINCT r.model),
           count(r.attempt_id),
           coalesce(sum(r.input_tokens), 0), coalesce(sum(r.output_tokens), 0),
           coalesce(sum(r.cache_read_tokens), 0), coalesce(sum(r.cache_write_tokens), 0),
           count(r.attempt_id) - count(r.input_tokens),
           group_concat(r.cost, ' '),
           count(r.attempt_id) - count(r.cost),
           count(DISTINCT CASE WHEN r.step_kind = 'assistant' THEN r.operation_id END)
    FROM sessions AS s
    JOIN workspaces AS w ON w.id = s.workspace_id
    LEFT JOIN requests AS r ON r.session_id = s.id
    {where}
    GROUP BY s.id
    ORDER BY s.created_at DESC, s.id DESC
"""


def session_cost_rows(
    conn: sqlite3.Connection, session_ids: Sequence[str] | None = None, *, workspace: Path | None = None
) -> list[SessionCostRow]:
    """Cost rows of the given sessions (default: every indexed session), optionally of one workspace; newest first.

    Unknown ids are ignored.
    """
    where, params = _selection(session_ids, workspace)
    rows: list[SessionCostRow] = []
    for row in conn.execute(_SESSION_SQL.format(where=where), params):
        requests, unknown_cost = int(row[5]), int(row[12])
        known = _costs(row[11])
        cost = _exact_sum(known) if known else (Decimal(0) if requests == 0 else None)
        rows.append(
            SessionCostRow(
                session_id=row[0],
                title=row[1],
                workspace=Path(row[2]),
                created_at=row[3],
                models=tuple(sorted(row[4].split(","))) if row[4] else (),
                usage=Usage(int(row[6]), int(row[7]), int(row[8]), int(row[9])),
                requests=requests,
                unknown_usage_requests=int(row[10]),
                cost=cost,
                unknown_cost_requests=unknown_cost,
                runs=int(row[13]),
            )
        )
    return rows


_MODEL_SQL = """
    SELECT r.provider, r.model, count(DISTINCT r.session_id), count(*),
           coalesce(sum(r.input_tokens), 0), coalesce(sum(r.output_tokens), 0),
           coalesce(sum(r.cache_read_tokens), 0), coalesce(sum(r.cache_write_tokens), 0),
           count(*) - count(r.input_tokens),
           group_concat(r.cost, ' '),
           count(*) - count(r.cost)
    FROM requests AS r
    JOIN sessions AS s ON s.id = r.session_id
    JOIN workspaces AS w ON w.id = s.workspace_id
    {where}
    GROUP BY r.provider, r.model
"""


def model_cost_rows(
    conn: sqlite3.Connection, session_ids: Sequence[str] | None = None, *, workspace: Path | None = None
) -> list[ModelCostRow]:
    """Per provider and model totals over the given sessions (default: all), most expensive known cost first.

    Models whose cost is entirely unknown come last; ties are ordered by provider and model.
    """
    where, params = _selection(session_ids, workspace)
    rows: list[ModelCostRow] = []
    for row in conn.execute(_MODEL_SQL.format(where=where), params):
        known = _costs(row[9])
        rows.append(
            ModelCostRow(
                provider=row[0],
                model=row[1],
                sessions=int(row[2]),
                requests=int(row[3]),
                usage=Usage(int(row[4]), int(row[5]), int(row[6]), int(row[7])),
                unknown_usage_requests=int(row[8]),
                cost=_exact_sum(known) if known else None,
                unknown_cost_requests=int(row[10]),
            )
        )
    rows.sort(key=lambda r: (r.cost is None, -(r.cost or 0), r.provider, r.model))
    return rows


CSV_COLUMNS = (
    "session_id",
    "title",
    "workspace",
    "created_at",
    "models",
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_hit_rate",
    "cost_usd",
    "cost_complete",
    "unknown_cost_requests",
    "unknown_usage_requests",
    "runs",
    "cost_per_run_usd",
)
"""Header of :func:`write_costs_csv`."""


def _text(value: Decimal | float | None) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, Decimal):
        return format(value, "f")  # plain notation, every stored digit kept (str() may give 1.2E-7)
    return f"{value:.6f}"


def write_costs_csv(rows: Iterable[SessionCostRow], file: TextIO) -> None:
    """Write session cost rows as CSV (:data:`CSV_COLUMNS`) to a text file opened with ``newline=""``.

    Amounts are the exact decimal strings (``cost_usd`` is a lower bound when ``cost_complete`` is ``false``);
    anything unknown is written as ``unknown``, never 0. ``created_at`` is ISO 8601 UTC; ``models`` are joined
    with ``;``; the cache hit rate is a fraction with six decimals.
    """
    writer = csv.writer(file, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        usage = row.usage
        writer.writerow(
            (
                row.session_id,
                row.title,
                str(row.workspace),
                datetime.fromtimestamp(row.created_at / 1000, UTC).isoformat(timespec="milliseconds"),
                ";".join(row.models),
                row.requests,
                usage.input,
                usage.output,
                usage.cache_read,
                usage.cache_write,
                _text(row.cache_hit_rate),
                _text(row.cost),
                "true" if row.cost_complete else "false",
                row.unknown_cost_requests,
                row.unknown_usage_requests,
                row.runs,
                _text(row.cost_per_run),
            )
        )
