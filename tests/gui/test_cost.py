"""The cost view: model contracts, sorting, selection → comparison and per-model totals, chart, CSV export."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QColor, QImage
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from tests.core.ledger.sessionfiles import SessionFile
from tests.gui.test_sessions_data import T0, add_sessions, cost_of, session_id, title_of
from tiny_agent_core.cli import main as cli_main
from tiny_agent_core.ledger import connect, scan_workspace
from tiny_agent_core.ledger.costs import cost_rows
from tiny_agent_gui.cost import (
    Bar,
    ComparisonModel,
    CostBarChart,
    CostView,
    DailyCostChart,
    Day,
    DaySegment,
    model_model,
    period_model,
    session_model,
)
from tiny_agent_gui.cost.formatting import cost_text, format_money
from tiny_agent_gui.cost.models import RowRole
from tiny_agent_gui.cost.view import PER_MODEL, PER_SESSION

COST = 3  # column of the sessions table
TIMEOUT = 5000


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated index in ``tmp_path`` with 40 generated sessions (no settings: no overrides)."""
    connection = connect(tmp_path / "index.sqlite3")
    add_sessions(connection, tmp_path / "project", 40)
    yield connection
    connection.close()


def _reload(qtbot: QtBot, view: CostView) -> None:
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT), qtbot.waitSignal(view.selection_loaded, timeout=TIMEOUT):
        view.reload()


@pytest.fixture
def view(qtbot: QtBot, conn: sqlite3.Connection) -> CostView:
    """A shown cost view, loaded."""
    widget = CostView(conn, load=False)
    qtbot.addWidget(widget)
    widget.resize(1024, 640)
    with qtbot.waitExposed(widget):
        widget.show()
    _reload(qtbot, widget)
    return widget


def _select(view: CostView, numbers: list[int]) -> None:
    selection = view.table.selectionModel()
    selection.clearSelection()
    for number in numbers:
        row = next(
            r for r in range(view.sessions_model.rowCount()) if view.sessions_model.row(r).key == session_id(number)
        )
        selection.select(
            view.sessions_model.index(row, 0),
            QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows,
        )


def _select_and_wait(qtbot: QtBot, view: CostView, numbers: list[int]) -> None:
    with qtbot.waitSignal(view.selection_loaded, timeout=TIMEOUT):
        _select(view, numbers)


def test_models_pass_the_model_tester(qtmodeltester: ModelTester, conn: sqlite3.Connection) -> None:
    sessions = session_model()
    sessions.set_rows(cost_rows(conn))
    qtmodeltester.check(sessions)
    sessions.sort(COST, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(sessions)
    comparison = ComparisonModel()
    comparison.set_sessions(cost_rows(conn)[:3])
    qtmodeltester.check(comparison)
    models = model_model()
    models.set_rows(cost_rows(conn, "model"))
    qtmodeltester.check(models)
    models.sort(0, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(models)
    days = period_model()
    days.set_rows(cost_rows(conn, "day"))
    qtmodeltester.check(days)


def test_rows_newest_first_with_a_date_and_unknown_never_zero(view: CostView) -> None:
    model = view.sessions_model
    assert model.rowCount() == 40
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())] == [
        "Date",
        "Title",
        "Models",
        "Cost",
        "Cost per run",
        "Input",
        "Output",
        "Cache read",
        "Cache write",
        "Cache hit",
    ]
    assert model.row(0).key == session_id(39)
    assert model.data(model.index(0, 0)) == datetime.fromtimestamp((T0 + 39_000) / 1000).strftime("%Y-%m-%d")
    texts = {model.row(r).key: model.data(model.index(r, COST)) for r in range(40)}
    assert texts[session_id(7)] == "unknown"
    assert texts[session_id(5)] == "unknown"  # local/llama on openrouter: no price
    assert texts[session_id(1)] == format_money(Decimal("0.0002")) == "$0.0002"
    assert "$0.00" not in texts.values()
    row7 = next(r for r in range(40) if model.row(r).key == session_id(7))
    assert model.data(model.index(row7, COST), Qt.ItemDataRole.FontRole).italic()
    tooltip = model.data(model.index(row7, COST), Qt.ItemDataRole.ToolTipRole)
    assert "unknown" in tooltip
    assert "Settings → Prices" in tooltip
    assert model.data(model.index(0, 9)) == "16.1%"  # 200 / (1039 + 200)
    assert isinstance(model.data(model.index(0, 0), RowRole).cost, Decimal | None)
    assert "40 sessions" in view.summary_label.text()
    assert "+ " in view.summary_label.text()
    assert "unknown" in view.summary_label.text()


