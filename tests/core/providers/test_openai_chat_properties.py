"""Property tests of the adapter: arbitrary input yields a canonical result or a typed error, never anything else;
no accepted message carries a key outside the whitelist; streamed and non-streamed forms agree."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.providers.wire_cases import load_case
from tests.shared_data import shared_files
from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.openai_chat import StreamAccumulator, normalize_response_body, normalize_sse_text
from tiny_agent_core.providers.results import NormalizedResponse
from tiny_agent_core.seam import ASSISTANT_KEYS, FUNCTION_KEYS, TOOL_CALL_KEYS, normalize_assistant_message

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)

# Wire-shaped values: the known keys with arbitrary values, so that deep paths are explored.
_call = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=4), json_values),
        "type": st.sampled_from(["function", "tool", None]) | json_values,
        "index": st.integers(-1, 3) | json_values,
        "function": st.fixed_dictionaries(
            {}, optional={"name": st.text(max_size=4) | json_values, "arguments": st.text(max_size=6) | json_values}
        )
        | json_values,
    },
)
_message = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["assistant", "user", None]) | json_values,
        "content": st.none() | st.text(max_size=6) | json_values,
        "tool_calls": st.none() | st.lists(_call, max_size=3) | json_values,
        "refusal": st.none() | st.text(max_size=4),
        "reasoning": json_values,
    },
)
_finish = (
    st.sampled_from(["stop", "length", "tool_calls", "content_filter", "error", "", None, "eos", "x"]) | json_values
)
_usage = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": st.integers(-2, 100) | json_values,
        "completion_tokens": st.integers(0, 100) | json_values,
        "prompt_tokens_details": st.none() | st.fixed_dictionaries({}, optional={"cached_tokens": st.integers(0, 120)}),
        "cost": st.floats(0, 1) | json_values,
    },
)
wire_bodies = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries({}, optional={"message": _message, "finish_reason": _finish}), max_size=2
        )
        | json_values,
        "usage": _usage,
        "error": st.none() | json_values,
    },
)
wire_deltas = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries(
                {}, optional={"delta": _message, "finish_reason": _finish, "index": st.integers(0, 1)}
            ),
            max_size=2,
        ),
        "usage": _usage,
        "error": st.none() | json_values,
    },
)


def _check_canonical(result: NormalizedResponse) -> None:
    message = result.message.as_dict()
    assert set(message) <= ASSISTANT_KEYS
    for call in message.get("tool_calls", []):
        assert set(call) == TOOL_CALL_KEYS
        assert set(call["function"]) == FUNCTION_KEYS
        assert isinstance(call["function"]["arguments"], str)
    assert result.stop_reason in ("stop", "length", "toolUse")


def _body_outcome(raw: bytes | str) -> None:
    try:
        result = normalize_response_body(raw)
    except ProviderError:
        return
    _check_canonical(result)


def _stream_outcome(text: str) -> None:
    try:
        result = normalize_sse_text(text)
    except ProviderError:
        return
    _check_canonical(result)


@given(json_values)
def test_seam_on_arbitrary_json_gives_canonical_or_typed_error(value: Any) -> None:
    try:
        message = normalize_assistant_message(value)
    except ProviderError:
        return
    assert set(message.as_dict()) <= ASSISTANT_KEYS


@given(json_values | wire_bodies)
def test_body_on_arbitrary_json_gives_canonical_or_typed_error(value: Any) -> None:
    _body_outcome(json.dumps(value))


@given(st.binary(max_size=64))
def test_body_on_arbitrary_bytes_gives_canonical_or_typed_error(data: bytes) -> None:
    _body_outcome(data)


@given(st.lists(wire_deltas | json_values, max_size=5), st.booleans())
def test_stream_on_arbitrary_chunks_gives_canonical_or_typed_error(chunks: list[Any], done: bool) -> None:
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")
    _stream_outcome(text)


@given(st.text(max_size=80))
def test_stream_on_arbitrary_text_gives_canonical_or_typed_error(text: str) -> None:
    _stream_outcome(text)


# --- mutations of the recorded cases -------------------------------------------------------------------------

CASES = [load_case(path) for path in shared_files("wire/cases", "*.json")]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


def _mutate(value: Any, path: tuple[Any, ...], replacement: Any, delete: bool) -> Any:
    if not path:
        return replacement
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = _mutate(copy[head], tuple(rest), replacement, delete)
    return copy


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_recorded_bodies_give_canonical_or_typed_error(data: st.DataObject) -> None:
    bodies = [json.loads(case.data) for case in CASES if not case.stream]
    if not bodies:
        return
    value = data.draw(st.sampled_from(bodies))
    path = data.draw(st.sampled_from(_paths(value)))
    mutated = _mutate(value, path, data.draw(json_values), data.draw(st.booleans()) and bool(path))
    _body_outcome(json.dumps(mutated))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_recorded_streams_give_canonical_or_typed_error(data: st.DataObject) -> None:
    streams = [case.data for case in CASES if case.stream]
    if not streams:
        return
    raw = bytearray(data.draw(st.sampled_from(streams)))
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    _stream_outcome(text)


# --- streamed vs non-streamed --------------------------------------------------------------------------------


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)] or [""]


responses = st.fixed_dictionaries(
    {
        "content": st.none() | st.text(max_size=20),
        "calls": st.lists(
            st.tuples(st.text("abc", min_size=1, max_size=3), st.sampled_from(["read", "bash"]), st.text(max_size=12)),
            max_size=3,
            unique_by=lambda call: call[0],
        ),
        "finish": st.sampled_from(["stop", "length", "tool_calls", None, "end_turn"]),
        "usage": st.none() | st.tuples(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 100)),
        "cuts": st.lists(st.integers(0, 40), max_size=4),
        "first_index": st.integers(0, 3),
        "usage_every_chunk": st.booleans(),
    }
)


@given(responses)
def test_streamed_and_non_streamed_forms_give_the_same_result(spec: dict[str, Any]) -> None:
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in spec["calls"]]
    message: dict[str, Any] = {"role": "assistant", "content": spec["content"]}
    if calls:
        message["tool_calls"] = calls
    usage = None
    if spec["usage"]:
        prompt, completion, cached = spec["usage"]
        usage = {
            "prompt_tokens": prompt + cached,
            "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": spec["finish"]}]}
    if usage:
        body["usage"] = usage

    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    if spec["content"] is not None:
        for piece in _pieces(spec["content"], spec["cuts"]):
            chunks.append({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    for offset, call in enumerate(calls):
        index = spec["first_index"] + offset
        first, *rest = _pieces(call["function"]["arguments"], spec["cuts"])
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": first},
        }
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}]})
        for piece in rest:
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            chunks.append({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": spec["finish"]}]})
    if usage and spec["usage_every_chunk"]:
        for item in chunks:
            item["usage"] = usage
    elif usage:
        chunks.append({"choices": [], "usage": usage})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    def outcome(run: Any) -> Any:
        try:
            result = run()
        except ProviderError as error:
            return (type(error), str(error), error.usage)
        return (result.message, result.stop_reason, result.usage, result.repairs)

    def stream() -> NormalizedResponse:
        accumulator = StreamAccumulator()
        for item in chunks:
            accumulator.feed("", json.dumps(item))
        accumulator.feed("", "[DONE]")
        return accumulator.finish()

    from_body = outcome(lambda: normalize_response_body(json.dumps(body)))
    assert outcome(lambda: normalize_sse_text(text)) == from_body
    assert outcome(stream) == from_body


def test_recorded_streams_agree_with_their_body_equivalent() -> None:
    """The recorded SSE cases that are accepted rebuild into a JSON body that gives the same result."""
    for case in CASES:
        if not case.stream:
            continue
        try:
            streamed = normalize_sse_text(case.data.decode())
        except ProviderError:
            continue
        message = streamed.message.as_dict()
        finish = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}[streamed.stop_reason]
        body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        if streamed.usage:
            u = streamed.usage
            body["usage"] = {
                "prompt_tokens": u.prompt,
                "completion_tokens": u.output,
                "prompt_tokens_details": {"cached_tokens": u.cache_read, "cache_write_tokens": u.cache_write},
            }
        again = normalize_response_body(json.dumps(body))
        assert (again.message, again.stop_reason, again.usage) == (
            streamed.message,
            streamed.stop_reason,
            streamed.usage,
        )
