"""The OpenAI Responses adapter: real recordings normalized (JSON and SSE), request building (stateless and
chained), usage, typed errors, and property tests of the stream accumulator."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import given, settings
from hypothesis import strategies as st

from tiny_agent_core.errors import (
    AuthenticationError,
    ContentFilteredError,
    ContextLengthError,
    EmptyStreamError,
    MalformedResponseError,
    ModelNotFoundError,
    PaymentRequiredError,
    ProviderError,
    ProviderHTTPError,
    ProviderReportedError,
    RateLimitError,
    ResponseTooLargeError,
    ServerError,
)
from tiny_agent_core.providers.api_kinds import normalize_sse_text
from tiny_agent_core.providers.openai_responses import (
    ADAPTER,
    REPAIRS,
    ResponsesAccumulator,
    normalize_response_body,
    usage_from_wire,
)
from tiny_agent_core.providers.openai_responses_errors import http_error, reported_error, state_lost
from tiny_agent_core.providers.openai_responses_output import MAX_OUTPUT_ITEMS
from tiny_agent_core.providers.openai_responses_request import build_request_body, request_url
from tiny_agent_core.providers.profiles import ProviderProfile, custom_profile
from tiny_agent_core.providers.results import (
    ConversationState,
    Limits,
    NormalizedResponse,
    Notes,
    StreamDelta,
    StreamedText,
    StreamedToolCall,
    UsageReported,
)
from tiny_agent_core.usage import Usage

RECORDINGS = Path(__file__).parent / "recordings" / "openai_responses"


def recording(name: str) -> str:
    """A recording's text; ``.jsonl`` (payloads without framing) is framed as SSE ``data:`` events."""
    text = (RECORDINGS / name).read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        return "".join(f"data: {line}\n\n" for line in text.splitlines() if line.strip())
    return text


def feed_all(text: str, **kwargs: Any) -> tuple[list[StreamDelta], NormalizedResponse]:
    """Feed a whole SSE text event by event: (every delta, the result)."""
    accumulator = ResponsesAccumulator(**kwargs)
    deltas: list[StreamDelta] = []
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode("utf-8"))
    for sse in EventSource(response).iter_sse():
        deltas.extend(accumulator.feed(sse.event, sse.data))
        if accumulator.done:
            break
    return deltas, accumulator.finish()


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- recordings -----------------------------------------------------------------------------------------------

POEM_START = "Softly old fountains illumine alleys\nDunes over harbor aglow\n"

EXPECTED: dict[str, dict[str, Any]] = {
    "function-call.json": {
        "stop": "toolUse",
        "content": None,
        "calls": [call("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", '{"country":"PotatoLand"}')],
        "usage": Usage(40, 18),
        "dropped": (),
        "id": "resp_04907f5d3de791830068fbaa19bb908195a91378279dba0f14",
        "model": "gpt-4o-2024-08-06",
    },
    "reasoning-function-call.json": {
        "stop": "toolUse",
        "content": None,
        "call_names": ["update_plan"],
        "usage": Usage(124, 1926),  # 1792 reasoning tokens are inside the 1926, not added
        "dropped": ("output.reasoning",),
        "id": "resp_68c42d28772c819684459966ee2201ed0e8bc41441c948f6",
    },
    "reasoning-cached-tokens.json": {
        "stop": "stop",
        "content_starts": POEM_START,
        "usage": Usage(2087 - 2048, 124, cache_read=2048),
        "dropped": (),
    },
    "two-messages-cached.json": {
        "stop": "stop",
        "content_starts": "I\u2019ll quickly check",
        "content_has": "\n\n",
        "usage": Usage(7243 - 3072, 423, cache_read=3072),
        "repairs": ("message_items_joined",),
        "dropped_has": "output.message.phase",
    },
    "incomplete-max-output-tokens-deepseek.json": {
        "stop": "length",
        "content": None,
        "usage": Usage(33, 32),
        "dropped": ("output.reasoning",),
        "id": "8434d721-9b0f-4aef-ac21-9d978585223c",
        "model": "deepseek-flash",
    },
    "stream-text.sse": {
        "stop": "stop",
        "content": "streamed",
        "usage": Usage(21, 3),
        "dropped": (),
        "id": "resp_01000000000000000000000000000000000000000000000000",
        "model": "gpt-4.1-2025-04-14",
    },
    "stream-function-call.sse": {
        "stop": "toolUse",
        "content": None,
        "calls": [call("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", '{"country":"France"}')],
        "usage": Usage(255, 16),
        "dropped": (),
    },
    "stream-reasoning-function-call.sse": {
        "stop": "toolUse",
        "content": None,
        "call_names": ["final_result"],
        "usage": Usage(53, 469),
        "dropped": ("output.reasoning",),
        "id": "resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33",
    },
    "stream-reasoning-summary-function-call.jsonl": {
        "stop": "toolUse",
        "content": None,
        "calls": [call("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", '{"a":12,"b":7,"op":"add"}')],
        "usage": Usage(134, 28),
        "dropped": ("output.reasoning",),
        "model": "gpt-5.1-codex-max",
    },
    "stream-incomplete-terminal-event.sse": {
        "stop": "length",
        "content": "Rivers are vital components of Earth's hydrological system, serving as lifelines for",
        "usage": Usage(16, 16),
        "repairs": ("output_only_in_final_event",),
    },
}


