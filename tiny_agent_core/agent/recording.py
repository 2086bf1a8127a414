"""Writing the agent's request records into the SQLite ledger (index, usage, cost, captures).

The session file stays the source of truth; the ledger adds what it cannot hold: cost and its source, latency,
time to first token, HTTP status, dialect repairs and the raw wire capture. Each request costs O(1) database
work (no re-reading of the session file); the session row is re-indexed from the file when the recorder closes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from tiny_agent_core.agent.requests import RequestRecord
from tiny_agent_core.ledger import index_session_file, record_attempt
from tiny_agent_core.ledger.extract import RequestFacts
from tiny_agent_core.ledger.requests import LiveRequest, add_raw_capture, record_live


class LedgerRecorder:
    """A :data:`~tiny_agent_core.agent.requests.RequestRecorder` that writes each request to the ledger.

    ``secrets`` (the API key) are scrubbed from the stored capture once more, whatever the capture holds.
    """

    def __init__(self, conn: sqlite3.Connection, session_path: Path, workspace: Path, secrets: Sequence[str] = ()):
        self._conn = conn
        self._path = session_path
        self._workspace = workspace
        self._secrets = [secret for secret in secrets if secret]
        index_session_file(conn, session_path, workspace)

    def __call__(self, record: RequestRecord) -> None:
        """Record one physical request and what it cost."""
        record_attempt(
            self._conn,
            record.session_id,
            RequestFacts(
                attempt_id=record.attempt_id,
                operation_id=record.operation_id,
                step_id=record.step_id,
                attempt=record.attempt,
                step_kind=record.step_kind,
                model=record.model,
                started_at=record.started_at_ms,
                usage=record.usage,
                stop_reason=record.stop_reason,
                error_code=record.error_code,
                outcome=record.outcome,
                finished_at=record.finished_at_ms,
            ),
        )
        cost = record.cost
        capture = record.capture
        record_live(
            self._conn,
            LiveRequest(
                attempt_id=record.attempt_id,
                cost=cost if cost.amount is not None else None,
                response_model=record.response.model if record.response is not None else None,
                latency_ms=round(record.latency_ms),
                ttft_ms=round(record.ttft_ms) if record.ttft_ms is not None else None,
                http_status=capture.status if capture is not None else None,
                error_kind=record.error.kind if record.error is not None else None,
                dialect_repairs=list(record.response.repairs) if record.response is not None else None,
                dropped_fields=list(record.response.dropped) if record.response is not None else None,
            ),
        )
        if capture is not None:
            add_raw_capture(self._conn, record.attempt_id, capture.to_json(), secrets=self._secrets)

    def close(self) -> None:
        """Re-index the session from its file (token totals, title, state)."""
        index_session_file(self._conn, self._path, self._workspace)
