"""Property tests of the Anthropic adapter: however a recorded stream is chunked the result is the same; garbage
inserted anywhere, arbitrary event sequences and arbitrary JSON bodies yield a canonical result or a typed
:class:`~tiny_agent_core.errors.ProviderError`, never anything else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiny_agent_core.errors import ProviderError
from tiny_agent_core.providers.anthropic import StreamAccumulator, normalize_body, normalize_sse_text
from tiny_agent_core.providers.results import Limits, NormalizedResponse

RECORDINGS = Path(__file__).parent / "recordings" / "anthropic"
STREAMS = {
    path.name: json.loads(path.read_text(encoding="utf-8"))["sse"]
    for path in sorted(RECORDINGS.glob("*.json"))
    if json.loads(path.read_text(encoding="utf-8"))["kind"] == "sse"
}
NAMES = sorted(STREAMS)
SMALL = Limits(message_bytes=4096, tool_calls=4, tool_call_argument_bytes=512)


def outcome(run: Any) -> Any:
    """``("ok", canonical JSON)`` or ``("error", kind, message)``; anything but a ProviderError propagates."""
    try:
        result = run()
    except ProviderError as error:
        return ("error", error.kind, str(error))
    assert isinstance(result, NormalizedResponse)
    return ("ok", result.to_json(), result.dropped)


def chunked(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    """``data`` split at ``cuts``."""
    previous = 0
    for cut in sorted({min(cut, len(data)) for cut in cuts}):
        yield data[previous:cut]
        previous = cut
    yield data[previous:]


def stream_outcome(data: bytes, cuts: list[int], limits: Limits | None = None) -> Any:
    """Decode ``data`` delivered in chunks with httpx-sse, as a live response is, and accumulate it."""

    def run() -> NormalizedResponse:
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunked(data, cuts))
        accumulator = StreamAccumulator(limits) if limits else StreamAccumulator()
        for sse in EventSource(response).iter_sse():
            accumulator.feed(sse.event, sse.data)
        return accumulator.finish()

    return outcome(run)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), cuts=st.lists(st.integers(0, 6000), max_size=40))
def test_any_chunking_gives_the_same_outcome(name: str, cuts: list[int]) -> None:
    text = STREAMS[name]
    assert stream_outcome(text.encode(), cuts) == outcome(lambda: normalize_sse_text(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    cuts=st.lists(st.integers(0, 6000), max_size=10),
    edits=st.lists(
        st.tuples(
            st.integers(0, 6000),
            st.binary(max_size=12)
            | st.sampled_from([b"\n\n", b"data: {", b"event: error\n", b"}", b'"index":1', b"\xff\xfe", b":\n"]),
            st.integers(0, 8),
        ),
        min_size=1,
        max_size=4,
    ),
    small=st.booleans(),
)
def test_garbage_anywhere_is_a_result_or_a_typed_error(
    name: str, cuts: list[int], edits: list[tuple[int, bytes, int]], small: bool
) -> None:
    data = bytearray(STREAMS[name].encode())
    for position, garbage, removed in edits:
        at = min(position, len(data))
        data[at : at + removed] = garbage
    stream_outcome(bytes(data), cuts, SMALL if small else None)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**60) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
_index = st.integers(-1, 3) | _json
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "thinking", "redacted_thinking", "server_tool_use"]) | _json},
    optional={
        "text": st.text(max_size=6) | _json,
        "id": st.sampled_from(["toolu_1", "toolu_2", ""]) | _json,
        "name": st.sampled_from(["ls", ""]) | _json,
        "input": st.just({}) | _json,
    },
)
_delta = st.fixed_dictionaries(
    {"type": st.sampled_from(["text_delta", "input_json_delta", "thinking_delta", "signature_delta"]) | _json},
    optional={"text": st.text(max_size=6) | _json, "partial_json": st.sampled_from(['{"a"', ":1}", "", "{}"]) | _json},
)
_usage = st.fixed_dictionaries(
    {},
    optional={
        key: st.integers(-1, 1000) | _json
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    },
)
_event = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("message_start"), "message": st.fixed_dictionaries({}, optional={"usage": _usage}) | _json}
    ),
    st.fixed_dictionaries({"type": st.just("content_block_start"), "index": _index, "content_block": _block | _json}),
    st.fixed_dictionaries({"type": st.just("content_block_delta"), "index": _index, "delta": _delta | _json}),
    st.fixed_dictionaries({"type": st.just("content_block_stop"), "index": _index}),
    st.fixed_dictionaries(
        {
            "type": st.just("message_delta"),
            "delta": st.fixed_dictionaries(
                {},
                optional={
                    "stop_reason": st.sampled_from(["end_turn", "tool_use", "max_tokens", "refusal", "pause_turn"])
                    | _json
                },
            ),
            "usage": _usage | _json,
        }
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["message_stop", "ping", "error"])}, optional={"error": _json}),
    _json,
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(st.tuples(st.sampled_from(["", "message", "error", "ping"]), _event), max_size=12))
def test_arbitrary_event_sequences_are_a_result_or_a_typed_error(events: list[tuple[str, Any]]) -> None:
    def run() -> NormalizedResponse:
        accumulator = StreamAccumulator(SMALL)
        for name, value in events:
            accumulator.feed(name, json.dumps(value))
        return accumulator.finish()

    outcome(run)


_body = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["message", "error"]) | _json,
        "role": st.sampled_from(["assistant", "user"]) | _json,
        "content": st.lists(_block, max_size=4) | _json,
        "stop_reason": st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal"]) | _json,
        "usage": _usage | _json,
        "error": _json,
    },
)


@settings(max_examples=300, deadline=None)
@given(body=_body | _json)
def test_arbitrary_json_bodies_are_a_result_or_a_typed_error(body: Any) -> None:
    outcome(lambda: normalize_body(json.dumps(body), SMALL))