def test_the_way_from_unknown_to_a_price(qtbot: QtBot, view: CostView) -> None:
    assert view.unknown_label.isVisibleTo(view)
    assert "Set a price" in view.unknown_label.text()
    with qtbot.waitSignal(view.set_price_requested) as signal:
        view.unknown_label.linkActivated.emit("set-price")
    provider, model = signal.args
    assert provider == "openrouter"
    assert model in ("vendor/model-a", "vendor/model-b", "local/llama")
    row = next(r for r in range(view.model_totals.rowCount()) if view.model_totals.row(r).model == "local/llama")
    with qtbot.waitSignal(view.set_price_requested) as signal:
        view.by_model.activated.emit(view.model_totals.index(row, 0))
    assert signal.args == ["openrouter", "local/llama"]


def test_sorting_by_cost_puts_unknown_last_and_keeps_the_selection(qtbot: QtBot, view: CostView) -> None:
    _select_and_wait(qtbot, view, [3])
    view.table.sortByColumn(COST, Qt.SortOrder.AscendingOrder)
    costs = [view.sessions_model.row(r).cost for r in range(40)]
    known = [c for c in costs if c is not None]
    assert costs[: len(known)] == sorted(known)
    assert all(c is None for c in costs[len(known) :])
    assert [r.key for r in view.selected_rows()] == [session_id(3)]
    view.table.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    titles = [(view.sessions_model.row(r).title or "").casefold() for r in range(40)]
    assert titles == sorted(titles)


def test_cost_per_run_and_cache_write_columns_sort_with_unknown_last(conn: sqlite3.Connection) -> None:
    rows = cost_rows(conn)
    known = next(row for row in rows if row.cost == cost_of(1))
    unknown = next(row for row in rows if row.cost is None)
    two_runs = replace(known, key="two", runs=3, successful_runs=2, usage=replace(known.usage, cache_write=1234))
    partial = replace(known, key="partial", unknown_cost_requests=1)
    unanswered = replace(known, key="unanswered", successful_runs=0)
    model = session_model()
    model.set_rows([unknown, unanswered, two_runs, partial, known])
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    per_run, cache_write = headers.index("Cost per run"), headers.index("Cache write")

    def texts(column: int) -> dict[str, str]:
        return {model.row(r).key: model.data(model.index(r, column)) for r in range(model.rowCount())}

    assert texts(per_run) == {
        known.key: "$0.0002",
        "two": "$0.0001",  # $0.0002 over 2 answered runs
        "partial": "≥ $0.0002",  # a lower bound, as the cost is
        unknown.key: "unknown",  # never $0
        "unanswered": "—",  # no run answered: nothing to divide by
    }
    two_row = next(r for r in range(model.rowCount()) if model.row(r).key == "two")
    assert "2 answered run(s) of 3" in model.data(model.index(two_row, per_run), Qt.ItemDataRole.ToolTipRole)
    unknown_row = next(r for r in range(model.rowCount()) if model.row(r).key == unknown.key)
    assert model.data(model.index(unknown_row, per_run), Qt.ItemDataRole.FontRole).italic()
    assert texts(cache_write)["two"] == "1,234"
    model.sort(per_run, Qt.SortOrder.AscendingOrder)
    assert model.row(0).key == "two"
    assert {model.row(r).key for r in range(1, 3)} == {known.key, "partial"}
    assert {model.row(r).key for r in range(3, 5)} == {unknown.key, "unanswered"}  # unknown after known
    model.sort(cache_write, Qt.SortOrder.DescendingOrder)
    assert model.row(0).key == "two"
    comparison = ComparisonModel()
    comparison.set_sessions([unknown, two_runs])
    per_run_metric = next(
        r for r in range(comparison.rowCount()) if comparison.headerData(r, Qt.Orientation.Vertical) == "Cost per run"
    )
    assert [comparison.data(comparison.index(per_run_metric, c)) for c in range(2)] == ["unknown", "$0.0001"]


