"""The SQLite index and usage/cost ledger in the user data folder (SPEC §4, §5).

Open it with :func:`connect` (WAL, foreign keys, migrations applied; the index is a cache, so a damaged file is
replaced by one rebuilt from the session files and :attr:`IndexConnection.recovery` says so); keep it current with
:func:`scan_workspace` / :func:`index_session_file`; list with :func:`list_sessions`; as the agent commits a
request, :func:`record_attempt` (no file read), then :func:`record_live` and :func:`add_raw_capture` for what
only the live request knows; recreate everything derivable with :func:`rebuild`. Every cost is priced again
whenever its row is written (:mod:`~tiny_agent_core.ledger.repricing`; :func:`refresh_prices` applies changed
overrides), so a rebuilt index keeps them; cost reports are in :mod:`~tiny_agent_core.ledger.costs`.
The schema is documented in :mod:`tiny_agent_core.ledger.migrations`.
"""

from tiny_agent_core.ledger.database import (
    IndexConnection,
    IndexRecovery,
    connect,
    damage_reason,
    opened,
    replace_damaged,
)
from tiny_agent_core.ledger.extract import RequestFacts, SessionFacts, ToolFacts, extract_session
from tiny_agent_core.ledger.index import (
    CorruptFile,
    ScanReport,
    SessionSummary,
    add_workspace,
    get_session,
    index_session_file,
    known_workspaces,
    list_sessions,
    record_attempt,
    scan_workspace,
)
from tiny_agent_core.ledger.rebuild import RebuildReport, rebuild
from tiny_agent_core.ledger.repricing import refresh_prices
from tiny_agent_core.ledger.requests import (
    Cost,
    LiveRequest,
    RequestRow,
    add_raw_capture,
    get_request,
    raw_captures,
    record_live,
    redact,
    session_requests,
)
from tiny_agent_core.ledger.transactions import transaction
from tiny_agent_core.pricing import CostSource

__all__ = [
    "CorruptFile",
    "Cost",
    "CostSource",
    "IndexConnection",
    "IndexRecovery",
    "LiveRequest",
    "RebuildReport",
    "RequestFacts",
    "RequestRow",
    "ScanReport",
    "SessionFacts",
    "SessionSummary",
    "ToolFacts",
    "add_raw_capture",
    "add_workspace",
    "connect",
    "damage_reason",
    "extract_session",
    "get_request",
    "get_session",
    "index_session_file",
    "known_workspaces",
    "list_sessions",
    "opened",
    "raw_captures",
    "rebuild",
    "record_attempt",
    "record_live",
    "redact",
    "refresh_prices",
    "replace_damaged",
    "scan_workspace",
    "session_requests",
    "transaction",
]
