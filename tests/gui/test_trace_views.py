"""Tool cards, the waterfall and the inspector's Changes tab on a session the real agent wrote (loopback provider)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import make_agent, text_reply, tool_reply
from tests.gui.test_transcript_support import Session
from tests.loopback import LoopbackServer
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.timeline import AssistantItem, Timeline, ToolItem
from tiny_agent_core.tools.approval import ApprovalAnswer, ApprovalRequest, Choice
from tiny_agent_core.trace import CallSpan, RunSpan, StepSpan
from tiny_agent_gui.inspector import InspectorPane
from tiny_agent_gui.transcript.model import ITEM_ROLE, TranscriptModel
from tiny_agent_gui.transcript.render import markdown_document
from tiny_agent_gui.transcript.view import TranscriptView
from tiny_agent_gui.waterfall import ROW_ROLE

EDIT = {"path": "greet.py", "edits": [{"oldText": '"Hello " + name', "newText": 'f"Hello, {name}!"'}]}
PUSH = "rm -rf build/ && git push --force origin main"


class _NoForcePush:
    """Allows every call except a force push, which it denies with a reason."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        if "--force" in str(request.arguments.get("command", "")):
            return ApprovalAnswer.deny("never force-push main")
        return ApprovalAnswer(Choice.ALLOW_ONCE)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def timeline(tmp_path: Path, server: LoopbackServer) -> Timeline:
    """read → failed read → edit → bash (exit 1) → a denied force push, then an answer."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text('def greet(name):\n    return "Hello " + name\n')
    transport = httpx.AsyncClient(trust_env=False)
    async with ProviderClient(transport) as client:
        harness = make_agent(workspace, server, client)
        harness.agent.approver = _NoForcePush()
        server.queue(
            tool_reply(("c1", "read", '{"path": "greet.py"}'), ("c2", "read", '{"path": "gone.py"}')),
            tool_reply(("c3", "edit", json.dumps(EDIT))),
            tool_reply(
                ("c4", "bash", json.dumps({"command": "seq 1 400; exit 1"})),
                ("c5", "bash", json.dumps({"command": PUSH})),
            ),
            text_reply("Tests fail; I did not push."),
        )
        await harness.agent.run("fix greet and push")
        harness.store.close()
    await transport.aclose()
    return Timeline.from_bytes(harness.store.path.read_bytes())


def tool_rows(model: TranscriptModel) -> dict[str, int]:
    rows = {}
    for row in range(model.rowCount()):
        item = model.data(model.index(row), ITEM_ROLE)
        if isinstance(item, ToolItem):
            rows[item.call_id] = row
    return rows


def accessible(model: Any, row: int) -> str:
    text = model.data(model.index(row), Qt.ItemDataRole.AccessibleTextRole)
    assert isinstance(text, str)
    return text


def shown_transcript(qtbot: QtBot, timeline: Timeline) -> tuple[TranscriptModel, TranscriptView]:
    model = TranscriptModel(timeline)
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    return model, view


def test_cards_say_exit_and_denied(qtbot: QtBot, timeline: Timeline) -> None:
    model, view = shown_transcript(qtbot, timeline)
    rows = tool_rows(model)
    assert accessible(model, rows["c1"]).startswith("read tool call — ok — read greet.py · 2 lines")
    assert accessible(model, rows["c2"]).startswith("read tool call — error: ")
    assert accessible(model, rows["c4"]).startswith(
        "bash tool call — exit 1 — bash seq 1 400; exit 1 → exit 1 · 400 lines"
    )
    denied = accessible(model, rows["c5"])
    assert denied.startswith(f"bash tool call — denied: never force-push main — denied: {PUSH}")
    assert "success" not in accessible(model, rows["c4"])
    view.grab()  # every card paints


def test_expanding_an_edit_card_shows_its_diff(qtbot: QtBot, timeline: Timeline) -> None:
    model, view = shown_transcript(qtbot, timeline)
    row = tool_rows(model)["c3"]
    index = model.index(row)
    option = QStyleOptionViewItem()
    view.initViewItemOption(option)
    delegate = view.itemDelegate()
    collapsed = delegate.sizeHint(option, index).height()
    view.setFocus()
    view.setCurrentIndex(index)
    qtbot.keyClick(view, Qt.Key.Key_Space)
    item = index.data(ITEM_ROLE)
    assert view.is_expanded(item.call_id)
    assert delegate.sizeHint(option, index).height() > collapsed
    body = delegate.card_body(item).toPlainText()  # type: ignore[attr-defined]
    assert '-"Hello " + name' in body
    assert '+f"Hello, {name}!"' in body
    view.grab()
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert not view.is_expanded(item.call_id)
    view.scrollTo(index)
    header = view.visualRect(index).topLeft() + QPoint(40, 10)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=header)
    assert view.is_expanded(item.call_id)  # a click on the header expands it too
    failed = model.index(tool_rows(model)["c4"])
    view.set_expanded(failed, True)
    shown = delegate.card_body(failed.data(ITEM_ROLE)).toPlainText()  # type: ignore[attr-defined]
    assert shown.startswith("1\n2\n")
    assert "more lines" in shown
    assert shown.endswith("Command exited with code 1")
    denied = model.index(tool_rows(model)["c5"])
    view.set_expanded(denied, True)
    assert delegate.card_body(denied.data(ITEM_ROLE)).toPlainText() == "Denied: never force-push main"  # type: ignore[attr-defined]
    menu = view.card_menu(failed.data(ITEM_ROLE))
    assert [action.text() for action in menu.actions()][:2] == ["Copy &Command", "Copy &Summary"]


def test_waterfall_has_a_bar_per_request_and_call_and_opens_them(qtbot: QtBot, timeline: Timeline) -> None:
    pane = InspectorPane(timeline=timeline)
    qtbot.addWidget(pane)
    pane.resize(420, 600)
    pane.show()
    assert pane.stack.currentWidget() is pane.waterfall
    model = pane.waterfall.model
    assert model.rowCount() == 0  # built after the first paint, not while the session opens
    qtbot.waitUntil(lambda: model.rowCount() > 0)
    rows = [model.data(model.index(row), ROW_ROLE) for row in range(model.rowCount())]
    assert sum(isinstance(row, RunSpan) for row in rows) == 1
    assert sum(isinstance(row, StepSpan) for row in rows) == len(timeline.steps()) == 4
    calls = [row for row in rows if isinstance(row, CallSpan)]
    assert [call.item.call_id for call in calls] == ["c1", "c2", "c3", "c4", "c5"]
    assert all(call.start_ms is not None for call in calls)
    assert "5 tool calls (3 not ok)" in pane.waterfall.totals.text()
    exit_row = next(row for row, value in enumerate(rows) if isinstance(value, CallSpan) and value.item.call_id == "c4")
    assert "exit 1" in accessible(model, exit_row)
    pane.waterfall.grab()
    requested: list[int] = []
    pane.row_requested.connect(requested.append)
    view = pane.waterfall.view
    view.scrollTo(model.index(exit_row))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(model.index(exit_row)).center())
    shown = pane.current_item()
    assert isinstance(shown, ToolItem)
    assert shown.call_id == "c4"
    assert requested == [timeline.items.index(shown)]
    assert pane.back.isVisible()
    qtbot.keyClick(pane.overview, Qt.Key.Key_Escape)
    assert pane.current_item() is None


def test_changes_tab_and_search(qtbot: QtBot, timeline: Timeline) -> None:
    pane = InspectorPane(timeline=timeline)
    qtbot.addWidget(pane)
    pane.show()
    edit = next(item for item in timeline.items if isinstance(item, ToolItem) and item.name == "edit")
    pane.show_item(edit)
    assert pane.tabs.isTabVisible(pane.tabs.indexOf(pane.changes))
    pane.show_changes()
    assert '+f"Hello, {name}!"' in pane.changes.toPlainText()
    assert "changes: greet.py +1 \u22121" in pane.overview.toPlainText()
    pane.changes.setFocus()
    qtbot.keyClick(pane.changes, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.search.isVisible()
    assert pane.find_next("Hello, {name}")
    assert pane.changes.textCursor().selectedText() == "Hello, {name}"
    qtbot.keyClick(pane.search, Qt.Key.Key_Escape)
    assert not pane.search.isVisible()
    read = next(item for item in timeline.items if isinstance(item, ToolItem) and item.name == "read")
    pane.show_item(read)
    assert not pane.tabs.isTabVisible(pane.tabs.indexOf(pane.changes))
    answer = next(item for item in timeline.items if isinstance(item, AssistantItem) and item.text)
    pane.show_item(answer)
    assert pane.overview.toPlainText() == "Tests fail; I did not push."


def test_http_status_and_model_come_from_the_capture(qtbot: QtBot, timeline: Timeline) -> None:
    capture = {"status": 200, "responseBody": 'data: {"model": "test-model-2026-01", "choices": []}\n\ndata: [DONE]\n'}
    pane = InspectorPane(timeline=timeline, load_captures=lambda _attempt: [capture])
    qtbot.addWidget(pane)
    answer = next(item for item in timeline.items if isinstance(item, AssistantItem))
    pane.show_item(answer)
    assert "HTTP status: not recorded" in pane.step.toPlainText()  # the Step tab is not shown yet
    pane.tabs.setCurrentWidget(pane.step)
    assert "HTTP status: 200" in pane.step.toPlainText()
    assert "answered by: test-model-2026-01" in pane.step.toPlainText()


def test_dark_palette_paints(qtbot: QtBot, timeline: Timeline) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    dark = QPalette()
    for role, colour in ((QPalette.ColorRole.Base, "#1e1e1e"), (QPalette.ColorRole.Text, "#eeeeee")):
        dark.setColor(role, QColor(colour))
    view = TranscriptView(TranscriptModel(timeline))
    pane = InspectorPane(timeline=timeline)
    for widget in (view, pane):
        qtbot.addWidget(widget)
        widget.setPalette(dark)
        widget.resize(600, 500)
        widget.show()
    view.set_expanded(view.model().index(tool_rows(view.transcript_model())["c3"], 0), True)
    assert not view.grab().isNull()
    assert not pane.grab().isNull()
    assert view.currentIndex() == QModelIndex()


def test_code_blocks_are_shaded_and_copied(qtbot: QtBot, tmp_path: Path) -> None:
    session = Session(tmp_path)
    session.full_run("show code", "a.py", "x = 1", "Here:\n\n```python\nx = 2\n```\n\nand\n\n```\ny = 3\n```")
    try:
        model, view = shown_transcript(qtbot, session.timeline)
        row = max(
            row for row in range(model.rowCount()) if isinstance(model.data(model.index(row), ITEM_ROLE), AssistantItem)
        )
        index = model.index(row)
        menu = view.message_menu(index.data(ITEM_ROLE))
        copy_code = next(action for action in menu.actions() if action.text().startswith("Copy C&ode"))
        assert copy_code.text() == "Copy C&ode (2 blocks)"
        copy_code.trigger()
        assert QApplication.clipboard().text() == "x = 2\n\ny = 3"
        view.setFocus()
        view.setCurrentIndex(index)
        qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
        assert QApplication.clipboard().text().startswith("Here:\n\n```python")
        QApplication.clipboard().clear()
        view.scrollTo(index)
        option = QStyleOptionViewItem()
        view.initViewItemOption(option)
        option.rect = view.visualRect(index)
        delegate = view.itemDelegate()
        shown = delegate._document(index.data(ITEM_ROLE))  # type: ignore[attr-defined]
        buttons = delegate.copy_buttons(shown)  # type: ignore[attr-defined]
        assert [code for _rect, code in buttons] == ["x = 2", "y = 3"]
        where = delegate.document_origin(option) + buttons[1][0].center()  # type: ignore[attr-defined]
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=where)
        assert QApplication.clipboard().text() == "y = 3"  # the second block's "Copy"
        document = markdown_document(index.data(ITEM_ROLE).text, view.font(), dark=False)
        shaded = [
            block.text()
            for block in _blocks(document)
            if block.blockFormat().background().style() != Qt.BrushStyle.NoBrush
        ]
        assert shaded == ["x = 2", "y = 3"]
    finally:
        session.store.close()


def _blocks(document: Any) -> list[Any]:
    blocks, block = [], document.begin()
    while block.isValid():
        blocks.append(block)
        block = block.next()
    return blocks


def test_waterfall_follows_a_live_session_while_shown(qtbot: QtBot, tmp_path: Path) -> None:
    session = Session(tmp_path)
    try:
        pane = InspectorPane(timeline=session.timeline)
        qtbot.addWidget(pane)
        pane.show()
        qtbot.waitUntil(lambda: "No model requests yet" in pane.waterfall.totals.text())
        session.full_run("read it", "a.txt", "one\ntwo", "Two lines.")
        qtbot.waitUntil(lambda: pane.waterfall.model.rowCount() == 4)  # run, request, call, request
        tool = next(item for item in session.timeline.items if isinstance(item, ToolItem))
        pane.show_item(tool)
        session.full_run("again", "b.txt", "three", "One line.")
        qtbot.wait(700)
        assert pane.waterfall.model.rowCount() == 4  # not rebuilt while hidden
        pane.show_item(None)
        assert pane.waterfall.model.rowCount() == 8  # rebuilt when shown again
    finally:
        session.store.close()