def test_selection_drives_comparison_models_and_chart(qtbot: QtBot, view: CostView) -> None:
    view.show()
    assert view.compare_hint.isVisible()  # nothing selected: how to compare, not an empty table
    assert not view.comparison.isVisible()
    view.chart_mode.setCurrentText(PER_SESSION)
    _select_and_wait(qtbot, view, [1, 2, 7])
    assert view.comparison.isVisible()
    assert not view.compare_hint.isVisible()
    assert [r.key for r in view.selected_rows()] == [session_id(n) for n in (7, 2, 1)]
    comparison = view.comparison_model
    assert comparison.columnCount() == 3
    assert comparison.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) == title_of(7)
    cost_row = next(
        r for r in range(comparison.rowCount()) if comparison.headerData(r, Qt.Orientation.Vertical) == "Cost"
    )
    assert [comparison.data(comparison.index(cost_row, c)) for c in range(3)] == [
        "unknown",
        "unknown",
        format_money(Decimal("0.0002")),
    ]
    totals = {row.model: row for row in view.model_totals.rows()}
    assert set(totals) == {"vendor/model-b", "local/llama"}  # sessions 1 and 7; session 2
    assert (totals["vendor/model-b"].cost, totals["vendor/model-b"].unknown_cost_requests) == (cost_of(1), 1)
    assert totals["local/llama"].cost is None
    chart = view.bar_chart
    assert [bar.label for bar in chart.bars] == [title_of(n) for n in (7, 2, 1)]
    assert [bar.cost for bar in chart.bars] == [None, None, cost_of(1)]
    with qtbot.waitSignal(view.selection_loaded, timeout=TIMEOUT):
        view.chart_mode.setCurrentText(PER_MODEL)
    assert [(bar.cost, bar.value_text) for bar in chart.bars] == [
        (cost_of(1), "≥ $0.0002 + 1 unknown"),
        (None, "unknown"),
    ]
    assert not chart.grab().isNull()
    view.table.selectionModel().clearSelection()
    assert view.comparison_model.columnCount() == 0
    assert view.compare_hint.isVisible()
    assert sum(row.requests for row in view.model_totals.rows()) == 40


def test_what_if_shows_an_estimate_beside_the_actual(qtbot: QtBot, view: CostView) -> None:
    _select_and_wait(qtbot, view, [1, 4])
    index = next(i for i in range(view.what_if_combo.count()) if view.what_if_combo.itemData(i) is not None)
    with qtbot.waitSignal(view.selection_loaded, timeout=TIMEOUT):
        view.what_if_combo.setCurrentIndex(index)
    comparison = view.comparison_model
    headers = [comparison.headerData(r, Qt.Orientation.Vertical) for r in range(comparison.rowCount())]
    assert headers[2:4] == ["Cost", f"On {' · '.join(view.what_if_combo.itemData(index))}"]
    assert comparison.data(comparison.index(3, 0)) == "no price"  # none of the generated models has one
    assert "no estimate" in comparison.data(comparison.index(3, 0), Qt.ItemDataRole.ToolTipRole)


def test_date_range_narrows_every_table(qtbot: QtBot, view: CostView) -> None:
    day = datetime.fromtimestamp((T0 + 39_000) / 1000).date()
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.range_combo.setCurrentText("Custom")
    assert view.since_edit.isEnabled()
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.since_edit.setDate(day + timedelta(days=1))
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.until_edit.setDate(day + timedelta(days=2))
    assert view.sessions_model.rowCount() == 0
    assert view.day_totals.rowCount() == 0
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.since_edit.setDate(day - timedelta(days=1))
    assert view.sessions_model.rowCount() == 40
    assert [row.key for row in view.day_totals.rows()] == sorted({row.key for row in view.day_totals.rows()})


