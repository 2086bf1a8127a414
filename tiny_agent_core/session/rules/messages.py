"""Messages in facts: their exact shape per role (§1.2), the transcript's role order, and appending one.

The transcript invariant: after an assistant message with tool calls come exactly the tool messages answering
those calls (any order) before anything else; a tool message answers a pending call; a user message never
interrupts pending calls.
"""

from __future__ import annotations

from typing import Any

from tiny_agent_core.session.rules.context import FactContext
from tiny_agent_core.session.state import EntryInfo

__all__ = ["append_message", "check_message", "check_role_order", "tool_calls_of"]

_USER_KEYS = frozenset({"role", "content"})
_TOOL_KEYS = frozenset({"role", "content", "tool_call_id"})
_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


def check_message(context: FactContext, value: Any) -> dict[str, Any]:
    """The reference's ``parseMessage``: exact keys per role; returns the validated dict itself."""
    if type(value) is not dict:
        context.fail("INVALID_FACT")
    role = value.get("role")
    if role == "user":
        context.only_keys(value, _USER_KEYS)
        context.string(value.get("content"))
    elif role == "tool":
        if not value.keys() <= _TOOL_KEYS or type(value.get("content")) is not str:
            context.fail("INVALID_FACT")
        context.string(value.get("tool_call_id"))
    elif role != "assistant" or type(role) is not str:
        context.fail("INVALID_FACT")
    else:
        _check_assistant(context, value)
    return value


def _check_assistant(context: FactContext, value: dict[str, Any]) -> None:
    if not value.keys() <= _ASSISTANT_KEYS or "content" not in value:
        context.fail("INVALID_FACT")
    content = value["content"]
    if content is not None and type(content) is not str:
        context.fail("INVALID_FACT")
    if "tool_calls" not in value:
        return
    calls = value["tool_calls"]
    if type(calls) is not list or not calls:
        context.fail("INVALID_FACT")
    ids = {_check_call(context, call) for call in calls}
    if len(ids) != len(calls):
        context.fail("INVALID_TRANSCRIPT")


def _check_call(context: FactContext, call: Any) -> str:
    """One ``tool_calls`` item; returns its id."""
    if type(call) is not dict or not call.keys() <= _CALL_KEYS or call.get("type") != "function":
        context.fail("INVALID_FACT")
    function = call.get("function")
    if type(function) is not dict or not function.keys() <= _FUNCTION_KEYS:
        context.fail("INVALID_FACT")
    call_id = context.string(call.get("id"))
    context.string(function.get("name"))
    if type(function.get("arguments")) is not str:
        context.fail("INVALID_FACT")
    return call_id


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
    state, index, journal, fact_id = context.state, context.index, context.journal, context.fact_id
    pending = index.pending_calls
    role = message["role"]
    if role == "assistant":
        if pending:
            context.violation = True
        journal.assign(index, "pending_calls", {call["id"] for call in message.get("tool_calls") or ()})
    elif role == "tool":
        call_id = message["tool_call_id"]
        if call_id in pending:
            journal.discard(pending, call_id)
        else:
            context.violation = True
    elif pending:
        context.violation = True
    journal.append(state.transcript, message)
    journal.append(state.active_context, message)
    journal.assign(index, "active_through", fact_id)
    journal.put(index.entries, fact_id, info)
    journal.append(index.entry_ids, fact_id)
    journal.append(index.message_ids, fact_id)
