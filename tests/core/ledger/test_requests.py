"""Live request data: exact Decimal money and its source, unknown cost, captures, survival across rebuild."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.errors import LedgerError
from tiny_agent_core.ledger import (
    Cost,
    LiveRequest,
    RequestFacts,
    add_raw_capture,
    get_request,
    get_session,
    index_session_file,
    raw_captures,
    rebuild,
    record_attempt,
    record_live,
    redact,
    scan_workspace,
)
from tiny_agent_core.ledger.requests import PRUNE_BATCH, pruned_note
from tiny_agent_core.usage import Usage
from tiny_agent_core.wire_view import CaptureText, capture_answer, capture_text, curl_command

T0 = 1_760_000_000_000


def _two_requests(workspace: Path) -> tuple[SessionFile, str, str]:
    session = SessionFile(workspace, 1, created_at=T0)
    session.user("hi")
    first = session.attempt()
    session.call_read("a.txt", usage=(1000, 50, 0, 0))
    second = session.attempt()
    session.answer("ok", usage=(10, 5, 1000, 0))
    return session, first, second


def test_decimal_cost_round_trips_exactly(conn: sqlite3.Connection, workspace: Path) -> None:
    session, first, second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    a = Decimal("0.000123456789012345678901234567")  # more digits than a float or the default context keeps
    b = Decimal("1E-30")
    record_live(conn, LiveRequest(first, cost=Cost(a, "provider")))
    record_live(conn, LiveRequest(second, cost=Cost(b, "provider")))
    one = get_request(conn, first)
    two = get_request(conn, second)
    assert one is not None
    assert two is not None
    assert one.cost == Cost(a, "provider")
    assert str(one.cost.amount) == str(a)
    assert two.cost == Cost(b, "provider")
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.cost == Decimal("0.000123456789012345678901234568")
    assert summary.cost_unknown_requests == 0
    stored = conn.execute("SELECT cost_total, typeof(cost_total) FROM sessions").fetchone()
    assert stored == ("0.000123456789012345678901234568", "text")


def test_unknown_cost_is_never_zero(conn: sqlite3.Connection, workspace: Path) -> None:
    session, first, _second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.cost, summary.cost_unknown_requests) == (None, 2)
    assert summary.as_json()["cost"] is None
    record_live(conn, LiveRequest(first, cost=Cost(Decimal("0.0025"), "provider")))
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.cost, summary.cost_unknown_requests) == (Decimal("0.0025"), 1)  # a partial total says so


def test_a_live_cost_the_ledger_can_compute_is_priced_by_the_ledger(conn: sqlite3.Connection, workspace: Path) -> None:
    """Only the provider's figure and locality are taken from the agent: an override or table cost it reports is
    priced again by the ledger (as a rebuild would), so the live and rebuilt numbers agree."""
    _session, first, _second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    record_live(conn, LiveRequest(first, cost=Cost(Decimal("0.0025"), "override")))
    row = get_request(conn, first)
    assert row is not None
    assert row.cost is None  # test/model has no price and no override here
    record_live(conn, LiveRequest(first, cost=Cost(Decimal(0), "local")))
    row = get_request(conn, first)
    assert row is not None
    assert row.cost == Cost(Decimal(0), "local")


def test_cost_validation() -> None:
    with pytest.raises(ValueError, match="finite"):
        Cost(Decimal("NaN"), "provider")
    with pytest.raises(ValueError, match="non-negative"):
        Cost(Decimal("-1"), "provider")
    with pytest.raises(ValueError, match="finite"):
        Cost(0.1, "provider")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source"):
        Cost(Decimal(1), "guess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source"):
        Cost(Decimal(1), None)  # a known amount says where it came from
    with pytest.raises(ValueError, match="finite"):
        Cost(None, "provider")  # an unknown amount has no source


def test_one_cost_type_for_pricing_the_ledger_and_the_public_api() -> None:
    import tiny_agent_core
    from tiny_agent_core import pricing
    from tiny_agent_core.ledger import requests

    assert Cost is requests.Cost is pricing.Cost is tiny_agent_core.Cost
    unknown = Cost(None, None, detail="no usage reported")
    assert (unknown.amount, unknown.source, unknown.data_version) == (None, None, None)
    assert Cost(Decimal("0.5"), "price_table", "v1").data_version == "v1"


def test_database_rejects_cost_without_source(conn: sqlite3.Connection, workspace: Path) -> None:
    _session, first, _ = _two_requests(workspace)
    scan_workspace(conn, workspace)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE requests SET cost = '1' WHERE attempt_id = ?", (first,))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE requests SET input_tokens = NULL WHERE attempt_id = ?", (first,))


def test_live_fields_and_unknown_attempt(conn: sqlite3.Connection, workspace: Path) -> None:
    _session, first, _ = _two_requests(workspace)
    scan_workspace(conn, workspace)
    record_live(conn, LiveRequest(first, latency_ms=1234, ttft_ms=210, http_status=200))
    record_live(
        conn,
        LiveRequest(
            first,
            dialect_repairs=["missing_content"],
            dropped_fields=["message.reasoning"],
            response_model="test/model-2025",
        ),
    )
    row = get_request(conn, first)
    assert row is not None
    assert (row.latency_ms, row.ttft_ms, row.http_status) == (1234, 210, 200)  # earlier fields kept
    assert (row.dialect_repairs, row.response_model, row.cost) == (["missing_content"], "test/model-2025", None)
    assert row.dropped_fields == ["message.reasoning"]
    with pytest.raises(LedgerError, match="not in the index"):
        record_live(conn, LiveRequest("01900000-0000-7000-8000-000000000000", latency_ms=1))


def test_live_data_survives_rebuild_while_the_attempt_exists(conn: sqlite3.Connection, workspace: Path) -> None:
    session, first, second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    record_live(conn, LiveRequest(first, cost=Cost(Decimal("0.01"), "provider"), latency_ms=900, http_status=200))
    record_live(conn, LiveRequest(second, cost=Cost(Decimal("0.02"), "provider"), ttft_ms=50))
    add_raw_capture(conn, first, {"request": {"model": "test/model"}, "status": 200})
    # The file loses its last request (e.g. restored from an older copy): truncate after the tool result.
    lines = session.path.read_bytes().split(b"\n")
    session.path.write_bytes(b"\n".join(lines[:6]) + b"\n")
    report = rebuild(conn)
    assert (report.sessions, report.requests) == (1, 1)
    kept = get_request(conn, first)
    assert kept is not None
    assert kept.cost is not None
    assert (kept.cost.amount, kept.latency_ms, kept.http_status) == (Decimal("0.01"), 900, 200)
    assert raw_captures(conn, first) == [{"request": {"model": "test/model"}, "status": 200}]
    assert get_request(conn, second) is None
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.cost, summary.cost_unknown_requests, summary.operation) == (Decimal("0.01"), 0, "run")


def test_raw_capture_is_redacted_and_capped(conn: sqlite3.Connection, workspace: Path) -> None:
    _session, first, _ = _two_requests(workspace)
    scan_workspace(conn, workspace)
    key = "sk-or-v1-" + "a" * 40
    payload = {
        "headers": {"Authorization": f"Bearer {key}", "X-Api-Key": key, "content-type": "application/json"},
        "body": {"messages": [{"role": "user", "content": f"my key is {key}"}], "max_tokens": 10},
        "note": "custom-secret-123 here",
    }
    add_raw_capture(conn, first, payload, secrets=["custom-secret-123"])
    (stored,) = raw_captures(conn, first)
    text = json.dumps(stored)
    assert key not in text
    assert "custom-secret-123" not in text
    assert stored["headers"]["content-type"] == "application/json"
    assert stored["body"]["max_tokens"] == 10
    add_raw_capture(conn, first, {"text": 'x"' * 10_000}, limit=1000)
    row = conn.execute("SELECT body, truncated, original_size FROM raw_captures ORDER BY id DESC").fetchone()
    assert len(row[0].encode()) <= 1000
    assert row[1:] == (1, len(json.dumps({"text": 'x"' * 10_000}, separators=(",", ":"))))
    assert json.loads(row[0])["truncated"] is True
    with pytest.raises(LedgerError):
        add_raw_capture(conn, "01900000-0000-7000-8000-000000000000", {})


def test_only_the_newest_captures_keep_their_body(conn: sqlite3.Connection, workspace: Path) -> None:
    _session, first, second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    payloads = [{"method": "POST", "url": "https://x/v1", "requestBody": f"body {n}", "status": 200} for n in range(5)]
    for number, payload in enumerate(payloads):
        add_raw_capture(conn, first if number < 2 else second, payload, kept=3)
    old = raw_captures(conn, first)
    assert [capture["pruned"] for capture in old] == [True, True]
    assert old[0]["originalSize"] == len(json.dumps(payloads[0], separators=(",", ":")))
    assert old[0]["note"] == pruned_note(3)
    assert "older than the newest 3 captures" in old[0]["note"]
    assert raw_captures(conn, second) == payloads[2:]  # the newest three, whole
    # the inspector's formatting says so instead of failing; there is nothing to replay
    assert capture_text(old[0]) == CaptureText(pruned_note(3), pruned_note(3))
    assert curl_command(old[0]) is None
    assert capture_answer(old).http_status is None
    request = get_request(conn, first)  # the request itself is whole
    assert request is not None
    assert request.usage == Usage(1000, 50, 0, 0)
    bodies = conn.execute("SELECT length(body) FROM raw_captures WHERE pruned = 1").fetchall()
    assert all(size < 400 for (size,) in bodies)


def test_pruning_is_a_bounded_batch_per_capture(conn: sqlite3.Connection, workspace: Path) -> None:
    _session, first, _second = _two_requests(workspace)
    scan_workspace(conn, workspace)
    backlog = PRUNE_BATCH * 2 + 3  # e.g. an index from before the rule
    for number in range(backlog):
        add_raw_capture(conn, first, {"n": number}, kept=backlog)

    def whole() -> int:
        return int(conn.execute("SELECT count(*) FROM raw_captures WHERE pruned = 0").fetchone()[0])

    assert whole() == backlog
    add_raw_capture(conn, first, {"n": "new"}, kept=5)
    assert whole() == backlog + 1 - PRUNE_BATCH
    add_raw_capture(conn, first, {"n": "newer"}, kept=5)
    assert whole() == backlog + 2 - 2 * PRUNE_BATCH
    add_raw_capture(conn, first, {"n": "newest"}, kept=5)
    assert whole() == 5  # caught up
    captures = raw_captures(conn, first)
    assert [capture.get("n") for capture in captures[-5:]] == [backlog - 2, backlog - 1, "new", "newer", "newest"]
    assert all(capture["pruned"] for capture in captures[:-5])
    add_raw_capture(conn, first, {"n": "one more"})  # the default keeps far more than five
    assert whole() == 6


def test_redact_leaves_ordinary_values_alone() -> None:
    value = {"max_tokens": 5, "tokens": ["a"], "usage": {"prompt_tokens": 3}, "list": [1, None, True]}
    assert redact(value) == value
    assert redact({"nested": [{"api_key": "k"}]}) == {"nested": [{"api_key": "[redacted]"}]}


def test_record_attempt_live_path_then_rescan(conn: sqlite3.Connection, workspace: Path) -> None:
    session = SessionFile(workspace, 5, created_at=T0)
    index_session_file(conn, session.path)  # the agent indexes the new (header-only) session once
    session.user("hello")
    attempt_id = session.attempt()
    start = RequestFacts(attempt_id, session.operation_id, session.step_id, 1, "assistant", "test/model", session.time)
    record_attempt(conn, session.id, start)
    record_live(conn, LiveRequest(attempt_id, ttft_ms=120))
    session.answer("hi", usage=(7, 3, 0, 0))
    done = replace(start, usage=Usage(7, 3), stop_reason="stop", outcome="settled", finished_at=session.time - 1)
    record_attempt(conn, session.id, done)
    record_live(conn, LiveRequest(attempt_id, cost=Cost(Decimal("0.00007"), "provider")))
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.requests, summary.usage_unknown_requests, summary.cost) == (1, 0, Decimal("0.00007"))
    scan_workspace(conn, workspace)  # the file changed: the row catches up, live data stays
    summary = get_session(conn, session.id)
    assert summary is not None
    assert (summary.usage, summary.title, summary.cost) == (Usage(7, 3), "hello", Decimal("0.00007"))
    row = get_request(conn, attempt_id)
    assert row is not None
    assert (row.ttft_ms, row.outcome, row.usage) == (120, "settled", Usage(7, 3))
    with pytest.raises(LedgerError, match="not in the index"):
        record_attempt(conn, "01900000-0000-7000-8000-000000000000", start)
