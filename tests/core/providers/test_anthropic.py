"""The Anthropic Messages adapter: real recordings normalized (JSON and SSE), requests built (system, merged tool
results, tool_use, cache breakpoints), usage mapped (cache read/write), errors typed (529, 429 retry-after, prompt
too long, mid-stream error events), limits enforced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    ContextLengthError,
    EmptyStreamError,
    MalformedResponseError,
    ModelNotFoundError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
    RateLimitError,
    ResponseTooLargeError,
    ServerError,
)
from tiny_agent_core.messages import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage
from tiny_agent_core.providers import anthropic_request
from tiny_agent_core.providers.anthropic import StreamAccumulator, normalize_body, normalize_sse_text, usage_from_wire
from tiny_agent_core.providers.anthropic_errors import http_error
from tiny_agent_core.providers.anthropic_request import (
    ANTHROPIC_VERSION,
    DEFAULT_MAX_TOKENS,
    MAX_CACHE_BREAKPOINTS,
    build_body,
)
from tiny_agent_core.providers.profiles import ProviderProfile
from tiny_agent_core.providers.results import Limits, NormalizedResponse, StreamedText, StreamedToolCall, UsageReported
from tiny_agent_core.usage import Usage

RECORDINGS = Path(__file__).parent / "recordings" / "anthropic"
PROFILE = ProviderProfile("anthropic", "Anthropic", "https://api.anthropic.com/v1")


def recording(prefix: str) -> dict[str, Any]:
    """The recording whose file name starts with ``prefix``."""
    (path,) = RECORDINGS.glob(f"{prefix}-*.json")
    case: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return case


def normalize(case: dict[str, Any]) -> NormalizedResponse:
    """A success recording through the adapter's path for its kind."""
    if case["kind"] == "sse":
        return normalize_sse_text(case["sse"])
    return normalize_body(json.dumps(case["body"]))


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A canonical tool call as JSON."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- recordings ----------------------------------------------------------------------------------------------

SUCCESSES: dict[str, dict[str, Any]] = {
    "01": {
        "stop": "stop",
        "message": {"role": "assistant", "content": "- Captain\n- Scoop"},
        "usage": Usage(17, 10),
    },
    "02": {
        "stop": "toolUse",
        "message": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", "{}"),
                call("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", "{}"),
            ],
        },
        "usage": Usage(542, 62),
    },
    "03": {
        "stop": "toolUse",
        "message": {
            "role": "assistant",
            "content": "I'll check the current weather in Paris for you.",
            "tool_calls": [call("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", '{"location":"Paris"}')],
        },
        "usage": Usage(377, 65),
        "repairs": ("missing_message_stop",),
    },
    "04": {
        "stop": "stop",
        "content": '1. **Pouch** - references their iconic bill pouch\n2. **Pelé** - playful take on "pelican"',
        "usage": Usage(46, 133),
        "dropped": ("message.thinking",),
    },
    "05": {
        "stop": "stop",
        "content": '\ndef pelican():\n    return "A large waterbird with a long bill and a throat pouch for catching '
        'fish."\n',
        "usage": Usage(16, 28),
    },
    "07": {"stop": "stop", "usage": Usage(3, 406, cache_read=1111)},
    "08": {"stop": "stop", "usage": Usage(3, 33, cache_read=1111, cache_write=418)},
    "09": {"stop": "stop", "usage": Usage(92, 196), "dropped": ("message.redacted_thinking",)},
    "10": {
        "stop": "toolUse",
        "message": {
            "role": "assistant",
            "content": "I'll help you find the largest city in your country. First, let me determine which country "
            "you're from.",
            "tool_calls": [call("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", "{}")],
        },
        "usage": Usage(398, 155),
        "dropped": ("message.thinking",),
    },
}


