"""The session list: model contract, lazy pages, search, workspace filter, status marks, cost text, the pane."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QPixmap
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from tests.core.ledger.sessionfiles import SessionFile
from tests.gui.test_sessions_data import T0, add_sessions, session_id, title_of
from tiny_agent_core.ledger import Cost, LiveRequest, SessionSummary, connect, get_session, record_live, scan_workspace
from tiny_agent_gui.sessions import SessionListModel, SessionListPane, SessionStatus, status_of

NOW = T0 + 10_000_000


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated index in ``tmp_path`` (the real data folder is never touched)."""
    connection = connect(tmp_path / "index.sqlite3")
    yield connection
    connection.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An (empty) workspace folder."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _model(conn: sqlite3.Connection, page_size: int = SessionListModel.PAGE_SIZE) -> SessionListModel:
    return SessionListModel(conn, clock=lambda: NOW, page_size=page_size)


def _titles(model: SessionListModel) -> list[str]:
    return [model.data(model.index(row)) for row in range(model.rowCount())]


def test_model_passes_the_model_tester(qtmodeltester: ModelTester, conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 30)
    model = _model(conn, page_size=10)
    qtmodeltester.check(model)
    while model.canFetchMore(QModelIndex()):
        model.fetchMore(QModelIndex())
    assert model.rowCount() == 30
    model.set_search("flaky")
    qtmodeltester.check(model)


def test_only_the_first_page_is_loaded_until_the_view_asks(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 1000)
    model = _model(conn)
    assert model.rowCount() == 200
    assert model.canFetchMore(QModelIndex())
    assert model.data(model.index(0), SessionListModel.SessionRole).id == session_id(999)  # newest first
    for expected in (400, 600, 800, 1000):
        model.fetchMore(QModelIndex())
        assert model.rowCount() == expected
    model.fetchMore(QModelIndex())  # the last page was full: one more (empty) query finds the end
    assert model.rowCount() == 1000
    assert not model.canFetchMore(QModelIndex())
    created = [model.summary(row).created_at for row in range(1000)]
    assert created == sorted(created, reverse=True)
    assert not model.canFetchMore(model.index(0))


def test_a_session_indexed_between_pages_is_not_listed_twice(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 50)
    model = _model(conn, page_size=20)
    add_sessions(conn, workspace, 1, first=500)  # newest: shifts every offset by one
    model.fetchMore(QModelIndex())
    ids = [model.summary(row).id for row in range(model.rowCount())]
    assert len(ids) == len(set(ids)) == 39
    model.reload()
    assert model.summary(0).id == session_id(500)


def test_search_filters_titles_and_content(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 300)
    model = _model(conn)
    model.set_search("generated body 123")
    assert _titles(model) == [title_of(123)]
    model.set_search(title_of(42))
    assert _titles(model) == [title_of(42)]
    model.set_search("no such words anywhere")
    assert model.rowCount() == 0
    assert not model.canFetchMore(QModelIndex())
    model.set_search("")
    assert model.rowCount() == 200


def test_workspace_filter(conn: sqlite3.Connection, workspace: Path, tmp_path: Path) -> None:
    add_sessions(conn, workspace, 5)
    other = tmp_path / "other"
    add_sessions(conn, other, 3, first=100)
    model = _model(conn)
    assert model.rowCount() == 8
    model.set_workspace(other)
    assert [model.summary(row).id for row in range(3)] == [session_id(n) for n in (102, 101, 100)]
    assert model.data(model.index(0), SessionListModel.WorkspaceRole) == "other"
    model.set_workspace(None)
    assert model.rowCount() == 8


def _summary(conn: sqlite3.Connection, number: int) -> SessionSummary:
    summary = get_session(conn, session_id(number))
    assert summary is not None
    return summary


def test_status_marks(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 40)
    assert status_of(_summary(conn, 22), running=False) is SessionStatus.INTERRUPTED  # open run, nobody runs it
    assert status_of(_summary(conn, 22), running=True) is SessionStatus.RUNNING
    assert status_of(_summary(conn, 26), running=False) is SessionStatus.FAILED
    assert status_of(_summary(conn, 34), running=False) is SessionStatus.ABORTED
    assert status_of(_summary(conn, 1), running=False) is SessionStatus.NONE
    model = _model(conn)
    row = model.row_of(session_id(22))
    assert row is not None
    index = model.index(row)
    assert index.data(SessionListModel.StatusRole) is SessionStatus.INTERRUPTED
    assert "interrupted" in index.data(Qt.ItemDataRole.AccessibleTextRole)
    changed: list[int] = []
    model.dataChanged.connect(lambda top, bottom, roles=(): changed.append(top.row()))
    model.set_running([session_id(22)])
    assert changed == [row]
    assert index.data(SessionListModel.StatusRole) is SessionStatus.RUNNING


def test_cost_text_never_shows_unknown_as_zero(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 30)
    model = _model(conn)
    texts = {model.summary(row).id: model.data(model.index(row), SessionListModel.CostTextRole) for row in range(30)}
    assert texts[session_id(14)] == "cost unknown"  # every seventh is unknown
    assert texts[session_id(2)] == "cost unknown"  # local model
    assert texts[session_id(1)] == "$0.0002"
    assert all(text != "$0.00" and "$0 " not in text for text in texts.values())
    index = model.index(model.row_of(session_id(14)) or 0)
    assert "Cost: unknown" in index.data(Qt.ItemDataRole.ToolTipRole)
    assert "cost unknown" in index.data(Qt.ItemDataRole.AccessibleTextRole)
    assert index.data(SessionListModel.RelativeTimeRole) == "2 h ago"


