"""Entry facts (``kind: "entry"``): user and assistant messages here; tool results and compactions in their
own modules (:mod:`.tool_calls`, :mod:`.compaction`)."""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.fact_types import AssistantEntry, CompactionEntry, ToolResultEntry, UserEntry
from tiny_agent_core.session.rules.compaction import apply_compaction_entry
from tiny_agent_core.session.rules.context import FactContext
from tiny_agent_core.session.rules.messages import append_message, check_message
from tiny_agent_core.session.rules.tool_calls import apply_tool_result
from tiny_agent_core.session.state import EntryInfo, RunOperation

__all__ = ["apply_entry"]

_ENTRY_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "entry"})
_USER_ENTRY_KEYS = frozenset({"type", "message"})
_ASSISTANT_ENTRY_KEYS = frozenset({"type", "stepId", "attemptId", "stopReason", "message"})
_STOP_REASONS = frozenset({"stop", "toolUse", "length"})


def apply_entry(
    context: FactContext, fact: dict[str, Any]
) -> UserEntry | AssistantEntry | ToolResultEntry | CompactionEntry:
    """Apply an entry fact; returns it typed. A message that breaks the role order sets ``context.violation``."""
    entry = fact.get("entry")
    if not _ENTRY_FACT_KEYS.issuperset(fact) or type(entry) is not dict:
        context.fail("INVALID_FACT")
    kind = entry.get("type")
    if kind == "message":
        message = check_message(context, entry.get("message"))
        role = message["role"]
        if role == "user":
            return _apply_user(context, entry, message)
        if role == "assistant":
            return _apply_assistant(context, entry, message)
        return apply_tool_result(context, entry, message)
    if kind != "compaction":
        context.fail("INVALID_FACT")
    return apply_compaction_entry(context, entry)


def _apply_user(context: FactContext, entry: dict[str, Any], message: dict[str, Any]) -> UserEntry:
    index = context.index
    if context.fact_id in index.reserved:
        context.fail("DUPLICATE_ID")
    if not _USER_ENTRY_KEYS.issuperset(entry):
        context.fail("INVALID_FACT")
    append_message(context, message, EntryInfo(message, len(index.entry_ids), len(index.message_ids)))
    return UserEntry(context.fact_seq, context.fact_id, context.timestamp, message)


def _apply_assistant(context: FactContext, entry: dict[str, Any], message: dict[str, Any]) -> AssistantEntry:
    index, journal = context.index, context.journal
    if context.fact_id in index.reserved:
        context.fail("DUPLICATE_ID")
    step_id, stop_reason = entry.get("stepId"), entry.get("stopReason")
    if not _ASSISTANT_ENTRY_KEYS.issuperset(entry) or type(stop_reason) is not str or stop_reason not in _STOP_REASONS:
        context.fail("INVALID_FACT")
    attempt_id, attempt = context.known(index.attempts, entry.get("attemptId"))
    if attempt is None or attempt.step_id != step_id or attempt.closed or attempt.step_kind != "assistant":
        context.uuid(step_id)  # (a stepId equal to the attempt's is well-formed; any other is checked here)
        context.fail("INVALID_REFERENCE")
    run = context.state.operation
    if type(run) is not RunOperation or run.operation_id != attempt.operation_id:
        context.fail("INVALID_TRANSITION")
    has_calls = bool(message.get("tool_calls"))
    if (stop_reason == "toolUse" and not has_calls) or (stop_reason == "stop" and has_calls):
        context.fail("INVALID_TRANSCRIPT")
    journal.assign(attempt, "closed", True)
    journal.assign(attempt, "settled_entry_id", context.fact_id)
    if run.step is attempt:
        journal.assign(attempt, "status", "settled")
        journal.assign(attempt, "stop_reason", stop_reason)
    info = EntryInfo(
        message,
        len(index.entry_ids),
        len(index.message_ids),
        attempt.operation_id,
        attempt.step_id,
        attempt.attempt_id,
        stop_reason,
    )
    append_message(context, message, info)
    return AssistantEntry(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        attempt.step_id,
        attempt_id,
        stop_reason,
        message,
    )
