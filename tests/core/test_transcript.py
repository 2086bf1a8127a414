"""Transcript role invariants hold on every append, and a rejected append changes nothing."""

from __future__ import annotations

import pytest

from tiny_agent_core.errors import TranscriptError
from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage
from tiny_agent_core.transcript import Transcript


def _assistant(*ids: str, content: str | None = None) -> AssistantMessage:
    calls = tuple(ToolCall(id=i, function=FunctionCall(name="read", arguments="{}")) for i in ids)
    return AssistantMessage(content=content, tool_calls=calls or None)


def _tool(call_id: str) -> ToolMessage:
    return ToolMessage(content="ok", tool_call_id=call_id)


def test_legal_sequence_with_results_in_any_order() -> None:
    transcript = Transcript([UserMessage(content="go"), _assistant("a", "b")])
    assert transcript.pending_call_ids == ("a", "b")
    transcript.append(_tool("b"))
    transcript.append(_tool("a"))
    transcript.append(_assistant(content="done"))
    transcript.append(UserMessage(content="again"))
    assert len(transcript) == 6
    assert transcript.pending_call_ids == ()


def test_pending_calls_at_the_end_are_legal() -> None:
    transcript = Transcript([UserMessage(content="go"), _assistant("a")])
    assert transcript.pending_call_ids == ("a",)


def test_same_provider_call_id_may_reappear_in_a_later_assistant_message() -> None:
    transcript = Transcript([UserMessage(content="go"), _assistant("a"), _tool("a"), _assistant("a"), _tool("a")])
    assert len(transcript) == 5


@pytest.mark.parametrize(
    ("tail", "invariant"),
    [
        ([_assistant("a"), _assistant(content="no")], "tool_call_pending"),
        ([_assistant("a"), UserMessage(content="no")], "tool_call_pending"),
        ([_assistant("a", "b"), _tool("a"), UserMessage(content="no")], "tool_call_pending"),
        ([_assistant("a"), _tool("zzz")], "tool_result_not_pending"),
        ([_assistant("a"), _tool("a"), _tool("a")], "tool_result_not_pending"),
        ([_tool("a")], "tool_result_not_pending"),
    ],
)
def test_illegal_sequences_name_the_broken_invariant(tail: list[object], invariant: str) -> None:
    transcript = Transcript([UserMessage(content="go")])
    *legal, illegal = tail
    for message in legal:
        transcript.append(message)  # type: ignore[arg-type]
    before = transcript.messages
    with pytest.raises(TranscriptError) as caught:
        transcript.append(illegal)  # type: ignore[arg-type]
    assert caught.value.invariant == invariant
    assert transcript.messages == before


def test_duplicate_call_ids_in_one_message_are_rejected() -> None:
    duplicated = AssistantMessage.model_construct(
        role="assistant",
        content=None,
        tool_calls=(
            ToolCall(id="a", function=FunctionCall(name="x", arguments="")),
            ToolCall(id="a", function=FunctionCall(name="y", arguments="")),
        ),
    )
    transcript = Transcript([UserMessage(content="go")])
    with pytest.raises(TranscriptError) as caught:
        transcript.append(duplicated)
    assert caught.value.invariant == "duplicate_call_id"
    assert len(transcript) == 1