def check(result: NormalizedResponse, expected: dict[str, Any]) -> None:
    message = result.message
    assert result.stop_reason == expected["stop"]
    if "content" in expected:
        assert message.content == expected["content"]
    if "content_starts" in expected:
        assert (message.content or "").startswith(expected["content_starts"])
    if "content_has" in expected:
        assert expected["content_has"] in (message.content or "")
    calls = [tool_call.as_dict() for tool_call in message.tool_calls or ()]
    if "calls" in expected:
        assert calls == expected["calls"]
    if "call_names" in expected:
        assert [c["function"]["name"] for c in calls] == expected["call_names"]
        assert all(json.loads(c["function"]["arguments"]) is not None for c in calls)
    assert result.usage == expected["usage"]
    assert result.repairs == expected.get("repairs", ())
    if "dropped" in expected:
        assert result.dropped == expected["dropped"]
    if "dropped_has" in expected:
        assert expected["dropped_has"] in result.dropped
    for key, attribute in (("id", "response_id"), ("model", "model")):
        if key in expected:
            assert getattr(result, attribute) == expected[key]


@pytest.mark.parametrize("name", sorted(name for name in EXPECTED if name.endswith(".json")))
def test_recorded_json_body_normalizes(name: str) -> None:
    check(normalize_response_body(recording(name)), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(name for name in EXPECTED if not name.endswith(".json")))
def test_recorded_stream_normalizes_and_its_deltas_add_up(name: str) -> None:
    deltas, result = feed_all(recording(name))
    check(result, EXPECTED[name])
    assert normalize_sse_text(ADAPTER, recording(name)) == result
    text = "".join(delta.text for delta in deltas if isinstance(delta, StreamedText))
    assert text == (result.message.content or "")
    pieces: dict[int, str] = {}
    for delta in deltas:
        if isinstance(delta, StreamedToolCall):
            pieces[delta.index] = pieces.get(delta.index, "") + delta.arguments
    assert [pieces[index] for index in sorted(pieces)] == [c.function.arguments for c in result.message.calls]
    assert [d.usage for d in deltas if isinstance(d, UsageReported)] == [result.usage]


def test_every_recording_is_covered_by_a_test() -> None:
    covered = set(EXPECTED) | {
        "stream-two-messages-trimmed.jsonl",
        "stream-error-insufficient-quota.jsonl",
        "error-400-decimal-below-min.json",
        "error-400-previous-response-not-found.json",
        "error-404-model-not-found.json",
        "SOURCES.md",
    }
    assert {path.name for path in RECORDINGS.iterdir()} == covered


def test_streamed_text_that_disagrees_with_the_finished_text_is_refused() -> None:
    # vercel/ai trimmed this fixture's deltas, so they no longer add up to output_text.done.
    with pytest.raises(MalformedResponseError, match="differs from the streamed text"):
        feed_all(recording("stream-two-messages-trimmed.jsonl"))


def test_recorded_error_event_is_typed_before_the_failed_response() -> None:
    with pytest.raises(PaymentRequiredError, match=r"insufficient_quota.*Add credits"):
        feed_all(recording("stream-error-insufficient-quota.jsonl"))


# --- requests -------------------------------------------------------------------------------------------------

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [call("call_1", "weather", '{"city":"Paris"}')]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
    {"role": "assistant", "content": "18 C in Paris."},
    {"role": "user", "content": "And Rome?"},
]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "weather", "description": "Weather now", "parameters": {"type": "object"}},
    }
]
ALL_ITEMS = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
    {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "18 C"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "18 C in Paris."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And Rome?"}]},
]