def test_refresh_session_updates_one_row(conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 3)
    model = _model(conn)
    conn.execute("UPDATE sessions SET cost_total = '1.5', cost_unknown_requests = 0 WHERE id = ?", (session_id(0),))
    assert model.refresh_session(session_id(0))
    row = model.row_of(session_id(0))
    assert row is not None
    assert model.summary(row).cost == Decimal("1.5")
    assert model.data(model.index(row), SessionListModel.CostTextRole) == "$1.50"
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id(1),))
    assert model.refresh_session(session_id(1))
    assert model.rowCount() == 2
    assert model.row_of(session_id(0)) == 1
    assert not model.refresh_session("unknown-id")


def test_pane_search_activation_and_new_session(qtbot: QtBot, conn: sqlite3.Connection, workspace: Path) -> None:
    add_sessions(conn, workspace, 1000)
    pane = SessionListPane(conn)
    qtbot.addWidget(pane)
    pane.resize(360, 600)
    with qtbot.waitActive(pane):
        pane.show()
        pane.activateWindow()
    assert pane.model.rowCount() == 200
    assert pane.workspace_combo.count() == 2
    for widget in (pane, pane.search_box, pane.list_view, pane.workspace_combo, pane.new_button):
        assert widget.accessibleName()

    qtbot.keyClick(pane.list_view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.search_box.hasFocus()
    qtbot.keyClicks(pane.search_box, "generated body 777")
    qtbot.waitUntil(lambda: pane.model.rowCount() == 1, timeout=2000)
    assert pane.model.search == "generated body 777"

    qtbot.keyClick(pane.search_box, Qt.Key.Key_Down)
    assert pane.list_view.hasFocus()
    with qtbot.waitSignal(pane.session_activated) as activated:
        qtbot.keyClick(pane.list_view, Qt.Key.Key_Return)
    assert activated.args is not None
    assert activated.args[0].id == session_id(777)

    pane.search_box.setFocus()
    qtbot.keyClick(pane.search_box, Qt.Key.Key_Escape)
    assert pane.search_box.text() == ""
    pane.apply_search()
    assert pane.model.rowCount() == 200

    pane.search_box.setText("nothing like this")
    pane.apply_search()
    assert pane.list_view.isHidden()
    assert not pane.empty_label.isHidden()
    assert "nothing like this" in pane.empty_label.text()
    pane.search_box.clear()
    pane.apply_search()

    with qtbot.waitSignal(pane.new_session_requested):
        qtbot.mouseClick(pane.new_button, Qt.MouseButton.LeftButton)
    assert not pane.grab().isNull()


def test_pane_scrolling_fetches_more_and_reload_sees_new_sessions(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    add_sessions(conn, workspace, 1000)
    pane = SessionListPane(conn)
    qtbot.addWidget(pane)
    pane.resize(360, 600)
    with qtbot.waitExposed(pane):
        pane.show()
    pane.list_view.scrollToBottom()
    qtbot.waitUntil(lambda: pane.model.rowCount() > 200, timeout=2000)
    add_sessions(conn, tmp_path / "second", 2, first=5000)
    pane.reload()
    assert pane.workspace_combo.count() == 3
    assert pane.model.summary(0).id == session_id(5001)
    pane.set_workspace(tmp_path / "second")
    assert pane.model.rowCount() == 2
    assert pane.workspace_combo.currentText() == "second"
    assert pane.select_session(session_id(5000))
    assert pane.list_view.currentIndex().row() == 1
    pane.set_running_sessions([session_id(5000)])
    pane.refresh_session(session_id(5000))
    pane.set_workspace(None)
    assert pane.model.rowCount() == 200
    pixmap: QPixmap = pane.grab()
    assert not pixmap.isNull()


def test_pane_starts_empty(qtbot: QtBot, conn: sqlite3.Connection) -> None:
    pane = SessionListPane(conn)
    qtbot.addWidget(pane)
    pane.show()
    assert pane.model.rowCount() == 0
    assert "No sessions yet" in pane.empty_label.text()
    assert not pane.empty_label.isHidden()


def test_a_rate_limited_request_neither_fails_the_session_nor_makes_its_cost_unknown(
    conn: sqlite3.Connection, workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A 429 is not billed (no "+1 unknown"), and the status mark is the last run's outcome, not any failure."""
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    session = SessionFile(workspace, 1, created_at=T0, model="gpt-4o", provider="openai")
    session.user("too fast")
    session.attempt()
    session.fail(message="HTTP 429: rate limited — retry later.")
    session.user("again")
    session.attempt()
    session.answer("fine", usage=(1000, 10, 0, 0))
    partly = SessionFile(workspace, 2, created_at=T0 + 1, model="nobody/model")
    partly.user("no price")
    reported = partly.attempt()
    partly.call_read("a.txt", usage=(1, 1, 0, 0))
    partly.attempt()
    partly.answer("?", usage=(1, 1, 0, 0))
    scan_workspace(conn, workspace)
    record_live(conn, LiveRequest(reported, cost=Cost(Decimal("0.5"), "provider")))
    model = _model(conn)
    row = model.row_of(session.id)
    assert row is not None
    index = model.index(row)
    assert index.data(SessionListModel.StatusRole) is SessionStatus.NONE
    text = index.data(SessionListModel.CostTextRole)
    assert text.startswith("$")
    assert "unknown" not in text
    partial = model.index(model.row_of(partly.id) or 0)
    assert partial.data(SessionListModel.CostTextRole) == "≥ $0.50 + 1 unknown"
