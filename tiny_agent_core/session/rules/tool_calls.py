"""Tool calls: the ``toolStarted`` record and the tool result entries that answer a call (notes §5.10).

A call is answered either by a result written without running it (a *pre-execution* synthetic result naming
the assistant entry and the call's index) or by the result of a ``toolStarted``, whose id it reserved.
"""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.fact_types import ToolResultEntry, ToolStarted
from tiny_agent_core.session.rules.context import FactContext, Reservations
from tiny_agent_core.session.rules.messages import append_message, tool_calls_of
from tiny_agent_core.session.state import EntryInfo, RunOperation, ToolCallState

__all__ = ["SYNTHETIC_CONTENT", "apply_tool_result", "apply_tool_started"]

SYNTHETIC_CONTENT: dict[str, str] = {
    "invalidArguments": "Error: Tool arguments were invalid; the tool was not executed.",
    "unknownTool": "Error: Unknown tool; the tool was not executed.",
    "truncated": "Error: Tool call arguments were truncated by the model token limit; the tool was not executed.",
    "aborted": "Operation aborted before execution.",
    "interrupted": "Operation interrupted after execution status became unknown; the tool was not replayed.",
}
"""The fixed model-facing content of each synthetic tool result (notes §5.10); never localized."""

_PRE_RESULT_KEYS = frozenset({"type", "stepId", "assistantEntryId", "toolIndex", "message", "toolName", "result"})
_STARTED_RESULT_KEYS = frozenset({"type", "stepId", "message", "toolName", "toolStartedId", "result"})
_RESULT_KEYS = frozenset({"type", "reason"})
_PRE_REASONS = frozenset({"invalidArguments", "unknownTool", "truncated", "aborted"})
_RESULT_TYPES = frozenset({"success", "error", "synthetic"})
_REPLAY = frozenset({"safe", "never"})
_TOOL_STARTED_KEYS = frozenset(
    {
        "type",
        "operationId",
        "stepId",
        "assistantEntryId",
        "toolIndex",
        "toolCallId",
        "toolName",
        "arguments",
        "replay",
        "replayKey",
        "environmentIdentity",
        "resultEntryId",
    }
)


def apply_tool_result(context: FactContext, entry: dict[str, Any], message: dict[str, Any]) -> ToolResultEntry:
    """Apply a tool message entry; returns it typed (one that breaks the role order sets ``context.violation``)."""
    pre_execution = "assistantEntryId" in entry or "toolIndex" in entry
    context.only_keys(entry, _PRE_RESULT_KEYS if pre_execution else _STARTED_RESULT_KEYS)
    result = context.object(entry.get("result"))
    context.only_keys(result, _RESULT_KEYS)
    context.uuid(entry.get("stepId"))
    context.string(entry.get("toolName"))
    if pre_execution:
        return _apply_pre_execution_result(context, entry, message, result)
    return _apply_started_result(context, entry, message, result)


def _apply_pre_execution_result(
    context: FactContext, entry: dict[str, Any], message: dict[str, Any], result: dict[str, Any]
) -> ToolResultEntry:
    """A synthetic result for a call that never started (unknown tool, invalid or truncated arguments, abort)."""
    step_id, tool_name = entry["stepId"], entry["toolName"]  # checked by apply_tool_result
    result_type = result.get("type")
    if result_type != "synthetic" or type(result_type) is not str:
        context.fail("INVALID_FACT")
    reason = context.choice(result.get("reason"), _PRE_REASONS)
    tool_index = context.count(entry.get("toolIndex"))
    index = context.index
    assistant_entry_id, assistant = context.known(index.entries, entry.get("assistantEntryId"))
    run = context.current_run()
    if (
        assistant is None
        or assistant.message is None
        or assistant.step_id != step_id
        or assistant.operation_id != (run.operation_id if run is not None else None)
    ):
        context.fail("INVALID_REFERENCE")
    calls = tool_calls_of(assistant.message)
    call = calls[tool_index] if tool_index < len(calls) else None
    if call is None or call["id"] != message["tool_call_id"] or call["function"]["name"] != tool_name:
        context.fail("INVALID_REFERENCE")
    pair = (assistant_entry_id, tool_index)
    if pair in index.tool_pairs:
        context.fail("INVALID_TRANSITION")
    if message["content"] != SYNTHETIC_CONTENT[reason]:
        context.fail("INVALID_TRANSCRIPT")
    index.tool_pairs[pair] = context.fact_id  # grow-only (SessionState.grow_only_parts)
    info = EntryInfo(message, len(index.entry_ids), len(index.message_ids), assistant.operation_id, step_id)
    append_message(context, message, info)
    return ToolResultEntry(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        step_id,
        tool_name,
        message,
        "synthetic",
        reason,
        None,
        assistant_entry_id,
        tool_index,
    )


