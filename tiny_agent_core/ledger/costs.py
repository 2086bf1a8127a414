"""Cost reports: requests grouped by session, model, day or week over a date range, what-if estimates, and CSV
(SPEC §4, §7 cost view; ``tiny-agent cost``).

Everything here is read from the ``requests`` rows (priced at every index, see
:mod:`~tiny_agent_core.ledger.repricing`), so every grouping of the same selection adds up to the same total, and
the window, ``tiny-agent cost --json`` and the CSV export show the same numbers. Tokens are sums of the *known*
usage (a request without usage is counted in ``unknown_usage_requests``, never as zero tokens); a cost is the exact
:class:`~decimal.Decimal` sum of the *known* request costs and ``None`` when no request's cost is known (a group
without requests costs exactly 0). ``not_billed`` (a failed request no provider bills) and ``local`` (a local
server, no API charge) are known costs of 0, counted apart in :attr:`CostRow.sources`, never as unknown.

Days and weeks are local calendar days (the ``TZ`` of the process); a week is keyed by its Monday. A request
belongs to the day it started.

Each physical request is counted once: a forked or copied session holds copies of its origin's requests
(``requests.copy_of`` names the row each copies, :func:`tiny_agent_core.fork.read_copies`), and a copy is left out
of every report while the row it copies is in the index (:data:`COUNTED`), so the origin's day, model and session
carry them; a copy whose original is gone (its session deleted) is counted in its place.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TextIO

from tiny_agent_core.ledger.index import resolve_workspace
from tiny_agent_core.ledger.totals import COUNTED, decimal_from_text
from tiny_agent_core.pricing import Overrides, price_request
from tiny_agent_core.timestamps import utc_datetime
from tiny_agent_core.usage import Usage

GroupBy = Literal["session", "model", "day", "week"]
"""How :func:`cost_rows` groups requests."""

GROUPINGS: tuple[GroupBy, ...] = ("session", "model", "day", "week")

SOURCES = ("provider", "computed", "override", "not_billed", "local", "unknown")
"""Keys of :attr:`CostRow.sources`: how many requests' costs came from each source (``computed`` is the price
table, stored as ``price_table``; ``unknown`` counts requests without a known cost)."""

UNKNOWN = "unknown"
"""How an unknown value is written in CSV exports (never 0)."""

QUOTIENT_QUANTUM = Decimal("1e-10")
"""Costs per session or run are quotients: rounded (half even) to this many dollars; every other amount is exact."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which requests a report covers: every indexed one, narrowed by any of these."""

    workspaces: Sequence[Path] | None = None
    """Only sessions of these workspace folders."""
    session_ids: Sequence[str] | None = None
    """Only these sessions (unknown ids are ignored)."""
    since: date | None = None
    """Only requests that started on or after this local day."""
    until: date | None = None
    """Only requests that started on or before this local day."""


