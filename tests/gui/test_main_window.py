"""The real main window driven through whole runs against the loopback provider (offscreen, qasync loop)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from PySide6.QtWidgets import QApplication, QPushButton
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply, tool_reply
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.ledger import connect, get_session
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.timeline import CONTINUE_PROMPT, AssistantItem, ToolItem, UserItem
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_core.workbench import open_session
from tiny_agent_gui.approval_dialog import ApprovalDialog
from tiny_agent_gui.main_window import MainWindow, Services


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def window(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MainWindow]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
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
    services = Services(client, ledger, settings, KeyStore(environ={}), ToolSettings.in_memory())
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    yield made
    await made.controller.wait_idle()
    await made.controller.aclose()
    ledger.close()
    await http.aclose()


async def _until(predicate: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _items(window: MainWindow) -> list[object]:
    assert window.timeline is not None
    return list(window.timeline.items)


async def test_a_whole_run_with_an_approved_tool(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(
        tool_reply(("w1", "write", '{"path": "hello.txt", "content": "你好"}')),
        text_reply("I wrote the file."),
    )
    window.composer.submitted.emit("please write hello.txt")

    def dialog() -> ApprovalDialog | None:
        found = [w for w in QApplication.topLevelWidgets() if isinstance(w, ApprovalDialog) and w.isVisible()]
        return found[0] if found else None

    await _until(lambda: dialog() is not None)
    approval = dialog()
    assert approval is not None
    allow = next(b for b in approval.findChildren(QPushButton) if b.text().replace("&", "").startswith("Allow once"))
    allow.click()
    await window.controller.wait_idle()
    await _until(lambda: not window.controller.busy)

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
    assert "↑30" in window.status_usage.text()
    assert "cost unknown" in window.status_usage.text()
    assert window.sessions.isVisible()


async def test_a_provider_failure_is_shown_inline_and_retry_works(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(Reply.error(500, {"error": {"message": "upstream exploded"}}), text_reply("second time lucky"))
    window.composer.submitted.emit("try this")
    await _until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 2)
    notice = _items(window)[-1]
    assert "upstream exploded" in getattr(notice, "text", "")
    window.transcript.retry_requested.emit(notice)
    await _until(lambda: isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    assert _items(window)[-1].text == "second time lucky"  # type: ignore[attr-defined]


async def test_escape_stops_a_stalled_stream(window: MainWindow, server: LoopbackServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    window.composer.submitted.emit("go slowly")
    await _until(lambda: window.controller.busy and len(server.requests) == 1)
    await asyncio.sleep(0.1)
    window.composer.cancel_requested.emit()
    await _until(lambda: not window.controller.busy, seconds=5)
    assert any(getattr(item, "kind", None) == "aborted" for item in _items(window))
    assert window.composer.isEnabled()


def test_keyboard_shortcuts_are_visible(qtbot: QtBot, window: MainWindow) -> None:
    shortcuts = {a.text().replace("&", ""): a.shortcut().toString() for a in window.actions()}
    assert shortcuts["Stop"] == "Ctrl+."
    assert shortcuts["Compact"] == "Ctrl+Shift+K"
    assert shortcuts["Costs"] == "Ctrl+2"
    assert all(shortcuts[name] for name in ("New Session", "Open Folder…", "Settings…", "Quit"))
    assert window.transcript.accessibleName() == "Transcript"


async def test_closing_the_window_releases_the_session(window: MainWindow) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)  # the test's event loop must outlive the window
    try:
        window.new_session()
        session = window.controller.session
        assert session is not None
        path = session.store.path
        window.close()
        await _until(lambda: window.controller.session is None)
        reopened = open_session(path)
        assert not reopened.read_only  # the writer lock was released
        reopened.store.close()
    finally:
        app.setQuitOnLastWindowClosed(True)


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
    await _until(lambda: bool(titles))
    assert titles == ["a title worth indexing"]


async def test_the_step_limit_offers_continue(window: MainWindow, server: LoopbackServer) -> None:
    window.services.settings.max_steps = 1
    workspace = Path(window.services.settings.workspaces[0])
    (workspace / "a.txt").write_text("alpha\n")
    server.queue(tool_reply(("r1", "read", '{"path": "a.txt"}')), text_reply("Going on."))
    window.composer.submitted.emit("loop")
    await _until(lambda: window.timeline is not None and not window.controller.busy and len(_items(window)) >= 3)
    notice = _items(window)[-1]
    assert getattr(notice, "retry_label", None) == "Continue"
    window.transcript.retry_requested.emit(notice)
    await _until(lambda: isinstance(_items(window)[-1], AssistantItem))
    await window.controller.wait_idle()
    sent = server.requests[-1].json()["messages"]
    assert sent[-1] == {"role": "user", "content": CONTINUE_PROMPT}
    assert len(server.requests) == 2


def test_a_rebuilt_index_is_reported_once(tmp_path: Path, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    database = tmp_path / "index.sqlite3"
    database.write_bytes(b"this is not a database" * 100)
    ledger = connect(database)
    services = Services(None, ledger, AppSettings(), KeyStore(environ={}), ToolSettings.in_memory())  # type: ignore[arg-type]
    made = MainWindow(services)
    qtbot.addWidget(made)
    assert "rebuilt from the session files" in made.banner_text.text()
    ledger.close()
