"""Usage facts (``kind: "usage"``): the tokens of one model attempt or one tool, added to the session's totals."""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.fact_types import UsageRecorded
from tiny_agent_core.session.rules.context import MAX_SAFE_INTEGER, FactContext
from tiny_agent_core.session.state import Attempt, ToolCallState

__all__ = ["apply_usage"]

_USAGE_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "operationId", "attemptId", "toolStartedId", "usage"})
_USAGE_KEY_SET = frozenset({"input", "output", "cacheRead", "cacheWrite"})


def apply_usage(context: FactContext, fact: dict[str, Any]) -> UsageRecorded:
    """A usage fact of an operation's attempt or started tool; every total stays a safe integer."""
    if not _USAGE_FACT_KEYS.issuperset(fact):
        context.fail("INVALID_FACT")
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
    usage = fact.get("usage")
    if type(usage) is not dict or not _USAGE_KEY_SET.issuperset(usage):
        context.fail("INVALID_FACT")
    amounts: list[Any] = [usage.get("input"), usage.get("output"), usage.get("cacheRead"), usage.get("cacheWrite")]
    for position, amount in enumerate(amounts):
        if type(amount) is not int or amount < 0:  # the usual int needs no call (its bound: the totals' below)
            amounts[position] = context.count(amount)
    totals = tuple(map(int.__add__, index.usage_totals, amounts))
    if max(totals) > MAX_SAFE_INTEGER:  # (every total and amount is ≥ 0, so no amount is above its total)
        context.fail("INVALID_FACT")
    index.usage_totals = totals  # a running value (Journal restores it)
    return UsageRecorded(
        context.fact_seq, context.fact_id, context.timestamp, operation_id, attempt_id, tool_started_id, *amounts
    )
