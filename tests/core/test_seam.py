"""The normalization seam (reference notes §2): whitelist rebuild, reference checks in order, typed errors only.

The two test-name patterns of the seed chapter select real tests here:
``pytest -k normalizes_provider_only`` and ``pytest -k rejects_malformed_provider_assistant``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tiny_agent_core.errors import InvalidAssistantMessage
from tiny_agent_core.seam import normalize_assistant_message

CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"README.md"}'}}


def test_normalizes_provider_only_assistant_fields_before_persistence() -> None:
    wire = {
        "role": "assistant",
        "content": "answer",
        "refusal": None,
        "reasoning": "thinking…",
        "reasoning_content": "more thinking",
        "reasoning_details": [{"type": "reasoning.text", "text": "x"}],
        "annotations": [{"type": "url_citation"}],
        "audio": {"id": "a"},
        "function_call": {"name": "legacy", "arguments": "{}"},
        "name": "bot",
        "provider_specific": {"x": 1},
    }
    assert normalize_assistant_message(wire).as_dict() == {"role": "assistant", "content": "answer"}


def test_normalizes_provider_only_tool_call_fields_and_keeps_the_canonical_call() -> None:
    wire = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                **CALL,
                "index": 0,
                "provider": "x",
                "extra_content": {"google": {"thought_signature": "sig"}},
                "function": {**CALL["function"], "parsed_arguments": {"path": "README.md"}},  # type: ignore[dict-item]
            }
        ],
    }
    assert normalize_assistant_message(wire).as_dict() == {"role": "assistant", "content": None, "tool_calls": [CALL]}


def test_normalizes_provider_only_fields_without_touching_the_input() -> None:
    wire = {"role": "assistant", "content": "a", "reasoning": "r"}
    normalize_assistant_message(wire)
    assert wire == {"role": "assistant", "content": "a", "reasoning": "r"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "invalid assistant message"),
        ([], "invalid assistant message"),
        ("assistant", "invalid assistant message"),
        ({"content": "x"}, "invalid assistant message role"),
        ({"role": "user", "content": "x"}, "invalid assistant message role"),
        ({"role": "assistant"}, "invalid assistant content"),
        ({"role": "assistant", "content": 1}, "invalid assistant content"),
        ({"role": "assistant", "content": [{"type": "text", "text": "x"}]}, "invalid assistant content"),
        ({"role": "assistant", "content": None, "tool_calls": []}, "invalid assistant tool_calls"),
        ({"role": "assistant", "content": None, "tool_calls": {"0": CALL}}, "invalid assistant tool_calls"),
        ({"role": "assistant", "content": None, "tool_calls": ["x"]}, "invalid assistant tool call"),
        ({"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": ""}]}, "invalid assistant tool call"),
        ({"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": 7}]}, "invalid assistant tool call"),
        ({"role": "assistant", "content": None, "tool_calls": [{**CALL, "type": "fn"}]}, "invalid assistant tool call"),
        (
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": CALL["function"]}]},
            "invalid assistant tool call",
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": "read"}]},
            "invalid assistant tool call",
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "", "arguments": ""}}]},
            "invalid assistant tool call function",
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**CALL, "function": {"name": "read", "arguments": {}}}],
            },
            "invalid assistant tool call function",
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "read"}}]},
            "invalid assistant tool call function",
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [CALL, CALL]},
            "invalid assistant tool_calls: duplicate tool call id",
        ),
    ],
)
def test_rejects_malformed_provider_assistant_shapes(value: Any, message: str) -> None:
    with pytest.raises(InvalidAssistantMessage) as caught:
        normalize_assistant_message(value)
    assert str(caught.value) == message


def test_rejects_malformed_provider_assistant_checks_in_reference_order() -> None:
    # Role is checked before content, content before tool_calls.
    with pytest.raises(InvalidAssistantMessage, match=r"^invalid assistant message role$"):
        normalize_assistant_message({"role": "tool", "content": 5, "tool_calls": []})
    with pytest.raises(InvalidAssistantMessage, match=r"^invalid assistant content$"):
        normalize_assistant_message({"role": "assistant", "content": 5, "tool_calls": []})


def test_accepts_empty_content_and_empty_arguments_unchanged() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    message = normalize_assistant_message({"role": "assistant", "content": "", "tool_calls": [call]})
    assert message.as_dict() == {"role": "assistant", "content": "", "tool_calls": [call]}


def test_null_tool_calls_means_no_calls() -> None:
    message = normalize_assistant_message({"role": "assistant", "content": "x", "tool_calls": None})
    assert message.as_dict() == {"role": "assistant", "content": "x"}


def test_escaped_surrogate_pairs_are_joined_and_lone_surrogates_rejected() -> None:
    joined = normalize_assistant_message({"role": "assistant", "content": "hi \ud83d" + "\ude00"})
    assert joined.content == "hi 😀"
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"e": "\ud83d\ude00"}'}}
    message = normalize_assistant_message({"role": "assistant", "content": None, "tool_calls": [call]})
    assert message.calls[0].function.arguments == '{"e": "😀"}'
    with pytest.raises(InvalidAssistantMessage, match="lone surrogate"):
        normalize_assistant_message({"role": "assistant", "content": "broken \ud83d"})


def _call_with(arguments: str) -> dict[str, Any]:
    call = {"id": "c", "type": "function", "function": {"name": "read", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.parametrize(
    "arguments",
    [
        r'{"path": "\ud800"}',
        r'{"path": "a\uDFFFb"}',
        r'{"\udc00": 1}',
        r'{"deep": [{"x": ["ok", "\ud83d"]}]}',
        r'{"pair-reversed": "\ude00\ud83d"}',
        r'"\ud800"',
    ],
)
def test_rejects_malformed_provider_arguments_with_an_escaped_lone_surrogate(arguments: str) -> None:
    """A session file cannot hold a lone surrogate: such a call could never be recorded as started."""
    with pytest.raises(InvalidAssistantMessage) as caught:
        normalize_assistant_message(_call_with(arguments))
    assert str(caught.value) == "invalid assistant tool call function: lone surrogate in arguments"


@pytest.mark.parametrize(
    "arguments",
    [
        r'{"emoji": "\ud83d\ude00"}',  # an escaped pair is one character
        r'{"text": "\\ud800"}',  # an escaped backslash: the text "\ud800", no surrogate
        r"not json \ud800",  # not JSON: the planner answers invalidArguments, nothing is jammed
        r'{"truncated": "\ud800',
    ],
)
def test_keeps_arguments_whose_decoded_json_has_no_lone_surrogate(arguments: str) -> None:
    assert normalize_assistant_message(_call_with(arguments)).calls[0].function.arguments == arguments
