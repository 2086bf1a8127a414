"""Cost reports from session files: recomputed costs, sources, time groupings, what-if, CSV and JSON agree."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tests.core.test_pricing import rate, table_prices
from tiny_agent_core.ledger import Cost, LiveRequest, connect, rebuild, record_live, scan_workspace
from tiny_agent_core.ledger.costs import (
    CSV_COLUMNS,
    GROUPINGS,
    SOURCES,
    Selection,
    cost_report,
    cost_rows,
    cost_text,
    cost_total,
    daily_model_costs,
    money_text,
    what_if,
    write_costs_csv,
)
from tiny_agent_core.ledger.sidecar import sidecar_path
from tiny_agent_core.paths import config_dir, database_path
from tiny_agent_core.pricing import PriceOverride
from tiny_agent_core.settings import AppSettings
from tiny_agent_core.usage import Usage

T0 = int(datetime(2026, 10, 5, 12, 0, tzinfo=UTC).timestamp() * 1000)  # a Monday, noon UTC
DAY = 86_400_000
M = Decimal(1_000_000)
FIGURE = Decimal("0.0004970133333333333")


def gpt4o(tokens: tuple[int, int, int, int], model: str = "gpt-4o") -> Decimal:
    """A request's cost from the table's gpt-4o rates, by hand."""
    prices = table_prices("openai", model, datetime.fromtimestamp(T0 / 1000, UTC))
    uncached, output, cache_read = (rate(prices, key) for key in ("input_mtok", "output_mtok", "cache_read_mtok"))
    return (tokens[0] * uncached + tokens[1] * output + tokens[2] * cache_read) / M


@pytest.fixture
def sessions(conn: sqlite3.Connection, workspace: Path) -> dict[str, SessionFile]:
    """``gpt``: two gpt-4o requests (priced by the table), day 0; ``routed``: an OpenRouter request with the
    provider's figure, day 1; ``limited``: a 429 then a good gpt-4o request, day 2; ``unknown``: a model without a
    price, day 8 (the next week); ``local``: an Ollama request without usage, day 8."""
    gpt = SessionFile(workspace, 1, created_at=T0, model="gpt-4o", provider="openai")
    gpt.user("first question")
    gpt.attempt()
    gpt.call_read("README.md", usage=(1000, 100, 2000, 0))
    gpt.attempt()
    gpt.answer("done", usage=(500, 50, 0, 0))
    routed = SessionFile(workspace, 2, created_at=T0 + DAY, model="google/gemini-2.5-flash")
    routed.user("routed")
    routed.attempt()
    routed.answer("ok", usage=(7, 100, 2161, 0))
    limited = SessionFile(workspace, 3, created_at=T0 + 2 * DAY, model="gpt-4o", provider="openai")
    limited.user("too fast")
    limited.attempt()
    limited.fail(message="HTTP 429: rate limited — Too many requests; retry later.")
    limited.user("again")
    limited.attempt()
    limited.answer("fine", usage=(10, 5, 0, 0))
    unknown = SessionFile(workspace, 4, created_at=T0 + 8 * DAY, model="nobody/model")
    unknown.user("no price")
    unknown.attempt()
    unknown.answer("free?", usage=(7, 3, 0, 0))
    local = SessionFile(workspace, 5, created_at=T0 + 8 * DAY + 1000, model="llama3", provider="ollama")
    local.user("local")
    local.attempt()
    local.answer("here", usage=None)
    assert scan_workspace(conn, workspace).indexed == 5
    record_live(conn, LiveRequest(routed.attempt_id, cost=Cost(FIGURE, "provider")))
    return {"gpt": gpt, "routed": routed, "limited": limited, "unknown": unknown, "local": local}


def test_indexing_prices_every_request_from_the_file(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    rows = {row.key: row for row in cost_rows(conn)}
    gpt = rows[sessions["gpt"].id]
    assert gpt.cost == gpt4o((1000, 100, 2000, 0)) + gpt4o((500, 50, 0, 0))
    assert gpt.sources == {"provider": 0, "computed": 2, "override": 0, "not_billed": 0, "local": 0, "unknown": 0}
    prices = table_prices("openai", "gpt-4o")
    assert gpt.cache_savings == 2000 * (rate(prices, "input_mtok") - rate(prices, "cache_read_mtok")) / M
    assert (gpt.runs, gpt.successful_runs, gpt.cost_complete) == (1, 1, True)
    assert gpt.tokens_per_run == 1000 + 100 + 2000 + 500 + 50
    routed = rows[sessions["routed"].id]
    assert (routed.cost, routed.sources["provider"]) == (FIGURE, 1)
    assert routed.cache_savings is not None  # priced at the table's rates for the same model
    assert routed.cache_savings > 0


def test_a_deleted_index_is_rebuilt_with_the_same_costs(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile], workspace: Path, data_dir: Path
) -> None:
    before = cost_report(conn, "session").as_json()
    side = sidecar_path(sessions["routed"].path)
    assert side.is_file()
    assert side.parent != sessions["routed"].path.parent  # outside the sessions folder and the v2 format
    conn.close()
    for path in data_dir.iterdir():
        path.unlink()
    fresh = connect()
    try:
        assert not database_path().stat().st_size or fresh.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
        rebuild(fresh, [workspace])
        assert cost_report(fresh, "session").as_json() == before
        routed = next(row for row in cost_rows(fresh) if row.key == sessions["routed"].id)
        assert (routed.cost, routed.sources["provider"]) == (FIGURE, 1)
    finally:
        fresh.close()


def test_a_429_is_not_billed_and_the_session_shows_its_last_run(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    limited = next(row for row in cost_rows(conn) if row.key == sessions["limited"].id)
    assert limited.sources["not_billed"] == 1
    assert (limited.unknown_cost_requests, limited.cost) == (0, gpt4o((10, 5, 0, 0)))
    assert (limited.runs, limited.successful_runs) == (2, 1)
    status = conn.execute("SELECT last_outcome, cost_unknown_requests FROM sessions WHERE id = ?", (limited.key,))
    assert status.fetchone() == ("completed", 0)
    row = conn.execute("SELECT http_status, cost, cost_source FROM requests WHERE outcome = 'failed'").fetchone()
    assert row == (429, "0", "not_billed")


def test_unknown_model_is_unknown_and_local_is_counted_apart(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    rows = {row.key: row for row in cost_rows(conn)}
    unknown = rows[sessions["unknown"].id]
    assert (unknown.cost, unknown.unknown_cost_requests, unknown.sources["unknown"]) == (None, 1, 1)
    local = rows[sessions["local"].id]
    assert (local.cost, local.unknown_cost_requests, local.sources["local"]) == (Decimal(0), 0, 1)
    assert local.unknown_usage_requests == 1  # no usage is still unknown usage, never 0 tokens
    total = cost_total(conn)
    assert total.unknown_cost_requests == 1
    assert total.cost == sum((row.cost for row in rows.values() if row.cost is not None), Decimal(0))


@pytest.mark.parametrize("by", GROUPINGS)
def test_every_grouping_adds_up_to_the_total(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile], by: str
) -> None:
    report = cost_report(conn, by)  # type: ignore[arg-type]
    total = report.total
    assert sum((row.cost or Decimal(0) for row in report.rows), Decimal(0)) == total.cost
    assert sum(row.requests for row in report.rows) == total.requests == 7
    assert sum(row.unknown_cost_requests for row in report.rows) == total.unknown_cost_requests
    for source in SOURCES:
        assert sum(row.sources[source] for row in report.rows) == total.sources[source]
    assert sum((row.usage for row in report.rows), Usage(0, 0)) == total.usage


def test_days_weeks_and_the_date_range(conn: sqlite3.Connection, sessions: dict[str, SessionFile]) -> None:
    days = [row.key for row in cost_rows(conn, "day")]
    start = datetime.fromtimestamp(T0 / 1000).date()
    assert days == [str(start.fromordinal(start.toordinal() + n)) for n in (0, 1, 2, 8)]
    weeks = cost_rows(conn, "week")
    assert [date.fromisoformat(row.key).weekday() for row in weeks] == [0, 0]
    assert [row.requests for row in weeks] == [5, 2]
    later = Selection(since=date.fromordinal(start.toordinal() + 2))
    assert [row.key for row in cost_rows(conn, "session", later)] == [
        sessions[name].id for name in ("local", "unknown", "limited")
    ]
    assert cost_total(conn, later).requests == 4
    one_day = Selection(since=start, until=start)
    assert [row.key for row in cost_rows(conn, "day", one_day)] == [str(start)]
    chart = daily_model_costs(conn)
    second = start.fromordinal(start.toordinal() + 1)
    assert [(cell.day, cell.model) for cell in chart][:2] == [(start, "gpt-4o"), (second, "google/gemini-2.5-flash")]
    assert sum((cell.cost or Decimal(0) for cell in chart), Decimal(0)) == cost_total(conn).cost


def test_models_rows_and_selection(conn: sqlite3.Connection, sessions: dict[str, SessionFile], tmp_path: Path) -> None:
    models = cost_rows(conn, "model")
    assert models[0].key == "openai/gpt-4o"
    assert models[0].label == "openai · gpt-4o"
    assert (models[0].sessions, models[0].requests) == (2, 4)
    assert models[-1].key == "openrouter/nobody/model"  # entirely unknown last
    picked = Selection(session_ids=[sessions["gpt"].id])
    assert [row.key for row in cost_rows(conn, "model", picked)] == ["openai/gpt-4o"]
    assert cost_rows(conn, "session", Selection(workspaces=[tmp_path / "elsewhere"])) == []


def test_a_new_override_in_the_settings_applies_at_the_next_scan(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile], workspace: Path
) -> None:
    settings = AppSettings.load(config_dir())
    settings.price_overrides[("openrouter", "nobody/model")] = PriceOverride(Decimal(1), Decimal(2))
    settings.save()
    scan_workspace(conn, workspace)
    unknown = next(row for row in cost_rows(conn) if row.key == sessions["unknown"].id)
    assert (unknown.cost, unknown.sources["override"]) == ((7 * 1 + 3 * 2) / M, 1)
    settings.price_overrides.clear()
    settings.save()
    scan_workspace(conn, workspace)
    assert next(row for row in cost_rows(conn) if row.key == sessions["unknown"].id).cost is None


def test_what_if_prices_the_same_tokens_at_another_model(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    picked = Selection(session_ids=[sessions["gpt"].id, sessions["local"].id])
    estimate = what_if(conn, picked, "openai", "gpt-4o-mini")
    assert estimate.estimate == gpt4o((1000, 100, 2000, 0), "gpt-4o-mini") + gpt4o((500, 50, 0, 0), "gpt-4o-mini")
    assert estimate.actual == gpt4o((1000, 100, 2000, 0)) + gpt4o((500, 50, 0, 0))
    assert estimate.estimate_unknown_requests == 1  # the local request reported no usage
    assert "estimate" in estimate.detail
    nothing = what_if(conn, picked, "openrouter", "nobody/model")
    assert nothing.estimate is None
    assert "no estimate" in nothing.detail


def test_csv_and_json_agree(conn: sqlite3.Connection, sessions: dict[str, SessionFile]) -> None:
    report = cost_report(conn, "session")
    out = io.StringIO(newline="")
    write_costs_csv(report.rows, out)
    records = list(csv.reader(io.StringIO(out.getvalue())))
    assert tuple(records[0]) == CSV_COLUMNS
    as_json = json.loads(json.dumps(report.as_json()))
    for record, row in zip(records[1:], as_json["rows"], strict=True):
        fields = dict(zip(CSV_COLUMNS, record, strict=True))
        assert fields["key"] == row["key"]
        assert fields["cost_usd"] == (row["cost"] if row["cost"] is not None else "unknown")
        assert int(fields["requests"]) == row["requests"]
        assert int(fields["unknown_cost_requests"]) == row["unknownRequests"]
        assert int(fields["not_billed_requests"]) == row["sources"]["not_billed"]
    unknown_row = next(row for row in as_json["rows"] if row["key"] == sessions["unknown"].id)
    assert (unknown_row["cost"], unknown_row["unknownRequests"]) == (None, 1)
    assert "key" not in as_json["total"]


def test_the_sum_of_the_session_rows_is_the_total(conn: sqlite3.Connection, sessions: dict[str, SessionFile]) -> None:
    assert cost_report(conn, "session").total == cost_total(conn)
    assert cost_report(conn, "session", Selection(since=date(2030, 1, 1))).total == cost_total(
        conn, Selection(since=date(2030, 1, 1))
    )


def test_a_total_with_unknown_requests_reads_as_a_lower_bound(
    conn: sqlite3.Connection, sessions: dict[str, SessionFile]
) -> None:
    total = cost_total(conn)
    assert total.cost is not None
    assert cost_text(total.cost, total.unknown_cost_requests) == f"≥ {money_text(total.cost)} + 1 unknown"
    assert cost_text(None, 3) == "unknown"
    assert money_text(Decimal("0.000123")) == "$0.00012"