@pytest.mark.parametrize("prefix", sorted(SUCCESSES))
def test_recordings_normalize_to_the_canonical_result(prefix: str) -> None:
    expected = SUCCESSES[prefix]
    result = normalize(recording(prefix))
    assert result.stop_reason == expected["stop"]
    if "message" in expected:
        assert result.message.as_dict() == expected["message"]
    if "content" in expected:
        assert result.message.content == expected["content"]
        assert result.message.tool_calls is None
    assert result.usage == expected["usage"]
    assert result.repairs == expected.get("repairs", ())
    assert result.dropped == expected.get("dropped", ())
    assert result.model
    assert result.model.startswith("claude")
    assert result.response_id
    assert result.response_id.startswith("msg_")


def test_thinking_never_reaches_the_transcript_or_the_deltas() -> None:
    case = recording("04")
    accumulator = StreamAccumulator()
    deltas = [delta for event, data in sse_pairs(case["sse"]) for delta in accumulator.feed(event, data)]
    texts = "".join(delta.text for delta in deltas if isinstance(delta, StreamedText))
    result = accumulator.finish()
    assert texts == result.message.content
    assert "The user wants" not in texts
    assert "The user wants" not in json.dumps(result.message.as_dict())


def sse_pairs(text: str) -> list[tuple[str, str]]:
    """``(event, data)`` of each event of a recorded stream, as httpx-sse decodes it."""
    import httpx
    from httpx_sse import EventSource

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())
    return [(sse.event, sse.data) for sse in EventSource(response).iter_sse()]


def test_streamed_tool_calls_arrive_as_deltas_with_their_id_first() -> None:
    accumulator = StreamAccumulator()
    deltas = [delta for pair in sse_pairs(recording("03")["sse"]) for delta in accumulator.feed(*pair)]
    calls = [delta for delta in deltas if isinstance(delta, StreamedToolCall)]
    assert calls[0] == StreamedToolCall(0, "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", "")
    assert "".join(delta.arguments for delta in calls) == '{"location": "Paris"}'
    assert all(delta.id is None for delta in calls[1:])
    usages = [delta.usage for delta in deltas if isinstance(delta, UsageReported)]
    assert usages == [Usage(377, 1), Usage(377, 65)]


def test_a_refusal_is_a_content_filter_outcome_with_the_explanation_and_usage() -> None:
    with pytest.raises(ContentFilteredError, match=r"refused \(stop_reason: refusal\): This request was blocked") as e:
        normalize(recording("12"))
    assert e.value.usage == Usage(97, 0)


def test_pause_turn_is_a_typed_error_saying_to_continue() -> None:
    with pytest.raises(ProviderReportedError, match=r"pause_turn.*send the request again to continue") as error:
        normalize(recording("11"))
    assert error.value.usage == Usage(401468, 792)


def test_unsupported_blocks_are_refused_with_the_usage_kept() -> None:
    with pytest.raises(MalformedResponseError, match="'compaction'") as error:
        normalize(recording("06"))
    # message_delta's cumulative counts replace message_start's (this beta reports the last iteration there)
    assert error.value.usage == Usage(181, 8)


# --- request -------------------------------------------------------------------------------------------------

TRANSCRIPT: list[Any] = [
    {"role": "system", "content": "You are a coding agent."},
    UserMessage(content="List the files."),
    AssistantMessage(
        content="Looking.",
        tool_calls=(
            ToolCall(id="toolu_1", function=FunctionCall(name="ls", arguments='{"path": "."}')),
            ToolCall(id="toolu_2", function=FunctionCall(name="read", arguments="{not json")),
        ),
    ),
    ToolMessage(content="a.py\nb.py", tool_call_id="toolu_1"),
    ToolMessage(content="Error: invalid arguments", tool_call_id="toolu_2"),
    UserMessage(content="Also count them."),
    AssistantMessage(
        content=None, tool_calls=(ToolCall(id="toolu_3", function=FunctionCall(name="ls", arguments="")),)
    ),
    ToolMessage(content="2", tool_call_id="toolu_3"),
]
TOOLS = [
    {"type": "function", "function": {"name": "ls", "description": "List.", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}},
]


