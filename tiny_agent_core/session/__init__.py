"""Durable v2 sessions: the strict reducer, canonical digests, the recovery planner and the session store.

The reference rules are in ``../shared/reference/tiny-agent-notes.md`` §5. Entry points:

* :func:`reduce_session` — bytes of a session file → :class:`SessionState`, or :class:`SessionCorruption`
  with the reference's code, line and seq; linear in the file size;
* :func:`apply_transaction` — advance a state by one transaction line, atomically (what the store uses);
* :mod:`tiny_agent_core.session.rules` — the reducer's rules, one module per family of facts (entries, tool
  calls, steps, operations, compaction, usage), each taking a ``FactContext``;
* :func:`state_to_json` — the reference's golden ``state`` object;
* :func:`canonical_json` / :func:`canonical_digest` — canonical JSON and ``sha256:`` digests;
* :func:`plan_recovery` — (state, current configuration) → the next recovery step;
* :class:`SessionStore` — create/open/append/close session files (O(1) appends, fsync, exclusive lock);
* :mod:`tiny_agent_core.session.facts` — builders of the facts the agent loop writes.
"""

from tiny_agent_core.errors import SessionCorruption, SessionLockedError, TransactionRejectedError
from tiny_agent_core.session import facts
from tiny_agent_core.session.canonical_json import CanonicalJsonError, canonical_digest, canonical_json
from tiny_agent_core.session.planner import plan_recovery, validate_current
from tiny_agent_core.session.reducer import (
    SYNTHETIC_CONTENT,
    StagedTransaction,
    apply_transaction,
    reduce_session,
    stage_transaction,
)
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
from tiny_agent_core.session.store import SessionStore, environment_identity, find_session, session_file_name

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
    "SessionLockedError",
    "SessionState",
    "SessionStore",
    "StagedTransaction",
    "ToolCallState",
    "TransactionRejectedError",
    "apply_transaction",
    "canonical_digest",
    "canonical_json",
    "environment_identity",
    "facts",
    "find_session",
    "plan_recovery",
    "reduce_session",
    "session_file_name",
    "stage_transaction",
    "state_to_json",
    "validate_current",
]