def stateful_profile() -> ProviderProfile:
    return replace(custom_profile("https://api.example.test/v1"), api="openai-responses", server_state=True)


def test_stateless_request_sends_the_whole_transcript_without_storing_it() -> None:
    profile = custom_profile("https://api.example.test/v1")
    body = build_request_body(profile, "gpt-5", TRANSCRIPT, TOOLS, {"max_tokens": 512, "temperature": 0.2})
    assert request_url(profile) == "https://api.example.test/v1/responses"
    assert body == {
        "temperature": 0.2,
        "max_output_tokens": 512,
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": ALL_ITEMS,
        "tools": [
            {"type": "function", "name": "weather", "description": "Weather now", "parameters": {"type": "object"}}
        ],
        "store": False,
        "stream": True,
    }


def test_state_is_ignored_by_a_stateless_profile() -> None:
    profile = custom_profile("https://api.example.test/v1")
    body = build_request_body(profile, "gpt-5", TRANSCRIPT, state=ConversationState("resp_1", 4))
    assert "previous_response_id" not in body
    assert body["input"] == ALL_ITEMS
    assert body["store"] is False


def test_chained_request_sends_only_the_new_messages() -> None:
    profile = stateful_profile()
    first = build_request_body(profile, "gpt-5", TRANSCRIPT[:2])
    assert first["store"] is True
    assert "previous_response_id" not in first
    body = build_request_body(profile, "gpt-5", TRANSCRIPT, state=ConversationState("resp_42", 4))
    assert body["previous_response_id"] == "resp_42"
    assert body["instructions"] == "Be brief."  # never carried over by the server
    assert body["input"] == ALL_ITEMS[-1:]
    assert body["store"] is True


@pytest.mark.parametrize("covered", [0, 6, 99])
def test_state_that_covers_nothing_or_too_much_sends_everything(covered: int) -> None:
    body = build_request_body(stateful_profile(), "gpt-5", TRANSCRIPT, state=ConversationState("resp_1", covered))
    assert "previous_response_id" not in body
    assert body["input"] == ALL_ITEMS


def test_extra_never_overrides_the_request_and_streaming_follows_the_profile() -> None:
    profile = replace(custom_profile("https://api.example.test/v1"), streaming=False)
    body = build_request_body(profile, "m", TRANSCRIPT[:2], None, {"input": "x", "stream": True, "store": True})
    assert body["input"] == ALL_ITEMS[:1]
    assert "stream" not in body
    assert body["store"] is False
    assert "tools" not in body


# --- usage ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "usage", "repairs"),
    [
        (None, None, ()),
        ({}, None, ()),
        ({"input_tokens": 10, "output_tokens": 5}, Usage(10, 5), ()),
        (
            {
                "input_tokens": 2087,
                "input_tokens_details": {"cached_tokens": 2048},
                "output_tokens": 124,
                "output_tokens_details": {"reasoning_tokens": 100},
            },
            Usage(39, 124, cache_read=2048),
            (),
        ),
        (
            {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 50}},
            Usage(10, 0, cache_read=40, cache_write=50),
            (),
        ),
        (
            {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 20}},
            Usage(0, 0, 20),
            ("usage_input_clamped",),
        ),
    ],
)
def test_usage_mapping(wire: Any, usage: Usage | None, repairs: tuple[str, ...]) -> None:
    notes = Notes()
    assert usage_from_wire(wire, notes) == usage
    assert tuple(notes.repairs) == repairs


@pytest.mark.parametrize(
    "wire",
    [
        {"input_tokens": -1},
        {"input_tokens": 1.5},
        {"input_tokens": True},
        {"input_tokens": 1, "input_tokens_details": []},
        {"output_tokens": 1, "output_tokens_details": {"reasoning_tokens": "many"}},
        [],
    ],
)
def test_malformed_usage_is_refused(wire: Any) -> None:
    with pytest.raises(MalformedResponseError):
        usage_from_wire(wire)


# --- errors ---------------------------------------------------------------------------------------------------


def error_body(code: str | None, message: str = "it failed") -> str:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})


