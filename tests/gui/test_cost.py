"""The cost view: model contracts, sorting, selection → comparison and per-model totals, chart, CSV export."""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QColor, QImage
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from tests.gui.test_sessions_data import add_sessions, cost_of, session_id, title_of
from tiny_agent_core.ledger import connect
from tiny_agent_core.ledger.costs import model_cost_rows, session_cost_rows
from tiny_agent_gui.cost import Bar, ComparisonModel, CostBarChart, CostView, ModelCostModel, SessionCostModel
from tiny_agent_gui.cost.formatting import cost_text, format_money
from tiny_agent_gui.cost.models import RowRole

COST = 7  # column of the sessions table


@pytest.fixture
def conn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[sqlite3.Connection]:
    """A migrated index in ``tmp_path`` with 40 generated sessions."""
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    connection = connect(tmp_path / "index.sqlite3")
    add_sessions(connection, tmp_path / "project", 40)
    yield connection
    connection.close()


@pytest.fixture
def view(qtbot: QtBot, conn: sqlite3.Connection) -> CostView:
    """A shown cost view."""
    widget = CostView(conn)
    qtbot.addWidget(widget)
    widget.resize(1100, 700)
    with qtbot.waitExposed(widget):
        widget.show()
    return widget


def _select(view: CostView, numbers: list[int]) -> None:
    selection = view.table.selectionModel()
    selection.clearSelection()
    for number in numbers:
        row = next(
            r
            for r in range(view.sessions_model.rowCount())
            if view.sessions_model.row(r).session_id == session_id(number)
        )
        selection.select(
            view.sessions_model.index(row, 0),
            QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows,
        )