def test_the_request_body_has_the_messages_api_shape() -> None:
    body = build_body(PROFILE, "claude-sonnet-4-5", TRANSCRIPT, TOOLS, {"temperature": 0.2, "stream": False})
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["temperature"] == 0.2
    assert body["stream"] is True
    assert body["system"] == [
        {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {"name": "ls", "description": "List.", "input_schema": {"type": "object"}},
        {"name": "read", "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}},
    ]
    messages = body["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"_invalid_arguments": "{not json"}},
    ]
    # Both results of the turn in one user message, then the user's next words in the same message.
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py\nb.py"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Error: invalid arguments"},
        {"type": "text", "text": "Also count them.", "cache_control": {"type": "ephemeral"}},
    ]
    assert messages[3]["content"] == [{"type": "tool_use", "id": "toolu_3", "name": "ls", "input": {}}]
    assert messages[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "2", "cache_control": {"type": "ephemeral"}}
    ]


def breakpoints(body: dict[str, Any]) -> int:
    """How many ``cache_control`` markers a body carries."""
    return json.dumps(body).count('"cache_control"')


def test_cache_breakpoints_are_at_most_four_and_skip_what_is_missing() -> None:
    assert breakpoints(build_body(PROFILE, "m", TRANSCRIPT, TOOLS)) == MAX_CACHE_BREAKPOINTS
    only_user = build_body(PROFILE, "m", [UserMessage(content="hi")])
    assert breakpoints(only_user) == 1
    assert only_user["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    no_system = build_body(PROFILE, "m", TRANSCRIPT[1:], None)
    assert "system" not in no_system
    assert "tools" not in no_system
    assert breakpoints(no_system) == 2
    long_run = TRANSCRIPT + [UserMessage(content=f"more {n}") for n in range(10)]
    assert breakpoints(build_body(PROFILE, "m", long_run, TOOLS)) == MAX_CACHE_BREAKPOINTS


def test_max_tokens_from_extra_and_no_stream_when_the_profile_does_not_stream() -> None:
    from dataclasses import replace

    body = build_body(replace(PROFILE, streaming=False), "m", TRANSCRIPT, None, {"max_tokens": 100, "model": "x"})
    assert body["max_tokens"] == 100
    assert body["model"] == "m"
    assert "stream" not in body


def test_request_headers_carry_the_key_and_version() -> None:
    headers = anthropic_request.request_headers(PROFILE, " sk-ant-test ")
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "Authorization" not in headers
    assert "x-api-key" not in anthropic_request.request_headers(PROFILE, None)
    assert anthropic_request.request_url(PROFILE) == "https://api.anthropic.com/v1/messages"


# --- usage ---------------------------------------------------------------------------------------------------


def test_usage_maps_uncached_input_and_the_cache_buckets() -> None:
    wire = {"input_tokens": 3, "cache_read_input_tokens": 1111, "cache_creation_input_tokens": 418, "output_tokens": 33}
    usage = usage_from_wire(wire)
    assert usage == Usage(input=3, output=33, cache_read=1111, cache_write=418)
    assert usage is not None
    assert usage.prompt == 1532
    assert usage_from_wire({"cache_read_input_tokens": 5}) is None
    assert usage_from_wire(None) is None
    with pytest.raises(MalformedResponseError):
        usage_from_wire({"input_tokens": -1})
    with pytest.raises(MalformedResponseError):
        usage_from_wire({"input_tokens": 1.5})


def events(*values: dict[str, Any]) -> list[tuple[str, str]]:
    """SSE ``(event, data)`` pairs for synthetic events."""
    return [(str(value["type"]), json.dumps(value)) for value in values]


START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "model": "claude-x",
        "role": "assistant",
        "content": [],
        "usage": {"input_tokens": 12, "cache_read_input_tokens": 9000, "cache_creation_input_tokens": 300},
    },
}
TEXT = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
]


def feed_all(pairs: list[tuple[str, str]], limits: Limits | None = None) -> StreamAccumulator:
    """An accumulator fed every pair."""
    accumulator = StreamAccumulator(limits) if limits else StreamAccumulator()
    for pair in pairs:
        accumulator.feed(*pair)
    return accumulator


