"""The strict v2 session reducer: bytes → :class:`SessionState` or :class:`SessionCorruption` (notes §5.3–5.7).

Every rule, check order and corruption code follows the reference's ``reduceSession`` (``RED``), so a file gets
the same verdict here as there. What differs is the cost: the reference deep-clones its whole state for every
transaction and re-validates the whole transcript after each one, which makes loading quadratic. Here:

* the state is mutable and every lookup is a dict/set probe: entries, attempts, tools and reservations are
  indexed, the tool-call pending set of the transcript and the pending ``toolStarted`` count of a run are kept,
  and compaction sources are hashed incrementally (the digest of the message prefix is extended, never redone);
* each fact is validated completely before it changes anything, and its changes are journaled; a transaction is
  atomic: if any of its facts (or the transcript check at its end) fails, the journal undoes the earlier facts,
  so a rejected transaction leaves the state exactly as it was. Loading a whole file skips the journal, since
  any error abandons the state.

Loading is linear in the file size. Deliberate differences from the reference, all on files no writer produces:
values the reference coerces with ``String(...)`` (digests, synthetic reasons, result types) must be real strings
here; nesting deeper than Python's recursion limit is ``MALFORMED_JSON`` (the reference overflows its stack).
"""

from __future__ import annotations

import gc
import hashlib
import re
from typing import Any, NoReturn

from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session.canonical_json import digest_text, fast_canonical_json
from tiny_agent_core.session.framing import check_committed, committed_length, parse_line, parse_line_bytes, strip_bom
from tiny_agent_core.session.state import (
    IDLE,
    Attempt,
    CompactionOperation,
    EntryInfo,
    RunOperation,
    SessionHeader,
    SessionState,
    ToolCallState,
)

__all__ = ["SYNTHETIC_CONTENT", "StagedTransaction", "apply_transaction", "reduce_session", "stage_transaction"]

SYNTHETIC_CONTENT: dict[str, str] = {
    "invalidArguments": "Error: Tool arguments were invalid; the tool was not executed.",
    "unknownTool": "Error: Unknown tool; the tool was not executed.",
    "truncated": "Error: Tool call arguments were truncated by the model token limit; the tool was not executed.",
    "aborted": "Operation aborted before execution.",
    "interrupted": "Operation interrupted after execution status became unknown; the tool was not replayed.",
}
"""The fixed model-facing content of each synthetic tool result (notes §5.10); never localized."""

_MAX = 2**53 - 1
_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}").fullmatch
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}").fullmatch
# JavaScript's String.prototype.trim() whitespace (differs from str.isspace()).
_JS_BLANK = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*").fullmatch

_HEADER_KEYS = frozenset({"kind", "version", "id", "createdAt", "cwd", "provider", "model", "environmentIdentity"})
_ENTRY_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "entry"})
_RECORD_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "record"})
_USAGE_FACT_KEYS = frozenset({"kind", "seq", "id", "timestamp", "operationId", "attemptId", "toolStartedId", "usage"})
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
_USAGE_KEY_SET = frozenset(_USAGE_KEYS)
_USER_KEYS = frozenset({"role", "content"})
_TOOL_KEYS = frozenset({"role", "content", "tool_call_id"})
_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_USER_ENTRY_KEYS = frozenset({"type", "message"})
_ASSISTANT_ENTRY_KEYS = frozenset({"type", "stepId", "attemptId", "stopReason", "message"})
_PRE_RESULT_KEYS = frozenset({"type", "stepId", "assistantEntryId", "toolIndex", "message", "toolName", "result"})
_STARTED_RESULT_KEYS = frozenset({"type", "stepId", "message", "toolName", "toolStartedId", "result"})
_RESULT_KEYS = frozenset({"type", "reason"})
_COMPACTION_KEYS = frozenset({"type", "operationId", "summary", "compactedThroughEntryId", "retainedTail"})
_RETAINED_KEYS = frozenset({"sourceEntryId", "message"})
_SNAPSHOT_KEYS = frozenset(
    {"model", "systemPromptDigest", "tools", "adapterIdentity", "routingIdentity", "outputOptionsDigest"}
)
_SNAPSHOT_TOOL_KEYS = frozenset({"name", "definitionDigest"})
_ERROR_KEYS = frozenset({"code", "message"})
_RUN_STARTED_KEYS = frozenset({"type", "operationId", "operationKind", "inputEntryId"})
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
_STEP_ATTEMPT_KEYS = frozenset(
    {
        "type",
        "operationId",
        "stepId",
        "attemptId",
        "stepKind",
        "attempt",
        "contextThroughEntryId",
        "configurationSnapshot",
        "configurationDigest",
    }
)
_STEP_FAILED_KEYS = frozenset({"type", "operationId", "stepId", "attemptId", "error"})
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
_ABORT_KEYS = frozenset({"type", "operationId", "operationKind", "phase", "toolCallId", "reason"})
_FINISHED_KEYS = frozenset({"type", "operationId", "operationKind", "outcome", "completion", "finalEntryId", "error"})
_STOP_REASONS = frozenset({"stop", "toolUse", "length"})
_PRE_REASONS = frozenset({"invalidArguments", "unknownTool", "truncated", "aborted"})
_RESULT_TYPES = frozenset({"success", "error", "synthetic"})
_PHASES = frozenset({"model", "tool", "compact"})
_OUTCOMES = frozenset({"completed", "aborted", "failed"})

# Journal operations (undo records), replayed in reverse on a rejected transaction.
_DEL, _DISCARD, _POP, _ATTR, _ITEM, _ADD = range(6)
Journal = list[tuple[Any, ...]]


def _fail(code: str, line: int, seq: int | None = None) -> NoReturn:
    raise SessionCorruption(code, line, seq)


def _object(value: Any, code: str, line: int, seq: int | None) -> dict[str, Any]:
    if type(value) is not dict:
        _fail(code, line, seq)
    return value


def _keys(value: dict[str, Any], allowed: frozenset[str], code: str, line: int, seq: int | None) -> None:
    if not value.keys() <= allowed:
        _fail(code, line, seq)


