"""Transcript model, view and composer (offscreen)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QStyleOptionViewItem
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from tests.gui.test_transcript_support import Session
from tiny_agent_core.session import facts
from tiny_agent_core.timeline import AssistantItem, NoticeItem, ToolItem, UserItem
from tiny_agent_gui.transcript import ITEM_ROLE, Composer, StreamingItem, TranscriptModel, TranscriptView

CJK = "你好，世界！これは日本語です。한국어도 있어요。"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    made = Session(tmp_path)
    yield made
    made.store.close()


def test_model_passes_the_model_tester_through_inserts_changes_and_streaming(
    qtbot: QtBot, qtmodeltester: ModelTester, session: Session
) -> None:
    session.run("first")
    model = TranscriptModel(session.timeline)
    qtmodeltester.check(model)  # keeps watching every later signal
    session.tool_round("README.md", "contents")
    step_id = facts.new_id()
    attempt_id = session.attempt(step_id)
    model.append_text_delta(step_id, "Hel")
    model.append_text_delta(step_id, "lo")
    model.flush()
    assert model.rowCount() == len(session.timeline) + 1
    assert model.data(model.index(model.rowCount() - 1), ITEM_ROLE) == StreamingItem(step_id, "Hello")
    session.answer(step_id, attempt_id, "Hello")  # the committed answer replaces the streaming row
    assert model.rowCount() == len(session.timeline)
    kinds = [type(model.data(model.index(row), ITEM_ROLE)).__name__ for row in range(model.rowCount())]
    assert kinds == ["UserItem", "AssistantItem", "ToolItem", "AssistantItem"]
    tool = model.data(model.index(2), ITEM_ROLE)
    assert isinstance(tool, ToolItem)
    assert tool.status == "success"
    assert model.data(model.index(2)).startswith("read tool call — ok — read README.md · 1 line")
    qtmodeltester.check(model)


def test_model_forwards_changes_without_copying(qtbot: QtBot, session: Session) -> None:
    session.run("hi")
    model = TranscriptModel(session.timeline)
    step_id = facts.new_id()
    attempt_id = session.attempt(step_id)
    with qtbot.waitSignal(model.rowsInserted):
        session.answer(step_id, attempt_id, "done", finish=False)
    answer = model.data(model.index(1), ITEM_ROLE)
    assert answer is session.timeline.items[1]  # the timeline's own object
    model.set_timeline(None)
    assert model.rowCount() == 0


def test_streaming_deltas_are_coalesced(qtbot: QtBot, session: Session) -> None:
    model = TranscriptModel(session.timeline)
    repaints: list[None] = []
    model.stream_repainted.connect(lambda: repaints.append(None))
    changes: list[int] = []
    model.dataChanged.connect(lambda top, _bottom: changes.append(top.row()))
    step_id = facts.new_id()
    deltas = [f"token {number} " for number in range(500)]
    with qtbot.waitSignal(model.stream_repainted, timeout=5000):
        for delta in deltas:
            model.append_text_delta(step_id, delta)
    assert model.streaming_text() == "".join(deltas)
    assert len(repaints) < 10  # 500 deltas in a burst: one or two repaints, not 500
    assert len(changes) == len(repaints)
    streaming = model.data(model.index(model.rowCount() - 1), ITEM_ROLE)
    assert isinstance(streaming, StreamingItem)
    assert streaming.text == "".join(deltas)
    model.end_stream()
    assert model.rowCount() == 0
    assert model.streaming_text() is None


def test_view_renders_messages_chips_notices_and_cjk(qtbot: QtBot, session: Session) -> None:
    session.full_run(CJK, "文件.md", "内容 " * 50, f"## 回答\n\n{CJK}\n\n```python\nprint('你好')\n```\n")
    session.run("again")
    step_id = facts.new_id()
    session.fail(step_id, session.attempt(step_id), "HTTP 503: upstream unavailable")
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    qtbot.waitExposed(view)
    model = view.transcript_model()
    model.append_text_delta(facts.new_id(), f"streaming {CJK}")
    model.flush()
    assert not view.grab().isNull()  # every row painted (no pixel assertions)
    option = QStyleOptionViewItem()
    delegate = view.itemDelegate()
    heights = [delegate.sizeHint(option, model.index(row)).height() for row in range(model.rowCount())]
    assert all(height > 0 for height in heights)
    chip_row = next(row for row in range(model.rowCount()) if isinstance(model.index(row).data(ITEM_ROLE), ToolItem))
    assert heights[chip_row] < heights[0] * 3


def test_selection_emits_item_selected(qtbot: QtBot, session: Session) -> None:
    session.full_run("read it", "a.txt", "A", "It is A.")
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    model = view.transcript_model()
    with qtbot.waitSignal(view.item_selected) as blocker:
        view.setCurrentIndex(model.index(2))
    assert isinstance(blocker.args[0], ToolItem)
    with qtbot.waitSignal(view.item_selected) as blocker:
        view.setCurrentIndex(model.index(3))
    assert isinstance(blocker.args[0], AssistantItem)


def test_retry_by_enter_and_by_click(qtbot: QtBot, session: Session) -> None:
    session.run("please")
    step_id = facts.new_id()
    session.fail(step_id, session.attempt(step_id), "HTTP 429: slow down")
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    qtbot.waitExposed(view)
    model = view.transcript_model()
    notice_index = model.index(1)
    notice = notice_index.data(ITEM_ROLE)
    assert isinstance(notice, NoticeItem)
    assert notice.retryable
    view.setCurrentIndex(notice_index)
    with qtbot.waitSignal(view.retry_requested) as blocker:
        qtbot.keyClick(view, Qt.Key.Key_Return)
    assert blocker.args == [notice]
    view.setCurrentIndex(model.index(0))
    assert isinstance(model.index(0).data(ITEM_ROLE), UserItem)
    option = QStyleOptionViewItem()
    option.rect = view.visualRect(notice_index)
    button = view.itemDelegate().retry_rect(option)
    with qtbot.waitSignal(view.retry_requested) as blocker:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(button.center()))
    assert blocker.args == [notice]


def test_composer_keys(qtbot: QtBot) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    sent: list[str] = []
    composer.submitted.connect(sent.append)
    editor = composer.editor
    qtbot.keyClicks(editor, "line one")
    qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    editor.insertPlainText(CJK)
    assert composer.text() == f"line one\n{CJK}"
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert sent == [f"line one\n{CJK}"]
    assert composer.text() == ""
    qtbot.keyClick(editor, Qt.Key.Key_Enter)  # blank: nothing sent
    assert len(sent) == 1
    with qtbot.waitSignal(composer.cancel_requested):
        qtbot.keyClick(editor, Qt.Key.Key_Escape)


def test_composer_send_stop_button(qtbot: QtBot) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    sent: list[str] = []
    composer.submitted.connect(sent.append)
    composer.editor.setPlainText("go")
    qtbot.mouseClick(composer.button, Qt.MouseButton.LeftButton)
    assert sent == ["go"]
    composer.set_busy(True)
    assert composer.button.text() == "Stop"
    assert composer.button.accessibleName() == "Stop"
    composer.editor.setPlainText("queued")
    qtbot.keyClick(composer.editor, Qt.Key.Key_Return)  # busy: Enter does not send
    assert sent == ["go"]
    with qtbot.waitSignal(composer.cancel_requested):
        qtbot.mouseClick(composer.button, Qt.MouseButton.LeftButton)
    composer.set_busy(False)
    assert composer.button.text() == "Send"
    assert "Enter" in composer.button.toolTip()
    assert composer.editor.accessibleName() == "Prompt"


def test_rows_announce_who_speaks_and_each_step_its_model_tokens_and_cost(qtbot: QtBot, session: Session) -> None:
    session.full_run("read it", "a.txt", "A", "It is **A**.")
    model = TranscriptModel(session.timeline)
    texts = [model.index(row).data(Qt.ItemDataRole.AccessibleTextRole) for row in range(model.rowCount())]
    assert texts[0] == "You: read it"
    assert texts[1].startswith("Assistant step (")
    assert texts[1].endswith("calling 1 tool")
    assert "usage unknown, cost unknown" in texts[1]  # the fixture's steps report no usage: said, never 0
    assert "read tool call" in texts[2]
    assert texts[3].startswith("Assistant (")
    assert texts[3].endswith("): It is **A**.")


def test_a_long_session_opens_at_its_newest_message(qtbot: QtBot, session: Session) -> None:
    """The batched layout grows the scroll range after the first paint; the view follows it to the end."""
    for turn in range(250):
        session.full_run(f"question {turn}", "a.txt", "A", f"answer {turn}\n\n" + "line\n" * 3)
    view = TranscriptView(TranscriptModel(session.timeline))
    qtbot.addWidget(view)
    view.resize(640, 400)
    view.show()
    qtbot.waitExposed(view)
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=10_000)
    last = view.transcript_model().index(view.transcript_model().rowCount() - 1)
    qtbot.waitUntil(lambda: view.viewport().rect().intersects(view.visualRect(last)), timeout=10_000)
    bar.setValue(0)  # the user scrolls up: growth no longer moves the view
    view.transcript_model().append_text_delta(facts.new_id(), "more")
    view.transcript_model().flush()
    qtbot.wait(50)
    assert bar.value() == 0