def _apply_started_result(
    context: FactContext, entry: dict[str, Any], message: dict[str, Any], result: dict[str, Any]
) -> ToolResultEntry:
    """The result of a started tool: its own output, or ``interrupted`` when its outcome is unknown."""
    step_id, tool_name = entry["stepId"], entry["toolName"]  # checked by apply_tool_result
    index, journal, fact_id = context.index, context.journal, context.fact_id
    if index.reserved.get(fact_id) != "toolResult":
        context.fail("INVALID_REFERENCE")
    result_type = context.choice(result.get("type"), _RESULT_TYPES)
    if result_type == "synthetic":
        if result.get("reason") != "interrupted":
            context.fail("INVALID_FACT")
        if message["content"] != SYNTHETIC_CONTENT["interrupted"]:
            context.fail("INVALID_TRANSCRIPT")
    elif "reason" in result:
        context.fail("INVALID_FACT")
    started_id, started = context.known(index.tools, entry.get("toolStartedId"))
    if (
        started is None
        or started.step_id != step_id
        or started.result_entry_id != fact_id
        or started.tool_call_id != message["tool_call_id"]
        or started.tool_name != tool_name
        or started.status != "pending"
    ):
        context.fail("INVALID_REFERENCE")
    journal.assign(started, "status", "completed")
    journal.assign(started.operation, "pending_tools", started.operation.pending_tools - 1)
    journal.remove(index.reserved, fact_id)
    info = EntryInfo(message, len(index.entry_ids), len(index.message_ids), started.operation_id, started.step_id)
    append_message(context, message, info)
    return ToolResultEntry(
        context.fact_seq,
        fact_id,
        context.timestamp,
        step_id,
        tool_name,
        message,
        result_type,
        "interrupted" if result_type == "synthetic" else None,
        started_id,
        None,
        None,
    )


def apply_tool_started(context: FactContext, record: dict[str, Any]) -> ToolStarted:
    """A ``toolStarted`` record: a call of the run's settled step, of a declared tool, about to run."""
    context.only_keys(record, _TOOL_STARTED_KEYS)
    found = context.open_operation(record.get("operationId"))
    if type(found) is not RunOperation or context.state.operation is not found:
        context.fail("INVALID_TRANSITION")
    index = context.index
    assistant_entry_id, assistant = context.known(index.entries, record.get("assistantEntryId"))
    if (
        assistant is None
        or assistant.message is None
        or assistant.stop_reason != "toolUse"
        or assistant.operation_id != found.operation_id
    ):
        context.fail("INVALID_REFERENCE")
    tool_index = context.count(record.get("toolIndex"))
    calls = tool_calls_of(assistant.message)
    call = calls[tool_index] if tool_index < len(calls) else None
    tool_call_id = context.string(record.get("toolCallId"))
    tool_name = context.string(record.get("toolName"))
    if (
        call is None
        or call["id"] != tool_call_id
        or call["function"]["name"] != tool_name
        or assistant.step_id != record.get("stepId")
    ):
        context.fail("INVALID_REFERENCE")
    pair = (assistant_entry_id, tool_index)
    if pair in index.tool_pairs:
        context.fail("INVALID_TRANSITION")
    arguments = context.object(record.get("arguments"))
    replay = context.choice(record.get("replay"), _REPLAY)
    attempt = index.attempt_of(assistant)
    declared = attempt is not None and any(
        tool["name"] == tool_name for tool in attempt.configuration_snapshot["tools"]
    )
    replay_key = context.string(record.get("replayKey"))
    environment_identity = context.string(record.get("environmentIdentity"))
    if not declared:
        context.fail("INVALID_TRANSITION")
    reservations: Reservations = {}
    result_entry_id = context.reserve(record.get("resultEntryId"), reservations, "toolResult")
    step_id: str = record["stepId"]  # equal to the assistant entry's (checked above)
    tool = ToolCallState(
        found,
        context.fact_id,
        step_id,
        assistant_entry_id,
        tool_index,
        tool_call_id,
        tool_name,
        arguments,
        replay,
        replay_key,
        environment_identity,
        result_entry_id,
    )
    journal = context.journal
    context.commit_reservations(reservations)
    index.tools[context.fact_id] = tool  # grow-only (SessionState.grow_only_parts)
    index.tool_pairs[pair] = context.fact_id
    journal.append(found.tool_calls, tool)
    journal.assign(found, "pending_tools", found.pending_tools + 1)
    return ToolStarted(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        found.operation_id,
        step_id,
        assistant_entry_id,
        tool_index,
        tool_call_id,
        tool_name,
        arguments,
        replay,
        replay_key,
        environment_identity,
        result_entry_id,
    )