def _string(value: Any, code: str, line: int, seq: int | None) -> str:
    if type(value) is not str or not value:
        _fail(code, line, seq)
    return value


def _safe_int(value: Any, code: str, line: int, seq: int | None, minimum: int = 0) -> int:
    kind = type(value)
    if kind is int:
        if minimum <= value <= _MAX:
            return int(value)
    elif kind is float and value.is_integer() and minimum <= value <= _MAX:
        return int(value)
    _fail(code, line, seq)


def _id(value: Any, code: str, line: int, seq: int | None) -> str:
    if type(value) is not str or _UUID7(value) is None:
        _fail(code, line, seq)
    return value


def _message(value: Any, line: int, seq: int) -> dict[str, Any]:
    """The reference's ``parseMessage``: exact keys per role (§1.2); returns the validated dict itself."""
    if type(value) is not dict:
        _fail("INVALID_FACT", line, seq)
    role = value.get("role")
    if role == "user":
        if not value.keys() <= _USER_KEYS:
            _fail("INVALID_FACT", line, seq)
        _string(value.get("content"), "INVALID_FACT", line, seq)
        return value
    if role == "tool":
        if not value.keys() <= _TOOL_KEYS or type(value.get("content")) is not str:
            _fail("INVALID_FACT", line, seq)
        _string(value.get("tool_call_id"), "INVALID_FACT", line, seq)
        return value
    if role != "assistant" or type(role) is not str:
        _fail("INVALID_FACT", line, seq)
    if not value.keys() <= _ASSISTANT_KEYS or "content" not in value:
        _fail("INVALID_FACT", line, seq)
    content = value["content"]
    if content is not None and type(content) is not str:
        _fail("INVALID_FACT", line, seq)
    if "tool_calls" not in value:
        return value
    calls = value["tool_calls"]
    if type(calls) is not list or not calls:
        _fail("INVALID_FACT", line, seq)
    ids = set()
    for call in calls:
        if type(call) is not dict or not call.keys() <= _CALL_KEYS or call.get("type") != "function":
            _fail("INVALID_FACT", line, seq)
        function = call.get("function")
        if type(function) is not dict or not function.keys() <= _FUNCTION_KEYS:
            _fail("INVALID_FACT", line, seq)
        ids.add(_string(call.get("id"), "INVALID_FACT", line, seq))
        _string(function.get("name"), "INVALID_FACT", line, seq)
        if type(function.get("arguments")) is not str:
            _fail("INVALID_FACT", line, seq)
    if len(ids) != len(calls):
        _fail("INVALID_TRANSCRIPT", line, seq)
    return value


