"""The session list in the real window: a new session is listed with a running mark on its first submit, the open
session is released before it goes to the trash, File → Import Session… and Open in Cost View (loopback provider)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply
from tests.core.ledger.sessionfiles import SessionFile
from tests.gui.waiting import emitted, until
from tests.loopback import LoopbackServer, Reply, sse_events
from tiny_agent_core.ledger import connect
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.main_window import MainWindow, Services
from tiny_agent_gui.sessions import SessionListModel, SessionStatus

T0 = 1_760_000_000_000


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
async def window(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MainWindow]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = AppSettings()
    profile = replace(ProfileConfig.custom("local", server.base_url, name="Loopback"), model="test-model")
    settings.add_profile(profile)
    settings.active_profile = "local"
    settings.add_workspace(workspace)
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(
        ProviderClient(http), ledger, settings, KeyStore(environ={}), ToolSettings.in_memory(), ask_context=False
    )
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    yield made
    await made.controller.wait_idle()
    await made.controller.aclose()
    await made.sessions.wait_idle()
    ledger.close()
    await http.aclose()


async def test_a_new_session_is_listed_as_running_on_its_first_submit(
    window: MainWindow, server: LoopbackServer
) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow "}, "finish_reason": None}]}
    server.queue(Reply.sse(sse_events([chunk]), stall_after=1, stall=30))
    pane = window.sessions
    assert "No sessions yet" in pane.empty_label.text()
    assert pane.empty_label.isVisible()
    window.composer.submitted.emit("a long task")
    await until(lambda: pane.model.rowCount() == 1)  # while the model is still answering
    assert window.controller.busy
    index = pane.model.index(0)
    assert index.data() == "a long task"
    assert index.data(SessionListModel.StatusRole) is SessionStatus.RUNNING
    assert not pane.empty_label.isVisible()
    window.controller.cancel()
    await until(lambda: not window.controller.busy)
    assert pane.model.index(0).data(SessionListModel.StatusRole) is not SessionStatus.RUNNING


async def test_deleting_the_open_session_closes_it_first(window: MainWindow, server: LoopbackServer) -> None:
    server.queue(text_reply("done"))
    window.composer.submitted.emit("short task")
    await until(lambda: window.sessions.model.rowCount() == 1 and not window.controller.busy)
    session = window.controller.session
    assert session is not None
    path = session.store.path
    window.sessions.select_session(session.store.session_id)
    window.sessions.delete_action.trigger()
    await window.sessions.wait_idle()
    assert window.controller.session is None
    assert not path.exists()
    assert window.sessions.model.rowCount() == 0


async def test_import_and_open_in_cost_view_from_the_window(window: MainWindow, tmp_path: Path, qtbot: QtBot) -> None:
    source = SessionFile(tmp_path / "elsewhere", 3, created_at=T0)
    source.user("imported task")
    source.attempt()
    source.answer("done", usage=(10, 1, 0, 0))
    assert window.import_action.shortcut().toString() == "Ctrl+Shift+O"
    window.import_action.trigger()
    dialog = window.sessions.file_dialog
    assert dialog is not None
    dialog.selectFile(str(source.path))
    dialog.accept()
    await window.sessions.wait_idle()
    assert window.sessions.current_summary() is not None
    async with emitted(window.cost_view.selection_loaded):
        window.sessions.cost_action.trigger()
    assert window.pages.currentWidget() is window.cost_view
    assert [row.key for row in window.cost_view.selected_rows()] == [source.id]
