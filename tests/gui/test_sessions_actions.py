"""The session list you can manage: date groups and pins, short model tags that cost text cannot push out, the
context menu and its keys (F2, Del, Menu, Shift+F10), rename/pin/delete+undo/export/duplicate/import round trips
on real files, and a new session listed with a running mark on its first submit (the real window, loopback)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontMetrics
from PySide6.QtWidgets import QFileDialog
from pytestqt.qtbot import QtBot

from tests.core.ledger.sessionfiles import SessionFile
from tests.gui.waiting import activated, emitted
from tiny_agent_core.fork import fork_before
from tiny_agent_core.ledger import connect, get_session, list_sessions, scan_workspace
from tiny_agent_core.ledger.index import set_session_meta
from tiny_agent_core.ledger.rebuild import rebuild
from tiny_agent_core.session_meta import SessionMeta, meta_path
from tiny_agent_gui.sessions import SessionListModel, SessionListPane
from tiny_agent_gui.sessions.delegate import GAP, SEPARATOR, second_line
from tiny_agent_gui.shortcuts_dialog import FIXED_KEYS

NOW = int(datetime(2026, 11, 20, 12, 0).timestamp() * 1000)
HOUR = 3_600_000
DAY = 24 * HOUR


@pytest.fixture
def trash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The desktop trash of this test (freedesktop layout under XDG_DATA_HOME)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "Trash"


@pytest.fixture
def conn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trash: Path) -> Iterator[sqlite3.Connection]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    connection = connect(tmp_path / "index.sqlite3")
    yield connection
    connection.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _session(workspace: Path, number: int, created_at: int, prompt: str, model: str = "vendor/model-a") -> SessionFile:
    session = SessionFile(workspace, number, created_at=created_at, model=model)
    session.user(prompt)
    session.attempt()
    session.answer(f"answer {number}", usage=(100, 10, 0, 0))
    return session


def _new_pane(qtbot: QtBot, conn: sqlite3.Connection, width: int) -> SessionListPane:
    pane = SessionListPane(conn, clock=lambda: NOW)  # the date groups of a fixed moment
    qtbot.addWidget(pane)
    pane.resize(width, 600)
    return pane


def _pane(qtbot: QtBot, conn: sqlite3.Connection, width: int = 320) -> SessionListPane:
    pane = _new_pane(qtbot, conn, width)
    with qtbot.waitActive(pane):  # keys reach the list's shortcuts only in the active window
        pane.show()
        pane.activateWindow()
    return pane


async def _active_pane(qtbot: QtBot, conn: sqlite3.Connection, width: int = 320) -> SessionListPane:
    """:func:`_pane` for an async test, which may not spin a nested Qt loop (tests/gui/waiting.py)."""
    pane = _new_pane(qtbot, conn, width)
    await activated(pane)
    return pane


def _column(model: SessionListModel, role: int) -> list[object]:
    return [model.index(row).data(role) for row in range(model.rowCount())]


# -- rows --------------------------------------------------------------------------------------------------------


def test_date_groups_pinned_on_top_and_the_keyboard_skips_headers(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path
) -> None:
    ages = {"today": HOUR, "yesterday": DAY, "three days": 3 * DAY, "ten days": 10 * DAY, "october": 40 * DAY}
    for number, (prompt, age) in enumerate(ages.items(), start=1):
        _session(workspace, number, NOW - age, prompt)
    old = _session(workspace, 9, NOW - 100 * DAY, "pinned long ago")
    scan_workspace(conn, workspace)
    set_session_meta(conn, old.path, SessionMeta(pinned=True))
    pane = _pane(qtbot, conn)
    model = pane.model
    assert _column(model, Qt.ItemDataRole.DisplayRole) == ["pinned long ago", *ages]
    assert _column(model, SessionListModel.GroupRole) == [
        "Pinned",
        "Today",
        "Yesterday",
        "Previous 7 days",
        "November 2026",
        "October 2026",
    ]
    assert all(_column(model, SessionListModel.GroupStartRole))
    # A header is painted above its group's first row; it is not a row: every row is a session, selectable.
    heights = [pane.list_view.visualRect(model.index(r)).height() for r in range(2)]
    assert heights[0] == heights[1] > QFontMetrics(pane.list_view.font()).height() * 3
    pane.list_view.setFocus()
    pane.list_view.setCurrentIndex(model.index(0))
    visited = [0]
    for _ in range(model.rowCount() - 1):
        qtbot.keyClick(pane.list_view, Qt.Key.Key_Down)
        visited.append(pane.list_view.currentIndex().row())
    assert visited == list(range(model.rowCount()))
    assert all(model.flags(model.index(r)) & Qt.ItemFlag.ItemIsSelectable for r in range(model.rowCount()))


def test_a_second_session_of_a_day_does_not_repeat_the_header(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path
) -> None:
    _session(workspace, 1, NOW - HOUR, "first")
    _session(workspace, 2, NOW - 2 * HOUR, "second")
    scan_workspace(conn, workspace)
    pane = _pane(qtbot, conn)
    assert _column(pane.model, SessionListModel.GroupStartRole) == [True, False]
    first, second = (pane.list_view.visualRect(pane.model.index(r)).height() for r in range(2))
    assert first > second


TAGS = {
    "anthropic/claude-sonnet-4.5": "sonnet-4.5",
    "gpt-4o-2024-08-06": "gpt-4o",
    "qwen2.5-coder:7b": "qwen2.5-coder",
    "deepseek/deepseek-chat": "deepseek-chat",
}


def test_the_model_tag_is_never_pushed_out_by_the_cost_at_the_lists_real_width(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path
) -> None:
    for number, model_id in enumerate(TAGS, start=1):
        _session(workspace, number, NOW - number * HOUR, f"a long title for session {number} " * 3, model=model_id)
    scan_workspace(conn, workspace)
    window_width = 1024  # the main window gives the list 22 % of it, at least 200 px
    pane = _pane(qtbot, conn, width=max(200, window_width * 22 // 100))
    model = pane.model
    assert sorted(_column(model, SessionListModel.ModelNameRole)) == sorted(TAGS.values())
    metrics = QFontMetrics(pane.list_view.font())
    for row in range(model.rowCount()):
        index = model.index(row)
        width = pane.list_view.visualRect(index).adjusted(6, 6, -6, -6).width()
        tag = index.data(SessionListModel.ModelNameRole)
        for costs in (("$0.0042", "$0.0042"), ("≥ $0.0042 + 12 unknown", "≥ $0.0042"), ("cost unknown", "$?")):
            line = second_line(metrics, width, tag, index.data(SessionListModel.WorkspaceRole), costs, "3 h ago")
            assert line.model == tag
            used = sum(metrics.horizontalAdvance(part) for part in (line.model, line.right, GAP))
            if line.middle:
                used += metrics.horizontalAdvance(SEPARATOR + line.middle)
            assert used <= width
            assert line.right.endswith("3 h ago")  # the time stays; the cost gives way
            assert line.right.split(SEPARATOR)[0] in (*costs, "3 h ago")  # an amount is never cut short
    assert not pane.grab().isNull()


def test_the_workspace_shows_only_when_all_workspaces_are_listed(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path
) -> None:
    _session(workspace, 1, NOW - HOUR, "one")
    scan_workspace(conn, workspace)
    pane = _pane(qtbot, conn)
    delegate = pane.list_view.itemDelegate()
    assert delegate.show_workspace  # "All workspaces"
    pane.set_workspace(workspace)
    assert not delegate.show_workspace


# -- actions -----------------------------------------------------------------------------------------------------


def _select(pane: SessionListPane, session_id: str) -> None:
    assert pane.select_session(session_id)
    pane.list_view.setFocus()


def test_menu_key_and_shift_f10_open_the_context_menu(qtbot: QtBot, conn: sqlite3.Connection, workspace: Path) -> None:
    session = _session(workspace, 1, NOW - HOUR, "menu please")
    scan_workspace(conn, workspace)
    pane = _pane(qtbot, conn)
    _select(pane, session.id)
    for key, modifier in (
        (Qt.Key.Key_Menu, Qt.KeyboardModifier.NoModifier),
        (Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier),
    ):
        pane.context_menu = None
        qtbot.keyClick(pane.list_view, key, modifier)
        menu = pane.context_menu
        assert menu is not None
        qtbot.waitUntil(menu.isVisible, timeout=2000)
        texts = [action.text().replace("&", "") for action in menu.actions() if not action.isSeparator()]
        assert texts == [
            "Rename…",
            "Pin",
            "Duplicate",
            "Export as Markdown…",
            "Export as Session File (v2)…",
            "Reveal File",
            "Open in Cost View",
            "Delete",
        ]
        assert pane.rename_action.shortcut().toString() == "F2"
        assert pane.delete_action.shortcut().toString() == "Del"
        menu.close()


async def test_rename_with_f2_keeps_the_session_file_and_survives_a_rebuild(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    session = _session(workspace, 1, NOW - HOUR, "the first message")
    before = session.path.read_bytes()
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    _select(pane, session.id)
    qtbot.keyClick(pane.list_view, Qt.Key.Key_F2)
    dialog = pane.rename_dialog
    assert dialog is not None
    assert dialog.isVisible()
    assert dialog.textValue() == "the first message"
    dialog.setTextValue("Walrus plans")
    dialog.accept()
    await pane.wait_idle()
    row = pane.model.row_of(session.id)
    assert row is not None
    assert pane.model.index(row).data() == "Walrus plans"
    assert session.path.read_bytes() == before  # a title is metadata, not a fact
    assert json.loads(meta_path(session.path).read_text())["title"] == "Walrus plans"
    rebuild(conn)
    summary = get_session(conn, session.id)
    assert summary is not None
    assert summary.title == "Walrus plans"


async def test_pin_moves_a_session_to_the_pinned_group_and_back(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path
) -> None:
    _session(workspace, 1, NOW - HOUR, "newer")
    older = _session(workspace, 2, NOW - 3 * DAY, "older")
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    _select(pane, older.id)
    pane.pin_action.trigger()
    await pane.wait_idle()
    assert _column(pane.model, Qt.ItemDataRole.DisplayRole) == ["older", "newer"]
    assert pane.model.index(0).data(SessionListModel.GroupRole) == "Pinned"
    assert "pinned" in pane.model.index(0).data(Qt.ItemDataRole.AccessibleTextRole)
    _select(pane, older.id)
    pane.open_context_menu()
    assert pane.pin_action.text() == "Un&pin"
    pane.pin_action.trigger()
    await pane.wait_idle()
    assert _column(pane.model, Qt.ItemDataRole.DisplayRole) == ["newer", "older"]
    assert not meta_path(older.path).exists()  # nothing left to say: no sidecar


async def test_delete_goes_to_the_trash_and_undo_brings_everything_back(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, trash: Path
) -> None:
    keep = _session(workspace, 1, NOW - HOUR, "keep me")
    doomed = _session(workspace, 2, NOW - 2 * HOUR, "delete me")
    scan_workspace(conn, workspace)
    set_session_meta(conn, doomed.path, SessionMeta(title="Doomed", pinned=False))
    data = doomed.path.read_bytes()
    pane = await _active_pane(qtbot, conn)
    _select(pane, doomed.id)
    qtbot.keyClick(pane.list_view, Qt.Key.Key_Delete)
    await pane.wait_idle()
    assert not doomed.path.exists()
    assert not meta_path(doomed.path).exists()
    assert (trash / "files" / doomed.path.name).read_bytes() == data
    assert _column(pane.model, Qt.ItemDataRole.DisplayRole) == ["keep me"]
    assert pane.notice.isVisible()
    assert pane.undo_button.isVisible()
    assert "trash" in pane.notice_label.text()
    assert get_session(conn, doomed.id) is not None  # hidden, not forgotten, while Undo is offered
    qtbot.mouseClick(pane.undo_button, Qt.MouseButton.LeftButton)
    await pane.wait_idle()
    assert doomed.path.read_bytes() == data
    assert json.loads(meta_path(doomed.path).read_text())["title"] == "Doomed"
    assert not any((trash / "files").iterdir())
    assert not any((trash / "info").iterdir())
    assert _column(pane.model, Qt.ItemDataRole.DisplayRole) == ["keep me", "Doomed"]

    _select(pane, doomed.id)
    pane.delete_action.trigger()
    await pane.wait_idle()
    qtbot.mouseClick(pane.notice_close, Qt.MouseButton.LeftButton)  # no undo: the delete is final
    await pane.wait_idle()
    assert get_session(conn, doomed.id) is None
    assert [s.id for s in list_sessions(conn)] == [keep.id]
    assert (trash / "files" / doomed.path.name).exists()  # still in the desktop trash, never unlinked


async def test_delete_without_a_trash_refuses_and_deletes_nothing(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    session = _session(workspace, 1, NOW - HOUR, "stay")
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocked))  # no trash can be made there
    _select(pane, session.id)
    pane.delete_action.trigger()
    await pane.wait_idle()
    assert session.path.exists()
    assert pane.model.rowCount() == 1
    assert "was not deleted" in pane.notice_label.text()
    assert not pane.undo_button.isVisible()


async def test_delete_asks_the_window_first(qtbot: QtBot, conn: sqlite3.Connection, workspace: Path) -> None:
    session = _session(workspace, 1, NOW - HOUR, "busy")
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    pane.before_delete = lambda summary: f"Stop the run of {summary.title} first."
    _select(pane, session.id)
    pane.delete_action.trigger()
    await pane.wait_idle()
    assert session.path.exists()
    assert pane.notice_label.text() == "Stop the run of busy first."


async def test_export_through_the_menu_and_its_dialog(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    session = _session(workspace, 1, NOW - HOUR, "export me")
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    for action, name in ((pane.export_md_action, "out.md"), (pane.export_jsonl_action, "out.jsonl")):
        _select(pane, session.id)
        action.trigger()
        dialog = pane.file_dialog
        assert isinstance(dialog, QFileDialog)
        assert dialog.isVisible()
        dialog.selectFile(str(tmp_path / name))
        dialog.accept()
        await pane.wait_idle()
    markdown = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert markdown.startswith("# export me\n")
    assert "## Requests and cost" in markdown
    assert (tmp_path / "out.jsonl").read_bytes() == session.path.read_bytes()
    assert str(tmp_path / "out.jsonl") in pane.notice_label.text()


async def test_duplicate_reveal_and_cost_view(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _session(workspace, 1, NOW - HOUR, "copy me")
    scan_workspace(conn, workspace)
    pane = await _active_pane(qtbot, conn)
    _select(pane, session.id)
    pane.duplicate_action.trigger()
    await pane.wait_idle()
    assert pane.model.rowCount() == 2
    copy = pane.current_summary()
    assert copy is not None
    assert copy.id != session.id
    assert copy.title == "copy me"
    opened: list[QUrl] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    pane.reveal_action.trigger()
    assert [url.toLocalFile() for url in opened] == [str(copy.path.parent)]
    async with emitted(pane.cost_view_requested) as requested:
        pane.cost_action.trigger()
    assert requested == [(copy.id,)]


async def test_import_explains_a_rejected_file_and_lists_an_accepted_one(
    qtbot: QtBot, conn: sqlite3.Connection, workspace: Path, tmp_path: Path
) -> None:
    source = _session(tmp_path / "elsewhere", 5, NOW - HOUR, "from elsewhere")
    lines = source.path.read_bytes().split(b"\n")
    fact = json.loads(lines[2])
    fact["seq"] = 42
    mutated = tmp_path / "mutated.jsonl"
    mutated.write_bytes(b"\n".join([*lines[:2], json.dumps(fact).encode(), *lines[3:]]))
    pane = await _active_pane(qtbot, conn)
    for path in (mutated, source.path):
        pane.import_dialog(workspace)
        dialog = pane.file_dialog
        assert dialog is not None
        dialog.selectFile(str(path))
        dialog.accept()
        await pane.wait_idle()
        if path == mutated:
            text = pane.notice_label.text()
            assert "SEQ_MISMATCH at line 3" in text
            assert "Nothing was written" in text
            assert not (workspace / ".tiny-agent").exists()
            assert pane.model.rowCount() == 0
    assert pane.current_summary() is not None
    assert pane.current_summary().id == source.id  # type: ignore[union-attr]
    assert "Imported" in pane.notice_label.text()


def test_a_rerun_reads_as_a_rerun_of_its_origin(qtbot: QtBot, conn: sqlite3.Connection, workspace: Path) -> None:
    origin = _session(workspace, 1, NOW - 2 * HOUR, "Fix the flaky test")
    origin.user("now in French")
    cut = origin.boundary
    origin.attempt()
    origin.answer("voilà", usage=(10, 1, 0, 0))
    store, _prompt = fork_before(origin.path, cut, model="gpt-4o-mini", provider="openrouter")
    store.close()
    scan_workspace(conn, workspace)
    pane = _pane(qtbot, conn)
    row = pane.model.row_of(store.session_id)
    assert row is not None
    index = pane.model.index(row)
    assert index.data() == "re-run of Fix the flaky test"
    assert index.data(SessionListModel.OriginRole) == "re-run of Fix the flaky test"
    assert "Re-run of Fix the flaky test" in index.data(Qt.ItemDataRole.ToolTipRole)
    set_session_meta(conn, store.path, SessionMeta(title="French attempt"))
    pane.refresh_session(store.session_id)
    index = pane.model.index(pane.model.row_of(store.session_id) or 0)
    assert index.data() == "French attempt"  # the user's own title wins; the origin is still said
    assert "re-run of Fix the flaky test" in index.data(Qt.ItemDataRole.AccessibleTextRole)


def test_the_shortcuts_dialog_lists_the_session_list_keys(qtbot: QtBot) -> None:
    keys = {(where, what): key for where, what, key in FIXED_KEYS}
    assert keys[("Session list", "Rename the selected session")] == "F2"
    assert keys[("Session list", "Actions of the selected session")] == "Menu or Shift+F10"
