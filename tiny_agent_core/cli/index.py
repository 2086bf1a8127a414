"""``tiny-agent sessions`` and ``tiny-agent index rebuild``: the SQLite index from the command line.

The database is ``index.sqlite3`` in the user data folder (platformdirs ``tiny-agent-desktop``; ``XDG_DATA_HOME``
moves it; ``TINY_AGENT_DATA_DIR`` overrides it). It is a cache of the session files: when it is damaged (or from a
newer schema) it is moved aside as ``index.sqlite3.corrupt-<time>``, rebuilt from the session files, and the
command says so in one ``tiny-agent: The index database could not be used (…)`` line on stderr before its output.

``tiny-agent sessions [--workspace DIR | --all] [--json]``
    Scans ``DIR/.tiny-agent/sessions/`` (default: the current directory; ``--all``: every known workspace),
    indexing new or changed files (by size and mtime), then lists the workspace's sessions newest first. Default
    output is a table; ``--json`` prints one JSON array of ``{"id", "title", "createdAt", "updatedAt",
    "workspace", "path", "provider", "model", "operation", "abortRequested", "lastOutcome", "facts", "usage":
    {"input", "output", "cacheRead", "cacheWrite"}, "requests", "usageUnknownRequests", "cost" (exact decimal
    string, or null when unknown), "costUnknownRequests"}``. Corrupt files are skipped with a warning on stderr.
    ``DIR`` must be an existing folder. Exit 0; 2 with one ``tiny-agent: …`` line on stderr when the database
    cannot be opened or written (e.g. its folder is not writable).

``tiny-agent index rebuild [--workspace DIR]...``
    Re-reads every session file of the known workspaces and the given ones (which become known) and prints one
    line ``{"sessions": n, "requests": n, "corrupt": [{"path", "code", "line"}, ...]}``. Every request's cost is
    priced again from its file (the provider's own figures come back from the cost side files, so a deleted index
    loses none). Corrupt files are reported and skipped. Each ``DIR`` must be an existing folder. Exit 0; 2 with
    one ``tiny-agent: …`` line on stderr when the database cannot be opened or written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tiny_agent_core.cli.arguments import existing_folder
from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import (
    CorruptFile,
    IndexConnection,
    SessionSummary,
    damage_reason,
    known_workspaces,
    list_sessions,
    opened,
    rebuild,
    replace_damaged,
    scan_workspace,
)
from tiny_agent_core.timestamps import local_datetime

_T = TypeVar("_T")


def register(subparsers: Any) -> None:
    """Add ``sessions`` and ``index rebuild``."""
    sessions = subparsers.add_parser("sessions", help="list the sessions of a workspace, newest first")
    where = sessions.add_mutually_exclusive_group()
    where.add_argument(
        "--workspace", metavar="DIR", type=existing_folder, help="workspace folder (default: current directory)"
    )
    where.add_argument("--all", action="store_true", help="every known workspace")
    sessions.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    sessions.set_defaults(handler=run_sessions)

    index = subparsers.add_parser("index", help="maintain the session index and usage ledger")
    commands = index.add_subparsers(dest="index_command", required=True)
    rebuild_parser = commands.add_parser(
        "rebuild", help="recreate everything derivable from the session files of the known workspaces"
    )
    rebuild_parser.add_argument(
        "--workspace",
        metavar="DIR",
        type=existing_folder,
        action="append",
        default=[],
        help="also index this workspace",
    )
    rebuild_parser.set_defaults(handler=run_rebuild)


def _tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    if count < 10_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{round(count / 1_000_000)}M"


def format_usage(summary: SessionSummary) -> str:
    """``↑input ↓output R<cacheRead> W<cacheWrite>`` (R/W omitted when 0), plus unknown requests if any."""
    usage = summary.usage
    parts = [f"↑{_tokens(usage.input)}", f"↓{_tokens(usage.output)}"]
    if usage.cache_read:
        parts.append(f"R{_tokens(usage.cache_read)}")
    if usage.cache_write:
        parts.append(f"W{_tokens(usage.cache_write)}")
    if summary.usage_unknown_requests:
        parts.append(f"+{summary.usage_unknown_requests} unknown")
    return " ".join(parts)


def format_cost(summary: SessionSummary) -> str:
    """``$x``, ``$x + n unknown`` or ``unknown``: an unknown cost is never shown as $0."""
    if summary.cost is None:
        return "unknown"
    text = f"${summary.cost}"
    if summary.cost_unknown_requests:
        text += f" + {summary.cost_unknown_requests} unknown"
    return text


def format_state(summary: SessionSummary) -> str:
    """The open operation (``run``/``compaction``), else ``idle`` and the last outcome."""
    if summary.operation != "idle":
        return summary.operation + (" (abort requested)" if summary.abort_requested else "")
    return f"idle ({summary.last_outcome})" if summary.last_outcome else "idle"


def format_table(summaries: list[SessionSummary]) -> str:
    """The human table of ``tiny-agent sessions``."""
    header = ("ID", "CREATED", "MODEL", "STATE", "TOKENS", "COST", "TITLE")
    rows = [
        (
            summary.id,
            local_datetime(summary.created_at).strftime("%Y-%m-%d %H:%M"),
            summary.model,
            format_state(summary),
            format_usage(summary),
            format_cost(summary),
            summary.title,
        )
        for summary in summaries
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header) - 1)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def report_recovery(conn: IndexConnection) -> None:
    """Say on stderr, in one line, that opening the index had to replace a damaged file (if it did)."""
    if conn.recovery is not None:
        print(f"tiny-agent: {conn.recovery.message}", file=sys.stderr, flush=True)


def using_index(work: Callable[[IndexConnection], _T]) -> _T:
    """``work(conn)`` on the index; when that finds the file damaged, once more on a replacement rebuilt from the
    session files. A recovery is reported on stderr; other failures raise ``LedgerError`` or ``sqlite3.Error``."""
    try:
        with opened() as conn:
            report_recovery(conn)
            return work(conn)
    except (LedgerError, sqlite3.Error) as error:
        reason = damage_reason(error)
        if reason is None:
            raise
    with contextlib.closing(replace_damaged(reason)) as conn:
        report_recovery(conn)
        return work(conn)


def index_failed(error: LedgerError | sqlite3.Error) -> int:
    """Say on stderr, in one line, that the index could not be used; returns exit code 2."""
    message = str(error) if isinstance(error, LedgerError) else f"The index database failed: {error}."
    print(f"tiny-agent: {message}", file=sys.stderr)
    return 2


def run_sessions(args: argparse.Namespace) -> int:
    """Handler of ``sessions``."""

    def scan_and_list(conn: IndexConnection) -> tuple[list[CorruptFile], list[SessionSummary]]:
        workspaces = known_workspaces(conn) if args.all else [args.workspace or Path.cwd()]
        corrupt = [item for workspace in workspaces for item in scan_workspace(conn, workspace).corrupt]
        return corrupt, list_sessions(conn, None if args.all else workspaces[0])

    try:
        corrupt, summaries = using_index(scan_and_list)
    except (LedgerError, sqlite3.Error) as error:
        return index_failed(error)
    for item in corrupt:
        print(f"tiny-agent: skipped {item.path}: {item.code} at line {item.line}", file=sys.stderr)
    if args.json:
        print(json.dumps([summary.as_json() for summary in summaries], ensure_ascii=False))
    elif summaries:
        print(format_table(summaries))
    else:
        print("No sessions.")
    return 0


def run_rebuild(args: argparse.Namespace) -> int:
    """Handler of ``index rebuild``."""
    try:
        report = using_index(lambda conn: rebuild(conn, args.workspace))
    except (LedgerError, sqlite3.Error) as error:
        return index_failed(error)
    print(json.dumps(report.as_json(), ensure_ascii=False))
    return 0
