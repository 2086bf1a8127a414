"""The real main window driven through whole runs against the loopback provider (offscreen, qasync loop)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply, tool_reply
from tests.core.session.builders import SessionScript
from tests.core.test_model_catalog import session_left_open
from tests.gui.test_key_cache import CountingKeyStore
from tests.gui.waiting import until
from tests.loopback import LoopbackServer, RecordedRequest, Reply, sse_events
from tiny_agent_core import workbench
from tiny_agent_core.compare import Contender, RunReport
from tiny_agent_core.comparisons import Comparison, save_comparison
from tiny_agent_core.fork import read_origin
from tiny_agent_core.ledger import connect, get_session, scan_workspace
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyringStatus, KeyStore
from tiny_agent_core.session import SessionStore, reduce_session
from tiny_agent_core.session.store import session_file_name
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.timeline import CONTINUE_PROMPT, AssistantItem, ToolItem, UserItem
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_core.workbench import open_session
from tiny_agent_gui import session_controller
from tiny_agent_gui.app import index_at_start
from tiny_agent_gui.approval_dialog import ApprovalDialog
from tiny_agent_gui.main_window import TEST_PROMPT, MainWindow, Services, SettingsRequest
from tiny_agent_gui.status_bar import DelayedMessage


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def window(tmp_path: Path, server: LoopbackServer, qtbot: QtBot) -> AsyncIterator[MainWindow]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = AppSettings()
    profile = replace(ProfileConfig.custom("local", server.base_url, name="Loopback"), model="test-model")
    settings.add_profile(profile)
    settings.active_profile = "local"
    settings.add_workspace(workspace)
    http = httpx.AsyncClient(trust_env=False)
    client = ProviderClient(http)
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(client, ledger, settings, KeyStore(environ={}), ToolSettings.in_memory(), ask_context=False)
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    yield made
    await made.controller.wait_idle()
    await made.controller.aclose()
    ledger.close()
    await http.aclose()


def _items(window: MainWindow) -> list[object]:
    assert window.timeline is not None
    return list(window.timeline.items)


@contextlib.asynccontextmanager
async def _window_with(
    tmp_path: Path, qtbot: QtBot, settings: AppSettings, keys: KeyStore
) -> AsyncIterator[MainWindow]:
    """A window over ``settings`` and the key store ``keys`` (e.g. one that records the threads it is read on)."""
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(ProviderClient(http), ledger, settings, keys, ToolSettings.in_memory(), ask_context=False)
    made = MainWindow(services)
    qtbot.addWidget(made)
    try:
        yield made
    finally:
        await made.controller.aclose()
        ledger.close()
        await http.aclose()


async def test_a_whole_run_with_an_approved_tool(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(
        tool_reply(("w1", "write", '{"path": "hello.txt", "content": "你好"}')),
        text_reply("I wrote the file."),
    )
    window.composer.submitted.emit("please write hello.txt")

    def dialog() -> ApprovalDialog | None:
        found = [w for w in QApplication.topLevelWidgets() if isinstance(w, ApprovalDialog) and w.isVisible()]
        return found[0] if found else None

    await until(lambda: dialog() is not None)
    approval = dialog()
    assert approval is not None
    allow = next(b for b in approval.findChildren(QPushButton) if b.text().replace("&", "").startswith("Allow once"))
    allow.click()
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)

    items = _items(window)
    assert isinstance(items[0], UserItem)
    assert items[0].text == "please write hello.txt"
    tools = [item for item in items if isinstance(item, ToolItem)]
    assert [(t.name, t.status) for t in tools] == [("write", "success")]
    assert isinstance(items[-1], AssistantItem)
    assert items[-1].text == "I wrote the file."
    workspace = Path(window.services.settings.workspaces[0])
    assert (workspace / "hello.txt").read_text() == "你好"
    assert window.transcript.transcript_model().rowCount() >= 3
    assert window.status_usage.text() == "Input 30 · Output 7 · local — no API charge"  # a loopback server is local
    tip = window.status_usage.toolTip()
    assert "Input (prompt tokens not read from or written to a cache): 30" in tip
    assert "2 model requests" in tip
    assert "TTFT" in window.status_speed.text()
    assert window.sessions.isVisible()


async def test_a_provider_failure_is_shown_inline_and_retry_works(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(Reply.error(500, {"error": {"message": "upstream exploded"}}), text_reply("second time lucky"))
    window.composer.submitted.emit("try this")
    await until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 2)
    notice = _items(window)[-1]
    assert "upstream exploded" in getattr(notice, "text", "")
    window.transcript.retry_requested.emit(notice)
    await until(lambda: isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    assert _items(window)[-1].text == "second time lucky"  # type: ignore[attr-defined]


async def test_escape_stops_a_stalled_stream(window: MainWindow, server: LoopbackServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    window.composer.submitted.emit("go slowly")
    await until(lambda: window.controller.busy and len(server.requests) == 1)
    await until(lambda: window.transcript.transcript_model().streaming_text() == "slow ")  # stalled after it
    window.composer.cancel_requested.emit()
    await until(lambda: not window.controller.busy, seconds=5)
    assert any(getattr(item, "kind", None) == "aborted" for item in _items(window))
    assert window.composer.isEnabled()


async def test_esc_anywhere_in_the_window_stops_a_run(window: MainWindow, server: LoopbackServer, qtbot: QtBot) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    window.composer.submitted.emit("go slowly")
    await until(lambda: window.controller.busy and len(server.requests) == 1)
    assert window.stop_action.isEnabled()
    window.activateWindow()
    window.transcript.setFocus()
    await until(window.isActiveWindow, seconds=2)
    qtbot.keyClick(window.transcript, Qt.Key.Key_Escape)
    await until(lambda: not window.controller.busy, seconds=5)
    assert any(getattr(item, "kind", None) == "aborted" for item in _items(window))
    assert not window.stop_action.isEnabled()


def test_keyboard_shortcuts_are_visible(qtbot: QtBot, window: MainWindow) -> None:
    shortcuts = {a.text().replace("&", ""): a.shortcut().toString() for a in window.actions()}
    assert shortcuts["Stop"] == "Esc"  # as the composer says; Ctrl+. works too
    stop = next(a for a in window.actions() if a.text() == "&Stop")
    assert [key.toString() for key in stop.shortcuts()] == ["Esc", "Ctrl+."]
    assert shortcuts["Compact"] == "Ctrl+Shift+K"
    assert shortcuts["Costs"] == "Ctrl+2"
    assert all(shortcuts[name] for name in ("New Session", "Open Folder…", "Settings…", "Quit"))
    assert window.transcript.accessibleName() == "Transcript"


async def test_closing_the_window_releases_the_session(window: MainWindow) -> None:
    window.new_session()
    session = window.controller.session
    assert session is not None
    path = session.store.path
    window.close()
    await until(lambda: window.controller.session is None)
    reopened = open_session(path)
    assert not reopened.read_only  # the writer lock was released
    reopened.store.close()


async def test_the_index_is_current_when_a_run_is_reported(window: MainWindow, server: LoopbackServer) -> None:
    titles: list[str | None] = []

    def on_finished(_result: object) -> None:
        session = window.controller.session
        assert session is not None
        summary = get_session(window.services.ledger, session.store.session_id)
        titles.append(summary.title if summary is not None else None)

    window.controller.finished.connect(on_finished)
    server.queue(text_reply("indexed"))
    window.composer.submitted.emit("a title worth indexing")
    await until(lambda: bool(titles))
    assert titles == ["a title worth indexing"]


async def test_the_step_limit_offers_continue(window: MainWindow, server: LoopbackServer) -> None:
    window.services.settings.max_steps = 1
    workspace = Path(window.services.settings.workspaces[0])
    (workspace / "a.txt").write_text("alpha\n")
    server.queue(tool_reply(("r1", "read", '{"path": "a.txt"}')), text_reply("Going on."))
    window.composer.submitted.emit("loop")
    await until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 3)
    notice = _items(window)[-1]
    assert getattr(notice, "retry_label", None) == "Continue"
    window.transcript.retry_requested.emit(notice)
    await until(lambda: isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    sent = server.requests[-1].json()["messages"]
    assert sent[-1] == {"role": "user", "content": CONTINUE_PROMPT}
    assert len(server.requests) == 2


async def test_a_rebuilt_index_is_reported_once(tmp_path: Path, qtbot: QtBot) -> None:
    database = tmp_path / "index.sqlite3"
    database.write_bytes(b"this is not a database" * 100)
    ledger = connect(database)
    services = Services(None, ledger, AppSettings(), KeyStore(environ={}), ToolSettings.in_memory())  # type: ignore[arg-type]
    made = MainWindow(services)
    qtbot.addWidget(made)
    assert "rebuilt from the session files" in made.banner_text.text()
    await made.controller.aclose()
    ledger.close()


# -- errors that lead to the fix ------------------------------------------------------------------------------


def _closed_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


async def _failed_run(window: MainWindow, prompt: str = "hello") -> None:
    window.composer.submitted.emit(prompt)
    await until(lambda: window.controller.busy)
    await window.controller.wait_idle()
    await until(lambda: not window.controller.busy)


async def test_a_401_offers_that_providers_settings(window: MainWindow, server: LoopbackServer) -> None:
    opened: list[SettingsRequest] = []
    window.set_settings_opener(opened.append)
    server.queue(Reply.error(401, {"error": {"message": "invalid api key"}}))
    await _failed_run(window)
    assert window.banner.isVisible()
    assert "Loopback refused the API key (HTTP 401)" in window.banner_text.text()
    assert window.banner_action.text() == "Open provider settings"
    window.banner_action.click()
    assert opened == [SettingsRequest(profile_id="local")]
    assert not window.banner.isVisible()
    window.cost_view.set_price_requested.emit("custom", "test-model")  # the cost view's "set a price →"
    assert opened[-1] == SettingsRequest(price_for=("custom", "test-model"))


async def test_a_429_counts_down_and_retries_once_by_itself(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(Reply.error(429, {"error": {"message": "slow down"}}, retry_after="1"), text_reply("after the wait"))
    await _failed_run(window, "patience")
    assert window.banner.counting_down
    assert "Retrying by itself in 1 s" in window.banner_text.text()
    assert [b.text() for b in (window.banner_action, window.banner_action_2)] == ["Retry now", "Cancel retry"]
    assert window.stop_action.isEnabled()  # Esc cancels the wait
    await until(lambda: len(server.requests) == 2, seconds=5)
    await until(lambda: isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    assert _items(window)[-1].text == "after the wait"  # type: ignore[attr-defined]
    assert server.requests[1].json()["messages"][-1] == {"role": "user", "content": "patience"}
    assert not window.banner.counting_down


async def test_esc_cancels_a_waiting_retry(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(Reply.error(429, {"error": {"message": "slow down"}}, retry_after="30"))
    await _failed_run(window)
    assert window.banner.counting_down
    assert "Retrying by itself in 30 s" in window.banner_text.text()
    window.composer.cancel_requested.emit()  # Esc in the composer, as the Stop action
    assert not window.banner.counting_down
    assert not window.banner.isVisible()
    assert not window.stop_action.isEnabled()
    await asyncio.sleep(0.3)
    assert len(server.requests) == 1


async def test_leaving_the_session_cancels_a_waiting_retry(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(Reply.error(429, {"error": {"message": "slow down"}}, retry_after="1"))
    await _failed_run(window)
    assert window.banner.counting_down
    window.new_session()
    assert not window.banner.counting_down
    await asyncio.sleep(1.5)
    assert len(server.requests) == 1


async def test_a_context_overflow_offers_compact_and_a_new_session(window: MainWindow, server: LoopbackServer) -> None:
    message = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    server.queue(Reply.error(400, {"error": {"message": message, "code": "context_length_exceeded"}}))
    await _failed_run(window)
    assert "no longer fits in the model's context (8,192 tokens)" in window.banner_text.text()
    assert [b.text() for b in (window.banner_action, window.banner_action_2)] == ["Compact", "New session"]
    first = window.controller.session
    window.banner_action_2.click()
    assert window.controller.session is not None
    assert window.controller.session is not first


async def test_a_local_server_that_is_down_says_how_to_start_it(window: MainWindow) -> None:
    closed = _closed_url()
    settings = window.services.settings
    down = replace(ProfileConfig.from_preset("ollama", "ollama"), base_url=closed, model="m")
    settings.add_profile(down)
    settings.active_profile = "ollama"
    await _failed_run(window)
    text = window.banner_text.text()
    assert text == f"Nothing answers at {closed}. Is Ollama running? Start it with: ollama serve"
    assert [b.text() for b in (window.banner_action, window.banner_action_2)] == ["Retry", "Copy command"]
    window.banner_action_2.click()
    assert QGuiApplication.clipboard().text() == "ollama serve"


async def test_a_settings_change_during_a_run_is_reported(window: MainWindow, server: LoopbackServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    window.composer.submitted.emit("go slowly")
    await until(lambda: window.controller.busy and len(server.requests) == 1)
    await until(lambda: "streaming" in window.status_speed.text())
    settings = window.services.settings
    profile = settings.profile("local")
    assert profile is not None
    settings.update_profile(replace(profile, model="another-model"))
    window.settings_saved()
    assert "finishes on the previous provider settings" in window.statusBar().currentMessage()
    window.stop()
    await until(lambda: not window.controller.busy, seconds=5)
    assert "ran on the previous settings (Loopback · test-model)" in window.statusBar().currentMessage()
    assert window.status_speed.text() == ""


# -- keyboard and accessibility -------------------------------------------------------------------------------


def _focus_chain(window: QWidget, start: QWidget | None = None) -> list[QWidget]:
    """The widgets Tab visits, in order, from ``start`` (default: the session list): visible, enabled and
    Tab-focusable."""
    if start is None:
        assert isinstance(window, MainWindow)
        start = window.sessions
    chain: list[QWidget] = []
    widget = start.nextInFocusChain()
    while widget is not start:
        if (
            widget.isVisibleTo(window)
            and widget.isEnabled()
            and widget.focusPolicy() & Qt.FocusPolicy.TabFocus
            and widget.window() is window
        ):
            chain.append(widget)
        widget = widget.nextInFocusChain()
    return chain


def _pane(window: MainWindow, widget: QWidget) -> str:
    for name, pane in (
        ("sessions", window.sessions),
        ("transcript", window.transcript),
        ("composer", window.composer),
        ("inspector", window.inspector),
    ):
        if widget is pane or pane.isAncestorOf(widget):
            return name
    return "other"


async def test_tab_goes_left_to_right_and_every_stop_has_a_name(window: MainWindow) -> None:
    window.new_session()
    await asyncio.sleep(0.05)
    chain = _focus_chain(window)
    panes = [_pane(window, widget) for widget in chain]
    order = [name for index, name in enumerate(panes) if name != "other" and name not in panes[:index]]
    assert order == ["sessions", "transcript", "composer", "inspector"]
    assert panes == sorted(panes, key=order.index)  # each pane is visited in one run
    assert _unnamed(chain) == []


def _unnamed(chain: list[QWidget]) -> list[str]:
    """The widgets of ``chain`` that a screen reader would announce without a name."""
    unnamed = []
    for widget in chain:
        interface = QAccessible.queryAccessibleInterface(widget)
        assert interface is not None
        if not interface.text(QAccessible.Text.Name).strip():
            unnamed.append(f"{type(widget).__name__} {widget.objectName()!r} in {type(widget.parent()).__name__}")
    return unnamed


def test_session_actions_are_enabled_only_when_they_apply(qtbot: QtBot, window: MainWindow) -> None:
    assert not window.stop_action.isEnabled()
    assert not window.compact_action.isEnabled()  # no session
    assert not window.abandon_action.isEnabled()
    window.new_session()
    assert window.compact_action.isEnabled()
    assert not window.abandon_action.isEnabled()  # nothing is unfinished


def test_help_lists_the_keyboard_shortcuts(qtbot: QtBot, window: MainWindow) -> None:
    window.shortcuts_action.trigger()
    dialog = window.shortcuts_dialog
    assert dialog is not None
    assert dialog.isVisible()
    rows = {
        dialog.table.item(row, 1).text(): dialog.table.item(row, 2).text() for row in range(dialog.table.rowCount())
    }
    assert rows["Stop"] == "Esc or Ctrl+."
    assert rows["Send the prompt"] == "Enter"
    assert rows["Keyboard Shortcuts"] == "F1"
    dialog.close()


# -- first run ------------------------------------------------------------------------------------------------


async def test_first_run_finds_a_local_server_and_uses_it(tmp_path: Path, server: LoopbackServer, qtbot: QtBot) -> None:
    server.queue(
        Reply.json({"data": [{"id": "qwen3:8b"}, {"id": "llama3.2:3b"}]}),
        text_reply("hello from the local model"),
    )
    closed = _closed_url()
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    targets = [("ollama", server.base_url), ("lmstudio", closed)]
    services = Services(
        ProviderClient(http), ledger, AppSettings(), KeyStore(environ={}), ToolSettings.in_memory(), targets, False
    )
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    try:
        assert made.pages.currentWidget() is made.welcome
        await until(lambda: bool(made.welcome.rows))
        assert _unnamed(_focus_chain(made, made.welcome.setup_button)) == []
        row = made.welcome.rows[0]
        assert f"Ollama</b> found at :{server.port} — 2 models" in row.label.text()
        assert row.model_combo.currentText() == "llama3.2:3b"
        row.model_combo.setCurrentText("qwen3:8b")
        row.use_button.click()
        active = made.services.settings.active()
        assert active is not None
        assert (active.provider, active.base_url, active.model) == ("ollama", server.base_url, "qwen3:8b")
        assert made.pages.currentWidget() is made.splitter
        assert made.controller.session is not None
        assert "Using Ollama" in made.statusBar().currentMessage()
        assert made.composer.text() == TEST_PROMPT  # Enter sends the test prompt
        made.composer.submitted.emit("say hello")
        await until(lambda: len(server.requests) == 2)
        await made.controller.wait_idle()
        assert server.requests[1].json()["model"] == "qwen3:8b"
    finally:
        await made.controller.wait_idle()
        await made.controller.aclose()
        ledger.close()
        await http.aclose()


async def test_first_run_with_nothing_running_says_what_to_start(tmp_path: Path, qtbot: QtBot) -> None:
    closed = _closed_url()
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    targets = [("ollama", closed)]
    services = Services(
        ProviderClient(http), ledger, AppSettings(), KeyStore(environ={}), ToolSettings.in_memory(), targets
    )
    made = MainWindow(services)
    qtbot.addWidget(made)
    opened: list[SettingsRequest] = []
    made.set_settings_opener(opened.append)
    try:
        found = await made.welcome.detect()
        assert found == []
        assert "ollama serve" in made.welcome.local_status.text()
        assert made.welcome.detect_button.isEnabled()
        made.welcome.cloud_buttons["openrouter"].click()
        assert opened == [SettingsRequest(add_preset="openrouter")]
    finally:
        await made.controller.aclose()
        ledger.close()
        await http.aclose()


async def test_a_waterfall_row_selects_its_item_in_the_transcript(window: MainWindow, server: LoopbackServer) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    (workspace / "a.txt").write_text("alpha\n")
    server.queue(tool_reply(("r1", "read", '{"path": "a.txt"}')), text_reply("Read it."))
    window.composer.submitted.emit("read a")
    await until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 3)
    await window.controller.wait_idle()
    row = next(i for i, item in enumerate(_items(window)) if isinstance(item, ToolItem))
    window.inspector.row_requested.emit(row)
    assert window.transcript.currentIndex().row() == row
    await asyncio.sleep(0.1)  # the selection's deferred work (scrolling, the inspector) runs while the loop does


# -- issue 12: the model picker, Re-run on…, compare runs ------------------------------------------------------


def _route(server: LoopbackServer, *chat: Reply) -> list[Reply]:
    """Serve a model list on GET …/models and the queued ``chat`` replies on POST …/chat/completions (the picker
    asks for models and context windows while runs go on); other paths get 404."""
    replies = list(chat)
    models = {"data": [{"id": "test-model"}, {"id": "other-model", "context_length": 32768}]}

    def handler(request: RecordedRequest) -> Reply:
        if request.path.endswith("/chat/completions"):
            return replies.pop(0) if replies else Reply.error(500, {"error": {"message": "no reply queued"}})
        if request.method == "GET" and request.path.endswith("/models"):
            return Reply.json(models)
        return Reply.error(404, {"error": {"message": "not here"}})

    server.handler = handler
    return replies


def _chat_models(server: LoopbackServer) -> list[str]:
    return [r.json()["model"] for r in server.requests if r.path.endswith("/chat/completions")]


async def _pick(window: MainWindow, text: str, qtbot: QtBot) -> None:
    picker = window.model_picker
    assert picker is not None
    await until(lambda: not window.catalog.loading)
    qtbot.keyClicks(picker.filter, text)
    assert picker.selected() is not None
    qtbot.keyClick(picker.filter, Qt.Key.Key_Return)


async def test_the_model_picker_sends_the_next_request_to_the_chosen_model(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    _route(server, text_reply("from test-model"), text_reply("from other-model"))
    window.composer.submitted.emit("first")
    await until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 2)
    await window.controller.wait_idle()
    assert "Loopback · test-model" in window.composer.model_button.text()

    window.choose_model_action.trigger()  # Ctrl+M
    picker = window.model_picker
    assert picker is not None
    assert picker.isVisible()
    await _pick(window, "other", qtbot)
    assert not picker.isVisible()
    assert window.services.settings.active().model == "other-model"  # type: ignore[union-attr]
    assert "other-model" in window.composer.model_button.text()
    assert "local — no API charge" in window.composer.model_button.text()

    window.composer.submitted.emit("second")
    await until(lambda: not window.controller.busy and isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    assert _chat_models(server) == ["test-model", "other-model"]
    session = window.controller.session
    assert session is not None
    step = session.store.state.index.attempts
    assert [a.configuration_snapshot["model"] for a in step.values()] == ["test-model", "other-model"]


async def test_the_picker_lists_price_and_context_and_filters(window: MainWindow, server: LoopbackServer) -> None:
    _route(server)
    window.choose_model()
    picker = window.model_picker
    assert picker is not None
    await until(lambda: not window.catalog.loading)
    table = picker.table_model
    rows = {table.index(r, 0).data(): (table.index(r, 1).data(), table.index(r, 2).data()) for r in range(2)}
    assert rows["Loopback · test-model"][0] == "local — no API charge"
    assert table.rowCount() == 2
    assert picker.selected().model == "test-model"  # type: ignore[union-attr]
    QTest.keyClick(picker.filter, Qt.Key.Key_Down)  # arrows in the filter move through the list
    assert picker.selected().model == "other-model"  # type: ignore[union-attr]
    picker.filter.setText("zzz")
    assert table.rowCount() == 0
    assert not picker.ok_button.isEnabled()
    picker.reject()


async def test_a_model_switch_the_planner_would_refuse_is_explained(window: MainWindow, server: LoopbackServer) -> None:
    _route(server)
    workspace = Path(window.services.settings.workspaces[0])
    path = session_left_open(workspace, "test-model")  # as a crash leaves it
    window.controller.open(path)
    await window.controller.wait_idle()
    window.choose_model()
    await until(lambda: not window.catalog.loading)
    other = window.catalog.entry_for("local", "other-model")
    assert other is not None
    window.model_picker.reject()  # type: ignore[union-attr]
    window.use_model(other)
    text = window.banner_text.text()
    assert "unfinished operation started on test-model" in text
    assert "cannot continue on other-model" in text
    assert window.banner_action.text() == "Abort Unfinished Operation"
    assert window.banner_action_2.text() == "Switch back to test-model"
    window.banner_action_2.click()
    assert window.services.settings.active().model == "test-model"  # type: ignore[union-attr]


async def test_rerun_on_another_model_forks_the_session_before_the_prompt(
    window: MainWindow, server: LoopbackServer, qtbot: QtBot
) -> None:
    _route(server, text_reply("one"), text_reply("two"), text_reply("again, on other-model"))
    window.composer.submitted.emit("first prompt")
    await until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 2)
    await window.controller.wait_idle()
    window.composer.submitted.emit("second prompt")
    await until(lambda: not window.controller.busy and len(_items(window)) >= 4)
    await window.controller.wait_idle()
    origin = window.controller.session
    assert origin is not None
    origin_bytes = origin.store.path.read_bytes()
    second = [item for item in _items(window) if isinstance(item, UserItem)][1]
    menu = window.transcript.message_menu(second)
    assert "&Re-run on…" in [action.text() for action in menu.actions()]

    window.transcript.rerun_requested.emit(second)
    await _pick(window, "other", qtbot)
    await until(
        lambda: window.controller.session is not None and window.controller.session.store.path != origin.store.path
    )
    await until(lambda: not window.controller.busy and isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()

    fork = window.controller.session
    assert fork is not None
    state = reduce_session(fork.store.path.read_bytes())
    assert state.header.model == "other-model"
    assert [m["content"] for m in state.transcript] == ["first prompt", "one", "second prompt", "again, on other-model"]
    assert origin.store.path.read_bytes() == origin_bytes  # the origin is only read
    link = read_origin(fork.store.path)
    assert link is not None
    assert link.origin_session_id == origin.store.session_id
    assert _chat_models(server)[-1] == "other-model"
    await asyncio.sleep(0.1)  # the origin's dropped agent: its stream generators are finalised while the loop runs


async def test_a_compare_run_of_two_models_shows_both_rows(
    window: MainWindow, server: LoopbackServer, tmp_path: Path
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    (workspace / "greet.py").write_text("print('hi')\n")

    def edit(new: str) -> Reply:
        return tool_reply(
            ("e1", "edit", json.dumps({"path": "greet.py", "edits": [{"oldText": "hi", "newText": new}]}))
        )

    with LoopbackServer() as second:
        _route(server, edit("hello"), text_reply("hello done"))
        _route(second, edit("hey"), text_reply("hey done"))
        settings = window.services.settings
        settings.add_profile(replace(ProfileConfig.custom("second", second.base_url, name="Second"), model="model-b"))
        window.composer.editor.setPlainText("make it friendlier")
        window.show_compare_action.trigger()  # Ctrl+3
        view = window.compare_view
        assert window.pages.currentWidget() is view
        assert view.prompt.toPlainText() == "make it friendlier"
        entry = window.catalog.entry_for("second", "model-b")
        assert entry is not None
        view.add_model(entry)
        assert view.start_button.isEnabled()
        view.start_button.click()
        assert view.running
        assert window.stop_action.isEnabled()
        await view.wait()
        await until(lambda: not view.running)

    table = view.table_model
    assert table.rowCount() == 2
    rows = [[table.index(r, c).data() for c in range(table.columnCount())] for r in range(2)]
    assert [row[0] for row in rows] == ["Loopback · test-model", "Second · model-b"]
    assert [row[1] for row in rows] == ["completed", "completed"]
    assert [row[3] for row in rows] == ["2", "2"]
    assert [row[4] for row in rows] == ["1: ok 1", "1: ok 1"]
    assert [row[5] for row in rows] == ["in 30 · out 7", "in 30 · out 7"]
    assert [row[6] for row in rows] == ["local — no API charge", "local — no API charge"]
    assert [row[7] for row in rows] == ["1 (+1 −1)", "1 (+1 −1)"]
    assert (workspace / "greet.py").read_text() == "print('hi')\n"  # the original is untouched until kept
    view.table.setCurrentIndex(table.index(1, 0))
    assert "+print('hey')" in view.diff.toPlainText()
    assert view.keep_button.isEnabled()
    report = table.report(1)
    assert report is not None
    await view.keep(report)  # what "Keep This One…" does once the user approves the file list
    assert (workspace / "greet.py").read_text() == "print('hey')\n"
    assert "Applied the changes of Second · model-b" in view.status.text()
    assert view.open_button.isEnabled()
    view.open_button.click()
    await window.controller.wait_idle()  # the session is read off the GUI thread
    session = window.controller.session
    assert session is not None
    assert session.store.state.header.model == "model-b"
    assert window.pages.currentWidget() is window.splitter

    while view.models.count():  # another compare was being set up
        view.models.setCurrentRow(0)
        view.remove_button.click()
    comparison = view.comparison
    assert comparison is not None
    await view.reopen(comparison.folder)
    assert [view.models.item(row).text().split(" — ")[0] for row in range(view.models.count())] == [
        "Loopback · test-model",
        "Second · model-b",
    ]  # found again among the configured providers: the comparison can be run again as it was
    assert view.start_button.isEnabled()
    await asyncio.sleep(0.1)  # the finished agents' stream generators are finalised while the loop runs


async def test_the_session_at_the_top_of_the_list_is_read_ahead_after_start(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    with SessionStore.create(workspace, model="m") as store:
        session = store.path
    ledger = connect(tmp_path / "index.sqlite3")
    scan_workspace(ledger, workspace)
    settings = AppSettings()
    settings.add_workspace(workspace)
    http = httpx.AsyncClient(trust_env=False)
    monkeypatch.setattr("tiny_agent_gui.window_background.READ_AHEAD_DELAY_MS", 0)
    services = Services(ProviderClient(http), ledger, settings, KeyStore(environ={}), ToolSettings.in_memory())
    made = MainWindow(services)
    qtbot.addWidget(made)
    try:
        made.show()
        await until(lambda: session in made.controller._kept)
        opening = made.controller.open(session)
        assert opening is not None
        await opening
        assert made.controller.session is not None
        assert made.controller.session.store.resumed  # the click found it read
    finally:
        await made.controller.wait_idle()
        await made.controller.aclose()
        ledger.close()
        await http.aclose()


async def test_the_active_profile_s_key_is_read_ahead_off_the_gui_thread(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot
) -> None:
    settings = AppSettings()
    settings.add_profile(replace(ProfileConfig.custom("local", server.base_url, name="Loopback"), model="test-model"))
    settings.active_profile = "local"
    keys = CountingKeyStore()
    async with _window_with(tmp_path, qtbot, settings, keys) as made:
        assert made.background.reading_key is not None
        await made.background.reading_key
        assert made.connection() is not None  # what a run start asks for
        assert keys.threads
        assert threading.main_thread() not in keys.threads  # the keyring was never read on the GUI thread


async def test_a_workspace_is_indexed_in_a_worker_thread_and_then_listed(
    window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "another"
    with SessionStore.create(folder, model="m") as store:
        session_id = store.session_id
    corrupt = store.path.with_name(store.path.name.replace(session_id[:8], "0" * 8))
    corrupt.write_bytes(b'{"kind":"header"}\nnot json\n')
    threads: list[threading.Thread] = []
    scan = workbench.scan_workspace

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return scan(*args)

    monkeypatch.setattr(workbench, "scan_workspace", recorded)
    window.services.settings.add_workspace(folder)
    await window.index_workspaces([folder])
    assert threads
    assert threading.main_thread() not in threads
    assert window.sessions.model.row_of(session_id) is not None
    assert "corrupt and were skipped" in window.banner_text.text()
    assert corrupt.name in window.banner_text.text()


async def test_a_workspace_that_is_not_there_now_keeps_its_sessions_listed(window: MainWindow, tmp_path: Path) -> None:
    folder = tmp_path / "usb-stick"
    with SessionStore.create(folder, model="m") as store:
        session_id = store.session_id
    await window.index_workspaces([folder])
    assert window.sessions.model.row_of(session_id) is not None
    folder.rename(tmp_path / "unmounted")  # the disk is gone for now
    window.services.settings.add_workspace(folder)
    window.settings_saved()
    assert window.background.indexing is not None
    await window.background.indexing
    assert window.sessions.model.row_of(session_id) is not None  # still listed, not dropped from the index


async def test_at_start_every_workspace_is_indexed_in_the_background_once_the_window_shows(
    window: MainWindow, tmp_path: Path
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    with SessionStore.create(workspace, model="m") as store:  # written by a CLI since the last run
        session_id = store.session_id
    assert window.sessions.model.row_of(session_id) is None  # the list shows the index as it was
    await index_at_start(window)
    assert window.sessions.model.row_of(session_id) is not None


async def test_a_reopened_comparison_puts_back_a_model_its_provider_lists_but_was_not_fetched(
    window: MainWindow, tmp_path: Path
) -> None:
    config = window.services.settings.profile("local")
    assert config is not None
    runs = [RunReport(Contender(config.provider_profile(), model)) for model in ("test-model", "listed-model")]
    workspace = Path(window.services.settings.workspaces[0])
    save_comparison(Comparison("saved", tmp_path / "saved", workspace, "greet better", ("read",), runs))
    window.show_compare_action.trigger()
    view = window.compare_view
    assert window.catalog.entry_for("local", "listed-model") is None  # no model list fetched since the start
    await view.reopen(tmp_path / "saved")
    assert [view.models.item(row).text().split(" — ")[0] for row in range(view.models.count())] == [
        "Loopback · test-model",
        "Loopback · listed-model",
    ]  # its provider is still configured: both can run again
    assert "cannot be run again" not in view.status.text()


async def test_the_os_keyring_is_looked_for_off_the_gui_thread(tmp_path: Path, qtbot: QtBot) -> None:
    class StatusCountingKeyStore(CountingKeyStore):
        def status(self) -> KeyringStatus:
            self.threads.append(threading.current_thread())
            return KeyringStatus(False, "fail Keyring", "No system keyring is available.")

    keys = StatusCountingKeyStore()
    async with _window_with(tmp_path, qtbot, AppSettings(), keys) as made:
        assert made.pages.currentWidget() is made.welcome
        assert made.background.finding_keyring is not None
        await made.background.finding_keyring
        assert keys.threads
        assert threading.main_thread() not in keys.threads  # finding the backend can wait on D-Bus
        assert "No system keyring is available." in made.welcome.privacy.text()


async def test_a_slow_open_says_what_is_going_on_and_a_quick_one_says_nothing(
    window: MainWindow, tmp_path: Path, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = Path(window.services.settings.workspaces[0])
    script = SessionScript(seed=7)
    script.run("a prompt", ["an answer"])
    data = script.data()
    session_id = json.loads(data.split(b"\n", 1)[0])["id"]
    folder = workspace / ".tiny-agent" / "sessions"
    folder.mkdir(parents=True)
    (folder / session_file_name(datetime(2026, 1, 1, tzinfo=UTC), session_id)).write_bytes(data)
    scan_workspace(window.services.ledger, workspace)
    summary = get_session(window.services.ledger, session_id)
    assert summary is not None
    release = threading.Event()
    load = session_controller.load_session

    def slow(*args: Any) -> Any:
        release.wait(10)  # a long file: still reading and checking
        return load(*args)

    monkeypatch.setattr(session_controller, "load_session", slow)
    window.sessions.session_activated.emit(summary)
    bar = window.statusBar()
    await until(lambda: bar.currentMessage() != "")
    assert bar.currentMessage() == f"Opening “{summary.title}”: reading and checking its {summary.facts:,} facts…"
    release.set()
    await until(lambda: window.controller.session is not None)
    assert bar.currentMessage() == ""

    notice = DelayedMessage(bar, delay_ms=50)
    notice.announce("Opening something quick…")
    notice.done()
    await asyncio.sleep(0.15)
    assert bar.currentMessage() == ""  # done before the delay: nothing was shown


async def test_a_model_added_to_a_compare_has_its_key_read_ahead_off_the_gui_thread(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot
) -> None:
    settings = AppSettings()
    settings.add_profile(replace(ProfileConfig.custom("local", server.base_url, name="Loopback"), model="test-model"))
    settings.add_profile(replace(ProfileConfig.custom("second", server.base_url, name="Second"), model="model-b"))
    settings.active_profile = "local"
    keys = CountingKeyStore()
    async with _window_with(tmp_path, qtbot, settings, keys) as made:
        assert made.background.reading_key is not None
        await made.background.reading_key  # the active profile's key, read at start
        made.show_compare_action.trigger()
        entry = made.catalog.entry_for("second", "model-b")
        assert entry is not None
        before = len(keys.threads)
        made.compare_view.add_model(entry)
        await until(lambda: len(keys.threads) > before)
        assert threading.main_thread() not in keys.threads  # starting the compare will find the key read
