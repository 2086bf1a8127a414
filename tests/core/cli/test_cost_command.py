"""``tiny-agent cost``: the JSON contract, groupings that add up, the table, and the same numbers as the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from tests.core.ledger.sessionfiles import SessionFile
from tiny_agent_core.cli import main
from tiny_agent_core.ledger import opened
from tiny_agent_core.ledger.costs import SOURCES, Selection, cost_report

T0 = int(datetime(2026, 10, 5, 12, 0, tzinfo=UTC).timestamp() * 1000)
DAY = 86_400_000


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a priced session (two days), a 429 and an unknown model."""
    folder = tmp_path / "ws"
    priced = SessionFile(folder, 1, created_at=T0, model="gpt-4o", provider="openai")
    priced.user("priced")
    priced.attempt()
    priced.answer("a", usage=(1000, 100, 500, 0))
    priced.time += DAY
    priced.user("next day")
    priced.attempt()
    priced.answer("b", usage=(10, 10, 0, 0))
    limited = SessionFile(folder, 2, created_at=T0 + 2 * DAY, model="gpt-4o", provider="openai")
    limited.user("limited")
    limited.attempt()
    limited.fail(message="HTTP 429: slow down — retry later.")
    unknown = SessionFile(folder, 3, created_at=T0 + 3 * DAY, model="nobody/model")
    unknown.user("unknown")
    unknown.attempt()
    unknown.answer("c", usage=(5, 5, 0, 0))
    return folder


def cost_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["cost", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    value: dict[str, object] = json.loads(out)
    return value


def test_json_contract_and_the_same_numbers_as_the_report(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    out = cost_json(capsys, "--workspace", str(workspace))
    rows, total = out["rows"], out["total"]
    assert isinstance(rows, list)
    assert isinstance(total, dict)
    assert len(rows) == 3
    for row in rows:
        assert set(row) >= {"key", "requests", "usage", "cost", "unknownRequests", "sources"}
        assert set(row["sources"]) == set(SOURCES)
        assert set(row["usage"]) == {"input", "output", "cacheRead", "cacheWrite"}
    assert "key" not in total
    by_title = {row["title"]: row for row in rows}
    assert by_title["limited"]["cost"] == "0"
    assert by_title["limited"]["sources"]["not_billed"] == 1
    assert (by_title["unknown"]["cost"], by_title["unknown"]["unknownRequests"]) == (None, 1)
    assert Decimal(total["cost"]) == Decimal(by_title["priced"]["cost"])
    assert total["unknownRequests"] == 1
    with opened() as conn:
        assert cost_report(conn, "session", Selection(workspaces=[workspace])).as_json() == out


@pytest.mark.parametrize("by", ["day", "week", "model"])
def test_rows_add_up_to_the_total(capsys: pytest.CaptureFixture[str], workspace: Path, by: str) -> None:
    out = cost_json(capsys, "--workspace", str(workspace), "--by", by)
    rows, total = out["rows"], out["total"]
    assert isinstance(rows, list)
    assert isinstance(total, dict)
    assert sum(Decimal(row["cost"] or 0) for row in rows) == Decimal(total["cost"])
    assert sum(row["requests"] for row in rows) == total["requests"] == 4
    assert sum(row["unknownRequests"] for row in rows) == total["unknownRequests"]
    if by == "day":
        start = datetime.fromtimestamp(T0 / 1000).date()
        assert [row["key"] for row in rows] == [str(start.fromordinal(start.toordinal() + n)) for n in range(4)]


def test_since_until_and_all_indexed_sessions(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    cost_json(capsys, "--workspace", str(workspace))  # indexes it
    start = datetime.fromtimestamp(T0 / 1000).date()
    second = str(start.fromordinal(start.toordinal() + 1))
    out = cost_json(capsys, "--by", "day", "--since", second, "--until", second)
    assert [row["key"] for row in out["rows"]] == [second]  # type: ignore[union-attr]


def test_table_has_a_total_row_and_says_unknown(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    assert main(["cost", "--workspace", str(workspace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["DATE", "SESSION", "MODELS"]
    assert lines[-1].startswith("Total")
    assert "+ 1 unknown" in lines[-1]
    assert any("unknown" in line and "nobody/model" in line for line in lines)


def test_bad_date_is_a_usage_error(workspace: Path) -> None:
    env = {**os.environ}
    proc = subprocess.run(
        [sys.executable, "-m", "tiny_agent_core", "cost", "--since", "yesterday"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 2
    assert "not a date" in proc.stderr
    assert proc.stderr.count("\n") == 1
