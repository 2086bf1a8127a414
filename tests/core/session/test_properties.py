"""Property tests: generated valid sessions reduce; any byte change or line edit gives a state or a corruption."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.session.builders import Call, SessionScript, current_configuration
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import apply_transaction, plan_recovery, reduce_session, state_to_json
from tiny_agent_core.session.canonical_json import canonical_json, fast_canonical_json
from tiny_agent_core.session.rules.context import is_uuid7
from tiny_agent_core.session.rules.messages import canonical_message

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(max_size=40)
answer = st.text(min_size=1, max_size=40).filter(lambda value: value.strip() != "" and "\ufeff" not in value)
arguments = st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8)), max_size=3)
started_call = st.builds(
    Call,
    name=st.sampled_from(["read", "bash", "write"]),
    arguments=arguments.map(lambda value: json.dumps(value, ensure_ascii=False)),
    result=text,
    outcome=st.sampled_from(["success", "error", "interrupted"]),
)
synthetic_call = st.builds(
    Call,
    name=st.text(min_size=1, max_size=10),
    arguments=text,
    outcome=st.sampled_from(["invalidArguments", "unknownTool"]),
)
tool_step = st.lists(st.one_of(started_call, synthetic_call), min_size=1, max_size=3)


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    finish = draw(st.sampled_from(["completed", "completed", "failed", "aborted", "open"]))
    steps: list[Any] = draw(st.lists(tool_step, max_size=3))
    if finish == "completed":
        steps.append(draw(answer))
    elif finish in ("failed", "aborted") or not steps:
        steps.append(draw(answer))  # replaced by the failure
    return {"prompt": draw(st.text(min_size=1, max_size=40)), "steps": steps, "finish": finish}


@st.composite
def sessions(draw: st.DrawFn) -> bytes:
    script = SessionScript(seed=draw(st.integers(0, 1000)))
    plan = draw(st.lists(st.one_of(runs(), st.just("compact")), max_size=6))
    for index, item in enumerate(plan):
        if item == "compact":
            if len(script.messages) >= 2:
                script.compact(draw(text), keep=draw(st.integers(0, 4)))
            continue
        last = index == len(plan) - 1
        finish = item["finish"] if last or item["finish"] != "open" else "completed"
        steps = item["steps"]
        if finish == "completed" and not isinstance(steps[-1], str):
            steps = [*steps, "answer"]
        script.run(item["prompt"], steps, finish=finish)
        if finish == "open":
            break
    return script.data()


@SETTINGS
@given(sessions())
def test_generated_valid_sessions_reduce_and_plan(data: bytes) -> None:
    state = reduce_session(data)
    assert state.repaired_length == len(data)
    assert json.loads(json.dumps(state_to_json(state))) == state_to_json(state)
    plan = plan_recovery(state, current_configuration())
    assert plan["type"] in {"finish", "startStep", "startTool", "appendSynthetic", "closeAttempt", "blocked"}
    # Line by line gives the same state as the whole file.
    lines = data.split(b"\n")[:-1]
    incremental = reduce_session(lines[0] + b"\n")
    for raw in lines[1:]:
        apply_transaction(incremental, raw)
    assert state_to_json(incremental) == state_to_json(state)


CODES = {
    "INVALID_UTF8",
    "MISSING_HEADER",
    "INVALID_HEADER",
    "UNSUPPORTED_VERSION",
    "BLANK_LINE",
    "CRLF_NOT_ALLOWED",
    "MALFORMED_JSON",
    "EMPTY_TRANSACTION",
    "INVALID_FACT",
    "SEQ_MISMATCH",
    "DUPLICATE_ID",
    "INVALID_REFERENCE",
    "INVALID_TRANSITION",
    "INVALID_TRANSCRIPT",
}


def reduce_or_corruption(data: bytes) -> None:
    """Reducing gives a state or a SessionCorruption with a reference code, nothing else."""
    error: SessionCorruption | None = None
    try:
        reduce_session(data)
    except SessionCorruption as caught:
        error = caught
    if error is not None:
        assert error.code in CODES
        assert error.line >= 1


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.data())
def test_any_single_byte_change_gives_a_state_or_a_corruption(data: bytes, draw: st.DataObject) -> None:
    position = draw.draw(st.integers(0, len(data) - 1))
    byte = draw.draw(
        st.one_of(st.integers(0, 255), st.sampled_from(list(b'{}[]",:0123456789\\\n\r\t -ef7'))), label="byte"
    )
    mutated = data[:position] + bytes([byte]) + data[position + 1 :]
    reduce_or_corruption(mutated)
    # Deleting or inserting the byte too.
    reduce_or_corruption(data[:position] + data[position + 1 :])
    reduce_or_corruption(data[:position] + bytes([byte]) + data[position:])


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.data())
def test_any_line_edit_gives_a_state_or_a_corruption(data: bytes, draw: st.DataObject) -> None:
    lines = data.split(b"\n")[:-1]
    index = draw.draw(st.integers(0, len(lines) - 1))
    other = draw.draw(st.integers(0, len(lines) - 1))
    edit = draw.draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "replace", "splice_json"]))
    edited = list(lines)
    if edit == "delete":
        del edited[index]
    elif edit == "duplicate":
        edited.insert(other, lines[index])
    elif edit == "swap":
        edited[index], edited[other] = edited[other], edited[index]
    elif edit == "truncate":
        edited[index] = lines[index][: draw.draw(st.integers(0, max(0, len(lines[index]) - 1)))]
    elif edit == "replace":
        edited[index] = draw.draw(st.binary(max_size=60))
    else:
        value = json.loads(lines[index]) if index else None
        if isinstance(value, (dict, list)):
            edited[index] = json.dumps(mutate_json(value, draw), ensure_ascii=False).encode()
    reduce_or_corruption(b"".join(item + b"\n" for item in edited))


def mutate_json(value: Any, draw: st.DataObject) -> Any:
    """Replace one value somewhere inside ``value`` by an arbitrary JSON value (keys and shapes stay JSON)."""
    replacement = draw.draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
            max_leaves=5,
        )
    )
    path: list[Any] = []
    node = value
    while isinstance(node, (dict, list)) and node and draw.draw(st.booleans()):
        key = draw.draw(st.sampled_from(list(node.keys()) if isinstance(node, dict) else list(range(len(node)))))
        path.append(key)
        node = node[key]
    if not path:
        return replacement
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_fast_canonical_json_equals_rfc8785(value: Any) -> None:
    expected = rfc8785.dumps(value).decode("utf-8")
    assert canonical_json(value) == expected
    assert fast_canonical_json(value) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53) + 1, 2**53 - 1),
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    )
)
def test_numbers_take_the_rfc8785_path(value: Any) -> None:
    assert fast_canonical_json(value) == rfc8785.dumps(value).decode("utf-8")


tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=8),
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8), "arguments": text}),
        }
    ),
    min_size=1,
    max_size=3,
)
messages = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.text(min_size=1, max_size=40)}),
    st.fixed_dictionaries({"role": st.just("tool"), "content": text, "tool_call_id": st.text(min_size=1, max_size=8)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none() | text}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none() | text, "tool_calls": tool_calls}),
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_canonical_message_equals_rfc8785(message: dict[str, Any]) -> None:
    """The compaction digest's message encoder writes what the generic canonical JSON does, for every accepted
    message shape (escapes, control characters and non-ASCII included)."""
    assert canonical_message(message) == rfc8785.dumps(message).decode("utf-8")


_UUID7_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
uuid_like = st.builds(
    "".join,
    st.lists(st.sampled_from("0123456789abcdefABCDEF-7g \u00e9\u0660\ud800"), min_size=34, max_size=38),
)


_UUID7 = "01a23308-9c7e-7bcf-bf2a-edba51c0c5fb"


@settings(max_examples=500, deadline=None)
@given(st.one_of(uuid_like, st.uuids().map(str), st.text(max_size=40), st.from_regex(_UUID7_PATTERN, fullmatch=True)))
@example(_UUID7)
@example(_UUID7.upper())
@example(_UUID7.replace("-7bcf-", "-4bcf-"))  # another version
@example(_UUID7.replace("-bf2a-", "-cf2a-"))  # another variant
@example(_UUID7[:-1])
@example(_UUID7 + "0")
@example(_UUID7.replace("-", "", 1) + "0")  # the right length, a dash missing
@example(_UUID7[:-1] + "\u0660")  # a non-ASCII digit
@example(_UUID7[:-1] + "\ud800")  # a lone surrogate
@example(_UUID7[:-1] + "g")
def test_is_uuid7_agrees_with_the_pattern(value: str) -> None:
    """The regex-free UUIDv7 check accepts exactly what the pattern's fullmatch accepts (near misses included:
    uppercase, other versions and variants, non-ASCII digits and letters, lone surrogates, wrong lengths)."""
    assert is_uuid7(value) == (_UUID7_PATTERN.fullmatch(value) is not None)
