"""``tiny-agent session show [--json] FILE``: a session's run as a readable trace.

Steps (model requests) with model, stop reason, time to first token, duration, tokens and cost; under each, its
tool calls with outcome (``ok``, ``exit N``, ``timed out``, ``error``, ``denied``, ``interrupted``, ``not run``),
summary and duration (:mod:`tiny_agent_core.trace`). What only the live request knew (cost, latency, TTFT) comes
from the index database when it exists and knows the session; it is never created by this command.

With ``--json``, one line: ``{"sessionId", "usage", "cost", "costUnknownRequests", "steps": [{"stepId",
"attemptId", "attempt", "operationId", "model", "status", "stopReason", "usage", "cost", "latencyMs", "ttftMs",
"durationMs", "toolCalls": [{"id", "name", "outcome", "exitCode"?, "reason"?, "summary", "durationMs",
"diff"?: {"added", "removed"}}]}]}``; ``usage``, ``cost`` and the times are ``null`` where unknown (e.g. a
session another client wrote), a cost is an exact decimal string, and ``removed`` is ``null`` for a ``write``.

Exit 0; 2 with one ``tiny-agent: …`` line on stderr when the file cannot be read or is not a valid session.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_agent_core.errors import LedgerError, SessionCorruption

if TYPE_CHECKING:  # imported where used: registering `session` must stay cheap for `session check`
    from tiny_agent_core.timeline import Timeline

__all__ = ["add_show_command", "run_show"]


def add_show_command(commands: Any) -> None:
    """Add ``show`` to the ``session`` command's subparsers (``commands``)."""
    show: argparse.ArgumentParser = commands.add_parser(
        "show", help="print a session's run as a trace: steps, tool calls, outcomes, timings, cost"
    )
    show.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    show.add_argument("file", type=Path, help="a .jsonl session file")
    show.set_defaults(handler=run_show)


def _enrich(timeline: Timeline) -> None:
    """Fill live-only facts from the index database, if there is one (a missing database is not created)."""
    from tiny_agent_core.ledger import opened
    from tiny_agent_core.paths import database_path

    if not database_path().exists():
        return
    try:
        with opened() as conn:
            timeline.enrich(conn)
    except LedgerError as error:
        print(f"tiny-agent: costs and timings not shown: {error}", file=sys.stderr)


def run_show(args: argparse.Namespace) -> int:
    """Handler of ``session show``."""
    from tiny_agent_core.timeline import Timeline
    from tiny_agent_core.trace import build_trace, render_trace, trace_json

    path: Path = args.file
    try:
        timeline = Timeline.from_bytes(path.read_bytes())
    except OSError as error:
        print(f"tiny-agent: cannot read {path}: {error.strerror or error}", file=sys.stderr)
        return 2
    except SessionCorruption as error:
        print(f"tiny-agent: {path} is not a valid session: {error.code} at line {error.line}", file=sys.stderr)
        return 2
    _enrich(timeline)
    trace = build_trace(timeline)
    if args.json:
        print(json.dumps(trace_json(trace), ensure_ascii=False))
    else:
        print(render_trace(trace))
    return 0
