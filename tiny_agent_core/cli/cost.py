"""``tiny-agent cost``: what the indexed sessions cost, grouped by session, model, day or week.

``tiny-agent cost [--workspace DIR]... [--by session|model|day|week] [--since YYYY-MM-DD] [--until YYYY-MM-DD]
[--json]``

The same numbers as the window's cost view (:mod:`tiny_agent_core.ledger.costs`). The given workspaces are indexed
first (new or changed session files are read; every request is priced from the file, the provider's own figure
kept) and only their sessions are reported; without ``--workspace``, every indexed session is reported as the
index has it (``tiny-agent sessions --all`` or the window bring it up to date). Changed price overrides in the
settings are applied first either way. ``--since``/``--until`` keep the requests that started on those local days
(inclusive). Days and weeks are local calendar days; a week is keyed by its Monday.

With ``--json``, one object on stdout: ``{"rows": [{"key": <session id | "provider/model" | "YYYY-MM-DD">,
"requests": n, "usage": {"input", "output", "cacheRead", "cacheWrite"}, "cost": "<exact decimal string>" or null
when no request's cost is known, "unknownRequests": n, "sources": {"provider": n, "computed": n, "override": n,
"not_billed": n, "local": n, "unknown": n}, "usageUnknownRequests": n, "sessions": n, "runs": n,
"successfulRuns": n, "cacheSavings": "<decimal>" or null}, ...], "total": {the same fields without "key"}}``;
session rows also carry ``"title"`` and ``"createdAt"``. A row's ``cost`` sums its known requests and
``unknownRequests`` says how many are missing from it; ``not_billed`` (a failed request without usage) and
``local`` (a local server) are known costs of 0. Without ``--json``: an aligned table with a total row.

Exit 0; 2 with one ``tiny-agent: …`` line on stderr when the index cannot be opened or written.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from datetime import date
from typing import Any

from tiny_agent_core.cli.arguments import existing_folder
from tiny_agent_core.cli.index import index_failed, using_index
from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import IndexConnection, refresh_prices, scan_workspace
from tiny_agent_core.ledger.costs import (
    GROUPINGS,
    CostReport,
    CostRow,
    Selection,
    cost_report,
    money_text,
    row_cost_text,
)
from tiny_agent_core.timestamps import local_datetime


def register(subparsers: Any) -> None:
    """Add ``cost``."""
    cost = subparsers.add_parser("cost", help="what the sessions cost, by session, model, day or week")
    cost.add_argument(
        "--workspace",
        metavar="DIR",
        type=existing_folder,
        action="append",
        help="index this workspace and report only its sessions (repeatable; default: every indexed session)",
    )
    cost.add_argument("--by", choices=GROUPINGS, default="session", help="grouping (default: session)")
    cost.add_argument("--since", type=_day, metavar="YYYY-MM-DD", help="only requests from this local day on")
    cost.add_argument("--until", type=_day, metavar="YYYY-MM-DD", help="only requests up to this local day")
    cost.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    cost.set_defaults(handler=run_cost)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date YYYY-MM-DD: {text!r}") from None


def _tokens(count: int) -> str:
    return f"{count:,}"


def _row_cells(row: CostRow, by: str) -> list[str]:
    if row.key == "":
        first = ["Total", "", ""] if by == "session" else ["Total"]
    elif by == "session":
        created = "" if row.created_at is None else local_datetime(row.created_at).strftime("%Y-%m-%d")
        first = [created, row.label or "(untitled session)", ", ".join(row.models)]
    else:
        first = [row.label]
    hit = "" if row.cache_hit_rate is None else f"{row.cache_hit_rate * 100:.1f}%"
    usage = row.usage
    unknown_usage = f" (+{row.unknown_usage_requests} unknown)" if row.unknown_usage_requests else ""
    return [
        *first,
        _tokens(row.requests),
        _tokens(usage.input) + unknown_usage,
        _tokens(usage.output),
        _tokens(usage.cache_read),
        _tokens(usage.cache_write),
        hit,
        row_cost_text(row),
        "unknown" if row.cache_savings is None else money_text(row.cache_savings),
    ]


def format_table(report: CostReport) -> str:
    """The human table of ``tiny-agent cost``: one row per group, then the total."""
    first = {"session": ["DATE", "SESSION", "MODELS"], "model": ["MODEL"], "day": ["DAY"], "week": ["WEEK"]}
    header = [*first[report.by], "REQUESTS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "HIT", "COST", "SAVED"]
    body = [_row_cells(row, report.by) for row in report.rows]
    lines = [header, *body, _row_cells(report.total, report.by)]
    text_columns = len(first[report.by])
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]

    def render(cells: list[str]) -> str:
        padded = [
            cell.ljust(width) if column < text_columns else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    rule = "-" * len(render(header))
    return "\n".join([render(header), *(render(cells) for cells in body), rule, render(lines[-1])])


def run_cost(args: argparse.Namespace) -> int:
    """Handler of ``cost``."""
    selection = Selection(workspaces=args.workspace, since=args.since, until=args.until)

    def scan_and_report(conn: IndexConnection) -> tuple[list[str], CostReport]:
        refresh_prices(conn)
        workspaces = args.workspace or []
        skipped = [
            f"skipped {item.path}: {item.code} at line {item.line}"
            for workspace in workspaces
            for item in scan_workspace(conn, workspace).corrupt
        ]
        return skipped, cost_report(conn, args.by, selection)

    try:
        skipped, report = using_index(scan_and_report)
    except (LedgerError, sqlite3.Error) as error:
        return index_failed(error)
    for line in skipped:
        print(f"tiny-agent: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        print(format_table(report))
    return 0
