"""Messages in facts: their exact shape per role (§1.2), the transcript's role order, and appending one.

The transcript invariant: after an assistant message with tool calls come exactly the tool messages answering
those calls (any order) before anything else; a tool message answers a pending call; a user message never
interrupts pending calls.

A compaction digests the canonical JSON of every message (:func:`canonical_message`).
"""

from __future__ import annotations

from json.encoder import encode_basestring
from operator import itemgetter
from typing import Any

from tiny_agent_core.session.rules.context import FactContext
from tiny_agent_core.session.state import EntryInfo

__all__ = ["append_message", "canonical_message", "check_message", "check_role_order", "tool_calls_of"]

_USER_KEYS = frozenset({"role", "content"})
_TOOL_KEYS = frozenset({"role", "content", "tool_call_id"})
_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_call_id = itemgetter("id")
"""A tool call's id (``call["id"]`` without a comprehension's frame per message)."""


def check_message(context: FactContext, value: Any) -> dict[str, Any]:
    """The reference's ``parseMessage``: exact keys per role; returns the validated dict itself."""
    if type(value) is not dict:
        context.fail("INVALID_FACT")
    role = value.get("role")
    if role == "user":
        content = value.get("content")
        if not _USER_KEYS.issuperset(value) or type(content) is not str or not content:
            context.fail("INVALID_FACT")
    elif role == "tool":
        call_id = value.get("tool_call_id")
        if (
            not _TOOL_KEYS.issuperset(value)
            or type(value.get("content")) is not str
            or type(call_id) is not str
            or not call_id
        ):
            context.fail("INVALID_FACT")
    elif role != "assistant":
        context.fail("INVALID_FACT")
    else:
        _check_assistant(context, value)
    return value


def _check_assistant(context: FactContext, value: dict[str, Any]) -> None:
    if not _ASSISTANT_KEYS.issuperset(value) or "content" not in value:
        context.fail("INVALID_FACT")
    content = value["content"]
    if content is not None and type(content) is not str:
        context.fail("INVALID_FACT")
    if "tool_calls" not in value:
        return
    calls = value["tool_calls"]
    if type(calls) is not list or not calls:
        context.fail("INVALID_FACT")
    ids = set()
    for call in calls:  # (a loop, not a comprehension: no frame of its own)
        ids.add(_check_call(context, call))
    if len(ids) != len(calls):
        context.fail("INVALID_TRANSCRIPT")


def _check_call(context: FactContext, call: Any) -> str:
    """One ``tool_calls`` item; returns its id."""
    if type(call) is not dict or not _CALL_KEYS.issuperset(call) or call.get("type") != "function":
        context.fail("INVALID_FACT")
    function = call.get("function")
    if type(function) is not dict or not _FUNCTION_KEYS.issuperset(function):
        context.fail("INVALID_FACT")
    call_id, name = call.get("id"), function.get("name")
    if not call_id or type(call_id) is not str or not name or type(name) is not str:
        context.fail("INVALID_FACT")
    if type(function.get("arguments")) is not str:
        context.fail("INVALID_FACT")
    return call_id


def canonical_message(message: dict[str, Any]) -> str:
    """The canonical JSON of a message :func:`check_message` accepted: the text
    :func:`~tiny_agent_core.session.canonical_json.fast_canonical_json` gives, built without the generic encoder.

    An accepted message has a fixed shape (exactly these keys, string values), so its keys are written here in
    their sorted order and only its strings are encoded, by the function ``json.dumps(ensure_ascii=False)`` itself
    uses for them (``encode_basestring``: quoted, escaped like ``JSON.stringify``). A load digests every message
    of a compacted session, so this is ~2× faster than the encoder; the two are tested equal. (The f-strings'
    ``{{``/``}}`` are the JSON's braces; an f-string joins its parts in one step, faster than ``+``.)
    """
    role = message["role"]
    content = message["content"]
    if role == "user":
        return f'{{"content":{encode_basestring(content)},"role":"user"}}'
    if role == "tool":
        call_id = encode_basestring(message["tool_call_id"])
        return f'{{"content":{encode_basestring(content)},"role":"tool","tool_call_id":{call_id}}}'
    text = "null" if content is None else encode_basestring(content)
    calls = message.get("tool_calls")
    if calls is None:
        return f'{{"content":{text},"role":"assistant"}}'
    return f'{{"content":{text},"role":"assistant","tool_calls":[{",".join(map(_canonical_call, calls))}]}}'


def _canonical_call(call: dict[str, Any]) -> str:
    function = call["function"]
    arguments, name = encode_basestring(function["arguments"]), encode_basestring(function["name"])
    call_id = encode_basestring(call["id"])
    return f'{{"function":{{"arguments":{arguments},"name":{name}}},"id":{call_id},"type":"function"}}'


def tool_calls_of(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The tool calls of an assistant message (empty for any other message or none)."""
    if message is None or message.get("role") != "assistant":
        return []
    calls: list[dict[str, Any]] = message.get("tool_calls") or []
    return calls


def check_role_order(context: FactContext, messages: list[dict[str, Any]]) -> None:
    """The reference's ``validateTranscript`` over a message list (a compaction's retained tail)."""
    pending: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "assistant":
            if pending:
                context.fail("INVALID_TRANSCRIPT")
            pending = {call["id"] for call in message.get("tool_calls") or ()}
        elif role == "tool":
            if message["tool_call_id"] not in pending:
                context.fail("INVALID_TRANSCRIPT")
            pending.discard(message["tool_call_id"])
        elif pending:
            context.fail("INVALID_TRANSCRIPT")


def append_message(context: FactContext, message: dict[str, Any], info: EntryInfo) -> None:
    """Append the fact's message entry everywhere it goes; one that breaks the role order sets
    ``context.violation``.

    A violation is reported once the whole transaction has been applied (``INVALID_TRANSCRIPT`` at its last
    seq), as the reference validates the transcript after each transaction.
    """
    state, index, fact_id = context.state, context.index, context.fact_id
    pending = index.pending_calls
    role = message["role"]
    if role == "assistant":
        if pending:
            context.violation = True
        index.pending_calls = set(map(_call_id, message.get("tool_calls") or ()))
    elif role == "tool":
        call_id = message["tool_call_id"]
        if call_id in pending:
            pending.remove(call_id)
        else:
            context.violation = True
    elif pending:
        context.violation = True
    index.active_through = fact_id
    # A rollback restores the running values above and cuts back these grow-only parts (grow_only_parts) itself:
    state.transcript.append(message)
    state.active_context.append(message)
    index.entries[fact_id] = info
    index.entry_ids.append(fact_id)
    index.message_ids.append(fact_id)
