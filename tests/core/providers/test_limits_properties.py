"""Property tests of the bounded parsers: the JSON pre-scan agrees with the parser, the stream guard does not depend
on how the bytes are chunked, and the grouped text buffer gives back exactly what went in."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiny_agent_core.errors import ResponseTooLargeError
from tiny_agent_core.providers.http_errors import http_error
from tiny_agent_core.providers.openai_chat import StreamAccumulator
from tiny_agent_core.providers.results import MAX_JSON_DEPTH, MAX_JSON_VALUES, parse_json
from tiny_agent_core.providers.transport import StreamGuard

# Strings full of what the pre-scan must see through: quotes, escapes, brackets, commas, line breaks.
tricky_text = st.text(alphabet='[]{},:"\\/\n\r\t ab\u00e9\U0001f600', max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | tricky_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(tricky_text, children, max_size=4),
    max_leaves=30,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def _nest(value: Any, levels: int) -> Any:
    for level in range(levels):
        value = [value] if level % 2 else {"k[{": value}
    return value


@given(json_values, st.integers(0, MAX_JSON_DEPTH + 20), st.booleans())
def test_parse_json_accepts_exactly_what_is_within_the_depth_limit(value: Any, levels: int, ascii_only: bool) -> None:
    nested = _nest(value, levels)
    text = json.dumps(nested, ensure_ascii=ascii_only)
    if _depth(nested) <= MAX_JSON_DEPTH:
        assert parse_json(text) == json.loads(text)
        assert parse_json(text.encode("utf-8")) == json.loads(text)
    else:
        with pytest.raises(ValueError, match="nested more than"):
            parse_json(text)


@given(st.text(alphabet='[]{},:"\\ 0a', max_size=400) | st.text(max_size=50))
def test_parse_json_raises_only_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_json(text)


def test_parse_json_bounds_values_and_depth() -> None:
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(ValueError, match="nested more than"):
        parse_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    with pytest.raises(ValueError, match="nested more than"):
        parse_json(b"{" * 100_000)
    assert len(parse_json("[" + "{}," * (MAX_JSON_VALUES // 2 - 1) + "1]")) == MAX_JSON_VALUES // 2
    with pytest.raises(ValueError, match="values"):
        parse_json("[" + "{}," * MAX_JSON_VALUES + "1]")
    assert parse_json(json.dumps(["[{," * 200_000])) == ["[{," * 200_000]  # brackets inside a string are text


@given(st.binary(max_size=600))
def test_http_error_never_fails_on_any_body(body: bytes) -> None:
    assert http_error(400, b"[" * 5000 + body).status == 400


_stream_bytes = st.lists(st.sampled_from([b"data: x", b"\n", b"\r", b"\r\n", b"yz" * 7, b": c"]), max_size=60).map(
    b"".join
)


def _open_event(data: bytes, cut: int) -> int:
    """Bytes after the last blank line in ``data[:cut]``: what the guard must bound at each chunk end."""
    last = max(data.rfind(pattern, 0, cut) for pattern in (b"\n\n", b"\n\r", b"\r\r"))
    return cut if last < 0 else cut - last - 2


@given(_stream_bytes, st.lists(st.integers(1, 40), max_size=30), st.integers(1, 60))
def test_stream_guard_measures_events_whatever_the_chunking(data: bytes, sizes: list[int], limit: int) -> None:
    cuts: list[int] = []
    position = 0
    for size in [*sizes, len(data)]:
        position = min(len(data), position + size)
        cuts.append(position)
    guard = StreamGuard("http://x", event_limit=limit, total_limit=10**9)
    refused_at: int | None = None
    start = 0
    for cut in cuts:
        try:
            guard.check(data[start:cut])
        except ResponseTooLargeError:
            refused_at = cut
            break
        start = cut
    assert refused_at == next((cut for cut in cuts if _open_event(data, cut) > limit), None)


@given(st.lists(st.text(max_size=3), min_size=1, max_size=700))
def test_streamed_text_is_kept_whole(pieces: list[str]) -> None:
    """Pieces are joined in groups of 256 as they arrive; the message is still exactly their concatenation."""
    accumulator = StreamAccumulator()
    for piece in pieces:
        accumulator.feed("", json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}))
    accumulator.feed("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    assert accumulator.finish().message.content == "".join(pieces)
