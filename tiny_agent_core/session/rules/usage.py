"""Usage facts (``kind: "usage"``): the tokens of one model attempt or one tool, added to the session's totals."""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.fact_types import UsageRecorded
from tiny_agent_core.session.rules.context import MAX_SAFE_INTEGER, FactContext
from tiny_agent_core.session.state import Attempt, ToolCallState

__all__ = ["apply_usage"]

_USAGE_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "operationId", "attemptId", "toolStartedId", "usage"})
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
_USAGE_KEY_SET = frozenset(_USAGE_KEYS)


def apply_usage(context: FactContext, fact: dict[str, Any]) -> UsageRecorded:
    """A usage fact of an operation's attempt or started tool; every total stays a safe integer."""
    context.only_keys(fact, _USAGE_FACT_KEYS)
    index = context.index
    operation_id, operation = context.known(index.operations, fact.get("operationId"))
    if operation is None:
        context.fail("INVALID_REFERENCE")
    has_attempt = "attemptId" in fact
    if has_attempt == ("toolStartedId" in fact):
        context.fail("INVALID_FACT")
    attempt_id = tool_started_id = None
    owner: Attempt | ToolCallState | None
    if has_attempt:
        attempt_id, owner = context.known(index.attempts, fact["attemptId"])
    else:
        tool_started_id, owner = context.known(index.tools, fact["toolStartedId"])
    if owner is None or owner.operation_id != operation_id:
        context.fail("INVALID_REFERENCE")
    usage = context.object(fact.get("usage"))
    context.only_keys(usage, _USAGE_KEY_SET)
    amounts = [context.count(usage.get(key)) for key in _USAGE_KEYS]
    totals = tuple(map(int.__add__, index.usage_totals, amounts))
    if max(totals) > MAX_SAFE_INTEGER:
        context.fail("INVALID_FACT")
    context.journal.assign(index, "usage_totals", totals)
    return UsageRecorded(
        context.fact_seq, context.fact_id, context.timestamp, operation_id, attempt_id, tool_started_id, *amounts
    )