def test_recorded_http_errors_are_typed() -> None:
    generic = http_error(400, recording("error-400-decimal-below-min.json"))
    assert type(generic) is ProviderHTTPError
    assert "Invalid 'temperature'" in str(generic)
    model = http_error(404, recording("error-404-model-not-found.json"))
    assert isinstance(model, ModelNotFoundError)
    assert "gpt-nope" in str(model)
    lost = http_error(400, recording("error-400-previous-response-not-found.json"))
    assert state_lost(lost)
    assert not state_lost(generic)
    assert not state_lost(model)


@pytest.mark.parametrize(
    ("status", "body", "headers", "cls", "retry_after"),
    [
        (401, error_body("invalid_api_key", "Incorrect API key provided"), {}, AuthenticationError, None),
        (429, error_body("rate_limit_exceeded", "Rate limit reached"), {"retry-after": "7"}, RateLimitError, 7.0),
        (429, error_body("insufficient_quota", "You exceeded your current quota"), {}, PaymentRequiredError, None),
        (400, error_body("context_length_exceeded", "Your input exceeds the limit"), {}, ContextLengthError, None),
        (500, error_body("server_error", "Sorry"), {}, ServerError, None),
    ],
)
def test_http_errors_are_typed(
    status: int, body: str, headers: dict[str, str], cls: type[ProviderError], retry_after: float | None
) -> None:
    error = http_error(status, body, headers)
    assert type(error) is cls
    assert error.status == status
    assert error.retry_after == retry_after


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"code": "rate_limit_exceeded", "message": "Request too large for gpt-4o-mini"}, RateLimitError),
        ({"code": "insufficient_quota", "message": "quota"}, PaymentRequiredError),
        ({"code": "context_length_exceeded", "message": "too long"}, ContextLengthError),
        ({"code": "server_error", "message": "Sorry"}, ServerError),
        ({"type": "server_error", "code": None, "message": "Sorry, something went wrong."}, ServerError),
        ({"code": "invalid_prompt", "message": "flagged"}, ProviderReportedError),
        ("plain text", ProviderReportedError),
    ],
)
def test_reported_errors_are_typed(error: Any, cls: type[ProviderError]) -> None:
    usage = Usage(1, 2)
    typed = reported_error(error, what="The provider reported an error mid-stream", usage=usage)
    assert type(typed) is cls
    assert typed.usage == usage


def test_state_lost_is_recognised_in_every_form() -> None:
    text = "Previous response with id 'resp_x' not found."
    assert state_lost(http_error(404, error_body(None, text)))
    assert state_lost(http_error(409, error_body("previous_response_not_found", "gone")))
    assert not state_lost(http_error(500, error_body("previous_response_not_found", text)))
    assert state_lost(reported_error({"code": "previous_response_not_found", "message": text}, what="x"))


# --- responses: rules -----------------------------------------------------------------------------------------


def response_json(output: list[Any], status: str = "completed", **extra: Any) -> str:
    return json.dumps({"id": "resp_1", "model": "m", "status": status, "output": output, **extra})


def message_item(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": list(parts)}


def text(value: str) -> dict[str, Any]:
    return {"type": "output_text", "text": value, "annotations": []}


def test_refusal_without_an_answer_is_a_content_filter() -> None:
    body = response_json([message_item({"type": "refusal", "refusal": "I can't help with that."})])
    with pytest.raises(ContentFilteredError, match="can't help"):
        normalize_response_body(body)


def test_refusal_beside_an_answer_is_dropped_visibly() -> None:
    body = response_json([message_item(text("Here is part."), {"type": "refusal", "refusal": "Not the rest."})])
    result = normalize_response_body(body)
    assert result.message.content == "Here is part."
    assert "output.message.content.refusal" in result.dropped


def test_streamed_refusal_is_a_content_filter() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": message_item()},
        {"type": "response.refusal.delta", "output_index": 0, "delta": "I can't "},
        {"type": "response.refusal.delta", "output_index": 0, "delta": "help with that."},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    accumulator = ResponsesAccumulator()
    for event in events:
        assert accumulator.feed(event["type"], json.dumps(event)) == []
    with pytest.raises(ContentFilteredError, match="I can't help with that"):
        accumulator.finish()


def test_incomplete_for_content_filter_is_typed() -> None:
    body = response_json([message_item(text("Par"))], "incomplete", incomplete_details={"reason": "content_filter"})
    with pytest.raises(ContentFilteredError):
        normalize_response_body(body)


def test_failed_response_body_is_typed_with_its_usage() -> None:
    body = response_json(
        [], "failed", error={"code": "server_error", "message": "boom"}, usage={"input_tokens": 3, "output_tokens": 0}
    )
    with pytest.raises(ServerError) as caught:
        normalize_response_body(body)
    assert caught.value.usage == Usage(3, 0)


@pytest.mark.parametrize(
    "item",
    [
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "custom_tool_call", "call_id": "c", "name": "x", "input": "y"},
        {"type": "message", "role": "user", "content": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_audio", "data": ""}]},
        "not an item",
    ],
)
def test_output_this_client_cannot_answer_is_malformed(item: Any) -> None:
    with pytest.raises(MalformedResponseError):
        normalize_response_body(response_json([item]))


def test_still_running_background_response_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="queued"):
        normalize_response_body(response_json([], "queued"))


