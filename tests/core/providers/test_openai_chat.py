"""The Chat Completions adapter on small hand-written fixtures: each rule and each named dialect repair."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    InvalidAssistantMessage,
    MalformedResponseError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderHTTPError,
    ProviderReportedError,
    RateLimitError,
    ServerError,
)
from tiny_agent_core.providers.http_errors import http_error
from tiny_agent_core.providers.openai_chat import (
    REPAIRS,
    StreamAccumulator,
    normalize_response_body,
    normalize_sse_text,
)
from tiny_agent_core.providers.results import StreamedText, StreamedToolCall, UsageReported
from tiny_agent_core.usage import Usage


def body(message: Any, finish: Any = "stop", usage: Any = None, **extra: Any) -> str:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if message is not ...:
        choice["message"] = message
    out: dict[str, Any] = {"id": "r1", "model": "m", "choices": [choice], **extra}
    if usage is not None:
        out["usage"] = usage
    return json.dumps(out)


def sse(*chunks: Any, done: bool = True) -> str:
    """SSE text: dicts become ``data:`` events, strings starting with ``:`` are comment lines, others raw data."""
    parts = []
    for item in chunks:
        if isinstance(item, str) and item.startswith(":"):
            parts.append(f"{item}\n")
        else:
            parts.append(f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n")
    return "".join(parts) + ("data: [DONE]\n\n" if done else "")


def chunk(delta: Any = None, finish: Any = None, usage: Any = None, choices: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": "r1", "model": "m", "choices": []}
    if choices:
        out["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        out["usage"] = usage
    return out


def ids() -> Any:
    counter = iter(range(1000))
    return lambda: f"gen_{next(counter)}"


# --- usage mapping -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 200, "completion_tokens": 5, "prompt_cache_hit_tokens": 80}, Usage(120, 5, 80, 0)),
        (
            {"prompt_tokens": 9, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 2}},
            Usage(7, 1, 2, 0),
        ),
        (
            {
                "prompt_tokens": 9,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 0},
                "prompt_cache_hit_tokens": 5,
            },
            Usage(9, 1, 0, 0),  # an explicit cached_tokens: 0 wins over the DeepSeek fallback
        ),
        (
            {"prompt_tokens": 50, "completion_tokens": 1, "prompt_tokens_details": {"cache_write_tokens": 30}},
            Usage(20, 1, 0, 30),
        ),
        ({"prompt_tokens": 50, "completion_tokens": 1, "cache_creation_input_tokens": 10}, Usage(40, 1, 0, 10)),
        ({"prompt_tokens": 3, "completion_tokens": 4, "prompt_tokens_details": None}, Usage(3, 4, 0, 0)),
        ({"prompt_tokens": 3}, Usage(3, 0, 0, 0)),
        ({}, None),
        ({"total_tokens": 12}, None),
    ],
)
def test_usage_mapping(usage: dict[str, Any], expected: Usage | None) -> None:
    assert normalize_response_body(body({"role": "assistant", "content": "x"}, usage=usage)).usage == expected


def test_no_usage_is_unknown_not_zero() -> None:
    assert normalize_response_body(body({"role": "assistant", "content": "x"})).usage is None


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True, 2**53])
def test_malformed_usage_counts_are_rejected(bad: Any) -> None:
    with pytest.raises(MalformedResponseError, match="prompt_tokens"):
        normalize_response_body(body({"role": "assistant", "content": "x"}, usage={"prompt_tokens": bad}))


def test_inconsistent_cache_counts_are_clamped_visibly() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 8},
    }
    result = normalize_response_body(body({"role": "assistant", "content": "x"}, usage=usage))
    assert result.usage == Usage(0, 1, 8, 8)
    assert result.repairs == ("usage_input_clamped",)


def test_usage_travels_with_a_rejected_response() -> None:
    with pytest.raises(InvalidAssistantMessage) as caught:
        normalize_response_body(
            body({"role": "assistant", "content": 5}, usage={"prompt_tokens": 4, "completion_tokens": 2})
        )
    assert caught.value.usage == Usage(4, 2)


# --- provider cost -------------------------------------------------------------------------------------------


def test_provider_cost_is_a_decimal_and_byok_zero_is_not_a_cost() -> None:
    message = {"role": "assistant", "content": "x"}
    paid = normalize_response_body(
        body(message, usage={"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.0076509169})
    )
    assert paid.provider_cost == Decimal("0.0076509169")
    byok = {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0, "is_byok": True}
    assert normalize_response_body(body(message, usage=byok)).provider_cost is None
    assert normalize_response_body(body(message)).provider_cost is None


# --- dialect repairs (each one named) ------------------------------------------------------------------------


CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("message", "finish", "expected", "repairs"),
    [
        (
            {"role": "assistant", "content": "x", "tool_calls": []},
            "stop",
            {"role": "assistant", "content": "x"},
            ["empty_tool_calls"],
        ),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm"},
                    {"type": "text", "text": "a"},
                    {"type": "text", "text": "b"},
                ],
            },
            "stop",
            {"role": "assistant", "content": "ab"},
            ["content_parts"],
        ),
        (
            {"role": "assistant", "tool_calls": [CALL]},
            "tool_calls",
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            ["missing_content"],
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": CALL["function"]}]},
            "tool_calls",
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            ["missing_tool_call_type"],
        ),
        (
            {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": ""}, {**CALL, "id": None}]},
            "tool_calls",
            {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "gen_0"}, {**CALL, "id": "gen_1"}]},
            ["missing_tool_call_id"],
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**CALL, "function": {"name": "read", "arguments": ""}}],
            },
            "tool_calls",
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            ["empty_arguments"],
        ),
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**CALL, "function": {"name": "read", "arguments": {"path": "é"}}}],
            },
            "tool_calls",
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**CALL, "function": {"name": "read", "arguments": '{"path":"é"}'}}],
            },
            ["arguments_object"],
        ),
    ],
)
def test_dialect_repair(message: Any, finish: str, expected: dict[str, Any], repairs: list[str]) -> None:
    result = normalize_response_body(body(message, finish), new_id=ids())
    assert result.message.as_dict() == expected
    assert list(result.repairs) == repairs
    assert set(result.repairs) <= set(REPAIRS)


@pytest.mark.parametrize(
    "content",
    [[{"type": "image_url", "image_url": {"url": "x"}}], [{"type": "text"}], ["text"], [{"type": "text", "text": 3}]],
)
def test_ambiguous_content_parts_are_rejected(content: Any) -> None:
    with pytest.raises(MalformedResponseError, match="invalid assistant content"):
        normalize_response_body(body({"role": "assistant", "content": content}))


def test_arguments_as_a_list_are_not_repaired() -> None:
    call = {**CALL, "function": {"name": "read", "arguments": [1]}}
    with pytest.raises(InvalidAssistantMessage, match="invalid assistant tool call function"):
        normalize_response_body(body({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"))


def test_dropped_provider_fields_are_reported() -> None:
    message = {
        "role": "assistant",
        "content": "x",
        "reasoning": "r",
        "refusal": None,
        "tool_calls": [{**CALL, "index": 0, "function": {**CALL["function"], "parsed_arguments": {}}}],
    }
    result = normalize_response_body(body(message, "tool_calls"))
    assert result.dropped == (
        "message.reasoning",
        "message.tool_calls[0].index",
        "message.tool_calls[0].function.parsed_arguments",
    )
    assert result.message.as_dict() == {"role": "assistant", "content": "x", "tool_calls": [CALL]}


# --- body-level failures -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "error", "text"),
    [
        ("{not json", MalformedResponseError, "not valid JSON"),
        ("[1]", MalformedResponseError, "not a JSON object"),
        ('{"choices": []}', MalformedResponseError, "no assistant message"),
        ('{"choices": [{"finish_reason": "stop"}]}', MalformedResponseError, "no assistant message"),
        ('{"error": {"message": "boom", "code": 500}}', ProviderReportedError, "boom"),
        ('{"error": {"error": {"message": "nested credits", "code": 402}}}', ProviderReportedError, "nested credits"),
        ('{"choices": [{"finish_reason": "content_filter", "message": null}]}', ContentFilteredError, "content filter"),
        (
            '{"choices": [{"finish_reason": "error", "message": {"role": "assistant", "content": ""}}]}',
            ProviderReportedError,
            "error",
        ),
        (
            '{"choices": [{"finish_reason": "weird", "message": {"role": "assistant", "content": "x"}}]}',
            MalformedResponseError,
            "Unknown provider finish_reason: weird",
        ),
    ],
)
def test_body_failures_are_typed(raw: str, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        normalize_response_body(raw)


def test_refusal_without_content_is_a_content_filter_with_the_models_words() -> None:
    with pytest.raises(ContentFilteredError, match=r"The model refused: no\."):
        normalize_response_body(body({"role": "assistant", "content": None, "refusal": "no."}))


def test_refusal_next_to_real_content_is_just_dropped() -> None:
    result = normalize_response_body(body({"role": "assistant", "content": "fine", "refusal": "partial"}))
    assert result.message.content == "fine"
    assert result.dropped == ("message.refusal",)


# --- streaming -----------------------------------------------------------------------------------------------


def test_stream_merges_text_and_tool_calls_by_index_not_starting_at_zero() -> None:
    text = sse(
        chunk({"role": "assistant", "content": "Hel"}),
        ": keep-alive comment",
        chunk({"content": "lo"}),
        chunk(
            {
                "tool_calls": [
                    {"index": 3, "id": "b", "type": "function", "function": {"name": "write", "arguments": '{"p'}}
                ]
            }
        ),
        chunk(
            {"tool_calls": [{"index": 2, "id": "a", "type": "function", "function": {"name": "read", "arguments": ""}}]}
        ),
        chunk({"tool_calls": [{"index": 3, "function": {"arguments": '":1}'}}]}),
        chunk({"tool_calls": [{"index": 2, "function": {"arguments": "{}"}}]}),
        chunk(finish="tool_calls"),
        chunk(usage={"prompt_tokens": 10, "completion_tokens": 3}, choices=False),
    )
    result = normalize_sse_text(text)
    assert result.message.as_dict() == {
        "role": "assistant",
        "content": "Hello",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "write", "arguments": '{"p":1}'}},
        ],
    }
    assert result.stop_reason == "toolUse"
    assert result.usage == Usage(10, 3)
    assert result.repairs == ()


def test_stream_reports_deltas_as_they_arrive() -> None:
    accumulator = StreamAccumulator()
    assert accumulator.feed("", json.dumps(chunk({"role": "assistant", "content": ""}))) == []
    assert accumulator.feed("", json.dumps(chunk({"content": "hi"}))) == [StreamedText("hi")]
    deltas = accumulator.feed(
        "", json.dumps(chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}]}))
    )
    assert deltas == [StreamedToolCall(0, "c", "f", "{")]
    usage = {"prompt_tokens": 2, "completion_tokens": 1}
    assert accumulator.feed("", json.dumps(chunk(finish="stop", usage=usage))) == [UsageReported(Usage(2, 1))]
    assert accumulator.usage == Usage(2, 1)
    accumulator.feed("", "[DONE]")
    assert accumulator.done
    assert accumulator.feed("", "garbage after done is ignored") == []


def test_cumulative_usage_on_every_chunk_keeps_the_last() -> None:
    text = sse(
        chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1}),
        chunk({"content": "b"}, usage={"prompt_tokens": 5, "completion_tokens": 2}),
        chunk(finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 3}),
    )
    assert normalize_sse_text(text).usage == Usage(5, 3)


def test_stream_without_usage_is_unknown() -> None:
    assert normalize_sse_text(sse(chunk({"content": "a"}, finish="stop"))).usage is None


def test_a_null_finish_reason_after_stop_keeps_stop() -> None:
    text = sse(
        chunk({"content": "a"}, finish="length"),
        chunk({}, finish=None, usage={"prompt_tokens": 1, "completion_tokens": 1}),
    )
    assert normalize_sse_text(text).stop_reason == "length"


def test_stream_error_event_is_a_provider_error() -> None:
    text = 'event: error\ndata: {"error": {"message": "overloaded"}}\n\n'
    with pytest.raises(ProviderReportedError, match="overloaded"):
        normalize_sse_text(sse(chunk({"content": "a"}), done=False) + text)


def test_error_object_in_a_data_chunk_is_a_provider_error_with_usage() -> None:
    text = sse(
        chunk({"content": "a"}),
        {
            "error": {"message": "Token limit reached", "code": 400},
            "usage": {"prompt_tokens": 4, "completion_tokens": 1},
        },
    )
    with pytest.raises(ProviderReportedError, match="Token limit reached") as caught:
        normalize_sse_text(text)
    assert caught.value.usage == Usage(4, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data: {broken\n\n", "not valid JSON"),
        ("data: [1]\n\n", "not a JSON object"),
        (sse(chunk({"content": "a"}), done=False), "ended before the response completed"),
        ("", "ended before any complete event"),
        (": only comments\n\n", "ended before any complete event"),
        (sse(chunk({"role": "user", "content": "a"})), "invalid assistant message role"),
        (sse(chunk({"content": 5})), "invalid assistant content"),
        (
            sse(
                chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
                chunk({"tool_calls": [{"index": 0, "id": "b"}]}),
            ),
            "changed its id",
        ),
        (sse(chunk({"tool_calls": [{"index": -1, "id": "a"}]})), "index"),
        (
            sse(
                chunk({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"arguments": "{}"}}]}),
                chunk(finish="tool_calls"),
            ),
            "invalid assistant tool call function",
        ),
    ],
)
def test_malformed_streams_fail_closed(text: str, message: str) -> None:
    with pytest.raises(MalformedResponseError, match=message):
        normalize_sse_text(text)


def test_missing_done_marker_after_a_finish_reason_is_a_named_repair() -> None:
    result = normalize_sse_text(sse(chunk({"content": "a"}, finish="stop"), done=False))
    assert result.message.content == "a"
    assert result.repairs == ("missing_done_marker",)


def test_tool_call_deltas_without_index_are_a_named_repair() -> None:
    text = sse(
        chunk({"tool_calls": [{"id": "a", "type": "function", "function": {"name": "read", "arguments": '{"x"'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": ":1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}),
        chunk(finish="tool_calls"),
    )
    result = normalize_sse_text(text)
    assert [(c.id, c.function.name, c.function.arguments) for c in result.message.calls] == [
        ("a", "read", '{"x":1}'),
        ("b", "bash", "{}"),
    ]
    assert result.repairs == ("missing_tool_call_index",)


def test_streamed_reasoning_is_dropped_and_reported() -> None:
    text = sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": "think"}),
        chunk({"content": "ok"}, finish="stop"),
    )
    result = normalize_sse_text(text)
    assert result.message.as_dict() == {"role": "assistant", "content": "ok"}
    assert result.dropped == ("message.reasoning_content",)


def test_only_the_first_choice_is_read() -> None:
    other = {"id": "r1", "choices": [{"index": 1, "delta": {"content": "other"}, "finish_reason": None}]}
    assert normalize_sse_text(sse(other, chunk({"content": "mine"}, finish="stop"))).message.content == "mine"


# --- HTTP errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ProviderHTTPError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (402, PaymentRequiredError),
        (404, ModelNotFoundError),
        (408, RateLimitError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
    ],
)
def test_http_status_gives_a_typed_error(status: int, cls: type[ProviderHTTPError]) -> None:
    error = http_error(status, '{"error": {"message": "why"}}')
    assert type(error) is cls
    assert error.status == status
    assert error.kind == "http_error"
    assert "why" in str(error)


@pytest.mark.parametrize(
    ("headers", "text", "expected"),
    [
        ({"Retry-After": "7"}, "", 7.0),
        ({"retry-after-ms": "1500"}, "", 1.5),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:10 GMT", "Date": "Wed, 21 Oct 2026 07:28:00 GMT"}, "", 10.0),
        ({}, "Please try again in 20s.", 20.0),
        ({}, "Please try again in 120ms.", 0.12),
        ({}, "Please try again in 7m54.336s.", 474.336),
        ({}, "slow down", None),
    ],
)
def test_retry_after_from_headers_or_body(headers: dict[str, str], text: str, expected: float | None) -> None:
    error = http_error(429, json.dumps({"error": {"message": text}}), headers)
    assert error.retry_after == pytest.approx(expected) if expected is not None else error.retry_after is None


def test_non_json_error_bodies_are_shown_as_text() -> None:
    error = http_error(502, b"<html>Bad gateway</html>")
    assert isinstance(error, ServerError)
    assert "Bad gateway" in str(error)
    assert "(empty body)" in str(http_error(500, ""))
    assert "not found" in str(http_error(404, '{"detail": "not found"}'))


def test_an_emoji_split_across_stream_chunks_equals_the_non_streamed_body() -> None:
    text = (
        'data: {"choices":[{"index":0,"delta":{"content":"smile \\ud83d"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":"\\ude00!"},"finish_reason":"stop"}]}\n\n'
        "data: [DONE]\n\n"
    )
    streamed = normalize_sse_text(text)
    whole = normalize_response_body('{"choices":[{"message":{"role":"assistant","content":"smile \\ud83d\\ude00!"}}]}')
    assert streamed.message == whole.message
    assert streamed.message.content == "smile 😀!"
