"""Tool calls: the ``toolStarted`` record and the tool result entries that answer a call (notes §5.10).

A call is answered either by a result written without running it (a *pre-execution* synthetic result naming
the assistant entry and the call's index) or by the result of a ``toolStarted``, whose id it reserved.
"""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.fact_types import ToolResultEntry, ToolStarted
from tiny_agent_core.session.rules.context import MAX_SAFE_INTEGER, FactContext, Reservations
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
    result = entry.get("result")
    if (
        not (_PRE_RESULT_KEYS if pre_execution else _STARTED_RESULT_KEYS).issuperset(entry)
        or type(result) is not dict
        or not _RESULT_KEYS.issuperset(result)
    ):
        context.fail("INVALID_FACT")
    context.uuid(entry.get("stepId"))
    tool_name = entry.get("toolName")
    if type(tool_name) is not str or not tool_name:
        context.fail("INVALID_FACT")
    if pre_execution:
        return _apply_pre_execution_result(context, entry, message, result)
    return _apply_started_result(context, entry, message, result)


def _apply_pre_execution_result(
    context: FactContext, entry: dict[str, Any], message: dict[str, Any], result: dict[str, Any]
) -> ToolResultEntry:
    """A synthetic result for a call that never started (unknown tool, invalid or truncated arguments, abort)."""
    step_id, tool_name = entry["stepId"], entry["toolName"]  # checked by apply_tool_result
    result_type = result.get("type")
    if result_type != "synthetic":
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
    result_type = result.get("type")
    if type(result_type) is not str or result_type not in _RESULT_TYPES:
        context.fail("INVALID_FACT")
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
    if not _TOOL_STARTED_KEYS.issuperset(record):
        context.fail("INVALID_FACT")
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
    tool_index = record.get("toolIndex")
    if type(tool_index) is not int or not 0 <= tool_index <= MAX_SAFE_INTEGER:  # the usual int needs no call
        tool_index = context.count(tool_index)
    calls = assistant.message["tool_calls"]  # (an entry that stopped for toolUse has calls)
    call = calls[tool_index] if tool_index < len(calls) else None
    tool_call_id, tool_name = record.get("toolCallId"), record.get("toolName")
    if type(tool_call_id) is not str or not tool_call_id or type(tool_name) is not str or not tool_name:
        context.fail("INVALID_FACT")
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
    arguments, replay = record.get("arguments"), record.get("replay")
    replay_key, environment_identity = record.get("replayKey"), record.get("environmentIdentity")
    if (
        type(arguments) is not dict
        or type(replay) is not str
        or replay not in _REPLAY
        or type(replay_key) is not str
        or not replay_key
        or type(environment_identity) is not str
        or not environment_identity
    ):
        context.fail("INVALID_FACT")
    attempt = index.attempt_of(assistant)
    if attempt is None or tool_name not in attempt.tool_names:  # a tool its configuration declares
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
