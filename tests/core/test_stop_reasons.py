"""finish_reason cross-validation (reference notes §3) and provider aliases (SPEC §3)."""

from __future__ import annotations

from typing import Any

import pytest

from tiny_agent_core.errors import ContentFilteredError, MalformedResponseError, ProviderReportedError
from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall
from tiny_agent_core.stop_reasons import stop_reason

TEXT = AssistantMessage(content="hi")
CALLS = AssistantMessage(content=None, tool_calls=(ToolCall(id="c", function=FunctionCall(name="f", arguments="{}")),))


@pytest.mark.parametrize(
    ("finish", "message", "expected"),
    [
        ("length", TEXT, "length"),
        ("length", CALLS, "length"),
        ("tool_calls", CALLS, "toolUse"),
        ("function_call", CALLS, "toolUse"),
        (None, TEXT, "stop"),
        (None, CALLS, "toolUse"),
        ("", TEXT, "stop"),
        ("", CALLS, "toolUse"),
        ("stop", TEXT, "stop"),
        ("stop", CALLS, "toolUse"),
        ("eos", TEXT, "stop"),
        ("end_turn", TEXT, "stop"),
        ("stop_sequence", TEXT, "stop"),
        ("end_turn", CALLS, "toolUse"),
        ("max_tokens", TEXT, "length"),
        ("model_length", CALLS, "length"),
        ("tool_use", CALLS, "toolUse"),
    ],
)
def test_finish_reason_maps_to_stop_reason(finish: Any, message: AssistantMessage, expected: str) -> None:
    assert stop_reason(finish, message) == expected


@pytest.mark.parametrize("finish", ["tool_calls", "function_call", "tool_use"])
def test_tool_finish_reason_without_calls_is_rejected(finish: str) -> None:
    with pytest.raises(MalformedResponseError, match=f"Provider finish_reason {finish} requires tool calls"):
        stop_reason(finish, TEXT)


def test_content_filter_is_a_typed_refusal() -> None:
    with pytest.raises(ContentFilteredError):
        stop_reason("content_filter", TEXT)


@pytest.mark.parametrize("finish", ["error", "network_error"])
def test_error_is_a_provider_error(finish: str) -> None:
    with pytest.raises(ProviderReportedError, match=f"Provider finish_reason: {finish}"):
        stop_reason(finish, CALLS)


@pytest.mark.parametrize("finish", ["mystery", "STOP", "MAX_TOKENS", 0, 1, True, ["stop"]])
def test_unknown_finish_reasons_fail_closed(finish: Any) -> None:
    with pytest.raises(MalformedResponseError, match="Unknown provider finish_reason"):
        stop_reason(finish, TEXT)
