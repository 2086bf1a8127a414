"""The agent against local-server dialects: learned repairs, tools left out of the prompt, ``max_tokens`` for the
context window, typed blank answers, and what differs when recovery is blocked."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.core.agent.conftest import Harness, text_reply, tool_reply
from tests.core.providers.test_local_dialect import LLAMA_CPP_PYTHON_CALL
from tests.loopback import Reply, sse_events
from tiny_agent_core.agent import events
from tiny_agent_core.agent.context import (
    PromptMeasure,
    answer_room,
    configuration_differences,
    prompt_floor,
    request_bytes,
)
from tiny_agent_core.errors import ContextLengthError, EmptyResponseError
from tiny_agent_core.providers.openai_dialect import Dialect


def _of(harness: Harness, kind: type[Any]) -> list[Any]:
    return [event for event in harness.events if isinstance(event, kind)]


def _answer(text: str, usage: tuple[int, int]) -> Reply:
    return Reply.json(
        {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
        }
    )


async def test_a_server_that_cannot_stream_tools_is_learned_once(harness: Harness) -> None:
    (harness.workspace / "notes.txt").write_text("milk\n")
    harness.server.queue(Reply.sse(b""), Reply.json(LLAMA_CPP_PYTHON_CALL), _answer("You need milk.", (2300, 4)))
    result = await harness.agent.run("what do I need?")
    assert result.outcome == "completed"
    bodies = [request.json() for request in harness.server.requests]
    assert [body.get("stream", False) for body in bodies] == [True, False, False]  # learned, then kept
    assert all(body["tool_choice"] == "auto" for body in bodies)
    assert bodies[2]["messages"][2]["content"] == ""  # the tool-call message, content null sent as ""
    learned = _of(harness, events.DialectLearned)
    assert [(event.changes, event.repairs) for event in learned] == [({"stream_tools": False}, ("tools_not_streamed",))]
    assert harness.agent.profile.dialect == Dialect(tool_choice_auto=True, stream_tools=False, null_content=False)
    steps = _of(harness, events.StepFinished)
    assert steps[0].outbound_repairs == ("tool_choice_auto", "tools_not_streamed")
    assert steps[1].outbound_repairs == ("tool_choice_auto", "tools_not_streamed", "tool_call_content_empty_string")
    assert steps[0].streamed is False
    assert harness.reduced().operation.kind == "idle"
    assert not _of(harness, events.ToolsDropped)


async def test_tools_left_out_of_the_prompt_are_reported_once(harness: Harness) -> None:
    # llama-cpp-python without tool_choice: a 101-token prompt, although the five tool definitions alone need more.
    harness.server.queue(text_reply("I cannot read files.", usage=(101, 6)))
    result = await harness.agent.run("read notes.txt")
    assert result.outcome == "completed"
    dropped = _of(harness, events.ToolsDropped)
    assert len(dropped) == 1
    assert dropped[0].prompt_tokens == 101
    assert dropped[0].expected_at_least > 101
    assert "left the tools out" in dropped[0].message


async def test_no_tools_dropped_once_a_call_was_made_or_usage_is_unknown(harness: Harness) -> None:
    (harness.workspace / "a.txt").write_text("alpha\n")
    harness.server.queue(
        tool_reply(("c1", "read", '{"path": "a.txt"}')),  # 20 prompt tokens, but a call: the tools arrived
        text_reply("alpha", usage=(30, 1)),
        text_reply("hello", usage=None),
    )
    assert (await harness.agent.run("read a.txt")).outcome == "completed"
    assert (await harness.agent.run("hi")).outcome == "completed"
    assert not _of(harness, events.ToolsDropped)


async def test_max_tokens_keeps_the_answer_inside_a_known_context_window(harness: Harness) -> None:
    harness.agent.profile = replace(harness.agent.profile, context_length=8192)
    harness.server.queue(*(text_reply("ok", usage=(2000, 1)) for _ in range(3)))
    await harness.agent.run("hi")
    body = harness.server.requests[0].json()
    assert body["max_tokens"] == answer_room(8192, body["messages"], body["tools"])
    assert 0 < body["max_tokens"] < 8192
    await harness.agent.run("and now?")  # anchored to the 2000 prompt tokens the server counted
    body = harness.server.requests[1].json()
    first = harness.server.requests[0].json()
    measure = PromptMeasure(request_bytes(first["messages"], first["tools"]), 2000)
    assert body["max_tokens"] == answer_room(8192, body["messages"], body["tools"], measure)
    harness.agent.profile = replace(harness.agent.profile, context_length=None)
    await harness.agent.run("hi again")
    assert "max_tokens" not in harness.server.requests[2].json()


def test_token_estimates() -> None:
    messages = [{"role": "user", "content": "x" * 600}]
    size = len(json.dumps([messages, []]))
    assert request_bytes(messages, None) == size
    assert prompt_floor(messages, None) * 6 <= size
    assert answer_room(100_000, messages, None) == 100_000 - size // 2 - 5_000
    assert answer_room(400, messages, None) is None  # less than 64 tokens of room: let the server decide
    # Anchored to what the server counted for the conversation so far: only the new bytes are estimated.
    longer = [*messages, {"role": "assistant", "content": "y" * 100}]
    grown = request_bytes(longer, None) - size
    assert answer_room(4096, longer, None, PromptMeasure(size, 150)) == 4096 - (150 + grown // 2) - 204
    # A smaller request (after a compaction) is not anchored to a larger one.
    assert answer_room(4096, messages, None, PromptMeasure(size + 1, 10)) == 4096 - size // 2 - 204


async def test_a_context_overflow_fails_with_the_way_out(harness: Harness) -> None:
    harness.server.queue(
        Reply.error(400, {"error": {"message": "Requested tokens (4310) exceed context window of 4096"}})
    )
    result = await harness.agent.run("hi")
    assert result.outcome == "failed"
    assert isinstance(result.error, ContextLengthError)
    finished = _of(harness, events.RunFinished)[-1]
    assert finished.error_kind == "context_length"
    assert "compact the session" in str(finished.error)


async def test_a_blank_answer_is_a_typed_error(harness: Harness) -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": " "}, "finish_reason": "stop"}]}]
    harness.server.queue(Reply.sse(sse_events(chunks)))
    result = await harness.agent.run("hi")
    assert isinstance(result.error, EmptyResponseError)
    assert _of(harness, events.RunFinished)[-1].error_kind == "empty_response"


def test_configuration_differences_name_each_field() -> None:
    before = {
        "model": "a",
        "systemPromptDigest": "s1",
        "tools": [{"name": "read", "definitionDigest": "r1"}, {"name": "bash", "definitionDigest": "b1"}],
        "adapterIdentity": "x",
        "routingIdentity": "custom:a",
        "outputOptionsDigest": "o",
    }
    after = {
        **before,
        "systemPromptDigest": "s2",
        "tools": [{"name": "read", "definitionDigest": "r2"}, {"name": "edit", "definitionDigest": "e1"}],
    }
    assert configuration_differences(before, after) == [
        "system prompt (workspace, AGENTS.md, skills or the offered tools' names)",
        "tools added: edit",
        "tools removed: bash",
        "tool definitions changed: read",
    ]
    assert configuration_differences(before, before) == []


async def test_llama_server_without_a_tool_template_is_caught(harness: Harness) -> None:
    # Recorded shape of llama-server --jinja with SmolLM2's own template (no tools): usage and timings in the last
    # chunk, 117 prompt tokens for a prompt whose tool definitions alone need more.
    base = {"id": "chatcmpl-sVQY", "model": "smollm2", "system_fingerprint": "b1-0c1e570", "created": 1796131098}
    chunks = [
        {**base, "choices": [{"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}]},
        {**base, "choices": [{"finish_reason": None, "index": 0, "delta": {"content": "You can use the read"}}]},
        {**base, "choices": [{"finish_reason": "stop", "index": 0, "delta": {}}]},
        {
            **base,
            "choices": [],
            "usage": {
                "completion_tokens": 199,
                "prompt_tokens": 117,
                "total_tokens": 316,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
            "timings": {"cache_n": 0, "prompt_n": 117, "prompt_ms": 137.572, "predicted_n": 199},
        },
    ]
    harness.server.queue(Reply.sse(sse_events(chunks)))
    assert (await harness.agent.run("read notes.txt")).outcome == "completed"
    (dropped,) = _of(harness, events.ToolsDropped)
    assert dropped.prompt_tokens == 117
    assert "chat template with tools" in dropped.message
