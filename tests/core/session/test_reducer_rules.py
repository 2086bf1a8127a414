"""The reducer's rules the reference ships no fixture for, written as our own fixtures into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.core.session.builders import Call, SessionScript
from tiny_agent_core.cli import main
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import apply_transaction, reduce_session, state_to_json

HEADER = {
    "kind": "header",
    "version": 2,
    "id": "018f0000-0000-7000-8000-000000000001",
    "createdAt": 1710000000000,
    "cwd": "/workspace",
    "provider": "openrouter",
    "model": "test/model",
    "environmentIdentity": "fixture",
}
HEADER_LINE = json.dumps(HEADER, separators=(",", ":")).encode()
USER = {
    "kind": "entry",
    "seq": 1,
    "id": "018f0000-0000-7000-8000-000000000002",
    "timestamp": 1,
    "entry": {"type": "message", "message": {"role": "user", "content": "hi"}},
}


def line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def error_of(data: bytes) -> tuple[str, int, int | None]:
    with pytest.raises(SessionCorruption) as caught:
        reduce_session(data)
    return caught.value.code, caught.value.line, caught.value.seq


def check_file(tmp_path: Path, name: str, data: bytes, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Our own fixture, written into tmp_path and run through the command too."""
    path = tmp_path / name
    path.write_bytes(data)
    code = main(["session", "check", str(path)])
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == (0 if out["ok"] else 2)
    return out


