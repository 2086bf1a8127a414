"""Durable v2 sessions: the strict reducer, canonical digests, the recovery planner and the session store.

The reference rules are in ``../shared/reference/tiny-agent-notes.md`` §5. Entry points:

* :func:`reduce_session` — bytes of a session file → :class:`SessionState`, or :class:`SessionCorruption`
  with the reference's code, line and seq; linear in the file size;
* :func:`apply_transaction` — advance a state by one transaction line, atomically (what the store uses);
* :func:`state_to_json` — the reference's golden ``state`` object;
* :func:`canonical_json` / :func:`canonical_digest` — canonical JSON and ``sha256:`` digests.
"""

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session.canonical_json import CanonicalJsonError, canonical_digest, canonical_json
from tiny_agent_core.session.reducer import SYNTHETIC_CONTENT, apply_transaction, reduce_session
from tiny_agent_core.session.state import (
    IDLE,
    Attempt,
    CompactionOperation,
    IdleOperation,
    Operation,
    RunOperation,
    SessionHeader,
    SessionState,
    ToolCallState,
    state_to_json,
)

__all__ = [
    "IDLE",
    "SYNTHETIC_CONTENT",
    "Attempt",
    "CanonicalJsonError",
    "CompactionOperation",
    "IdleOperation",
    "Operation",
    "RunOperation",
    "SessionCorruption",
    "SessionHeader",
    "SessionState",
    "ToolCallState",
    "apply_transaction",
    "canonical_digest",
    "canonical_json",
    "reduce_session",
    "state_to_json",
]
