"""Cost rows per session and per model, exact Decimal sums, unknown never zero, CSV export."""

from __future__ import annotations

import csv
import io
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.ledger import Cost, LiveRequest, record_live, scan_workspace
from tiny_agent_core.ledger.costs import (
    CSV_COLUMNS,
    ModelCostRow,
    SessionCostRow,
    model_cost_rows,
    session_cost_rows,
    write_costs_csv,
)
from tiny_agent_core.usage import Usage

T0 = 1_760_000_000_000


def _cost(conn: sqlite3.Connection, attempt_id: str, amount: str) -> None:
    record_live(conn, LiveRequest(attempt_id, cost=Cost(Decimal(amount), "provider")))


@pytest.fixture
def sessions(conn: sqlite3.Connection, workspace: Path) -> dict[str, SessionFile]:
    """``two_runs``: two runs on model a, costs known; ``mixed``: a failed request on b without usage, then a
    request on a with usage and unknown cost; ``empty``: no request; ``unknown``: one request, cost unknown."""
    two_runs = SessionFile(workspace, 1, created_at=T0, model="vendor/a")
    two_runs.user("first question")
    first = two_runs.attempt()
    two_runs.call_read("README.md", usage=(100, 20, 300, 0))
    second = two_runs.attempt()
    two_runs.answer("done", usage=(10, 5, 400, 100))
    two_runs.user("second question")
    third = two_runs.attempt()
    two_runs.answer("again", usage=(1, 1, 0, 0))
    mixed = SessionFile(workspace, 2, created_at=T0 + 1000, model="vendor/b")
    mixed.user("mixed")
    mixed.attempt()
    mixed.fail()
    mixed.user("retry on a")
    mixed_a = mixed.attempt(model="vendor/a")
    mixed.answer("ok", usage=(50, 50, 0, 0))
    empty = SessionFile(workspace, 3, created_at=T0 + 2000)
    unknown = SessionFile(workspace, 4, created_at=T0 + 3000, model="vendor/c")
    unknown.user("no price")
    unknown.attempt()
    unknown.answer("free?", usage=(7, 3, 0, 0))
    assert scan_workspace(conn, workspace).indexed == 4
    _cost(conn, first, "0.0010")
    _cost(conn, second, "0.000000120")
    _cost(conn, third, "0.0025")
    _cost(conn, mixed.attempt_id, "0.5")
    assert mixed_a == mixed.attempt_id
    return {"two_runs": two_runs, "mixed": mixed, "empty": empty, "unknown": unknown}


def test_session_rows_sum_known_usage_and_exact_costs(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    rows = {row.session_id: row for row in session_cost_rows(conn)}
    assert [row.session_id for row in session_cost_rows(conn)] == [
        sessions[name].id for name in ("unknown", "empty", "mixed", "two_runs")
    ]  # newest first
    two_runs = rows[sessions["two_runs"].id]
    assert two_runs.usage == Usage(111, 26, 700, 100)
    assert two_runs.cache_hit_rate == pytest.approx(700 / 911)
    assert (two_runs.requests, two_runs.runs, two_runs.models) == (3, 2, ("vendor/a",))
    assert two_runs.cost == Decimal("0.003500120")
    assert (two_runs.cost_complete, two_runs.unknown_cost_requests, two_runs.known_cost_requests) == (True, 0, 3)
    assert two_runs.cost_per_run == Decimal("0.00175006")

    mixed = rows[sessions["mixed"].id]
    assert mixed.models == ("vendor/a", "vendor/b")
    assert (mixed.requests, mixed.unknown_usage_requests, mixed.unknown_cost_requests) == (2, 1, 1)
    assert mixed.usage == Usage(50, 50)  # the failed request's tokens are unknown, not zero
    assert (mixed.cost, mixed.cost_complete, mixed.runs) == (Decimal("0.5"), False, 2)
    assert mixed.cost_per_run == Decimal("0.25")  # a lower bound, as the cost is

    empty = rows[sessions["empty"].id]
    assert (empty.requests, empty.cost, empty.cost_per_run, empty.cache_hit_rate, empty.models) == (
        0,
        Decimal(0),
        None,
        None,
        (),
    )

    unknown = rows[sessions["unknown"].id]
    assert (unknown.cost, unknown.cost_per_run, unknown.unknown_cost_requests) == (None, None, 1)
    assert unknown.cache_hit_rate == 0.0


def test_selection_and_workspace_filters(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile], tmp_path: Path
) -> None:
    picked = [sessions["mixed"].id, sessions["empty"].id, "not-a-session"]
    assert [row.session_id for row in session_cost_rows(conn, picked)] == [sessions["empty"].id, sessions["mixed"].id]
    assert session_cost_rows(conn, []) == []
    workspace = sessions["mixed"].path.parent.parent.parent
    assert len(session_cost_rows(conn, workspace=workspace)) == 4
    assert session_cost_rows(conn, workspace=tmp_path / "elsewhere") == []
    assert model_cost_rows(conn, workspace=tmp_path / "elsewhere") == []