def test_streamed_usage_keeps_the_input_side_and_takes_the_cumulative_output() -> None:
    pairs = events(
        START,
        *TEXT,
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
        {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    )
    result = feed_all(pairs).finish()
    assert result.usage == Usage(input=12, output=7, cache_read=9000, cache_write=300)
    assert result.message.content == "Hi"


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("max_tokens", "length"), ("model_context_window_exceeded", "length"), ("end_turn", "stop")],
)
def test_stop_reasons_map_to_the_internal_ones(reason: str, expected: str) -> None:
    pairs = events(START, *TEXT, {"type": "message_delta", "delta": {"stop_reason": reason}}, {"type": "message_stop"})
    assert feed_all(pairs).finish().stop_reason == expected


def test_a_tool_use_stop_without_calls_and_an_unknown_stop_are_malformed() -> None:
    for reason in ("tool_use", "sleepy"):
        pairs = events(START, *TEXT, {"type": "message_delta", "delta": {"stop_reason": reason}})
        with pytest.raises(MalformedResponseError) as error:
            feed_all(pairs).finish()
        assert error.value.usage == Usage(12, 0, 9000, 300)


def test_incomplete_and_out_of_order_streams_are_malformed() -> None:
    with pytest.raises(EmptyStreamError):
        StreamAccumulator().finish()
    with pytest.raises(MalformedResponseError, match="no stop_reason"):
        feed_all(events(START, *TEXT)).finish()
    with pytest.raises(MalformedResponseError, match="before message_start"):
        feed_all(events(*TEXT))
    with pytest.raises(MalformedResponseError, match="outside its start and stop"):
        feed_all(events(START, TEXT[1]))
    with pytest.raises(MalformedResponseError, match="started twice"):
        feed_all(events(START, TEXT[0], TEXT[0]))
    with pytest.raises(MalformedResponseError, match="'input_json_delta' delta"):
        feed_all(
            events(START, TEXT[0], {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta"}})
        )
    with pytest.raises(MalformedResponseError, match="not valid JSON"):
        StreamAccumulator().feed("message_start", "{")


def test_pings_and_unknown_event_types_are_ignored() -> None:
    pairs = events(START, {"type": "ping"}, {"type": "future_event", "x": 1}, *TEXT)
    pairs += events({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"})
    assert feed_all(pairs).finish().message.content == "Hi"


def test_the_price_table_prices_anthropic_cache_reads_and_writes_at_their_own_rates() -> None:
    from tiny_agent_core.pricing import price_request, rates_in_use

    usage = normalize(recording("08")).usage
    assert usage == Usage(3, 33, cache_read=1111, cache_write=418)
    rates = rates_in_use("anthropic", "claude-sonnet-4-5")
    assert rates.source == "price_table"
    assert rates.input is not None
    assert rates.cache_read is not None
    assert rates.cache_write is not None
    assert rates.cache_read < rates.input < rates.cache_write
    cost = price_request(provider="anthropic", model="claude-sonnet-4-5", usage=usage, provider_cost=None)
    assert cost.source == "price_table"
    assert rates.output is not None
    expected = (3 * rates.input + 33 * rates.output + 1111 * rates.cache_read + 418 * rates.cache_write) / 10**6
    assert cost.amount == expected


# --- errors --------------------------------------------------------------------------------------------------


def test_529_overloaded_is_a_retryable_server_error() -> None:
    case = recording("16")
    error = http_error(case["http_status"], json.dumps(case["body"]), case["headers"])
    assert type(error) is ServerError
    assert error.status == 529
    assert "overloaded_error: Overloaded" in str(error)
    assert "retry" in str(error)
    with_header = http_error(529, json.dumps(case["body"]), {"Retry-After": "7"})
    assert with_header.retry_after == 7.0


def test_429_rate_limit_carries_retry_after_from_the_header() -> None:
    case = recording("15")
    error = http_error(429, json.dumps(case["body"]), {"retry-after": "30", "content-type": "application/json"})
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 30.0
    assert "rate_limit_error" in str(error)
    assert "Retry in 30 s" in str(error)
    assert http_error(429, json.dumps(case["body"]), {}).retry_after is None
    assert http_error(429, json.dumps(case["body"]), {"retry-after": "soon"}).retry_after is None


def test_prompt_too_long_is_a_context_length_error_with_the_window() -> None:
    case = recording("14")
    error = http_error(400, json.dumps(case["body"]))
    assert isinstance(error, ContextLengthError)
    assert error.context_length == 180000
    assert "compact the session" in str(error)


@pytest.mark.parametrize(
    ("status", "kind", "cls"),
    [
        (401, "authentication_error", AuthenticationError),
        (403, "permission_error", AuthenticationError),
        (404, "not_found_error", ModelNotFoundError),
        (500, "api_error", ServerError),
        (400, "invalid_request_error", ProviderHTTPError),
    ],
)
def test_http_statuses_map_to_typed_errors(status: int, kind: str, cls: type[ProviderHTTPError]) -> None:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": "nope"}})
    error = http_error(status, body.encode())
    assert type(error) is cls
    assert f"HTTP {status} {kind}: nope" in str(error)


def test_the_recorded_400_and_a_non_json_error_body() -> None:
    case = recording("13")
    error = http_error(400, json.dumps(case["body"]))
    assert type(error) is ProviderHTTPError
    assert "effort level 'xhigh'" in str(error)
    assert "<html>bad gateway</html>" in str(http_error(502, "<html>bad gateway</html>"))


def test_a_mid_stream_error_event_is_typed_with_the_usage_so_far() -> None:
    start = sse_pairs(recording("01")["sse"])[:3]
    (error_event,) = sse_pairs(recording("17")["sse"])
    accumulator = StreamAccumulator()
    for pair in start:
        accumulator.feed(*pair)
    with pytest.raises(ServerError, match="Mid-stream overloaded_error: Overloaded") as error:
        accumulator.feed(*error_event)
    assert error.value.status == 529
    assert error.value.usage == Usage(17, 1)


def test_error_events_of_unknown_type_or_shape_are_reported_errors() -> None:
    with pytest.raises(ProviderReportedError, match="mystery"):
        StreamAccumulator().feed("error", '{"type":"error","error":{"type":"mystery_error","message":"mystery"}}')
    with pytest.raises(ProviderReportedError, match="not json"):
        StreamAccumulator().feed("error", "not json")
    with pytest.raises(RateLimitError):
        StreamAccumulator().feed("message", '{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}')
    with pytest.raises(ServerError):
        normalize_body('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')


# --- limits --------------------------------------------------------------------------------------------------


def test_limits_refuse_oversized_streams_and_bodies() -> None:
    sse = recording("03")["sse"]
    with pytest.raises(ResponseTooLargeError):
        normalize_sse_text(sse, Limits(tool_call_argument_bytes=10))
    with pytest.raises(ResponseTooLargeError):
        normalize_sse_text(sse, Limits(message_bytes=20))
    with pytest.raises(ResponseTooLargeError):
        normalize_sse_text(recording("02")["sse"], Limits(tool_calls=1))
    body = json.dumps(recording("10")["body"])
    with pytest.raises(ResponseTooLargeError):
        normalize_body(body, Limits(message_bytes=50))
    with pytest.raises(ResponseTooLargeError):
        normalize_body(body, Limits(tool_calls=0))


def test_json_bodies_that_are_not_messages_are_malformed() -> None:
    for body in ("[]", "{}", '{"content": "text"}', '{"content": [{"type": "text"}]}', "{" * 200 + "}" * 200):
        with pytest.raises(ProviderError):
            normalize_body(body)
    bad_input = {"content": [{"type": "tool_use", "id": "t", "name": "x", "input": "{}"}], "stop_reason": "tool_use"}
    with pytest.raises(MalformedResponseError, match="input is not an object"):
        normalize_body(json.dumps(bad_input))