@dataclass(frozen=True, slots=True)
class CostRow:
    """One group of requests (a session, a provider and model, a day or a week), or the total of a report."""

    key: str
    """Session id, ``provider/model``, ``YYYY-MM-DD`` (a week: its Monday), or ``""`` for a total."""
    label: str
    """For people: the session title, ``provider · model``, the day, ``week of <Monday>``, or ``Total``."""
    requests: int
    usage: Usage
    """Sums of the known request usage."""
    unknown_usage_requests: int
    """Requests without usage (their tokens are not in :attr:`usage`)."""
    cost: Decimal | None
    """Sum of the known request costs; ``None`` when none is known (``0`` for a group without requests)."""
    unknown_cost_requests: int
    sources: Mapping[str, int]
    """Requests by cost source (:data:`SOURCES`)."""
    sessions: int
    runs: int
    """Run operations that made at least one model request."""
    successful_runs: int
    """Runs whose answer arrived (a request of the run settled with stop reason ``stop`` or ``length``)."""
    cache_savings: Decimal | None
    """What cache reads saved against uncached input at the same models' rates (known requests only)."""
    unknown_savings_requests: int
    first_at: int | None
    """When the first request started (ms), ``None`` without requests."""
    last_at: int | None
    provider: str | None = None
    """For a model row."""
    model: str | None = None
    """For a model row."""
    title: str | None = None
    """For a session row."""
    workspace: Path | None = None
    """For a session row."""
    created_at: int | None = None
    """For a session row: when the session was created (ms)."""
    models: tuple[str, ...] = field(default=())
    """Models of the group's requests, sorted."""

    @property
    def cost_complete(self) -> bool:
        """Every request's cost is known, so :attr:`cost` is the whole cost (not a lower bound)."""
        return self.unknown_cost_requests == 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cumulative cache hit rate from the sums: cacheRead / (input + cacheRead + cacheWrite)."""
        return self.usage.cache_hit_rate

    @property
    def cost_per_session(self) -> Decimal | None:
        """:attr:`cost` / :attr:`sessions` (a lower bound when not :attr:`cost_complete`); ``None`` when unknown."""
        return _quotient(self.cost, self.sessions)

    @property
    def cost_per_run(self) -> Decimal | None:
        """:attr:`cost` / :attr:`successful_runs` (a lower bound when not :attr:`cost_complete`): what an answer
        cost, failed runs included in the cost; ``None`` without a successful run or a known cost."""
        return _quotient(self.cost, self.successful_runs)

    @property
    def tokens_per_run(self) -> int | None:
        """Known tokens (prompt and output) per successful run; ``None`` without one."""
        if self.successful_runs == 0:
            return None
        return round((self.usage.prompt + self.usage.output) / self.successful_runs)

    def as_json(self) -> dict[str, Any]:
        """The ``tiny-agent cost --json`` row (a total has no ``key``): exact decimal strings, ``null`` unknown."""
        value: dict[str, Any] = {"key": self.key} if self.key else {}
        if self.title is not None:
            value["title"] = self.title
        if self.created_at is not None:
            value["createdAt"] = self.created_at
        value.update(
            {
                "requests": self.requests,
                "usage": self.usage.as_dict(),
                "cost": _plain(self.cost),
                "unknownRequests": self.unknown_cost_requests,
                "sources": dict(self.sources),
                "usageUnknownRequests": self.unknown_usage_requests,
                "sessions": self.sessions,
                "runs": self.runs,
                "successfulRuns": self.successful_runs,
                "cacheSavings": _plain(self.cache_savings),
            }
        )
        return value


@dataclass(frozen=True, slots=True)
class CostReport:
    """Rows of one grouping and their total (computed over the same requests, so the rows add up to it)."""

    by: GroupBy
    rows: list[CostRow]
    total: CostRow

    def as_json(self) -> dict[str, Any]:
        """``{"rows": [...], "total": {...}}``."""
        return {"rows": [row.as_json() for row in self.rows], "total": self.total.as_json()}


@dataclass(frozen=True, slots=True)
class DailyModelCost:
    """One bar segment of the cost-over-time chart: a day's known cost on one provider and model."""

    day: date
    provider: str
    model: str
    cost: Decimal | None
    """``None`` when none of those requests' costs is known."""
    unknown_cost_requests: int


@dataclass(frozen=True, slots=True)
class CostOverview:
    """Everything the cost view lists for one selection, read in one go."""

    sessions: list[CostRow]
    models: list[CostRow]
    days: list[CostRow]
    weeks: list[CostRow]
    daily: list[DailyModelCost]
    total: CostRow


@dataclass(frozen=True, slots=True)
class WhatIf:
    """A selection's actual cost beside an estimate of the same token counts at another model's rates."""

    provider: str
    model: str
    actual: Decimal | None
    actual_unknown_requests: int
    estimate: Decimal | None
    """The estimate over the requests with usage; ``None`` when the model's rates are unknown."""
    estimate_unknown_requests: int
    """Requests left out of the estimate: no usage reported."""
    detail: str
    """Where the rates came from, or why there is no estimate; always says it is an estimate."""