def test_model_rows_add_up_to_the_session_rows(conn: sqlite3.Connection, sessions: dict[str, SessionFile]) -> None:
    models = model_cost_rows(conn)
    assert [(m.provider, m.model) for m in models] == [
        ("openrouter", "vendor/a"),
        ("openrouter", "vendor/b"),
        ("openrouter", "vendor/c"),
    ]
    a, b, c = models
    assert a == ModelCostRow(
        provider="openrouter",
        model="vendor/a",
        sessions=2,
        requests=4,
        usage=Usage(161, 76, 700, 100),
        unknown_usage_requests=0,
        cost=Decimal("0.503500120"),
        unknown_cost_requests=0,
    )
    assert (b.requests, b.unknown_usage_requests, b.cost, b.unknown_cost_requests, b.cost_complete) == (
        1,
        1,
        None,
        1,
        False,
    )
    assert c.cost is None
    assert c.usage == Usage(7, 3)
    session_rows = session_cost_rows(conn)
    assert sum((m.usage for m in models), Usage(0, 0)) == sum((s.usage for s in session_rows), Usage(0, 0))
    assert sum(m.requests for m in models) == sum(s.requests for s in session_rows)
    assert sum(m.cost for m in models if m.cost is not None) == sum(s.cost for s in session_rows if s.cost is not None)
    only_mixed = model_cost_rows(conn, [sessions["mixed"].id])
    assert [(m.model, m.sessions, m.cost) for m in only_mixed] == [
        ("vendor/a", 1, Decimal("0.5")),
        ("vendor/b", 1, None),
    ]


def test_csv_has_exact_amounts_and_unknown_never_zero(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    out = io.StringIO(newline="")
    write_costs_csv(session_cost_rows(conn), out)
    records = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    assert tuple(records[0]) == CSV_COLUMNS
    by_id = {record["session_id"]: record for record in records}
    two_runs = by_id[sessions["two_runs"].id]
    assert two_runs["cost_usd"] == "0.003500120"
    assert two_runs["cost_per_run_usd"] == "0.00175006"
    assert two_runs["cache_hit_rate"] == "0.768386"
    assert two_runs["models"] == "vendor/a"
    assert two_runs["created_at"] == "2025-10-09T08:53:20.000+00:00"
    assert (two_runs["runs"], two_runs["requests"], two_runs["cost_complete"]) == ("2", "3", "true")
    unknown = by_id[sessions["unknown"].id]
    assert (unknown["cost_usd"], unknown["cost_per_run_usd"], unknown["unknown_cost_requests"]) == (
        "unknown",
        "unknown",
        "1",
    )
    empty = by_id[sessions["empty"].id]
    assert (empty["cost_usd"], empty["cache_hit_rate"], empty["cost_per_run_usd"]) == ("0", "unknown", "unknown")
    assert by_id[sessions["mixed"].id]["cost_complete"] == "false"
    assert out.getvalue().endswith("\r\n")


def test_tiny_and_large_amounts_are_written_in_plain_notation(tmp_path: Path) -> None:
    row = SessionCostRow(
        session_id="s",
        title='Ünïcode, "quoted"\nline',
        workspace=tmp_path,
        created_at=T0,
        models=("m1", "m2"),
        usage=Usage(1, 1),
        requests=3,
        unknown_usage_requests=0,
        cost=Decimal("1.2E-7"),
        unknown_cost_requests=0,
        runs=3,
    )
    big = SessionCostRow(**{**{f: getattr(row, f) for f in row.__slots__}, "cost": Decimal("1E+3"), "runs": 1})
    path = tmp_path / "costs.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        write_costs_csv([row, big], handle)
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    assert records[0]["title"] == row.title
    assert (records[0]["cost_usd"], records[0]["cost_per_run_usd"], records[0]["models"]) == (
        "0.00000012",
        "0.00000004",
        "m1;m2",
    )
    assert (records[1]["cost_usd"], records[1]["cost_per_run_usd"]) == ("1000", "1000")