def test_models_pass_the_model_tester(qtmodeltester: ModelTester, conn: sqlite3.Connection) -> None:
    sessions = SessionCostModel()
    sessions.set_rows(session_cost_rows(conn))
    qtmodeltester.check(sessions)
    sessions.sort(COST, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(sessions)
    comparison = ComparisonModel()
    comparison.set_sessions(session_cost_rows(conn)[:3])
    qtmodeltester.check(comparison)
    models = ModelCostModel()
    models.set_rows(model_cost_rows(conn))
    qtmodeltester.check(models)
    models.sort(0, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(models)


def test_rows_newest_first_and_unknown_never_zero(view: CostView) -> None:
    model = view.sessions_model
    assert model.rowCount() == 40
    assert model.row(0).session_id == session_id(39)
    texts = {model.row(r).session_id: model.data(model.index(r, COST)) for r in range(40)}
    assert texts[session_id(7)] == "unknown"
    assert texts[session_id(5)] == "unknown"  # local model: no price
    assert texts[session_id(1)] == format_money(Decimal("0.0002")) == "$0.0002"
    assert not any(text.startswith("$0.00") and text == "$0.00" for text in texts.values())
    row7 = next(r for r in range(40) if model.row(r).session_id == session_id(7))
    assert model.data(model.index(row7, COST), Qt.ItemDataRole.FontRole).italic()
    assert "unknown" in model.data(model.index(row7, COST), Qt.ItemDataRole.ToolTipRole)
    assert model.data(model.index(row7, 8)) == "unknown"  # cost per run
    assert model.data(model.index(row7, 9)) == "1"
    assert model.data(model.index(0, 6)) == "16.1%"  # 200 / (1039 + 200)
    assert isinstance(model.data(model.index(0, 0), RowRole).cost, Decimal | None)
    assert "40 sessions" in view.summary_label.text()
    assert "unknown" in view.summary_label.text()


def test_sorting_by_cost_puts_unknown_last_and_keeps_the_selection(view: CostView) -> None:
    _select(view, [3])
    view.table.sortByColumn(COST, Qt.SortOrder.AscendingOrder)
    costs = [view.sessions_model.row(r).cost for r in range(40)]
    known = [c for c in costs if c is not None]
    assert costs[: len(known)] == sorted(known)
    assert all(c is None for c in costs[len(known) :])
    assert [r.session_id for r in view.selected_rows()] == [session_id(3)]
    view.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    titles = [view.sessions_model.row(r).title.casefold() for r in range(40)]
    assert titles == sorted(titles)


def test_selection_drives_comparison_models_and_chart(view: CostView) -> None:
    _select(view, [1, 2, 7])
    assert [r.session_id for r in view.selected_rows()] == [session_id(n) for n in (7, 2, 1)]
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
    assert set(totals) == {"anthropic/claude-sonnet", "local/llama"}  # sessions 1 and 7; session 2
    assert (totals["anthropic/claude-sonnet"].cost, totals["anthropic/claude-sonnet"].unknown_cost_requests) == (
        cost_of(1),
        1,
    )
    assert totals["local/llama"].cost is None
    assert [bar.label for bar in view.chart.bars] == [title_of(n) for n in (7, 2, 1)]
    assert [bar.cost for bar in view.chart.bars] == [None, None, cost_of(1)]
    view.chart_mode.setCurrentText("Cost per model")
    assert [(bar.cost, bar.value_text) for bar in view.chart.bars] == [(cost_of(1), "≥ $0.0002"), (None, "unknown")]
    assert not view.chart.grab().isNull()
    view.table.selectionModel().clearSelection()
    assert view.comparison_model.columnCount() == 0
    assert sum(row.requests for row in view.model_totals.rows()) == 40


def test_export_csv_writes_the_listed_rows_exactly(view: CostView, tmp_path: Path) -> None:
    view.table.sortByColumn(COST, Qt.SortOrder.DescendingOrder)
    path = tmp_path / "out.csv"
    assert view.export_csv(path) == 40
    with path.open(newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    assert [r["session_id"] for r in records] == [view.sessions_model.row(n).session_id for n in range(40)]
    by_id = {r["session_id"]: r for r in records}
    assert by_id[session_id(7)]["cost_usd"] == "unknown"
    assert by_id[session_id(1)]["cost_usd"] == str(cost_of(1)) == "0.0002"
    assert by_id[session_id(1)]["cost_per_run_usd"] == "0.0002"
    assert "0" not in {by_id[session_id(n)]["cost_usd"] for n in (0, 5, 7, 14)}


def test_export_dialog_saves_where_the_user_chose(
    view: CostView, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "chosen.csv"
    monkeypatch.setattr(
        "tiny_agent_gui.cost.view.QFileDialog.getSaveFileName", lambda *args, **kwargs: (str(target), "CSV (*.csv)")
    )
    view.export_button.click()
    assert target.read_text(encoding="utf-8").startswith("session_id,title,")
    assert "Exported 40 sessions" in view.summary_label.text()


def test_activating_a_row_names_its_session(qtbot: QtBot, view: CostView) -> None:
    with qtbot.waitSignal(view.session_activated) as signal:
        view.table.activated.emit(view.sessions_model.index(0, 0))
    assert signal.args == [session_id(39)]


def test_workspace_filter_and_reload(view: CostView, conn: sqlite3.Connection, tmp_path: Path) -> None:
    add_sessions(conn, tmp_path / "other", 2, first=100)
    view.reload()
    assert view.sessions_model.rowCount() == 42
    view.set_workspace(tmp_path / "other")
    assert [r.session_id for r in view.sessions_model.rows()] == [session_id(101), session_id(100)]
    assert sum(row.requests for row in view.model_totals.rows()) == 2
    view.set_workspace(None)
    assert view.sessions_model.rowCount() == 42


def _colours(image: QImage) -> set[str]:
    assert not image.isNull()
    return {image.pixelColor(x, y).name() for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)}


def test_chart_draws_unknown_hatched_not_as_zero(qtbot: QtBot) -> None:
    chart = CostBarChart()
    qtbot.addWidget(chart)
    chart.resize(500, 200)
    chart.set_bars("test", [Bar("known", Decimal("2")), Bar("partial", Decimal("1"), 3), Bar("none", None, 2)])
    assert [bar.value_text for bar in chart.bars] == ["$2.00", "≥ $1.00", "unknown"]
    assert "none: unknown" in chart.accessibleDescription()
    assert QColor(CostBarChart.BAR_COLOR).name() in _colours(chart.grab().toImage())
    chart.set_bars("only unknown", [Bar("none", None, 1)])
    assert QColor(CostBarChart.BAR_COLOR).name() not in _colours(chart.grab().toImage())  # hatched, no bar
    chart.set_bars("empty", [])
    assert not chart.grab().isNull()
    assert cost_text(None) == "cost unknown"