def test_function_call_repairs_are_named() -> None:
    body = response_json([{"type": "function_call", "name": "now", "arguments": ""}])
    result = normalize_response_body(body, new_id=lambda: "call_fresh")
    assert result.message.calls[0].as_dict() == call("call_fresh", "now", "{}")
    assert result.repairs == ("missing_call_id", "empty_arguments")
    assert set(result.repairs) <= set(REPAIRS)


def test_limits_bound_the_message() -> None:
    calls = [{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(3)]
    with pytest.raises(ResponseTooLargeError):
        normalize_response_body(response_json(calls), limits=Limits(tool_calls=2))
    big = [{"type": "function_call", "call_id": "c", "name": "f", "arguments": json.dumps({"x": "y" * 100})}]
    with pytest.raises(ResponseTooLargeError):
        normalize_response_body(response_json(big), limits=Limits(tool_call_argument_bytes=50))
    with pytest.raises(ResponseTooLargeError):
        normalize_response_body(response_json([message_item(text("z" * 100))]), limits=Limits(message_bytes=50))


def test_stream_without_a_terminal_event_is_malformed() -> None:
    text_only = recording("stream-text.sse").split("event: response.completed")[0]
    with pytest.raises(MalformedResponseError, match="before the response completed"):
        feed_all(text_only)


def test_empty_stream_is_empty() -> None:
    with pytest.raises(EmptyStreamError):
        ResponsesAccumulator().finish()


def test_stream_error_event_in_either_shape_is_typed() -> None:
    for data in (
        {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
        {"type": "error", "error": {"type": "server_error", "code": None, "message": "Sorry"}},
    ):
        with pytest.raises((RateLimitError, ServerError)):
            ResponsesAccumulator().feed("error", json.dumps(data))


def test_stream_error_event_that_is_not_json_is_reported() -> None:
    with pytest.raises(ProviderReportedError, match="upstream timed out"):
        ResponsesAccumulator().feed("error", "upstream timed out")


def test_streamed_failure_carries_the_code_and_usage() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_f",
            "status": "failed",
            "error": {"code": "rate_limit_exceeded", "message": "Request too large for gpt-4o-mini on tokens per min"},
            "usage": {"input_tokens": 5, "output_tokens": 0},
        },
    }
    accumulator = ResponsesAccumulator()
    with pytest.raises(RateLimitError, match="rate_limit_exceeded") as caught:
        accumulator.feed("response.failed", json.dumps(failed))
    assert caught.value.usage == Usage(5, 0)


def test_stream_without_output_index_follows_item_ids() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read"},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"path":'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"a.txt"}'},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    text = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    result = normalize_sse_text(ADAPTER, text + "data: [DONE]\n\n")
    assert result.message.calls[0].as_dict() == call("c1", "read", '{"path":"a.txt"}')
    assert result.repairs == ("missing_output_index",)


# --- property tests of the stream accumulator -----------------------------------------------------------------

pieces = st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6)
item_strategy = st.one_of(
    st.tuples(st.just("message"), pieces),
    st.tuples(st.just("call"), pieces),
    st.tuples(st.just("reasoning"), st.just([""])),
)


