"""``index rebuild``: recreate everything derivable from the session files of the known workspaces.

Every session file of every known workspace (plus any given one) is re-read and its rows rewritten; rows whose
file is gone or corrupt are removed. Live-only request data (cost, latency, time to first token, HTTP status,
dialect repairs, raw captures) is kept for every attempt id that is still in its file. A corrupt file is
reported and skipped; it never aborts the rebuild.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiny_agent_core.ledger.index import CorruptFile, add_workspace, known_workspaces, scan_workspace
from tiny_agent_core.ledger.transactions import transaction


@dataclass(slots=True)
class RebuildReport:
    """Counts after a rebuild, and the files that were skipped."""

    sessions: int = 0
    """Session rows in the index afterwards."""
    requests: int = 0
    """Request rows in the index afterwards."""
    corrupt: list[CorruptFile] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """``{"sessions": n, "requests": n, "corrupt": [{"path", "code", "line"}, …]}``."""
        return {
            "sessions": self.sessions,
            "requests": self.requests,
            "corrupt": [item.as_json() for item in self.corrupt],
        }


def rebuild(conn: sqlite3.Connection, workspaces: Iterable[Path] = ()) -> RebuildReport:
    """Re-read every session file of the known workspaces and ``workspaces`` (which become known)."""
    with transaction(conn):
        for workspace in workspaces:
            add_workspace(conn, workspace)
    report = RebuildReport()
    for workspace in known_workspaces(conn):
        report.corrupt += scan_workspace(conn, workspace, force=True).corrupt
    report.sessions = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    report.requests = int(conn.execute("SELECT count(*) FROM requests").fetchone()[0])
    return report