def money_text(amount: Decimal) -> str:
    """US dollars for people: cents from $1 up, else two significant digits (``$0.012``, ``$0.0009``), so small
    per-request costs stay comparable; never "$0.00" for a non-zero cost."""
    if amount == 0:
        return "$0.00"
    if abs(amount) >= 1:
        return f"${amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"
    places = 1 - amount.adjusted()
    digits = f"{amount.quantize(Decimal(1).scaleb(-max(places, 2)), rounding=ROUND_HALF_EVEN):f}"
    whole, _, fraction = digits.partition(".")
    return f"${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def cost_text(cost: Decimal | None, unknown_requests: int = 0, *, unknown: str = "unknown") -> str:
    """``$0.12``; ``≥ $0.12 + 2 unknown`` when some requests' costs are unknown (a lower bound); ``unknown`` when
    none is known — never $0 for an unknown cost."""
    if cost is None:
        return unknown
    if unknown_requests:
        return f"≥ {money_text(cost)} + {unknown_requests} unknown"
    return money_text(cost)


FREE_SOURCES = (("local", "local — no API charge"), ("not_billed", "not billed"))
"""Cost sources that cost nothing, and how a sum made only of them is said."""


def sum_cost_text(
    cost: Decimal | None, unknown_requests: int, sources: Collection[str], *, unknown: str = "unknown"
) -> str:
    """:func:`cost_text` of a sum of requests whose known costs came from ``sources``, except that a sum made only
    of requests that cost nothing says why instead of ``$0.00``: ``local — no API charge``, ``not billed`` (failed
    requests), or both. The one rule for a session's or a cost row's figure."""
    free = [text for source, text in FREE_SOURCES if source in sources]
    if free and not unknown_requests and set(sources) <= {source for source, _ in FREE_SOURCES}:
        return ", ".join(free)
    return cost_text(cost, unknown_requests, unknown=unknown)


def row_cost_text(row: CostRow) -> str:
    """:func:`sum_cost_text` of a cost row."""
    sources = [source for source, count in row.sources.items() if count]
    return sum_cost_text(row.cost, row.unknown_cost_requests, sources)


def _plain(amount: Decimal | None) -> str | None:
    return None if amount is None else format(amount, "f")


def _quotient(amount: Decimal | None, count: int) -> Decimal | None:
    if amount is None or count == 0:
        return None
    with localcontext() as context:
        context.prec = 60
        quotient = (amount / count).quantize(QUOTIENT_QUANTUM, rounding=ROUND_HALF_EVEN)
    return Decimal(format(quotient, "f").rstrip("0").rstrip(".") or "0")


def _exact_sum(joined: str | None) -> tuple[Decimal | None, int]:
    """The exact sum of space-separated amounts and how many there were (``None`` when none)."""
    if not joined:
        return None, 0
    amounts = [decimal_from_text(text) for text in joined.split(" ")]
    with localcontext() as context:
        context.prec = 60  # addition of stored amounts stays exact
        return sum(amounts, Decimal(0)), len(amounts)


def _local_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day).timestamp() * 1000)


def _conditions(selection: Selection) -> tuple[list[str], list[Any], list[str], list[Any]]:
    """Session conditions and request conditions (each physical request once; its time) with their parameters."""
    session_where: list[str] = []
    session_params: list[Any] = []
    if selection.session_ids is not None:
        session_where.append("s.id IN (SELECT value FROM json_each(?))")
        session_params.append(json.dumps(list(selection.session_ids)))
    if selection.workspaces is not None:
        session_where.append("w.path IN (SELECT value FROM json_each(?))")
        session_params.append(json.dumps([str(resolve_workspace(path)) for path in selection.workspaces]))
    time_where, time_params = _day_range("r.started_at", selection)
    return session_where, session_params, [COUNTED, *time_where], time_params


def _day_range(column: str, selection: Selection) -> tuple[list[str], list[Any]]:
    """Conditions (with their parameters) keeping ``column`` within the selection's local days."""
    where: list[str] = []
    params: list[Any] = []
    if selection.since is not None:
        where.append(f"{column} >= ?")
        params.append(_local_ms(selection.since))
    if selection.until is not None:
        where.append(f"{column} < ?")
        params.append(_local_ms(selection.until + timedelta(days=1)))
    return where, params


