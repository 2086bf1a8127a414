"""The reducer's walk hands out each accepted fact typed, and the typed fact says what the raw fact says.

For every valid golden session (and a long generated one) the observer of ``reduce_session`` hears every fact of
the file once, in order, each as the type of its kind, with the raw fact's values; ``apply_transaction`` and the
store hand out the same facts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.core.session.builders import generate_session
from tests.core.session.reference import FIXTURES, REDUCER_CASES, load_json
from tiny_agent_core.errors import SessionCorruption
from tiny_agent_core.session import apply_transaction, reduce_session
from tiny_agent_core.session.fact_types import (
    AbortRequested,
    AssistantEntry,
    CompactionEntry,
    CompactionStarted,
    OperationFinished,
    RunStarted,
    SessionFact,
    StepAttempt,
    StepFailed,
    ToolResultEntry,
    ToolStarted,
    UsageRecorded,
    UserEntry,
)
from tiny_agent_core.session.reducer import read_header

VALID = [case for case in REDUCER_CASES if load_json(FIXTURES / case["expected"]).get("ok")]
INVALID = [case for case in REDUCER_CASES if not load_json(FIXTURES / case["expected"]).get("ok")]

_RECORD_TYPES: dict[str, type[Any]] = {
    "runStarted": RunStarted,
    "compactionStarted": CompactionStarted,
    "stepAttempt": StepAttempt,
    "stepFailed": StepFailed,
    "toolStarted": ToolStarted,
    "abortRequested": AbortRequested,
    "operationFinished": OperationFinished,
}


def _raw_facts(data: bytes) -> list[dict[str, Any]]:
    """Every fact of the committed lines after the header, as parsed JSON."""
    committed = data[: data.rfind(b"\n")].split(b"\n")[1:]
    values = [json.loads(line) for line in committed]
    return [fact for value in values for fact in (value if isinstance(value, list) else [value])]


def _expected(raw: dict[str, Any]) -> SessionFact:
    """The typed fact that ``raw`` (a fact the reducer accepted) must become, built straight from its JSON."""
    head = (raw["seq"], raw["id"], raw["timestamp"])
    if raw["kind"] == "usage":
        usage = raw["usage"]
        amounts = (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"])
        return UsageRecorded(*head, raw["operationId"], raw.get("attemptId"), raw.get("toolStartedId"), *amounts)
    if raw["kind"] == "entry":
        entry = raw["entry"]
        if entry["type"] == "compaction":
            retained = [item["message"] for item in entry["retainedTail"]]
            return CompactionEntry(
                *head, entry["operationId"], entry["summary"], entry["compactedThroughEntryId"], retained
            )
        message = entry["message"]
        if message["role"] == "user":
            return UserEntry(*head, message)
        if message["role"] == "assistant":
            return AssistantEntry(*head, entry["stepId"], entry["attemptId"], entry["stopReason"], message)
        result = entry["result"]
        return ToolResultEntry(
            *head,
            entry["stepId"],
            entry["toolName"],
            message,
            result["type"],
            result.get("reason"),
            entry.get("toolStartedId"),
            entry.get("assistantEntryId"),
            entry.get("toolIndex"),
        )
    record = raw["record"]
    kind = _RECORD_TYPES[record["type"]]
    if kind is StepFailed:
        error = record["error"]
        return StepFailed(
            *head, record["operationId"], record["stepId"], record["attemptId"], error["code"], error["message"]
        )
    if kind is OperationFinished:
        error = record.get("error") or {}
        return OperationFinished(
            *head,
            record["operationId"],
            record["operationKind"],
            record["outcome"],
            record.get("completion"),
            record.get("finalEntryId"),
            error.get("code"),
            error.get("message"),
        )
    if kind is AbortRequested:
        return AbortRequested(
            *head, record["operationId"], record["operationKind"], record["phase"], record.get("toolCallId")
        )
    names = kind._fields[3:]
    camel = {
        name: "".join(part.capitalize() if n else part for n, part in enumerate(name.split("_"))) for name in names
    }
    return kind(*head, *(record[camel[name]] for name in names))  # type: ignore[no-any-return]


def _heard(data: bytes) -> list[SessionFact]:
    heard: list[list[SessionFact]] = []
    reduce_session(data, heard.append)
    return [fact for transaction in heard for fact in transaction]


@pytest.mark.parametrize("case", VALID, ids=[case["name"] for case in VALID])
def test_the_walk_types_every_fact_of_a_golden_session(case: dict[str, Any]) -> None:
    data = (FIXTURES / case["file"]).read_bytes()
    assert _heard(data) == [_expected(raw) for raw in _raw_facts(data)]


def test_the_walk_types_every_fact_of_a_long_session() -> None:
    data = generate_session(3000, compact_every=20)
    heard = _heard(data)
    assert heard == [_expected(raw) for raw in _raw_facts(data)]
    assert {type(fact) for fact in heard} >= {UserEntry, AssistantEntry, ToolResultEntry, CompactionEntry, StepAttempt}


@pytest.mark.parametrize("case", VALID, ids=[case["name"] for case in VALID])
def test_applying_transactions_one_by_one_gives_the_same_facts(case: dict[str, Any]) -> None:
    data = (FIXTURES / case["file"]).read_bytes()
    lines = data[: data.rfind(b"\n")].split(b"\n")
    state = reduce_session(lines[0] + b"\n")
    one_by_one = [fact for line in lines[1:] for fact in apply_transaction(state, line)]
    assert one_by_one == _heard(data)


def _verdict(read: Any, data: bytes) -> tuple[str, int, int | None] | None:
    try:
        read(data)
    except SessionCorruption as error:
        return (error.code, error.line, error.seq)
    return None


@pytest.mark.parametrize("case", INVALID, ids=[case["name"] for case in INVALID])
def test_read_header_gives_the_reducers_verdict_on_a_bad_file(case: dict[str, Any]) -> None:
    data = (FIXTURES / case["file"]).read_bytes()
    verdict = _verdict(reduce_session, data)
    assert verdict is not None
    # Either line 1 is a good header (the corruption is further on) or the verdict is the whole file's.
    assert _verdict(read_header, data) in (None, verdict)


def test_a_long_compaction_source_is_digested_like_the_writer() -> None:
    data = generate_session(12_000, compact_every=400)  # the compaction's source holds ~3,600 messages
    compactions = [fact for fact in _heard(data) if isinstance(fact, CompactionStarted)]
    assert len(compactions) == 1
    assert len(compactions[0].compacted_entry_ids) + len(compactions[0].retained_entry_ids) > 2048
