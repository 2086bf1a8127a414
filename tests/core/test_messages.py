"""Canonical message types: exact keys, no coercion, immutability."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall, message_from_dict


def _call(call_id: str = "c1", name: str = "read", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    "value",
    [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": None, "tool_calls": [_call()]},
        {"role": "tool", "content": "", "tool_call_id": "c1"},
    ],
)
def test_valid_messages_round_trip_exactly(value: dict[str, Any]) -> None:
    assert message_from_dict(value).as_dict() == value


@pytest.mark.parametrize(
    "value",
    [
        {"role": "user", "content": ""},
        {"role": "user", "content": "x", "name": "bob"},
        {"role": "user"},
        {"role": "system", "content": "never persisted"},
        {"role": "assistant", "content": 3},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "assistant", "content": None, "tool_calls": [_call(), _call()]},
        {"role": "assistant", "content": None, "tool_calls": [{**_call(), "index": 0}]},
        {"role": "assistant", "content": None, "tool_calls": [_call(arguments={})]},  # type: ignore[arg-type]
        {"role": "assistant", "content": None, "tool_calls": [_call(call_id="")]},
        {"role": "assistant", "content": None, "tool_calls": [{**_call(), "type": "tool"}]},
        {"role": "assistant", "content": "x", "refusal": None},
        {"role": "tool", "content": "x", "tool_call_id": ""},
        {"role": "tool", "content": b"x", "tool_call_id": "c1"},
        {"role": "tool", "content": 1, "tool_call_id": "c1"},
    ],
)
def test_invalid_messages_are_rejected_not_coerced(value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        message_from_dict(value)


def test_messages_are_immutable() -> None:
    message = AssistantMessage(
        content="x", tool_calls=(ToolCall(id="a", function=FunctionCall(name="n", arguments="")),)
    )
    with pytest.raises(ValidationError):
        message.content = "y"  # type: ignore[misc]
    assert message.calls[0].function.arguments == ""
