"""The inspector pane: tool calls, steps and raw wire captures loaded on demand."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from tests.gui.test_transcript_support import Session
from tiny_agent_core.ledger.requests import Cost, RequestRow
from tiny_agent_core.session import facts
from tiny_agent_core.timeline import AssistantItem, NoticeItem, ToolItem, UserItem
from tiny_agent_core.usage import Usage
from tiny_agent_gui.inspector import InspectorPane

CAPTURE = {
    "method": "POST",
    "url": "http://127.0.0.1/v1/chat/completions",
    "requestHeaders": {"content-type": "application/json"},
    "requestBody": '{"model":"test/模型","messages":[{"role":"user","content":"读"}]}',
    "status": 200,
    "responseHeaders": {"x-request-id": "req-1"},
    "responseBody": 'data: {"choices":[]}\n\ndata: [DONE]\n\n',
    "timings": {"doneMs": 10.0},
    "error": None,
}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    made = Session(tmp_path)
    made.full_run("读 a.txt", "a.txt", "第一行\nline two", "It is 第一行.")
    yield made
    made.store.close()


def items_of(session: Session, kind: type) -> list[Any]:
    return [item for item in session.timeline.items if isinstance(item, kind)]


def test_tool_call(qtbot: QtBot, session: Session) -> None:
    pane = InspectorPane(timeline=session.timeline)
    qtbot.addWidget(pane)
    tool = items_of(session, ToolItem)[0]
    pane.show_item(tool)
    assert pane.title.text() == "Tool call: read a.txt · 2 lines"
    overview = pane.overview.toPlainText()
    assert "outcome: ok" in overview
    assert "recorded result: success" in overview
    assert "replay: safe (key builtin:read:v1)" in overview
    assert "duration: " in overview
    arguments = pane.arguments.toPlainText()
    assert '"path": "a.txt"' in arguments  # pretty JSON
    assert '{"path": "a.txt"}' in arguments  # and the model's raw string
    assert "第一行\nline two" in pane.result.toPlainText()
    step = pane.step.toPlainText()
    assert "model: test/模型" in step
    assert "stop reason: toolUse" in step
    assert "usage: unknown" in step  # no usage fact for that step: unknown, never 0
    assert "cost: unknown" in step
    assert pane.arguments.isReadOnly()
    assert pane.arguments.font().fixedPitch() or pane.arguments.font().styleHint() != 0
    assert pane.tabs.isTabVisible(pane.tabs.indexOf(pane.arguments))


def test_step_with_ledger_facts(qtbot: QtBot, session: Session) -> None:
    answer = items_of(session, AssistantItem)[-1]
    step = answer.step
    session.timeline.enrich_request(
        RequestRow(
            attempt_id=step.attempt_id,
            session_id=session.timeline.session_id,
            operation_id=step.operation_id,
            step_id=step.step_id,
            attempt=1,
            step_kind="assistant",
            provider="custom",
            model=step.model,
            usage=Usage(12, 3),
            stop_reason="stop",
            error_code=None,
            outcome="settled",
            started_at=step.started_at,
            finished_at=step.started_at + 5,
            cost=Cost(Decimal("0.000123"), "price_table", "0.2.3"),
            response_model="test/模型-2026",
            latency_ms=842,
            ttft_ms=120,
            http_status=200,
            error_kind=None,
            dialect_repairs=["empty_tool_calls"],
        )
    )
    answer = items_of(session, AssistantItem)[-1]
    loads: list[str] = []

    def load(attempt_id: str) -> list[Any]:
        loads.append(attempt_id)
        return [CAPTURE]

    pane = InspectorPane(timeline=session.timeline, load_captures=load)
    qtbot.addWidget(pane)
    pane.show_item(answer)
    text = pane.step.toPlainText()
    assert "usage: input 12 · output 3 · cache read 0 · cache write 0" in text
    assert "cost: $0.000123 (source: price_table (price data 0.2.3))" in text
    assert "latency: 842 ms" in text
    assert "time to first token: 120 ms" in text
    assert "HTTP status: 200" in text
    assert "dialect repairs: empty_tool_calls" in text
    assert "dropped provider fields: not recorded" in text
    assert "answered by: test/模型-2026" in text
    assert "It is 第一行." in pane.overview.toPlainText()
    assert not pane.tabs.isTabVisible(pane.tabs.indexOf(pane.arguments))
    assert loads == []  # raw wire is loaded only when its tab is shown
    pane.tabs.setCurrentWidget(pane.wire)
    assert loads == [answer.step.attempt_id]
    request = pane.request.toPlainText()
    assert "POST http://127.0.0.1/v1/chat/completions" in request
    assert '"content": "读"' in request  # the request body pretty-printed by the core
    response = pane.response.toPlainText()
    assert "HTTP 200" in response
    assert "data: [DONE]" in response
    assert pane.curl.isEnabled()
    pane.curl.click()
    curl = QGuiApplication.clipboard().text()
    assert curl.startswith("curl -X POST 'http://127.0.0.1/v1/chat/completions'")
    assert '"Authorization: Bearer $API_KEY"' in curl
    pane.tree_toggle.click()  # the bodies as JSON trees
    tree = pane.request_tree.model()
    assert [tree.index(row, 0).data() for row in range(tree.rowCount())] == ["model", "messages"]
    assert tree.index(1, 1).data() == "[1 item]"
    events = pane.response_tree.model()
    assert [events.index(row, 1).data() for row in range(events.rowCount())] == ["{1 key}", '"[DONE]"']
    pane.show_item(answer)  # still on the wire tab: loaded again for the new selection
    assert len(loads) == 2
    assert pane.request_tree.model().rowCount() == 2  # the trees follow while they are shown


def test_notice_user_and_nothing(qtbot: QtBot, session: Session) -> None:
    session.run("again")
    step_id = facts.new_id()
    session.fail(step_id, session.attempt(step_id), "HTTP 401: bad key")
    pane = InspectorPane()
    qtbot.addWidget(pane)
    pane.set_capture_loader(lambda _attempt: [])
    notice = items_of(session, NoticeItem)[0]
    pane.show_item(notice)
    assert "HTTP 401: bad key" in pane.overview.toPlainText()
    assert "error: model_error: HTTP 401: bad key" in pane.step.toPlainText()
    assert "HTTP status: not recorded" in pane.step.toPlainText()  # not "unknown"
    assert "answered by: not recorded" in pane.step.toPlainText()
    pane.tabs.setCurrentWidget(pane.wire)
    assert "No raw wire capture" in pane.response.toPlainText()
    pane.show_item(items_of(session, UserItem)[0])
    assert pane.overview.toPlainText() == "读 a.txt"
    assert not pane.tabs.isTabVisible(pane.tabs.indexOf(pane.wire))
    pane.show_item(None)
    assert pane.current_item() is None
    assert pane.stack.currentWidget() is pane.waterfall
    assert pane.accessibleName() == "Inspector"


def test_live_output_is_appended_for_the_running_call_only(qtbot: QtBot) -> None:
    pane = InspectorPane()
    qtbot.addWidget(pane)
    running = ToolItem(
        call_id="c1", name="bash", arguments_text='{"command": "make"}', arguments={"command": "make"},
        status="running", step_id="s1", assistant_entry_id="a1", tool_index=0, tool_started_id="t1",
    )  # fmt: skip
    pane.show_item(running)
    pane.append_live_output("c1", "compiling…\n")
    pane.append_live_output("other", "not mine\n")
    assert pane.result.toPlainText().endswith("compiling…\n")
    assert "not mine" not in pane.result.toPlainText()