_AGGREGATES = """
    count(r.attempt_id),
    coalesce(sum(r.input_tokens), 0), coalesce(sum(r.output_tokens), 0),
    coalesce(sum(r.cache_read_tokens), 0), coalesce(sum(r.cache_write_tokens), 0),
    count(r.attempt_id) - count(r.input_tokens),
    group_concat(r.cost, ' '),
    count(r.attempt_id) - count(r.cost),
    count(CASE WHEN r.cost_source = 'provider' THEN 1 END),
    count(CASE WHEN r.cost_source = 'price_table' THEN 1 END),
    count(CASE WHEN r.cost_source = 'override' THEN 1 END),
    count(CASE WHEN r.cost_source = 'not_billed' THEN 1 END),
    count(CASE WHEN r.cost_source = 'local' THEN 1 END),
    count(DISTINCT r.session_id),
    count(DISTINCT CASE WHEN r.step_kind = 'assistant' THEN r.operation_id END),
    count(DISTINCT CASE WHEN r.step_kind = 'assistant' AND r.stop_reason IN ('stop', 'length')
                        THEN r.operation_id END),
    group_concat(r.cache_savings, ' '),
    count(r.attempt_id) - count(r.cache_savings),
    min(r.started_at), max(r.started_at),
    group_concat(DISTINCT r.model)
"""
_AGGREGATE_COUNT = 21

_DAY = "date(r.started_at / 1000, 'unixepoch', 'localtime')"
_WEEK = "date(r.started_at / 1000, 'unixepoch', 'localtime', 'weekday 0', '-6 days')"
_KEYS: dict[GroupBy, tuple[str, ...]] = {
    "session": ("s.id", "s.title", "w.path", "s.created_at"),
    "model": ("r.provider", "r.model"),
    "day": (_DAY,),
    "week": (_WEEK,),
}


@lru_cache(maxsize=256)
def _path(text: str) -> Path:
    """One :class:`Path` per workspace (thousands of session rows share a few)."""
    return Path(text)


def _row(keys: Sequence[Any], values: Sequence[Any], by: GroupBy | None) -> CostRow:
    requests = int(values[0])
    cost, _ = _exact_sum(values[6])
    if cost is None and requests == 0:
        cost = Decimal(0)
    savings, _ = _exact_sum(values[16])
    if savings is None and requests == 0:
        savings = Decimal(0)
    sources = dict(zip(SOURCES, (*(int(v) for v in values[8:13]), int(values[7])), strict=True))
    common: dict[str, Any] = {
        "requests": requests,
        "usage": Usage(int(values[1]), int(values[2]), int(values[3]), int(values[4])),
        "unknown_usage_requests": int(values[5]),
        "cost": cost,
        "unknown_cost_requests": int(values[7]),
        "sources": sources,
        "sessions": int(values[13]),
        "runs": int(values[14]),
        "successful_runs": int(values[15]),
        "cache_savings": savings,
        "unknown_savings_requests": int(values[17]),
        "first_at": values[18],
        "last_at": values[19],
        "models": tuple(sorted(values[20].split(","))) if values[20] else (),
    }
    if by == "session":
        session_id, title, workspace, created_at = keys
        common["sessions"] = 1
        return CostRow(session_id, title, title=title, workspace=_path(workspace), created_at=created_at, **common)
    if by == "model":
        provider, model = keys
        return CostRow(f"{provider}/{model}", f"{provider} · {model}", provider=provider, model=model, **common)
    if by == "day":
        return CostRow(keys[0], keys[0], **common)
    if by == "week":
        return CostRow(keys[0], f"week of {keys[0]}", **common)
    return CostRow("", "Total", **common)


def _query(conn: sqlite3.Connection, selection: Selection, keys: Sequence[str]) -> list[tuple[Any, ...]]:
    session_where, session_params, time_where, time_params = _conditions(selection)
    select_keys = "".join(f"{key}, " for key in keys)
    group = f"GROUP BY {', '.join(keys)}" if keys else ""
    where = " AND ".join(session_where + time_where)
    sql = (
        f"SELECT {select_keys}{_AGGREGATES} FROM requests AS r JOIN sessions AS s ON s.id = r.session_id "
        f"JOIN workspaces AS w ON w.id = s.workspace_id {'WHERE ' + where if where else ''} {group}"
    )
    return list(conn.execute(sql, [*session_params, *time_params]))