def _calls(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    if message is None or message.get("role") != "assistant":
        return []
    calls: list[dict[str, Any]] = message.get("tool_calls") or []
    return calls


# --- journaled mutations -----------------------------------------------------------------------------------------


def _setattr(j: Journal | None, obj: Any, name: str, value: Any) -> None:
    if j is not None:
        j.append((_ATTR, obj, name, getattr(obj, name)))
    setattr(obj, name, value)


def _put(j: Journal | None, mapping: dict[Any, Any], key: Any, value: Any) -> None:
    mapping[key] = value
    if j is not None:
        j.append((_DEL, mapping, key))


def _remove(j: Journal | None, mapping: dict[Any, Any], key: Any) -> None:
    if j is not None:
        j.append((_ITEM, mapping, key, mapping[key]))
    del mapping[key]


def _add(j: Journal | None, values: set[Any], key: Any) -> None:
    values.add(key)
    if j is not None:
        j.append((_DISCARD, values, key))


def _append(j: Journal | None, values: list[Any], item: Any) -> None:
    values.append(item)
    if j is not None:
        j.append((_POP, values))


def _rollback(journal: Journal) -> None:
    for op in reversed(journal):
        code = op[0]
        if code == _DEL:
            del op[1][op[2]]
        elif code == _DISCARD:
            op[1].discard(op[2])
        elif code == _POP:
            op[1].pop()
        elif code == _ATTR:
            setattr(op[1], op[2], op[3])
        elif code == _ITEM:
            op[1][op[2]] = op[3]
        else:  # _ADD
            op[1].add(op[2])
    journal.clear()


# --- shared pieces -------------------------------------------------------------------------------------------------


def _reserve(st: SessionState, value: Any, line: int, seq: int, local: dict[str, str], kind: str = "identity") -> str:
    """Validate a pre-allocated id (not yet committed: ``local`` collects this fact's reservations)."""
    key = _id(value, "INVALID_FACT", line, seq)
    if key in st._ids or key in st._reserved or key in local:
        _fail("DUPLICATE_ID", line, seq)
    local[key] = kind
    return key


def _commit_reservations(st: SessionState, local: dict[str, str], j: Journal | None) -> None:
    for key, kind in local.items():
        _put(j, st._reserved, key, kind)


def _operation(st: SessionState, value: Any, line: int, seq: int) -> RunOperation | CompactionOperation:
    key = _id(value, "INVALID_FACT", line, seq)
    found = st._operations.get(key)
    if found is None:
        _fail("INVALID_REFERENCE", line, seq)
    if found.finished:
        _fail("INVALID_TRANSITION", line, seq)
    return found


def _configuration(value: Any, line: int, seq: int) -> dict[str, Any]:
    snapshot = _object(value, "INVALID_FACT", line, seq)
    _keys(snapshot, _SNAPSHOT_KEYS, "INVALID_FACT", line, seq)
    _string(snapshot.get("model"), "INVALID_FACT", line, seq)
    for name in ("systemPromptDigest", "outputOptionsDigest"):
        digest = snapshot.get(name)
        if type(digest) is not str or _DIGEST(digest) is None:
            _fail("INVALID_FACT", line, seq)
    tools = snapshot.get("tools")
    if type(tools) is not list:
        _fail("INVALID_FACT", line, seq)
    names = set()
    for raw in tools:
        tool = _object(raw, "INVALID_FACT", line, seq)
        _keys(tool, _SNAPSHOT_TOOL_KEYS, "INVALID_FACT", line, seq)
        name = _string(tool.get("name"), "INVALID_FACT", line, seq)
        if name in names:
            _fail("INVALID_FACT", line, seq)
        names.add(name)
        digest = tool.get("definitionDigest")
        if type(digest) is not str or _DIGEST(digest) is None:
            _fail("INVALID_FACT", line, seq)
    _string(snapshot.get("adapterIdentity"), "INVALID_FACT", line, seq)
    _string(snapshot.get("routingIdentity"), "INVALID_FACT", line, seq)
    return snapshot


_SNAPSHOT_CACHE: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
"""Digests of configuration snapshots already validated, by content (a run repeats one snapshot per step)."""


def _snapshot_key(snapshot: Any) -> tuple[Any, ...] | None:
    """A hashable key equal for snapshots with equal content and exactly the snapshot keys, else ``None``."""
    if type(snapshot) is not dict or len(snapshot) != 6:
        return None
    try:
        tools = snapshot["tools"]
        if type(tools) is not list:
            return None
        key = (
            snapshot["model"],
            snapshot["systemPromptDigest"],
            snapshot["adapterIdentity"],
            snapshot["routingIdentity"],
            snapshot["outputOptionsDigest"],
            *[
                (tool["name"], tool["definitionDigest"]) if type(tool) is dict and len(tool) == 2 else None
                for tool in tools
            ],
        )
        hash(key)
    except (KeyError, TypeError):
        return None
    return key


def _snapshot_digest(snapshot: Any, line: int, seq: int) -> tuple[str, dict[str, Any]]:
    """Validate a ``configurationSnapshot`` (``INVALID_FACT``); return its canonical digest and a shared copy.

    Memoized by content: steps repeat one snapshot, so equal snapshots share one object in the state.
    """
    key = _snapshot_key(snapshot)
    if key is not None:
        cached = _SNAPSHOT_CACHE.get(key)
        if cached is not None:
            return cached
    checked = _configuration(snapshot, line, seq)
    result = (digest_text(fast_canonical_json(checked, checked=True)), checked)
    if key is not None:
        if len(_SNAPSHOT_CACHE) >= 256:
            _SNAPSHOT_CACHE.clear()
        _SNAPSHOT_CACHE[key] = result
    return result


def _pending_tools(st: SessionState) -> bool:
    operation = st.operation
    return type(operation) is RunOperation and operation.pending_tools > 0


def _source_item(st: SessionState, index: int) -> str:
    entry_id = st._message_ids[index]
    message = st._entries[entry_id].message
    return '{"message":' + fast_canonical_json(message, checked=True) + ',"sourceEntryId":"' + entry_id + '"}'


def _source_digest(st: SessionState, through_index: int, j: Journal | None) -> str:
    """Digest of ``[{sourceEntryId, message}, …]`` over message entries ``0..through_index`` (notes §5.8).

    The hash of the message prefix is extended incrementally and cached, so repeated compactions of a growing
    session stay linear overall; a digest of an older prefix is recomputed from scratch.
    """
    hasher, count = st._source_digest
    if through_index + 1 < count:
        hasher, count = hashlib.sha256(b"["), 0
        for index in range(through_index + 1):
            hasher.update((("," if index else "") + _source_item(st, index)).encode("utf-8"))
        hasher.update(b"]")
        return "sha256:" + hasher.hexdigest()
    if count < through_index + 1:
        hasher = hasher.copy()
        for index in range(count, through_index + 1):
            hasher.update((("," if index else "") + _source_item(st, index)).encode("utf-8"))
        _setattr(j, st, "_source_digest", (hasher, through_index + 1))
    final = hasher.copy()
    final.update(b"]")
    return "sha256:" + str(final.hexdigest())


def _validate_messages(messages: list[dict[str, Any]], line: int, seq: int) -> None:
    """The reference's ``validateTranscript`` over a message list (used for a compaction's retained tail)."""
    pending: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "assistant":
            if pending:
                _fail("INVALID_TRANSCRIPT", line, seq)
            pending = {call["id"] for call in message.get("tool_calls") or ()}
        elif role == "tool":
            if message["tool_call_id"] not in pending:
                _fail("INVALID_TRANSCRIPT", line, seq)
            pending.discard(message["tool_call_id"])
        elif pending:
            _fail("INVALID_TRANSCRIPT", line, seq)


def _push_message(st: SessionState, fact_id: str, message: dict[str, Any], info: EntryInfo, j: Journal | None) -> bool:
    """Append a message entry everywhere it goes; returns True if it breaks a transcript role invariant."""
    violation = False
    pending = st._pending_calls
    role = message["role"]
    if role == "assistant":
        if pending:
            violation = True
        _setattr(j, st, "_pending_calls", {call["id"] for call in message.get("tool_calls") or ()})
    elif role == "tool":
        call_id = message["tool_call_id"]
        if call_id in pending:
            pending.remove(call_id)
            if j is not None:
                j.append((_ADD, pending, call_id))
        else:
            violation = True
    elif pending:
        violation = True
    _append(j, st.transcript, message)
    _append(j, st.active_context, message)
    _setattr(j, st, "_active_through", fact_id)
    _put(j, st._entries, fact_id, info)
    _append(j, st._entry_ids, fact_id)
    _append(j, st._message_ids, fact_id)
    return violation


# --- entries -------------------------------------------------------------------------------------------------------


def _apply_entry(st: SessionState, fact: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None) -> bool:
    _keys(fact, _ENTRY_FACT_KEYS, "INVALID_FACT", line, seq)
    entry = _object(fact.get("entry"), "INVALID_FACT", line, seq)
    kind = entry.get("type")
    if kind == "message" and type(kind) is str:
        message = _message(entry.get("message"), line, seq)
        role = message["role"]
        position = len(st._entry_ids)
        message_index = len(st._message_ids)
        if role == "user":
            if fact_id in st._reserved:
                _fail("DUPLICATE_ID", line, seq)
            _keys(entry, _USER_ENTRY_KEYS, "INVALID_FACT", line, seq)
            return _push_message(st, fact_id, message, EntryInfo(message, position, message_index), j)
        if role == "assistant":
            return _apply_assistant(st, entry, message, fact_id, position, message_index, line, seq, j)
        return _apply_tool_result(st, entry, message, fact_id, position, message_index, line, seq, j)
    if kind != "compaction" or type(kind) is not str:
        _fail("INVALID_FACT", line, seq)
    _apply_compaction(st, entry, fact_id, line, seq, j)
    return False


def _apply_assistant(
    st: SessionState,
    entry: dict[str, Any],
    message: dict[str, Any],
    fact_id: str,
    position: int,
    message_index: int,
    line: int,
    seq: int,
    j: Journal | None,
) -> bool:
    if fact_id in st._reserved:
        _fail("DUPLICATE_ID", line, seq)
    _keys(entry, _ASSISTANT_ENTRY_KEYS, "INVALID_FACT", line, seq)
    step_id = _id(entry.get("stepId"), "INVALID_FACT", line, seq)
    attempt_id = _id(entry.get("attemptId"), "INVALID_FACT", line, seq)
    stop_reason = entry.get("stopReason")
    if type(stop_reason) is not str or stop_reason not in _STOP_REASONS:
        _fail("INVALID_FACT", line, seq)
    attempt = st._attempts.get(attempt_id)
    if attempt is None or attempt.step_id != step_id or attempt.closed or attempt.step_kind != "assistant":
        _fail("INVALID_REFERENCE", line, seq)
    operation = st.operation
    if type(operation) is not RunOperation or operation.operation_id != attempt.operation_id:
        _fail("INVALID_TRANSITION", line, seq)
    has_calls = bool(message.get("tool_calls"))
    if (stop_reason == "toolUse" and not has_calls) or (stop_reason == "stop" and has_calls):
        _fail("INVALID_TRANSCRIPT", line, seq)
    _setattr(j, attempt, "closed", True)
    _setattr(j, attempt, "settled_entry_id", fact_id)
    if operation.step is attempt:
        _setattr(j, attempt, "status", "settled")
        _setattr(j, attempt, "stop_reason", stop_reason)
    info = EntryInfo(
        message, position, message_index, attempt.operation_id, attempt.step_id, attempt.attempt_id, stop_reason
    )
    return _push_message(st, fact_id, message, info, j)


def _apply_tool_result(
    st: SessionState,
    entry: dict[str, Any],
    message: dict[str, Any],
    fact_id: str,
    position: int,
    message_index: int,
    line: int,
    seq: int,
    j: Journal | None,
) -> bool:
    pre_execution = "assistantEntryId" in entry or "toolIndex" in entry
    _keys(entry, _PRE_RESULT_KEYS if pre_execution else _STARTED_RESULT_KEYS, "INVALID_FACT", line, seq)
    result = _object(entry.get("result"), "INVALID_FACT", line, seq)
    _keys(result, _RESULT_KEYS, "INVALID_FACT", line, seq)
    step_id = _id(entry.get("stepId"), "INVALID_FACT", line, seq)
    tool_name = _string(entry.get("toolName"), "INVALID_FACT", line, seq)
    result_type = result.get("type")
    if pre_execution:
        if result_type != "synthetic" or type(result_type) is not str:
            _fail("INVALID_FACT", line, seq)
        reason = result.get("reason")
        if type(reason) is not str or reason not in _PRE_REASONS:
            _fail("INVALID_FACT", line, seq)
        assistant_entry_id = _id(entry.get("assistantEntryId"), "INVALID_FACT", line, seq)
        tool_index = _safe_int(entry.get("toolIndex"), "INVALID_FACT", line, seq)
        assistant = st._entries.get(assistant_entry_id)
        operation = st.operation
        current = operation.operation_id if type(operation) is RunOperation else None
        if (
            assistant is None
            or assistant.message is None
            or assistant.step_id != step_id
            or assistant.operation_id != current
        ):
            _fail("INVALID_REFERENCE", line, seq)
        calls = _calls(assistant.message)
        call = calls[tool_index] if tool_index < len(calls) else None
        if call is None or call["id"] != message["tool_call_id"] or call["function"]["name"] != tool_name:
            _fail("INVALID_REFERENCE", line, seq)
        pair = (assistant_entry_id, tool_index)
        if pair in st._tool_pairs:
            _fail("INVALID_TRANSITION", line, seq)
        if message["content"] != SYNTHETIC_CONTENT[reason]:
            _fail("INVALID_TRANSCRIPT", line, seq)
        _add(j, st._tool_pairs, pair)
        info = EntryInfo(message, position, message_index, assistant.operation_id, step_id)
        return _push_message(st, fact_id, message, info, j)
    if st._reserved.get(fact_id) != "toolResult":
        _fail("INVALID_REFERENCE", line, seq)
    if type(result_type) is not str or result_type not in _RESULT_TYPES:
        _fail("INVALID_FACT", line, seq)
    if result_type == "synthetic":
        if result.get("reason") != "interrupted":
            _fail("INVALID_FACT", line, seq)
        if message["content"] != SYNTHETIC_CONTENT["interrupted"]:
            _fail("INVALID_TRANSCRIPT", line, seq)
    elif "reason" in result:
        _fail("INVALID_FACT", line, seq)
    started_id = _id(entry.get("toolStartedId"), "INVALID_FACT", line, seq)
    started = st._tools.get(started_id)
    if (
        started is None
        or started.step_id != step_id
        or started.result_entry_id != fact_id
        or started.tool_call_id != message["tool_call_id"]
        or started.tool_name != tool_name
        or started.status != "pending"
    ):
        _fail("INVALID_REFERENCE", line, seq)
    _setattr(j, started, "status", "completed")
    _setattr(j, started.operation, "pending_tools", started.operation.pending_tools - 1)
    _remove(j, st._reserved, fact_id)
    info = EntryInfo(message, position, message_index, started.operation_id, started.step_id)
    return _push_message(st, fact_id, message, info, j)


def _apply_compaction(
    st: SessionState, entry: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    if st._reserved.get(fact_id) != "compactionResult":
        _fail("INVALID_REFERENCE", line, seq)
    _keys(entry, _COMPACTION_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, entry.get("operationId"), line, seq)
    operation = st.operation
    if type(found) is not CompactionOperation or operation is not found:
        _fail("INVALID_TRANSITION", line, seq)
    if found.result_entry_id != fact_id:
        _fail("INVALID_REFERENCE", line, seq)
    through = _id(entry.get("compactedThroughEntryId"), "INVALID_FACT", line, seq)
    boundary_info = st._entries.get(through)
    if boundary_info is None:
        _fail("INVALID_REFERENCE", line, seq)
    summary = entry.get("summary")
    if type(summary) is not str:
        _fail("INVALID_FACT", line, seq)
    tail = entry.get("retainedTail")
    if type(tail) is not list:
        _fail("INVALID_FACT", line, seq)
    input_info = st._entries.get(found.input_through_entry_id)
    if input_info is None:  # pragma: no cover - compactionStarted checked it
        _fail("INVALID_REFERENCE", line, seq)
    boundary = boundary_info.position
    input_boundary = input_info.position
    if input_boundary < boundary:
        _fail("INVALID_REFERENCE", line, seq)
    # The message entries strictly after ``through`` up to and including the input boundary, walked lazily.
    cursor = boundary + 1
    entry_ids = st._entry_ids

    def next_expected() -> str | None:
        nonlocal cursor
        while cursor <= input_boundary:
            candidate = entry_ids[cursor]
            cursor += 1
            if st._entries[candidate].message is not None:
                return candidate
        return None

    retained: list[dict[str, Any]] = []
    for raw in tail:
        item = _object(raw, "INVALID_FACT", line, seq)
        _keys(item, _RETAINED_KEYS, "INVALID_FACT", line, seq)
        source_id = _id(item.get("sourceEntryId"), "INVALID_FACT", line, seq)
        source = st._entries.get(source_id)
        message = _message(item.get("message"), line, seq)
        if source_id != next_expected() or source is None or source.message is None:
            _fail("INVALID_REFERENCE", line, seq)
        if source.message != message:
            _fail("INVALID_REFERENCE", line, seq)
        retained.append(message)
    if next_expected() is not None:
        _fail("INVALID_REFERENCE", line, seq)
    _validate_messages(retained, line, seq)
    attempt = found.step
    if attempt is None or attempt.closed or attempt.step_kind != "compaction":
        _fail("INVALID_TRANSITION", line, seq)
    _setattr(j, st, "active_context", [{"role": "user", "content": "[Compacted history]\n" + summary}, *retained])
    _setattr(j, st, "_active_through", found.input_through_entry_id)
    _setattr(j, attempt, "closed", True)
    _setattr(j, attempt, "settled_entry_id", fact_id)
    _setattr(j, attempt, "status", "settled")
    _remove(j, st._reserved, fact_id)
    info = EntryInfo(None, len(entry_ids), -1, found.operation_id, attempt.step_id, attempt.attempt_id)
    _put(j, st._entries, fact_id, info)
    _append(j, entry_ids, fact_id)


# --- records -------------------------------------------------------------------------------------------------------


def _apply_record(st: SessionState, fact: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None) -> None:
    _keys(fact, _RECORD_FACT_KEYS, "INVALID_FACT", line, seq)
    record = _object(fact.get("record"), "INVALID_FACT", line, seq)
    kind = record.get("type")
    handler = _RECORD_HANDLERS.get(kind) if type(kind) is str else None
    if handler is None:
        _fail("INVALID_FACT", line, seq)
    handler(st, record, fact_id, line, seq, j)


def _run_started(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _RUN_STARTED_KEYS, "INVALID_FACT", line, seq)
    if record.get("operationKind") != "run" or st.operation is not IDLE:
        _fail("INVALID_TRANSITION", line, seq)
    local: dict[str, str] = {}
    operation_id = _reserve(st, record.get("operationId"), line, seq, local)
    input_entry_id = _id(record.get("inputEntryId"), "INVALID_FACT", line, seq)
    source = st._entries.get(input_entry_id)
    if source is None or source.message is None or source.message["role"] != "user":
        _fail("INVALID_REFERENCE", line, seq)
    operation = RunOperation(operation_id, input_entry_id)
    _commit_reservations(st, local, j)
    _put(j, st._operations, operation_id, operation)
    _setattr(j, st, "operation", operation)


def _compaction_started(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _COMPACTION_STARTED_KEYS, "INVALID_FACT", line, seq)
    if record.get("operationKind") != "compaction" or st.operation is not IDLE:
        _fail("INVALID_TRANSITION", line, seq)
    local: dict[str, str] = {}
    operation_id = _reserve(st, record.get("operationId"), line, seq, local)
    input_through = _id(record.get("inputThroughEntryId"), "INVALID_FACT", line, seq)
    result_entry_id = _reserve(st, record.get("resultEntryId"), line, seq, local, "compactionResult")
    input_info = st._entries.get(input_through)
    if input_info is None:
        _fail("INVALID_REFERENCE", line, seq)
    compacted = record.get("compactedEntryIds")
    retained = record.get("retainedEntryIds")
    if type(compacted) is not list or not compacted or type(retained) is not list:
        _fail("INVALID_FACT", line, seq)
    partition = [*compacted, *retained]
    input_index = input_info.message_index
    expected = st._message_ids[: input_index + 1] if input_index >= 0 else None
    if partition != expected:
        # Not the message ids: report a malformed id first, as the reference validates every id before comparing.
        for value in partition:
            _id(value, "INVALID_FACT", line, seq)
        _fail("INVALID_REFERENCE", line, seq)
    source_digest = record.get("sourceDigest")
    if type(source_digest) is not str or _DIGEST(source_digest) is None:
        _fail("INVALID_FACT", line, seq)
    if _source_digest(st, input_index, j) != source_digest:
        _fail("INVALID_REFERENCE", line, seq)
    operation = CompactionOperation(operation_id, input_through, result_entry_id)
    _commit_reservations(st, local, j)
    _put(j, st._operations, operation_id, operation)
    _setattr(j, st, "operation", operation)


def _step_attempt(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _STEP_ATTEMPT_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, record.get("operationId"), line, seq)
    number = _safe_int(record.get("attempt"), "INVALID_FACT", line, seq, 1)
    local: dict[str, str] = {}
    if number == 1:
        step_id = _reserve(st, record.get("stepId"), line, seq, local)
    else:
        step_id = _id(record.get("stepId"), "INVALID_FACT", line, seq)
    attempt_id = _reserve(st, record.get("attemptId"), line, seq, local)
    step_kind = record.get("stepKind")
    if number > 2 or step_kind not in ("assistant", "compaction") or type(step_kind) is not str:
        _fail("INVALID_FACT", line, seq)
    if step_kind != ("assistant" if type(found) is RunOperation else "compaction"):
        _fail("INVALID_TRANSITION", line, seq)
    context_id = _id(record.get("contextThroughEntryId"), "INVALID_FACT", line, seq)
    if context_id not in st._entries:
        _fail("INVALID_REFERENCE", line, seq)
    if number == 1 and context_id != st._active_through:
        _fail("INVALID_TRANSITION", line, seq)
    expected_digest, snapshot = _snapshot_digest(record.get("configurationSnapshot"), line, seq)
    digest = record.get("configurationDigest")
    if type(digest) is not str or _DIGEST(digest) is None or expected_digest != digest:
        _fail("INVALID_FACT", line, seq)
    prior = st._steps.get(step_id)
    operation = st.operation
    active = None if operation is IDLE else operation.step  # type: ignore[union-attr]
    if number == 1:
        if prior or (active is not None and active.status != "settled"):
            _fail("INVALID_TRANSITION", line, seq)
        if active is not None:
            settled = st._entries.get(active.settled_entry_id) if active.settled_entry_id is not None else None
            if (
                type(found) is not RunOperation
                or settled is None
                or settled.stop_reason != "toolUse"
                or type(operation) is not RunOperation
                or operation.pending_tools > 0
            ):
                _fail("INVALID_TRANSITION", line, seq)
    else:
        first = prior[0] if prior else None
        if (
            first is None
            or len(prior) != 1  # type: ignore[arg-type]
            or first.attempt != 1
            or first.closed
            or first.failed
            or first.step_kind != step_kind
            or first.operation_id != found.operation_id
            or first.context_through_entry_id != context_id
            or first.configuration_digest != digest
        ):
            _fail("INVALID_TRANSITION", line, seq)
        _setattr(j, first, "closed", True)
    attempt = Attempt(found.operation_id, step_id, attempt_id, number, step_kind, context_id, snapshot, digest)
    _commit_reservations(st, local, j)
    _put(j, st._attempts, attempt_id, attempt)
    if prior is None:
        _put(j, st._steps, step_id, [attempt])
    else:
        _append(j, prior, attempt)
    _setattr(j, found, "latest_step_id", step_id)
    if operation is not IDLE:
        _setattr(j, operation, "step", attempt)


def _step_failed(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _STEP_FAILED_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, record.get("operationId"), line, seq)
    attempt_id = _id(record.get("attemptId"), "INVALID_FACT", line, seq)
    attempt = st._attempts.get(attempt_id)
    error = _object(record.get("error"), "INVALID_FACT", line, seq)
    _keys(error, _ERROR_KEYS, "INVALID_FACT", line, seq)
    _string(error.get("code"), "INVALID_FACT", line, seq)
    _string(error.get("message"), "INVALID_FACT", line, seq)
    if (
        attempt is None
        or attempt.operation_id != found.operation_id
        or attempt.step_id != record.get("stepId")
        or attempt.closed
    ):
        _fail("INVALID_REFERENCE", line, seq)
    _setattr(j, attempt, "closed", True)
    _setattr(j, attempt, "failed", True)
    operation = st.operation
    if operation is not IDLE and operation.step is attempt:  # type: ignore[union-attr]
        _setattr(j, attempt, "status", "failed")


def _tool_started(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _TOOL_STARTED_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, record.get("operationId"), line, seq)
    operation = st.operation
    if type(found) is not RunOperation or operation is not found:
        _fail("INVALID_TRANSITION", line, seq)
    assistant_entry_id = _id(record.get("assistantEntryId"), "INVALID_FACT", line, seq)
    assistant = st._entries.get(assistant_entry_id)
    if (
        assistant is None
        or assistant.message is None
        or assistant.stop_reason != "toolUse"
        or assistant.operation_id != found.operation_id
    ):
        _fail("INVALID_REFERENCE", line, seq)
    tool_index = _safe_int(record.get("toolIndex"), "INVALID_FACT", line, seq)
    calls = _calls(assistant.message)
    call = calls[tool_index] if tool_index < len(calls) else None
    tool_call_id = _string(record.get("toolCallId"), "INVALID_FACT", line, seq)
    tool_name = _string(record.get("toolName"), "INVALID_FACT", line, seq)
    if (
        call is None
        or call["id"] != tool_call_id
        or call["function"]["name"] != tool_name
        or assistant.step_id != record.get("stepId")
    ):
        _fail("INVALID_REFERENCE", line, seq)
    pair = (assistant_entry_id, tool_index)
    if pair in st._tool_pairs:
        _fail("INVALID_TRANSITION", line, seq)
    arguments = _object(record.get("arguments"), "INVALID_FACT", line, seq)
    replay = record.get("replay")
    if replay not in ("safe", "never") or type(replay) is not str:
        _fail("INVALID_FACT", line, seq)
    attempt = st._attempts.get(assistant.attempt_id) if assistant.attempt_id is not None else None
    declared = attempt is not None and any(
        tool["name"] == tool_name for tool in attempt.configuration_snapshot["tools"]
    )
    replay_key = _string(record.get("replayKey"), "INVALID_FACT", line, seq)
    environment_identity = _string(record.get("environmentIdentity"), "INVALID_FACT", line, seq)
    if not declared:
        _fail("INVALID_TRANSITION", line, seq)
    local: dict[str, str] = {}
    result_entry_id = _reserve(st, record.get("resultEntryId"), line, seq, local, "toolResult")
    step_id = _id(record.get("stepId"), "INVALID_FACT", line, seq)
    tool = ToolCallState(
        found,
        fact_id,
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
    _commit_reservations(st, local, j)
    _put(j, st._tools, fact_id, tool)
    _add(j, st._tool_pairs, pair)
    _append(j, found.tool_calls, tool)
    _setattr(j, found, "pending_tools", found.pending_tools + 1)


def _abort_requested(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _ABORT_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, record.get("operationId"), line, seq)
    if record.get("operationKind") != found.kind or record.get("reason") != "escape":
        _fail("INVALID_TRANSITION", line, seq)
    phase = record.get("phase")
    if type(phase) is not str or phase not in _PHASES:
        _fail("INVALID_FACT", line, seq)
    if (phase == "tool") != (type(record.get("toolCallId")) is str):
        _fail("INVALID_FACT", line, seq)
    operation = st.operation
    if operation is not found or found.abort_requested:
        _fail("INVALID_TRANSITION", line, seq)
    _setattr(j, found, "abort_requested", True)


def _operation_finished(
    st: SessionState, record: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None
) -> None:
    _keys(record, _FINISHED_KEYS, "INVALID_FACT", line, seq)
    found = _operation(st, record.get("operationId"), line, seq)
    outcome = record.get("outcome")
    if record.get("operationKind") != found.kind or type(outcome) is not str or outcome not in _OUTCOMES:
        _fail("INVALID_TRANSITION", line, seq)
    operation = st.operation
    if operation is not found:
        _fail("INVALID_TRANSITION", line, seq)
    is_run = type(found) is RunOperation
    if outcome == "completed":
        completion = record.get("completion")
        if is_run and (completion not in ("normal", "truncated") or type(completion) is not str):
            _fail("INVALID_FACT", line, seq)
        if not is_run and "completion" in record:
            _fail("INVALID_FACT", line, seq)
        final_id = _id(record.get("finalEntryId"), "INVALID_FACT", line, seq)
        info = st._entries.get(final_id)
        if is_run:
            if info is None or info.operation_id != found.operation_id or info.message is None:
                _fail("INVALID_REFERENCE", line, seq)
            stop_reason = info.stop_reason
            if (completion == "normal" and stop_reason != "stop") or (
                completion == "truncated" and stop_reason != "length"
            ):
                _fail("INVALID_REFERENCE", line, seq)
            attempt = st._attempts.get(info.attempt_id) if info.attempt_id is not None else None
            if (
                attempt is None
                or not attempt.closed
                or attempt.failed
                or attempt.step_id != found.latest_step_id
                or attempt.settled_entry_id != final_id
            ):
                _fail("INVALID_REFERENCE", line, seq)
            message = info.message
            content = message.get("content")
            if (
                message["role"] != "assistant"
                or (completion == "normal" and (content is None or _JS_BLANK(content) is not None))
                or (completion == "truncated" and not message.get("tool_calls"))
            ):
                _fail("INVALID_TRANSCRIPT", line, seq)
            if found.pending_tools > 0:  # type: ignore[union-attr]
                _fail("INVALID_TRANSCRIPT", line, seq)
        else:
            if (
                info is None
                or info.operation_id != found.operation_id
                or info.message is not None
                or found.result_entry_id != final_id  # type: ignore[union-attr]
            ):
                _fail("INVALID_REFERENCE", line, seq)
            attempt = st._attempts.get(info.attempt_id) if info.attempt_id is not None else None
            if attempt is None or attempt.step_id != found.latest_step_id or attempt.settled_entry_id != final_id:
                _fail("INVALID_REFERENCE", line, seq)
    elif outcome == "aborted":
        open_attempt = found.step is not None and found.step.status == "attempting"
        if "finalEntryId" in record or not found.abort_requested or _pending_tools(st) or open_attempt:
            _fail("INVALID_TRANSITION", line, seq)
    elif "finalEntryId" in record:
        _fail("INVALID_FACT", line, seq)
    if outcome != "completed" and "completion" in record:
        _fail("INVALID_FACT", line, seq)
    if outcome == "failed":
        error = _object(record.get("error"), "INVALID_FACT", line, seq)
        _keys(error, _ERROR_KEYS, "INVALID_FACT", line, seq)
        _string(error.get("code"), "INVALID_FACT", line, seq)
        _string(error.get("message"), "INVALID_FACT", line, seq)
    elif "error" in record:
        _fail("INVALID_FACT", line, seq)
    _setattr(j, found, "finished", True)
    _setattr(j, st, "operation", IDLE)


_RECORD_HANDLERS = {
    "runStarted": _run_started,
    "compactionStarted": _compaction_started,
    "stepAttempt": _step_attempt,
    "stepFailed": _step_failed,
    "toolStarted": _tool_started,
    "abortRequested": _abort_requested,
    "operationFinished": _operation_finished,
}


# --- usage ---------------------------------------------------------------------------------------------------------


def _apply_usage(st: SessionState, fact: dict[str, Any], fact_id: str, line: int, seq: int, j: Journal | None) -> None:
    _keys(fact, _USAGE_FACT_KEYS, "INVALID_FACT", line, seq)
    operation_id = _id(fact.get("operationId"), "INVALID_FACT", line, seq)
    if operation_id not in st._operations:
        _fail("INVALID_REFERENCE", line, seq)
    has_attempt = "attemptId" in fact
    if has_attempt == ("toolStartedId" in fact):
        _fail("INVALID_FACT", line, seq)
    if has_attempt:
        attempt = st._attempts.get(_id(fact["attemptId"], "INVALID_FACT", line, seq))
        if attempt is None or attempt.operation_id != operation_id:
            _fail("INVALID_REFERENCE", line, seq)
    else:
        tool = st._tools.get(_id(fact["toolStartedId"], "INVALID_FACT", line, seq))
        if tool is None or tool.operation_id != operation_id:
            _fail("INVALID_REFERENCE", line, seq)
    usage = _object(fact.get("usage"), "INVALID_FACT", line, seq)
    _keys(usage, _USAGE_KEY_SET, "INVALID_FACT", line, seq)
    totals = st._usage
    new = []
    for index, key in enumerate(_USAGE_KEYS):
        amount = _safe_int(usage.get(key), "INVALID_FACT", line, seq)
        if totals[index] > _MAX - amount:
            _fail("INVALID_FACT", line, seq)
        new.append(totals[index] + amount)
    for index, value in enumerate(new):
        if j is not None:
            j.append((_ITEM, totals, index, totals[index]))
        totals[index] = value


# --- facts, transactions, files ------------------------------------------------------------------------------------


def _apply_fact(st: SessionState, value: Any, line: int, j: Journal | None) -> bool:
    if type(value) is not dict:
        _fail("INVALID_FACT", line)
    seq = _safe_int(value.get("seq"), "INVALID_FACT", line, None, 1)
    if seq != st.next_seq:
        _fail("SEQ_MISMATCH", line, seq)
    fact_id = _id(value.get("id"), "INVALID_FACT", line, seq)
    _safe_int(value.get("timestamp"), "INVALID_FACT", line, seq)
    if fact_id in st._ids:
        _fail("DUPLICATE_ID", line, seq)
    kind = value.get("kind")
    violation = False
    if kind == "entry" and type(kind) is str:
        violation = _apply_entry(st, value, fact_id, line, seq, j)
    elif kind == "record" and type(kind) is str:
        _apply_record(st, value, fact_id, line, seq, j)
    elif kind == "usage" and type(kind) is str:
        _apply_usage(st, value, fact_id, line, seq, j)
    else:
        _fail("INVALID_FACT", line, seq)
    if fact_id in st._reserved:
        _fail("DUPLICATE_ID", line, seq)
    _add(j, st._ids, fact_id)
    _setattr(j, st, "next_seq", seq + 1)
    return violation


def _apply_value(st: SessionState, value: Any, line: int, j: Journal | None) -> None:
    facts = value if type(value) is list else (value,)
    if not facts:
        _fail("EMPTY_TRANSACTION", line)
    violation = False
    for fact in facts:
        if _apply_fact(st, fact, line, j):
            violation = True
    if violation:
        _fail("INVALID_TRANSCRIPT", line, st.next_seq - 1)


class StagedTransaction:
    """A transaction applied to a state that can still be undone (the store writes it, then commits)."""

    __slots__ = ("_journal", "_state")

    def __init__(self, state: SessionState, journal: Journal) -> None:
        self._state = state
        self._journal: Journal | None = journal

    def commit(self) -> None:
        """Keep the transaction (forget how to undo it)."""
        self._journal = None

    def rollback(self) -> None:
        """Undo the transaction: the state is exactly as before :func:`stage_transaction`."""
        if self._journal is None:
            raise RuntimeError("transaction already committed or rolled back")
        _rollback(self._journal)
        self._journal = None


def stage_transaction(state: SessionState, line: bytes, line_no: int | None = None) -> StagedTransaction:
    """Apply one transaction line to ``state`` and return a handle that can undo it.

    Same checks and errors as :func:`apply_transaction`; on error nothing changes.
    """
    if b"\n" in line:
        raise ValueError("a transaction line must not contain LF")
    number = state.line_count + 1 if line_no is None else line_no
    journal: Journal = []
    try:
        _apply_value(state, parse_line_bytes(line, number), number, journal)
    except BaseException:
        _rollback(journal)
        raise
    _setattr(journal, state, "line_count", number)
    _setattr(journal, state, "repaired_length", state.repaired_length + len(line) + 1)
    return StagedTransaction(state, journal)


def apply_transaction(state: SessionState, line: bytes, line_no: int | None = None) -> None:
    """Apply one transaction line (its bytes without the LF) to ``state``, atomically.

    On success the state advances (``line_count`` and ``repaired_length`` include the line and its LF). On any
    violation it raises :class:`SessionCorruption` with the code, line and seq the reducer would report for the
    file with this line appended, and ``state`` is exactly as before. Cost: O(size of the line).
    """
    stage_transaction(state, line, line_no).commit()


def _header(value: Any) -> SessionHeader:
    header = _object(value, "INVALID_HEADER", 1, None)
    _keys(header, _HEADER_KEYS, "INVALID_HEADER", 1, None)
    if header.get("kind") != "header":
        _fail("INVALID_HEADER", 1)
    version = header.get("version")
    if version != 2 or type(version) not in (int, float):
        _fail("UNSUPPORTED_VERSION", 1)
    return SessionHeader(
        id=_id(header.get("id"), "INVALID_HEADER", 1, None),
        created_at=_safe_int(header.get("createdAt"), "INVALID_HEADER", 1, None),
        cwd=_string(header.get("cwd"), "INVALID_HEADER", 1, None),
        provider=_string(header.get("provider"), "INVALID_HEADER", 1, None),
        model=_string(header.get("model"), "INVALID_HEADER", 1, None),
        environment_identity=_string(header.get("environmentIdentity"), "INVALID_HEADER", 1, None),
    )


def reduce_session(data: bytes) -> SessionState:
    """Reduce the bytes of a session file to its state, or raise :class:`SessionCorruption` (notes §5.3–5.7).

    Bytes after the last LF (a torn tail) are ignored; ``state.repaired_length`` says where the committed
    prefix ends. The result can be advanced with :func:`apply_transaction`. Linear in ``len(data)``; the cyclic
    garbage collector is paused meanwhile (the state is acyclic, and re-scanning it for every batch of new
    objects would make loading superlinear).
    """
    end = committed_length(data)
    check_committed(data, end)
    view = memoryview(data)
    stop = data.index(b"\n")
    first = strip_bom(str(view[:stop], "utf-8"))
    if not first:
        _fail("MISSING_HEADER", 1)
    state = SessionState(_header(parse_line(first, 1)), end)
    collecting = gc.isenabled()
    gc.disable()
    try:
        line = 1
        start = stop + 1
        while start < end:
            stop = data.index(b"\n", start)
            line += 1
            _apply_value(state, parse_line(str(view[start:stop], "utf-8"), line), line, None)
            start = stop + 1
    finally:
        if collecting:
            gc.enable()
    state.line_count = line
    return state
