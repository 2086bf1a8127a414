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
* :mod:`tiny_agent_core.session.facts` — builders of the facts the agent loop writes;
* :mod:`tiny_agent_core.session.fact_types` — the typed facts the reducer returns for each fact it accepted.

Each name is imported on first use (PEP 562), so a command that needs only the reducer (``tiny-agent session
check``) does not load the store, the planner or the fact builders.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tiny_agent_core.errors import SessionCorruption, SessionLockedError, TransactionRejectedError
    from tiny_agent_core.session import facts
    from tiny_agent_core.session.canonical_json import CanonicalJsonError, canonical_digest, canonical_json
    from tiny_agent_core.session.planner import plan_recovery, validate_current
    from tiny_agent_core.session.reducer import (
        SYNTHETIC_CONTENT,
        StagedTransaction,
        TransactionObserver,
        apply_transaction,
        read_header,
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
    from tiny_agent_core.session.store import (
        SessionStore,
        environment_identity,
        find_session,
        session_file_name,
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
    "SessionLockedError",
    "SessionState",
    "SessionStore",
    "StagedTransaction",
    "ToolCallState",
    "TransactionObserver",
    "TransactionRejectedError",
    "apply_transaction",
    "canonical_digest",
    "canonical_json",
    "environment_identity",
    "facts",
    "find_session",
    "plan_recovery",
    "read_header",
    "reduce_session",
    "session_file_name",
    "stage_transaction",
    "state_to_json",
    "validate_current",
]

_HOMES = {
    "tiny_agent_core.errors": ("SessionCorruption", "SessionLockedError", "TransactionRejectedError"),
    "tiny_agent_core.session.canonical_json": ("CanonicalJsonError", "canonical_digest", "canonical_json"),
    "tiny_agent_core.session.planner": ("plan_recovery", "validate_current"),
    "tiny_agent_core.session.reducer": (
        "SYNTHETIC_CONTENT",
        "StagedTransaction",
        "TransactionObserver",
        "apply_transaction",
        "read_header",
        "reduce_session",
        "stage_transaction",
    ),
    "tiny_agent_core.session.state": (
        "IDLE",
        "Attempt",
        "CompactionOperation",
        "IdleOperation",
        "Operation",
        "RunOperation",
        "SessionHeader",
        "SessionState",
        "ToolCallState",
        "state_to_json",
    ),
    "tiny_agent_core.session.store": ("SessionStore", "environment_identity", "find_session", "session_file_name"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives (``facts`` is the submodule itself)."""


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use, and keep it here."""
    module = _MODULE_OF.get(name)
    if module is None:
        if name == "facts":
            __import__("tiny_agent_core.session.facts")
            return sys.modules["tiny_agent_core.session.facts"]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    __import__(module)
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, every public name included before its first use."""
    return sorted({*globals(), *__all__})