def events_for(items: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r", "status": "in_progress"}}]
    for index, (kind, parts) in enumerate(items):
        if kind == "message":
            events.append({"type": "response.output_item.added", "output_index": index, "item": message_item()})
            events += [{"type": "response.output_text.delta", "output_index": index, "delta": p} for p in parts]
            done = message_item(text("".join(parts)))
        elif kind == "call":
            item = {"type": "function_call", "call_id": f"call_{index}", "name": "f", "arguments": ""}
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            events += [
                {"type": "response.function_call_arguments.delta", "output_index": index, "delta": p} for p in parts
            ]
            done = {**item, "arguments": "".join(parts)}
        else:
            done = {"type": "reasoning", "id": f"rs_{index}", "summary": []}
            events.append({"type": "response.output_item.added", "output_index": index, "item": done})
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    usage = {"input_tokens": 7, "output_tokens": 3}
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed", "usage": usage}})
    return events


@given(st.lists(item_strategy, max_size=5))
@settings(max_examples=150, deadline=None)
def test_generated_streams_normalize_to_their_items(items: list[tuple[str, list[str]]]) -> None:
    accumulator = ResponsesAccumulator()
    deltas: list[StreamDelta] = []
    for event in events_for(items):
        deltas += accumulator.feed(event["type"], json.dumps(event))
    assert accumulator.done
    texts = ["".join(parts) for kind, parts in items if kind == "message"]
    calls = [(f"call_{i}", "".join(parts)) for i, (kind, parts) in enumerate(items) if kind == "call"]
    try:
        result = accumulator.finish()
    except MalformedResponseError:
        # Only the seam's own refusals (a lone surrogate) may reject a generated stream.
        assert any("\ud800" <= ch <= "\udfff" for _, parts in items for p in parts for ch in p)
        return
    assert result.message.content == ("\n\n".join(texts) or None)
    assert [(c.id, c.function.arguments) for c in result.message.calls] == calls
    assert result.stop_reason == ("toolUse" if calls else "stop")
    assert "".join(d.text for d in deltas if isinstance(d, StreamedText)) == (result.message.content or "")
    assert result.usage == Usage(7, 3)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
event_types = st.sampled_from(
    [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
        "response.reasoning_summary_text.delta",
        "something.else",
    ]
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "output_index": st.one_of(st.integers(-1, 3), json_values),
        "item_id": json_values,
        "item": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {"type": st.sampled_from(["message", "function_call", "reasoning", "other"])},
                optional={
                    "call_id": json_values,
                    "name": json_values,
                    "arguments": json_values,
                    "content": json_values,
                },
            ),
        ),
        "delta": json_values,
        "arguments": json_values,
        "response": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {"status": st.sampled_from(["completed", "incomplete", "failed", "queued"])},
                optional={"usage": json_values, "output": json_values, "error": json_values},
            ),
        ),
        "error": json_values,
    },
)


@given(st.lists(st.tuples(event_types, fields), max_size=12))
@settings(max_examples=300, deadline=None)
def test_hostile_event_sequences_fail_only_with_typed_errors(events: list[tuple[str, dict[str, Any]]]) -> None:
    accumulator = ResponsesAccumulator()
    try:
        for kind, payload in events:
            accumulator.feed(kind, json.dumps({"type": kind, **payload}))
        accumulator.finish()
    except ProviderError:
        pass


def test_output_items_are_bounded() -> None:
    reasoning = [{"type": "reasoning", "id": f"rs_{i}", "summary": []} for i in range(MAX_OUTPUT_ITEMS + 1)]
    with pytest.raises(ResponseTooLargeError):
        normalize_response_body(response_json(reasoning))


def test_streamed_message_is_bounded_as_it_grows() -> None:
    accumulator = ResponsesAccumulator(limits=Limits(message_bytes=10))
    added = {"type": "response.output_item.added", "output_index": 0, "item": message_item()}
    accumulator.feed("", json.dumps(added))
    delta = {"type": "response.output_text.delta", "output_index": 0, "delta": "123456"}
    accumulator.feed("", json.dumps(delta))
    with pytest.raises(ResponseTooLargeError):
        accumulator.feed("", json.dumps(delta))


@pytest.mark.parametrize("name", sorted(name for name in EXPECTED if not name.endswith(".json")))
@given(cuts=st.lists(st.integers(min_value=1), max_size=8))
@settings(max_examples=25, deadline=None)
def test_any_chunking_of_a_recorded_stream_gives_the_same_result(name: str, cuts: list[int]) -> None:
    data = recording(name).encode("utf-8")
    points = sorted({cut % len(data) for cut in cuts} | {0, len(data)})
    chunks = [data[start:end] for start, end in itertools.pairwise(points) if end > start]
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))
    accumulator = ResponsesAccumulator()
    for sse in EventSource(response).iter_sse():
        accumulator.feed(sse.event, sse.data)
        if accumulator.done:
            break
    assert accumulator.finish() == normalize_sse_text(ADAPTER, recording(name))