def _session_rows(conn: sqlite3.Connection, selection: Selection) -> list[tuple[Any, ...]]:
    """Per session, sessions without requests in the range included when created in it (or with no range)."""
    session_where, session_params, time_where, time_params = _conditions(selection)
    keys = _KEYS["session"]
    join_time = "".join(f" AND {condition}" for condition in time_where)
    created, created_params = _day_range("s.created_at", selection)
    having = " AND ".join(created)
    sql = (
        f"SELECT {', '.join(keys)}, {_AGGREGATES} FROM sessions AS s JOIN workspaces AS w ON w.id = s.workspace_id "
        f"LEFT JOIN requests AS r ON r.session_id = s.id{join_time} "
        f"{'WHERE ' + ' AND '.join(session_where) if session_where else ''} GROUP BY s.id "
        f"{f'HAVING count(r.attempt_id) > 0 OR ({having})' if having else ''} "
        "ORDER BY s.created_at DESC, s.id DESC"
    )
    return list(conn.execute(sql, [*time_params, *session_params, *created_params]))


def cost_rows(conn: sqlite3.Connection, by: GroupBy = "session", selection: Selection | None = None) -> list[CostRow]:
    """The selection's requests grouped ``by`` session (newest first; sessions without requests too), model (most
    expensive known cost first, entirely unknown last), or day or week (oldest first)."""
    selection = selection or Selection()
    if by == "session":
        return [_row(values[:4], values[4:], by) for values in _session_rows(conn, selection)]
    keys = _KEYS[by]
    rows = [_row(values[: len(keys)], values[len(keys) :], by) for values in _query(conn, selection, keys)]
    if by == "model":
        rows.sort(key=lambda r: (r.cost is None, -(r.cost or 0), r.key))
    else:
        rows.sort(key=lambda r: r.key)
    return rows


def cost_total(conn: sqlite3.Connection, selection: Selection | None = None) -> CostRow:
    """Every request of the selection in one row (``key`` ``""``, label ``Total``)."""
    values = _query(conn, selection or Selection(), ())[0]
    return _row((), values, None)


def _sum_sessions(rows: Sequence[CostRow]) -> CostRow:
    """The total of session rows (each request is in exactly one of them, so their sums are the total's)."""
    with localcontext() as context:
        context.prec = 60
        known = [row.cost for row in rows if row.cost is not None and row.requests]
        savings = [row.cache_savings for row in rows if row.cache_savings is not None and row.requests]
        requests = sum(row.requests for row in rows)
        starts = [row.first_at for row in rows if row.first_at is not None]
        ends = [row.last_at for row in rows if row.last_at is not None]
        return CostRow(
            "",
            "Total",
            requests=requests,
            usage=sum((row.usage for row in rows), Usage(0, 0)),
            unknown_usage_requests=sum(row.unknown_usage_requests for row in rows),
            cost=sum(known, Decimal(0)) if known or not requests else None,
            unknown_cost_requests=sum(row.unknown_cost_requests for row in rows),
            sources={source: sum(row.sources[source] for row in rows) for source in SOURCES},
            sessions=sum(1 for row in rows if row.requests),
            runs=sum(row.runs for row in rows),
            successful_runs=sum(row.successful_runs for row in rows),
            cache_savings=sum(savings, Decimal(0)) if savings or not requests else None,
            unknown_savings_requests=sum(row.unknown_savings_requests for row in rows),
            first_at=min(starts, default=None),
            last_at=max(ends, default=None),
            models=tuple(sorted({model for row in rows for model in row.models})),
        )


def cost_report(conn: sqlite3.Connection, by: GroupBy = "session", selection: Selection | None = None) -> CostReport:
    """:func:`cost_rows` and :func:`cost_total` of the same selection (for sessions, the total is their sum)."""
    rows = cost_rows(conn, by, selection)
    return CostReport(by, rows, _sum_sessions(rows) if by == "session" else cost_total(conn, selection))


def cost_overview(conn: sqlite3.Connection, selection: Selection | None = None) -> CostOverview:
    """Sessions, models, days, weeks, the cost per day by model and the total of one selection."""
    selection = selection or Selection()
    sessions = cost_rows(conn, "session", selection)
    return CostOverview(
        sessions=sessions,
        models=cost_rows(conn, "model", selection),
        days=cost_rows(conn, "day", selection),
        weeks=cost_rows(conn, "week", selection),
        daily=daily_model_costs(conn, selection),
        total=_sum_sessions(sessions),
    )