OWN_FIXTURES = {
    "invalid-utf8": (HEADER_LINE + b"\n" + line(USER)[:-3] + b"\xff\xfe}}\n", ("INVALID_UTF8", 1)),
    "invalid-utf8-in-header": (HEADER_LINE[:-2] + b"\xc3\x28}\n", ("INVALID_UTF8", 1)),
    "overlong-utf8": (HEADER_LINE + b"\n" + b'{"a":"\xc0\xaf"}\n', ("INVALID_UTF8", 1)),
    "invalid-utf8-after-a-bad-line": (HEADER_LINE + b"\n{}\n" + line(USER)[:-3] + b"\xff}}\n", ("INVALID_UTF8", 1)),
    "raw-surrogate-after-a-bad-line": (
        HEADER_LINE + b"\n{}\n" + line(USER).replace(b'"hi"', b'"\xed\xa0\x80"') + b"\n",
        ("MALFORMED_JSON", 3),
    ),
    "missing-header-no-lf": (HEADER_LINE, ("MISSING_HEADER", 1)),
    "missing-header-empty-file": (b"", ("MISSING_HEADER", 1)),
    "missing-header-empty-first-line": (b"\n" + HEADER_LINE + b"\n", ("MISSING_HEADER", 1)),
    "unsupported-version": (line({**HEADER, "version": 3}) + b"\n", ("UNSUPPORTED_VERSION", 1)),
    "unsupported-version-missing": (
        line({key: value for key, value in HEADER.items() if key != "version"}) + b"\n",
        ("UNSUPPORTED_VERSION", 1),
    ),
    "invalid-header-extra-key": (line({**HEADER, "extra": 1}) + b"\n", ("INVALID_HEADER", 1)),
    "invalid-header-bad-id": (line({**HEADER, "id": "not-a-uuid"}) + b"\n", ("INVALID_HEADER", 1)),
    "empty-transaction": (HEADER_LINE + b"\n[]\n", ("EMPTY_TRANSACTION", 2)),
    "raw-surrogate-bytes": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"\xed\xa0\x80"') + b"\n",
        ("MALFORMED_JSON", 2),
    ),
    "raw-surrogate-bytes-in-torn-tail": (HEADER_LINE + b"\n" + b'"\xed\xa0\x80', None),
    "raw-surrogate-before-invalid-utf8": (
        HEADER_LINE + b"\n\xff\n" + line(USER).replace(b'"hi"', b'"\xed\xbf\xbf"') + b"\n",
        ("MALFORMED_JSON", 3),
    ),
    "escaped-low-surrogate": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"\\udc00"') + b"\n",
        ("MALFORMED_JSON", 2),
    ),
    "escaped-surrogate-key": (HEADER_LINE + b"\n" + b'{"\\ud800":1}\n', ("MALFORMED_JSON", 2)),
    "escaped-surrogate-pair-is-fine": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"\\ud83d\\ude00 \\\\ud800"') + b"\n",
        None,
    ),
    "duplicate-key-nested": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"role":"user"', b'"role":"user","role":"user"') + b"\n",
        ("MALFORMED_JSON", 2),
    ),
    "duplicate-key-escaped-spelling": (HEADER_LINE + b"\n" + b'{"a":1,"\\u0061":2}\n', ("MALFORMED_JSON", 2)),
    "nan": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"timestamp":1', b'"timestamp":NaN') + b"\n",
        ("MALFORMED_JSON", 2),
    ),
    "raw-control-char": (HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"h\ti"') + b"\n", ("MALFORMED_JSON", 2)),
    "unknown-escape": (HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"\\x41"') + b"\n", ("MALFORMED_JSON", 2)),
    "trailing-garbage": (HEADER_LINE + b"\n" + line(USER) + b" x\n", ("MALFORMED_JSON", 2)),
    "bom-in-line-2": (HEADER_LINE + b"\n\xef\xbb\xbf" + line(USER) + b"\n", ("MALFORMED_JSON", 2)),
    "blank-line-last": (HEADER_LINE + b"\n\n", ("BLANK_LINE", 2)),
    "cr-inside-is-whitespace": (HEADER_LINE + b"\n" + line(USER).replace(b"{", b"{\r", 1) + b"\n", None),
    "float-integers-like-javascript": (
        HEADER_LINE
        + b"\n"
        + line(USER).replace(b'"seq":1', b'"seq":1.0').replace(b'"timestamp":1', b'"timestamp":1e3')
        + b"\n",
        None,
    ),
    "huge-integer-like-javascript": (
        HEADER_LINE + b"\n" + line(USER).replace(b'"timestamp":1', b'"timestamp":' + b"9" * 5000) + b"\n",
        ("INVALID_FACT", 2, 1),
    ),
    "deep-nesting": (HEADER_LINE + b"\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n", ("MALFORMED_JSON", 2)),
    "nested-array-fact": (HEADER_LINE + b"\n[[" + line(USER) + b"]]\n", ("INVALID_FACT", 2)),
    "scalar-transaction": (HEADER_LINE + b"\n1\n", ("INVALID_FACT", 2)),
    "seq-zero": (HEADER_LINE + b"\n" + line({**USER, "seq": 0}) + b"\n", ("INVALID_FACT", 2)),
    "seq-skipped": (HEADER_LINE + b"\n" + line({**USER, "seq": 2}) + b"\n", ("SEQ_MISMATCH", 2, 2)),
    "uppercase-id": (HEADER_LINE + b"\n" + line({**USER, "id": USER["id"].upper()}) + b"\n", ("INVALID_FACT", 2, 1)),
    "user-extra-key": (
        HEADER_LINE + b"\n" + line({**USER, "entry": {**USER["entry"], "stepId": USER["id"]}}) + b"\n",
        ("INVALID_FACT", 2, 1),
    ),
    "empty-user-content": (
        HEADER_LINE
        + b"\n"
        + line({**USER, "entry": {"type": "message", "message": {"role": "user", "content": ""}}})
        + b"\n",
        ("INVALID_FACT", 2, 1),
    ),
    "system-role": (
        HEADER_LINE
        + b"\n"
        + line({**USER, "entry": {"type": "message", "message": {"role": "system", "content": "x"}}})
        + b"\n",
        ("INVALID_FACT", 2, 1),
    ),
    "unknown-kind": (HEADER_LINE + b"\n" + line({**USER, "kind": "note"}) + b"\n", ("INVALID_FACT", 2, 1)),
}


@pytest.mark.parametrize(("data", "expected"), OWN_FIXTURES.values(), ids=OWN_FIXTURES.keys())
def test_own_fixture(
    data: bytes, expected: tuple[Any, ...] | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = check_file(tmp_path, "case.jsonl", data, capsys)
    if expected is None:
        assert out["ok"] is True
        reduce_session(data)
        return
    error = {"code": expected[0], "line": expected[1]}
    if len(expected) > 2:
        error["seq"] = expected[2]
    if b"\n" not in data:  # a creation that never finished: the command says so, with the reducer's verdict
        assert "can be deleted" in out["error"].pop("message")
    assert out == {"ok": False, "error": error}
    assert error_of(data) == (expected[0], expected[1], expected[2] if len(expected) > 2 else None)


def test_escaped_pair_decodes_to_one_character() -> None:
    data = HEADER_LINE + b"\n" + line(USER).replace(b'"hi"', b'"\\ud83d\\ude00"') + b"\n"
    assert reduce_session(data).transcript[0]["content"] == "\U0001f600"


def test_leading_bom_is_dropped_like_the_reference_text_decoder() -> None:
    data = b"\xef\xbb\xbf" + HEADER_LINE + b"\n"
    state = reduce_session(data)
    assert state.repaired_length == len(data)
    assert state.header.id == HEADER["id"]


def test_torn_tail_is_ignored_even_if_it_parses_or_is_garbage() -> None:
    base = HEADER_LINE + b"\n" + line(USER) + b"\n"
    for tail in (b"", b'{"parseable":true}', b"\xff\xfe", b"[", b"\r"):
        state = reduce_session(base + tail)
        assert state.repaired_length == len(base)
        assert state.transcript == [{"role": "user", "content": "hi"}]


def test_transcript_violation_is_reported_at_transaction_end_with_its_last_seq() -> None:
    """A user message while a call is unanswered breaks the transcript; the error names the transaction's last
    seq, and a fact error later in the same transaction wins (the reference validates the transcript last).
    """
    script = SessionScript()
    script.run("go", [[Call("read", outcome="pending")]], finish="open")
    data = script.data()
    state = reduce_session(data)
    next_line = data.count(b"\n") + 1
    user = {**USER, "seq": state.next_seq, "id": "018f0000-0000-7000-8000-0000000000aa"}
    second = {**user, "seq": state.next_seq + 1, "id": "018f0000-0000-7000-8000-0000000000ab"}
    assert error_of(data + line([user, second]) + b"\n") == ("INVALID_TRANSCRIPT", next_line, state.next_seq + 1)
    assert error_of(data + line([user, {**second, "kind": "other"}]) + b"\n") == (
        "INVALID_FACT",
        next_line,
        state.next_seq + 1,
    )


def test_rejected_transaction_leaves_the_state_untouched() -> None:
    """A multi-fact transaction failing on its last fact is undone completely, internals included."""
    script = SessionScript()
    script.run("one", [[Call("read")], "answer"])
    script.compact()
    script.run("two", [[Call("bash", '{"command":"ls"}', "out", "error")]], finish="open")
    lines = script.data().split(b"\n")[:-1]
    state = reduce_session(lines[0] + b"\n")
    for raw in lines[1:]:
        before = json.dumps(state_to_json(state))
        facts = json.loads(raw)
        facts = facts if isinstance(facts, list) else [facts]
        # The same transaction with a broken last fact (or a broken copy appended) is rejected atomically.
        broken = [*facts, {**facts[-1], "seq": facts[-1]["seq"] + 1, "id": facts[0]["id"]}]
        with pytest.raises(SessionCorruption):
            apply_transaction(state, line(broken))
        assert json.dumps(state_to_json(state)) == before
        apply_transaction(state, raw)
    assert state_to_json(state) == state_to_json(reduce_session(script.data()))


def test_incremental_application_equals_a_full_load() -> None:
    script = SessionScript(seed=3)
    for index in range(5):
        script.run(f"task {index}", [[Call("read"), Call("x", "not json", outcome="invalidArguments")], "done"])
        if index % 2:
            script.compact(keep=3)
    data = script.data()
    lines = data.split(b"\n")[:-1]
    state = reduce_session(lines[0] + b"\n")
    for raw in lines[1:]:
        apply_transaction(state, raw)
    full = reduce_session(data)
    assert state_to_json(state) == state_to_json(full)
    assert (state.line_count, state.repaired_length, state.next_seq) == (
        full.line_count,
        full.repaired_length,
        full.next_seq,
    )


def test_apply_transaction_reports_line_numbers_like_the_file_would() -> None:
    state = reduce_session(HEADER_LINE + b"\n")
    with pytest.raises(SessionCorruption) as caught:
        apply_transaction(state, b"[]")
    assert (caught.value.code, caught.value.line) == ("EMPTY_TRANSACTION", 2)
    with pytest.raises(SessionCorruption) as caught:
        apply_transaction(state, b'"\xed\xa0\x80"')
    assert (caught.value.code, caught.value.line) == ("MALFORMED_JSON", 2)
    with pytest.raises(SessionCorruption) as caught:
        apply_transaction(state, b'"\xff"')
    assert (caught.value.code, caught.value.line) == ("INVALID_UTF8", 1)
    with pytest.raises(ValueError, match="LF"):
        apply_transaction(state, b"{}\n{}")
    apply_transaction(state, line(USER))
    assert (state.line_count, state.fact_count) == (2, 1)


def test_compaction_chain_and_active_context() -> None:
    script = SessionScript()
    script.run("first", ["one"])
    script.run("second", ["two"])
    script.compact("s1", keep=2)
    script.run("third", ["three"])
    script.compact("s2", keep=2)
    state = reduce_session(script.data())
    assert len(state.transcript) == 6
    assert state.active_context == [
        {"role": "user", "content": "[Compacted history]\ns2"},
        {"role": "user", "content": "third"},
        {"role": "assistant", "content": "three"},
    ]
    assert state.operation.kind == "idle"


def test_an_escaped_lone_surrogate_is_found_on_any_line_of_a_file() -> None:
    """A load looks for ``\\uD800``–``\\uDFFF`` escapes once over the whole file, then checks only the lines that
    hold one: a lone surrogate is still found on whichever line it is, after lines with valid pairs or none."""
    script = SessionScript()
    for prompt in ("one", "two", "three"):
        script.run(prompt, [[Call("read", '{"path":"a"}', "x")], "done"])
    lines = script.data().splitlines()

    def with_lines(changes: dict[int, bytes]) -> bytes:
        return b"".join(changes.get(number, text) + b"\n" for number, text in enumerate(lines))

    results = [number for number, text in enumerate(lines) if b'"content":"x"' in text]  # 0-based
    assert len(results) == 3
    pair = lines[results[0]].replace(b'"content":"x"', b'"content":"\\ud83d\\ude00 x"')
    assert "\U0001f600" in reduce_session(with_lines({results[0]: pair})).transcript[2]["content"]
    for number in results:
        lone = lines[number].replace(b'"content":"x"', b'"content":"\\udfff x"')
        assert error_of(with_lines({number: lone}))[:2] == ("MALFORMED_JSON", number + 1)
        if number > results[0]:
            assert error_of(with_lines({results[0]: pair, number: lone}))[:2] == ("MALFORMED_JSON", number + 1)


def _internals(state: Any) -> Any:
    """Everything a transaction can change in a state, the reducer's index included, as comparable values."""
    index = state.index
    parts = [list(part.items()) if isinstance(part, dict) else list(part) for part in state.grow_only_parts()]
    tools = [(tool.status, tool.operation.pending_tools) for tool in index.tools.values()]
    attempts = [(a.status, a.closed, a.failed, a.settled_entry_id, a.stop_reason) for a in index.attempts.values()]
    steps = [list(attempts) for attempts in index.steps.values()]
    scalars = (state.next_seq, state.line_count, state.repaired_length, state.operation, index.active_through)
    return parts, tools, attempts, steps, scalars, dict(index.reserved), set(index.pending_calls), index.usage_totals


def test_a_rollback_cuts_the_grow_only_parts_back_and_undoes_the_rest() -> None:
    """A rejected transaction leaves every part of the state as it was: what it added to the grow-only parts (the
    logs and tables a rollback cuts back by length) and what it changed in place (through the journal)."""
    script = SessionScript()
    script.run("one", [[Call("read"), Call("x", "not json", outcome="invalidArguments")], "answer"])
    script.compact(keep=3)
    script.run("two", [[Call("bash", '{"command":"ls"}', "out", "error")], "done"])
    lines = script.data().split(b"\n")[:-1]
    state = reduce_session(lines[0] + b"\n")
    for raw in lines[1:]:
        before = _internals(state)
        facts = json.loads(raw)
        facts = facts if isinstance(facts, list) else [facts]
        broken = [*facts, {**facts[-1], "seq": facts[-1]["seq"] + 1, "id": facts[0]["id"]}]
        with pytest.raises(SessionCorruption):
            apply_transaction(state, line(broken))
        assert _internals(state) == before
        apply_transaction(state, raw)
    loaded = reduce_session(script.data())
    assert [list(part) for part in state.grow_only_parts()] == [list(part) for part in loaded.grow_only_parts()]
