"""Compaction: the ``compactionStarted`` record, its source digest (notes §5.8) and the compaction entry.

A compaction names the message entries it summarizes and those it keeps (together, every message entry up to
its input boundary), with a digest of that source; its entry then replaces the active context with the summary
and the retained tail, which must repeat those messages exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from tiny_agent_core.session.fact_types import CompactionEntry, CompactionStarted
from tiny_agent_core.session.rules.context import FactContext, Reservations
from tiny_agent_core.session.rules.messages import canonical_message, check_message, check_role_order
from tiny_agent_core.session.state import IDLE, CompactionOperation, EntryInfo, SessionIndex, SessionState

__all__ = ["SUMMARY_PREFIX", "apply_compaction_entry", "apply_compaction_started"]

SUMMARY_PREFIX = "[Compacted history]\n"
"""How the summary message of a compaction starts in the active context (the reference's text)."""

_COMPACTION_KEYS = frozenset({"type", "operationId", "summary", "compactedThroughEntryId", "retainedTail"})
_RETAINED_KEYS = frozenset({"sourceEntryId", "message"})
_COMPACTION_STARTED_KEYS = frozenset(
    {
        "type",
        "operationId",
        "operationKind",
        "inputThroughEntryId",
        "resultEntryId",
        "compactedEntryIds",
        "retainedEntryIds",
        "sourceDigest",
    }
)


def apply_compaction_started(context: FactContext, record: dict[str, Any]) -> CompactionStarted:
    """A ``compactionStarted`` record: an idle session starts compacting its messages up to an entry."""
    context.only_keys(record, _COMPACTION_STARTED_KEYS)
    if record.get("operationKind") != "compaction" or context.state.operation is not IDLE:
        context.fail("INVALID_TRANSITION")
    reservations: Reservations = {}
    operation_id = context.reserve(record.get("operationId"), reservations)
    input_through = context.uuid(record.get("inputThroughEntryId"))
    result_entry_id = context.reserve(record.get("resultEntryId"), reservations, "compactionResult")
    index = context.index
    input_info = index.entries.get(input_through)
    if input_info is None:
        context.fail("INVALID_REFERENCE")
    compacted = record.get("compactedEntryIds")
    retained = record.get("retainedEntryIds")
    if type(compacted) is not list or not compacted or type(retained) is not list:
        context.fail("INVALID_FACT")
    partition = [*compacted, *retained]
    input_index = input_info.message_index
    expected = index.message_ids[: input_index + 1] if input_index >= 0 else None
    if partition != expected:
        # Not the message ids: report a malformed id first, as the reference validates every id before comparing.
        for value in partition:
            context.uuid(value)
        context.fail("INVALID_REFERENCE")
    source_digest = context.digest(record.get("sourceDigest"))
    if _source_digest(context, input_index) != source_digest:
        context.fail("INVALID_REFERENCE")
    operation = CompactionOperation(operation_id, input_through, result_entry_id)
    context.commit_reservations(reservations)
    index.operations[operation_id] = operation  # grow-only (SessionState.grow_only_parts)
    context.journal.assign(context.state, "operation", operation)
    return CompactionStarted(
        context.fact_seq,
        context.fact_id,
        context.timestamp,
        operation_id,
        input_through,
        result_entry_id,
        compacted,
        retained,
        source_digest,
    )


def _hash_sources(hasher: Any, state: SessionState, first: int, stop: int) -> None:
    """Extend ``hasher`` with the source items of message entries ``first..stop-1``, comma-separated (with a leading
    comma unless ``first`` is 0). The transcript holds the message entries' messages in the same order as
    ``message_ids`` (both are appended together), so each message is read from it, not looked up by id."""
    separator = "," if first else ""
    for entry_id, message in zip(state.index.message_ids[first:stop], state.transcript[first:stop], strict=True):
        hasher.update(f'{separator}{{"message":{canonical_message(message)},"sourceEntryId":"{entry_id}"}}'.encode())
        separator = ","


def _source_digest(context: FactContext, through: int) -> str:
    """Digest of ``[{sourceEntryId, message}, …]`` over message entries ``0..through`` (notes §5.8).

    The hash of the message prefix is extended incrementally and kept, so repeated compactions of a growing
    session stay linear overall; a digest of an older prefix is recomputed from scratch.
    """
    index = context.index
    hasher, count = index.source_digest
    if through + 1 < count:
        hasher = hashlib.sha256(b"[")
        _hash_sources(hasher, context.state, 0, through + 1)
        hasher.update(b"]")
        return "sha256:" + hasher.hexdigest()
    if count < through + 1:
        hasher = hasher.copy()
        _hash_sources(hasher, context.state, count, through + 1)
        context.journal.assign(index, "source_digest", (hasher, through + 1))
    final = hasher.copy()
    final.update(b"]")
    return "sha256:" + str(final.hexdigest())


def apply_compaction_entry(context: FactContext, entry: dict[str, Any]) -> CompactionEntry:
    """The compaction entry: the summary and retained tail that become the active context."""
    index = context.index
    if index.reserved.get(context.fact_id) != "compactionResult":
        context.fail("INVALID_REFERENCE")
    context.only_keys(entry, _COMPACTION_KEYS)
    found = context.open_operation(entry.get("operationId"))
    if type(found) is not CompactionOperation or context.state.operation is not found:
        context.fail("INVALID_TRANSITION")
    if found.result_entry_id != context.fact_id:
        context.fail("INVALID_REFERENCE")
    boundary_id = context.uuid(entry.get("compactedThroughEntryId"))
    boundary_info = index.entries.get(boundary_id)
    if boundary_info is None:
        context.fail("INVALID_REFERENCE")
    summary = entry.get("summary")
    tail = entry.get("retainedTail")
    if type(summary) is not str or type(tail) is not list:
        context.fail("INVALID_FACT")
    input_boundary = index.entries[found.input_through_entry_id].position  # compactionStarted checked it exists
    if input_boundary < boundary_info.position:
        context.fail("INVALID_REFERENCE")
    retained = _retained_tail(context, tail, _message_entries(index, boundary_info.position + 1, input_boundary))
    check_role_order(context, retained)
    attempt = found.step
    if attempt is None or attempt.closed or attempt.step_kind != "compaction":
        context.fail("INVALID_TRANSITION")
    journal = context.journal
    summary_message = {"role": "user", "content": SUMMARY_PREFIX + summary}
    journal.assign(context.state, "active_context", [summary_message, *retained])
    index.active_through = found.input_through_entry_id  # a running value (Journal restores it)
    journal.assign(attempt, "closed", True)
    journal.assign(attempt, "settled_entry_id", context.fact_id)
    journal.assign(attempt, "status", "settled")
    journal.remove(index.reserved, context.fact_id)
    info = EntryInfo(None, len(index.entry_ids), -1, found.operation_id, attempt.step_id, attempt.attempt_id)
    index.entries[context.fact_id] = info  # grow-only (SessionState.grow_only_parts)
    index.entry_ids.append(context.fact_id)
    return CompactionEntry(
        context.fact_seq, context.fact_id, context.timestamp, found.operation_id, summary, boundary_id, retained
    )


def _message_entries(index: SessionIndex, first: int, last: int) -> Iterator[str]:
    """The message entry ids among entries ``first..last`` (file positions), lazily."""
    entry_ids, entries = index.entry_ids, index.entries
    for position in range(first, last + 1):
        candidate = entry_ids[position]
        if entries[candidate].message is not None:
            yield candidate


def _retained_tail(context: FactContext, tail: list[Any], expected: Iterator[str]) -> list[dict[str, Any]]:
    """The retained messages: each repeats, in order, the next message entry after the compacted ones."""
    entries = context.index.entries
    retained: list[dict[str, Any]] = []
    for raw in tail:
        item = context.object(raw)
        context.only_keys(item, _RETAINED_KEYS)
        source_id = context.uuid(item.get("sourceEntryId"))
        source = entries.get(source_id)
        message = check_message(context, item.get("message"))
        if source_id != next(expected, None) or source is None or source.message is None:
            context.fail("INVALID_REFERENCE")
        if source.message != message:
            context.fail("INVALID_REFERENCE")
        retained.append(message)
    if next(expected, None) is not None:
        context.fail("INVALID_REFERENCE")
    return retained