def test_export_csv_agrees_with_the_command_line(
    qtbot: QtBot,
    view: CostView,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path))  # the CLI opens index.sqlite3 there: the view's
    view.table.sortByColumn(COST, Qt.SortOrder.DescendingOrder)
    path = tmp_path / "out.csv"
    with qtbot.waitSignal(view.exported, timeout=TIMEOUT):
        view.export_csv(path)
    assert view.summary_label.text() == "Exported 40 sessions to out.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    assert [r["key"] for r in records] == [view.sessions_model.row(n).key for n in range(40)]
    by_id = {r["key"]: r for r in records}
    assert by_id[session_id(7)]["cost_usd"] == "unknown"
    assert by_id[session_id(1)]["cost_usd"] == str(cost_of(1)) == "0.0002"
    assert "0" not in {by_id[session_id(n)]["cost_usd"] for n in (0, 5, 7, 14)}
    assert cli_main(["cost", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {row["key"]: row["cost"] or "unknown" for row in rows} == {r["key"]: r["cost_usd"] for r in records}
    shown = {view.sessions_model.row(n).key: view.sessions_model.row(n).cost for n in range(40)}
    assert {row["key"]: None if row["cost"] is None else Decimal(row["cost"]) for row in rows} == shown


def test_export_dialog_saves_where_the_user_chose(
    qtbot: QtBot, view: CostView, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "chosen.csv"
    monkeypatch.setattr(
        "tiny_agent_gui.cost.view.QFileDialog.getSaveFileName", lambda *args, **kwargs: (str(target), "CSV (*.csv)")
    )
    with qtbot.waitSignal(view.exported, timeout=TIMEOUT):
        view.export_button.click()
    assert target.read_text(encoding="utf-8").startswith("key,label,")
    assert "Exported 40 sessions" in view.summary_label.text()


def test_an_export_that_cannot_be_written_says_why_in_the_view(qtbot: QtBot, view: CostView, tmp_path: Path) -> None:
    with qtbot.waitSignal(view.exported, timeout=TIMEOUT):
        view.export_csv(tmp_path / "missing" / "costs.csv")
    assert view.summary_label.text() == (
        "Nothing was exported to costs.csv: No such file or directory. Choose another folder."
    )


def test_activating_a_row_names_its_session(qtbot: QtBot, view: CostView) -> None:
    with qtbot.waitSignal(view.session_activated) as signal:
        view.table.activated.emit(view.sessions_model.index(0, 0))
    assert signal.args == [session_id(39)]


def test_workspace_filter_and_reload(qtbot: QtBot, view: CostView, conn: sqlite3.Connection, tmp_path: Path) -> None:
    add_sessions(conn, tmp_path / "other", 2, first=100)
    _reload(qtbot, view)
    assert view.sessions_model.rowCount() == 42
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.set_workspace(tmp_path / "other")
    assert [r.key for r in view.sessions_model.rows()] == [session_id(101), session_id(100)]
    assert sum(row.requests for row in view.model_totals.rows()) == 2
    with qtbot.waitSignal(view.loaded, timeout=TIMEOUT):
        view.set_workspace(None)
    assert view.sessions_model.rowCount() == 42


def test_not_billed_and_local_say_so(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    workspace = tmp_path / "ws"
    limited = SessionFile(workspace, 1, created_at=T0, model="gpt-4o", provider="openai")
    limited.user("limited")
    limited.attempt()
    limited.fail(message="HTTP 429: slow down")
    local = SessionFile(workspace, 2, created_at=T0 + 1, model="llama3", provider="ollama")
    local.user("local")
    local.attempt()
    local.answer("ok", usage=None)
    conn = connect(tmp_path / "index.sqlite3")
    scan_workspace(conn, workspace)
    view = CostView(conn, load=False)
    qtbot.addWidget(view)
    _reload(qtbot, view)
    texts = {
        view.sessions_model.row(r).title: view.sessions_model.data(view.sessions_model.index(r, COST)) for r in (0, 1)
    }
    assert texts == {"limited": "not billed", "local": "local — no API charge"}
    assert not view.unknown_label.isVisibleTo(view)
    conn.close()


def _colours(image: QImage) -> set[str]:
    assert not image.isNull()
    return {image.pixelColor(x, y).name() for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)}


def test_bar_chart_draws_unknown_as_a_small_marker_not_a_bar(qtbot: QtBot) -> None:
    chart = CostBarChart()
    qtbot.addWidget(chart)
    chart.resize(500, 200)
    chart.set_bars("test", [Bar("known", Decimal("2")), Bar("partial", Decimal("1"), 3), Bar("none", None, 2)])
    assert [bar.value_text for bar in chart.bars] == ["$2.00", "≥ $1.00 + 3 unknown", "unknown"]
    assert "none: unknown" in chart.accessibleDescription()
    assert QColor(CostBarChart.BAR_COLOR).name() in _colours(chart.grab().toImage())
    chart.set_bars("only unknown", [Bar("none", None, 1)])
    image = chart.grab().toImage()
    assert QColor(CostBarChart.BAR_COLOR).name() not in _colours(image)
    background = image.pixelColor(image.width() - 20, image.height() // 3).name()
    right_half = {
        image.pixelColor(x, y).name() for x in range(image.width() // 2, image.width() - 10) for y in range(20, 40)
    }
    assert right_half == {background}  # nothing drawn across the plot: unknown is not the widest bar
    chart.set_bars("empty", [])
    assert not chart.grab().isNull()
    assert cost_text(None) == "cost unknown"


def test_daily_chart_stacks_models_and_marks_unknown_days(qtbot: QtBot) -> None:
    chart = DailyCostChart()
    qtbot.addWidget(chart)
    chart.resize(600, 300)
    first = date(2026, 11, 2)
    days = [
        Day(first, (DaySegment("openai · gpt-4o", Decimal("0.5")), DaySegment("deepseek · chat", Decimal("0.1")))),
        Day(first + timedelta(days=1), (), 2),
        Day(first + timedelta(days=2), (DaySegment("openai · gpt-4o", Decimal("1")),)),
    ]
    chart.set_days("Cost per day", days)
    assert chart.series == ["openai · gpt-4o", "deepseek · chat"]
    assert "2026-11-03: $0.00 + 2 unknown" in chart.accessibleDescription()
    colours = _colours(chart.grab().toImage())
    assert chart.color("openai · gpt-4o").name() in colours
    assert chart.color("deepseek · chat").name() in colours
    many = [Day(first, tuple(DaySegment(f"m{n}", Decimal(n + 1)) for n in range(10)))]
    chart.set_days("many", many)
    assert chart.series[-1] == "other"
    assert len(chart.series) == DailyCostChart.MAX_SERIES + 1