def daily_model_costs(conn: sqlite3.Connection, selection: Selection | None = None) -> list[DailyModelCost]:
    """Known cost per local day and provider/model (the cost-over-time chart), oldest day first."""
    cells: list[DailyModelCost] = []
    for values in _query(conn, selection or Selection(), (_DAY, "r.provider", "r.model")):
        cost, _ = _exact_sum(values[9])
        cells.append(DailyModelCost(date.fromisoformat(values[0]), values[1], values[2], cost, int(values[10])))
    cells.sort(key=lambda cell: (cell.day, cell.provider, cell.model))
    return cells


def what_if(
    conn: sqlite3.Connection,
    selection: Selection,
    provider: str,
    model: str,
    overrides: Overrides | None = None,
    *,
    local: bool = False,
) -> WhatIf:
    """The selection's requests priced at ``provider``/``model``'s rates with the same token counts, each at the
    time it was made — an estimate, because another model's tokenizer would count the same text differently."""
    session_where, session_params, time_where, time_params = _conditions(selection)
    where = " AND ".join(session_where + time_where)
    sql = (
        "SELECT r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens, r.started_at "
        "FROM requests AS r JOIN sessions AS s ON s.id = r.session_id JOIN workspaces AS w ON w.id = s.workspace_id "
        f"{'WHERE ' + where if where else ''}"
    )
    estimates: list[Decimal] = []
    without_usage = 0
    detail = ""
    for tokens in conn.execute(sql, [*session_params, *time_params]):
        if tokens[0] is None:
            without_usage += 1
            continue
        cost = price_request(
            provider=provider,
            model=model,
            usage=Usage(*tokens[:4]),
            provider_cost=None,
            overrides=overrides,
            at=utc_datetime(tokens[4]),
            local=local,
        )
        if cost.amount is None:
            return _what_if(conn, selection, provider, model, None, without_usage, f"no estimate: {cost.detail}")
        estimates.append(cost.amount)
        detail = cost.detail
    with localcontext() as context:
        context.prec = 60
        estimate = sum(estimates, Decimal(0))
    note = "estimate: the same token counts at these rates (tokenizers differ)"
    return _what_if(
        conn, selection, provider, model, estimate, without_usage, f"{note}; last {detail}" if detail else note
    )


def _what_if(
    conn: sqlite3.Connection,
    selection: Selection,
    provider: str,
    model: str,
    estimate: Decimal | None,
    without_usage: int,
    detail: str,
) -> WhatIf:
    total = cost_total(conn, selection)
    return WhatIf(provider, model, total.cost, total.unknown_cost_requests, estimate, without_usage, detail)


CSV_COLUMNS = (
    "key",
    "label",
    "first_request_at",
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
    "provider_requests",
    "computed_requests",
    "override_requests",
    "not_billed_requests",
    "local_requests",
    "sessions",
    "runs",
    "successful_runs",
    "cost_per_successful_run_usd",
    "cache_savings_usd",
)
"""Header of :func:`write_costs_csv`."""


def _text(value: Decimal | float | None) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, Decimal):
        return format(value, "f")  # plain notation, every stored digit kept (str() may give 1.2E-7)
    return f"{value:.6f}"


def write_costs_csv(rows: Iterable[CostRow], file: TextIO) -> None:
    """Write cost rows as CSV (:data:`CSV_COLUMNS`) to a text file opened with ``newline=""``.

    Amounts are the exact decimal strings (``cost_usd`` is a lower bound when ``cost_complete`` is ``false``);
    anything unknown is written as ``unknown``, never 0. ``first_request_at`` is ISO 8601 UTC (empty without
    requests); ``models`` are joined with ``;``; the cache hit rate is a fraction with six decimals.
    """
    writer = csv.writer(file, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        usage = row.usage
        first = row.first_at if row.first_at is not None else row.created_at
        writer.writerow(
            (
                row.key,
                row.label,
                "" if first is None else utc_datetime(first).isoformat(timespec="milliseconds"),
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
                *(row.sources[source] for source in SOURCES[:-1]),
                row.sessions,
                row.runs,
                row.successful_runs,
                _text(row.cost_per_run),
                _text(row.cache_savings),
            )
        )
