"""Operations: ``runStarted``, ``abortRequested`` and ``operationFinished`` (``compactionStarted`` is in
:mod:`.compaction`).

One operation is active at a time. A run starts from a user entry; any operation can be asked to abort, and
finishes ``completed`` (on its final entry), ``aborted`` (once nothing is left open) or ``failed``.
"""

from __future__ import annotations

import re
from typing import Any

from tiny_agent_core.session.fact_types import AbortRequested, OperationFinished, RunStarted
from tiny_agent_core.session.rules.context import FactContext, Reservations
from tiny_agent_core.session.state import IDLE, CompactionOperation, RunOperation

__all__ = ["apply_abort_requested", "apply_operation_finished", "apply_run_started"]

_RUN_STARTED_KEYS = frozenset({"type", "operationId", "operationKind", "inputEntryId"})
_ABORT_KEYS = frozenset({"type", "operationId", "operationKind", "phase", "toolCallId", "reason"})
_FINISHED_KEYS = frozenset({"type", "operationId", "operationKind", "outcome", "completion", "finalEntryId", "error"})
_PHASES = frozenset({"model", "tool", "compact"})
_OUTCOMES = frozenset({"completed", "aborted", "failed"})
_COMPLETIONS = frozenset({"normal", "truncated"})
# JavaScript's String.prototype.trim() whitespace (differs from str.isspace()).
_JS_BLANK = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*").fullmatch


def apply_run_started(context: FactContext, record: dict[str, Any]) -> RunStarted:
    """A ``runStarted`` record: an idle session starts a run from one of its user entries."""
    context.only_keys(record, _RUN_STARTED_KEYS)
    if record.get("operationKind") != "run" or context.state.operation is not IDLE:
        context.fail("INVALID_TRANSITION")
    reservations: Reservations = {}
    operation_id = context.reserve(record.get("operationId"), reservations)
    input_entry_id, source = context.known(context.index.entries, record.get("inputEntryId"))
    if source is None or source.message is None or source.message["role"] != "user":
        context.fail("INVALID_REFERENCE")
    operation = RunOperation(operation_id, input_entry_id)
    context.commit_reservations(reservations)
    context.index.operations[operation_id] = operation  # grow-only (SessionState.grow_only_parts)
    context.journal.assign(context.state, "operation", operation)
    return RunStarted(context.fact_seq, context.fact_id, context.timestamp, operation_id, input_entry_id)


def apply_abort_requested(context: FactContext, record: dict[str, Any]) -> AbortRequested:
    """An ``abortRequested`` record (Escape), once per operation, naming the phase it came in."""
    context.only_keys(record, _ABORT_KEYS)
    found = context.open_operation(record.get("operationId"))
    if record.get("operationKind") != found.kind or record.get("reason") != "escape":
        context.fail("INVALID_TRANSITION")
    phase = context.choice(record.get("phase"), _PHASES)
    tool_call_id = record.get("toolCallId")
    if (phase == "tool") != (type(tool_call_id) is str):
        context.fail("INVALID_FACT")
    if context.state.operation is not found or found.abort_requested:
        context.fail("INVALID_TRANSITION")
    context.journal.assign(found, "abort_requested", True)
    return AbortRequested(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        found.operation_id,
        found.kind,
        phase,
        tool_call_id if type(tool_call_id) is str else None,
    )


def apply_operation_finished(context: FactContext, record: dict[str, Any]) -> OperationFinished:
    """An ``operationFinished`` record for the active operation, with what its outcome requires."""
    context.only_keys(record, _FINISHED_KEYS)
    found = context.open_operation(record.get("operationId"))
    outcome = record.get("outcome")
    if record.get("operationKind") != found.kind or type(outcome) is not str or outcome not in _OUTCOMES:
        context.fail("INVALID_TRANSITION")
    if context.state.operation is not found:
        context.fail("INVALID_TRANSITION")
    if outcome == "completed":
        if isinstance(found, RunOperation):
            _check_run_completed(context, record, found)
        else:
            _check_compaction_completed(context, record, found)
    elif outcome == "aborted":
        open_attempt = found.step is not None and found.step.status == "attempting"
        pending_tools = type(found) is RunOperation and found.pending_tools > 0
        if "finalEntryId" in record or not found.abort_requested or pending_tools or open_attempt:
            context.fail("INVALID_TRANSITION")
    elif "finalEntryId" in record:
        context.fail("INVALID_FACT")
    if outcome != "completed" and "completion" in record:
        context.fail("INVALID_FACT")
    error_code = error_message = None
    if outcome == "failed":
        error_code, error_message = context.check_error(record.get("error"))
    elif "error" in record:
        context.fail("INVALID_FACT")
    context.journal.assign(found, "finished", True)
    context.journal.assign(context.state, "operation", IDLE)
    return OperationFinished(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        found.operation_id,
        found.kind,
        outcome,
        record.get("completion") if outcome == "completed" else None,
        record.get("finalEntryId") if outcome == "completed" else None,
        error_code,
        error_message,
    )


def _check_run_completed(context: FactContext, record: dict[str, Any], run: RunOperation) -> None:
    """A run completes on its last step's settled assistant entry: a final answer, or a truncated tool call."""
    completion = context.choice(record.get("completion"), _COMPLETIONS)
    final_id, info = context.known(context.index.entries, record.get("finalEntryId"))
    if info is None or info.operation_id != run.operation_id or info.message is None:
        context.fail("INVALID_REFERENCE")
    if info.stop_reason != ("stop" if completion == "normal" else "length"):
        context.fail("INVALID_REFERENCE")
    attempt = context.index.attempt_of(info)
    if (
        attempt is None
        or not attempt.closed
        or attempt.failed
        or attempt.step_id != run.latest_step_id
        or attempt.settled_entry_id != final_id
    ):
        context.fail("INVALID_REFERENCE")
    _check_final_message(context, info.message, completion)
    if run.pending_tools > 0:
        context.fail("INVALID_TRANSCRIPT")


def _check_final_message(context: FactContext, message: dict[str, Any], completion: str) -> None:
    """A final answer has non-blank content; a truncated completion ended on tool calls."""
    content = message.get("content")
    if (
        message["role"] != "assistant"
        or (completion == "normal" and (content is None or _JS_BLANK(content) is not None))
        or (completion == "truncated" and not message.get("tool_calls"))
    ):
        context.fail("INVALID_TRANSCRIPT")


def _check_compaction_completed(context: FactContext, record: dict[str, Any], found: CompactionOperation) -> None:
    """A compaction completes on its compaction entry, written by its last step."""
    if "completion" in record:
        context.fail("INVALID_FACT")
    final_id, info = context.known(context.index.entries, record.get("finalEntryId"))
    if (
        info is None
        or info.operation_id != found.operation_id
        or info.message is not None
        or found.result_entry_id != final_id
    ):
        context.fail("INVALID_REFERENCE")
    attempt = context.index.attempt_of(info)
    if attempt is None or attempt.step_id != found.latest_step_id or attempt.settled_entry_id != final_id:
        context.fail("INVALID_REFERENCE")
