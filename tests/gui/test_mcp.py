"""MCP in the window: the Settings › MCP tab (add, test, remove, tokens, always allow) and a window session that
offers a real stdio MCP server's tools (written with the ``mcp`` SDK: tests/core/mcp/server_app.py) to the scripted
model, asks before the call, shows it in the inspector and stops the server when the window closes."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import keyring.errors
import pytest
from keyring.backends import fail
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton, QTableWidget, QTableWidgetItem
from pytestqt.qtbot import QtBot

from tests.core.agent.conftest import text_reply, tool_reply
from tests.core.mcp.conftest import ROOT, stdio_server
from tests.core.test_secrets import MemoryKeyring, use_keyring
from tests.gui.test_settings_dialog import Calls
from tests.gui.waiting import emitted, until
from tests.loopback import LoopbackServer
from tiny_agent_core.ledger import connect
from tiny_agent_core.mcp.app_catalog import AppCatalog, app_catalog_path, load_app_catalog, save_app_catalog
from tiny_agent_core.mcp.app_servers import AppServers
from tiny_agent_core.mcp.catalog import HttpServer, StdioServer
from tiny_agent_core.mcp.errors import McpConnectError
from tiny_agent_core.mcp.names import function_name
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.providers.profiles import custom_profile
from tiny_agent_core.secrets import SERVICE, KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.timeline import AssistantItem, ToolItem
from tiny_agent_core.tools.approval import AllowListApprover, ToolSettings
from tiny_agent_gui.approval_dialog import ApprovalDialog
from tiny_agent_gui.inspector import mcp_text
from tiny_agent_gui.main_window import MainWindow, Services
from tiny_agent_gui.session_controller import Connection, SessionController
from tiny_agent_gui.settings import SettingsDialog
from tiny_agent_gui.settings.mcp_page import McpPage, ServerDialog

pytestmark = pytest.mark.timeout(120)

TOKEN = "mcp-token-very-secret-77"


def children(marker: bytes = b"tests.core.mcp.server_app") -> list[int]:
    """This process's child processes whose command line contains ``marker`` (zombies included): by default the
    test MCP server."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            command = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        parent = re.search(r"^PPid:\s+(\d+)", text, re.MULTILINE)
        if parent and int(parent.group(1)) == os.getpid() and marker in command:
            found.append(int(status.parent.name))
    return found


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    yield from use_keyring(backend)  # type: ignore[misc]


def settings_dialog(qtbot: QtBot, tmp_path: Path, picked: list[str | None] | None = None) -> SettingsDialog:
    config = tmp_path / "config"
    dialog = SettingsDialog(
        AppSettings.load(config),
        ToolSettings.load(config),
        KeyStore(environ={}),
        Calls().provider_calls(),
        mcp_catalog=app_catalog_path(config),
        file_chooser=lambda _parent, _title: (picked or [None]).pop(0),
    )
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.show_tab(dialog.MCP)
    return dialog


def cell(table: QTableWidget, row: int, column: int) -> QTableWidgetItem:
    item = table.item(row, column)
    assert item is not None
    return item


def fill_local(editor: ServerDialog, alias: str) -> None:
    editor.alias_edit.setText(alias)
    editor.kind_combo.setCurrentIndex(editor.kind_combo.findData("stdio"))
    editor.command_edit.setText(sys.executable)
    editor.args_edit.setText("-m tests.core.mcp.server_app stdio")
    editor.cwd_edit.setText(str(ROOT))


async def save(dialog: SettingsDialog) -> None:
    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    await dialog.wait_saved()  # typed tokens are written from a worker thread
    assert dialog.error_label.text() == ""


async def test_add_test_allow_and_remove_a_stdio_server(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert isinstance(page, McpPage)
    page.add_button.click()
    editor = page.editor
    assert editor is not None
    fill_local(editor, "local")
    editor.buttons.button(editor.buttons.StandardButton.Ok).click()
    assert page.table.rowCount() == 1
    assert page.selected_alias() == "local"
    assert cell(page.table, 0, 0).checkState() == Qt.CheckState.Checked  # a new server is enabled

    page.test_button.click()
    assert page.test_task is not None
    await until(lambda: page is not None and page.test_task is None, 30)
    assert page.test_status.text().startswith("✓ local answered: 8 tool(s)"), page.test_status.text()
    listed = {cell(page.tools_table, row, 0).text(): row for row in range(page.tools_table.rowCount())}
    assert {"echo", "pid", "hang"} <= set(listed)
    assert cell(page.tools_table, listed["echo"], 1).text() == "Return the text unchanged."
    cell(page.tools_table, listed["echo"], 2).setCheckState(Qt.CheckState.Checked)  # always allow one tool
    cell(page.table, 0, 4).setCheckState(Qt.CheckState.Checked)  # and the whole server

    await save(dialog)
    path = app_catalog_path(tmp_path / "config")
    saved = load_app_catalog(path)  # the JSON on disk validates
    assert saved == AppCatalog({"local": stdio_server("local")}, frozenset({"local"}))
    tools = ToolSettings.load(tmp_path / "config")
    assert tools.always_allowed() == {"mcp:local", function_name("local", "echo")}

    dialog = settings_dialog(qtbot, tmp_path)
    listed_always = {dialog.tools.always_list.item(row).text() for row in range(dialog.tools.always_list.count())}
    assert listed_always == {"mcp:local", "mcp:local/echo"}  # the Tools tab lists (and revokes) them too
    page = dialog.mcp
    assert page is not None
    assert page.table.rowCount() == 1
    page.remove_button.click()
    assert page.table.rowCount() == 0
    await save(dialog)
    assert load_app_catalog(path) == AppCatalog()
    assert ToolSettings.load(tmp_path / "config").always_allowed() == set()
    assert children() == []


async def test_a_failing_test_says_why_and_what_to_do(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert page is not None
    page.add(StdioServer("gone", "/nonexistent/mcp-server"))
    page.test_button.click()
    await until(lambda: page.test_task is None, 30)
    text = page.test_status.text()
    assert text.startswith("✗ MCP server gone:"), text
    assert "What to do: Check the command" in text


async def test_a_typed_token_goes_to_the_keyring_not_the_file(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert page is not None
    page.add_button.click()
    editor = page.editor
    assert editor is not None
    editor.alias_edit.setText("docs")
    editor.kind_combo.setCurrentIndex(editor.kind_combo.findData("http"))
    editor.url_edit.setText("https://mcp.example.com/mcp")
    editor.token_edit.setText(TOKEN)
    assert editor.token_edit.echoMode() == editor.token_edit.EchoMode.Password
    editor.buttons.button(editor.buttons.StandardButton.Ok).click()
    await save(dialog)
    path = app_catalog_path(tmp_path / "config")
    assert TOKEN not in path.read_text()
    assert load_app_catalog(path).servers == {"docs": HttpServer("docs", "https://mcp.example.com/mcp")}
    assert memory_keyring.secrets[(SERVICE, "mcp:docs")] == TOKEN


async def _docs_saved_then_removed(qtbot: QtBot, tmp_path: Path) -> SettingsDialog:
    """A remote server "docs" saved with its token; then a new dialog whose MCP tab has it removed (not saved)."""
    dialog = settings_dialog(qtbot, tmp_path)
    assert dialog.mcp is not None
    dialog.mcp.add(HttpServer("docs", "https://mcp.example.com/mcp"), TOKEN)
    await save(dialog)
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert page is not None
    page.table.selectRow(0)
    page.remove_button.click()
    return dialog


async def test_a_token_that_could_not_be_deleted_is_tried_again_and_the_rest_takes_effect(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialog = await _docs_saved_then_removed(qtbot, tmp_path)
    deleting = memory_keyring.delete_password

    def refuse(service: str, username: str) -> None:
        raise keyring.errors.KeyringError("the keyring is locked")

    monkeypatch.setattr(memory_keyring, "delete_password", refuse)
    async with emitted(dialog.settingsSaved):  # the catalog without the server is in effect: the window re-reads it
        dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    await dialog.wait_saved()
    assert "a removed MCP token was not deleted" in dialog.error_label.text()
    assert dialog.isVisible()
    assert load_app_catalog(app_catalog_path(tmp_path / "config")) == AppCatalog()
    monkeypatch.setattr(memory_keyring, "delete_password", deleting)
    await save(dialog)  # Save again: the deletion is tried again
    assert (SERVICE, "mcp:docs") not in memory_keyring.secrets


async def test_a_server_removed_and_added_back_keeps_its_token(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    dialog = await _docs_saved_then_removed(qtbot, tmp_path)
    assert dialog.mcp is not None
    dialog.mcp.add(HttpServer("docs", "https://mcp.example.com/mcp"))  # back, without typing the token again
    await save(dialog)
    assert load_app_catalog(app_catalog_path(tmp_path / "config")).servers == {
        "docs": HttpServer("docs", "https://mcp.example.com/mcp")
    }
    assert memory_keyring.secrets[(SERVICE, "mcp:docs")] == TOKEN


async def test_a_bad_entry_keeps_the_editor_open_with_the_reason(
    qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert page is not None
    page.add_button.click()
    editor = page.editor
    assert editor is not None
    editor.alias_edit.setText("web")
    editor.kind_combo.setCurrentIndex(editor.kind_combo.findData("http"))
    editor.url_edit.setText("ftp://example.com")
    editor.buttons.button(editor.buttons.StandardButton.Ok).click()
    assert "must be an http(s) URL" in editor.error_label.text()
    assert editor.isVisible()
    assert page.table.rowCount() == 0


async def test_importing_a_claude_desktop_file(qtbot: QtBot, tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    picked = tmp_path / "claude_desktop_config.json"
    picked.write_text('{"mcpServers": {"files": {"command": "npx", "args": ["-y", "files-server"]}}, "theme": "x"}')
    dialog = settings_dialog(qtbot, tmp_path, [str(picked)])
    page = dialog.mcp
    assert page is not None
    page.import_button.click()
    await page.wait_idle()
    assert page.table.rowCount() == 1
    assert cell(page.table, 0, 3).text() == shlex.join(["npx", "-y", "files-server"])
    assert cell(page.table, 0, 0).checkState() == Qt.CheckState.Unchecked  # imported servers start disabled
    await save(dialog)
    assert list(load_app_catalog(app_catalog_path(tmp_path / "config")).servers) == ["files"]


# -- a window session ------------------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def mcp_window(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, catalog: AppCatalog, tools: ToolSettings | None = None
) -> MainWindow:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = AppSettings()
    settings.add_profile(replace(ProfileConfig.custom("local", server.base_url, name="Loopback"), model="m"))
    settings.active_profile = "local"
    settings.add_workspace(workspace)
    path = app_catalog_path(tmp_path / "config")
    save_app_catalog(path, catalog)
    client = ProviderClient(httpx.AsyncClient(trust_env=False))
    services = Services(
        client,
        connect(tmp_path / "index.sqlite3"),
        settings,
        KeyStore(environ={}),
        tools if tools is not None else ToolSettings.in_memory(),
        ask_context=False,
        mcp_catalog=path,
    )
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    return window


@pytest.fixture
async def windows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[list[MainWindow]]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    made: list[MainWindow] = []
    yield made
    for window in made:
        await window.controller.wait_idle()
        await window.controller.aclose()
        window.services.ledger.close()
        await window.services.client.http.aclose()


async def close(window: MainWindow) -> None:
    """Close the window as the user does, and wait until it has shut down (its MCP servers stopped)."""
    window.close()
    await until(lambda: window._shut_down, 30)


def approval_dialog() -> ApprovalDialog | None:
    found = [w for w in QApplication.topLevelWidgets() if isinstance(w, ApprovalDialog) and w.isVisible()]
    return found[0] if found else None


async def test_a_window_session_offers_asks_shows_and_stops_an_mcp_server(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, windows: list[MainWindow]
) -> None:
    window = mcp_window(tmp_path, server, qtbot, AppCatalog({"t": stdio_server("t")}, frozenset({"t"})))
    windows.append(window)
    echo = function_name("t", "echo")
    assert echo is not None
    server.queue(
        tool_reply(("c1", echo, '{"text": "hello from the model"}')), text_reply("The server said it.", usage=(5000, 2))
    )
    window.composer.submitted.emit("call the echo tool")

    await until(lambda: approval_dialog() is not None, 30)
    offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
    assert echo in offered
    assert "read" in offered  # next to the built-ins
    assert len(children()) == 1
    approval = approval_dialog()
    assert approval is not None
    assert approval.windowTitle() == "Allow mcp:t/echo?"  # named for people, not by its function name
    allow = next(b for b in approval.findChildren(QPushButton) if b.text().replace("&", "").startswith("Allow once"))
    allow.click()
    await window.controller.wait_idle()

    assert window.timeline is not None
    items = list(window.timeline.items)
    call = next(item for item in items if isinstance(item, ToolItem))
    assert (call.name, call.status) == (echo, "success")
    assert "hello from the model" in (call.result_text or "")
    assert call.summary.startswith("mcp:t/echo")
    assert isinstance(items[-1], AssistantItem)
    assert items[-1].text == "The server said it."

    window.inspector.show_item(call)
    inspector = window.inspector
    assert inspector.tabs.isTabVisible(inspector.tabs.indexOf(inspector.mcp))
    inspector.show_mcp()
    summary = inspector.mcp_summary.toPlainText()
    assert "tool: mcp:t/echo" in summary
    assert "server: t" in summary
    assert "kind: stdio (local program)" in summary
    assert re.search(r"duration: \d+ ms", summary)
    request = inspector.mcp_request.model()
    assert {request.index(row, 0).data() for row in range(request.rowCount())} == {"name", "arguments"}
    response = inspector.mcp_response.model()
    assert "content" in {response.index(row, 0).data() for row in range(response.rowCount())}
    reopened = mcp_text(call, None)  # a reopened session's call: what the session file says, no raw exchange
    assert "tool: mcp:t/echo" in reopened
    assert "raw exchange: not kept" in reopened

    await close(window)
    assert children() == []  # the stdio server was stopped, not left behind


async def test_a_server_that_cannot_start_gives_a_banner_and_the_run_goes_on(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, windows: list[MainWindow]
) -> None:
    catalog = AppCatalog({"gone": StdioServer("gone", "/nonexistent/mcp-server")}, frozenset({"gone"}))
    window = mcp_window(tmp_path, server, qtbot, catalog)
    windows.append(window)
    server.queue(text_reply("Answered without MCP.", usage=(5000, 2)))  # a prompt big enough to hold the tools
    window.composer.submitted.emit("hello")
    await until(
        lambda: not window.controller.busy and window.timeline is not None and len(window.timeline.items) > 1, 20
    )
    await window.controller.wait_idle()
    assert "MCP server gone:" in window.banner.text.text()
    assert "The run goes on without its tools" in window.banner.text.text()
    assert window.timeline is not None
    last = list(window.timeline.items)[-1]
    assert isinstance(last, AssistantItem)
    assert last.text == "Answered without MCP."
    offered = [tool["function"]["name"] for tool in server.requests[0].json()["tools"]]
    assert not any(name.startswith("mcp__") for name in offered)


async def test_an_always_allowed_server_is_called_without_asking(
    tmp_path: Path, server: LoopbackServer, qtbot: QtBot, windows: list[MainWindow]
) -> None:
    tools = ToolSettings.in_memory()
    tools.allow_always("mcp:t")  # as the MCP tab's "Always allow" of the server stores it
    window = mcp_window(tmp_path, server, qtbot, AppCatalog({"t": stdio_server("t")}, frozenset({"t"})), tools)
    windows.append(window)
    echo = function_name("t", "echo")
    assert echo is not None
    server.queue(tool_reply(("c1", echo, '{"text": "no questions"}')), text_reply("Done.", usage=(5000, 2)))
    asked: list[object] = []
    window.controller.bridge.approval_needed.connect(asked.append)
    window.composer.submitted.emit("call the echo tool")
    await until(lambda: window.controller.busy, 5)
    await window.controller.wait_idle()
    assert asked == []
    assert approval_dialog() is None
    assert window.timeline is not None
    call = next(item for item in window.timeline.items if isinstance(item, ToolItem))
    assert (call.status, "no questions" in (call.result_text or "")) == ("success", True)
    await close(window)


def hanging_server(alias: str = "slow") -> StdioServer:
    """A local server that starts and never answers the handshake."""
    return StdioServer(alias, sys.executable, ("-c", "import time; time.sleep(60)"))


@pytest.fixture
async def controller_for(
    tmp_path: Path, server: LoopbackServer
) -> AsyncIterator[Callable[[AppCatalog], SessionController]]:
    """A session controller whose window servers come from the given catalog (connect timeout 1 s)."""
    http = httpx.AsyncClient(trust_env=False)
    made: list[SessionController] = []

    def make(catalog: AppCatalog) -> SessionController:
        path = tmp_path / "config" / "mcp-servers.json"
        save_app_catalog(path, catalog)
        controller = SessionController(
            client=ProviderClient(http),
            approver=AllowListApprover([]),
            tool_settings=ToolSettings.in_memory(),
            connection=lambda: Connection(custom_profile(server.base_url), "m", None),
            mcp=AppServers(path, connect_timeout=1.0),
        )
        made.append(controller)
        return controller

    yield make
    for controller in made:
        await controller.wait_idle()
        await controller.aclose()
        controller.deleteLater()
    await http.aclose()
    await asyncio.sleep(0)


async def test_a_server_that_never_answers_is_a_banner_after_the_connect_timeout_not_a_hang(
    tmp_path: Path, server: LoopbackServer, controller_for: Callable[[AppCatalog], SessionController]
) -> None:
    controller = controller_for(AppCatalog({"slow": hanging_server()}, frozenset({"slow"})))
    failures: list[object] = []
    finished: list[object] = []
    controller.mcp_failed.connect(failures.append)
    controller.finished.connect(finished.append)
    controller.new(tmp_path)
    server.queue(text_reply("Without the slow server.", usage=(5000, 2)))
    controller.submit("hello")
    await controller.wait_idle()
    assert len(failures) == 1
    error = failures[0]
    assert isinstance(error, McpConnectError)
    assert (error.alias, error.cause) == ("slow", "timeout")
    assert [getattr(result, "answer", None) for result in finished] == ["Without the slow server."]
    assert not controller.mcp_running


async def test_esc_while_connecting_stops_before_the_run_starts(
    tmp_path: Path, server: LoopbackServer, controller_for: Callable[[AppCatalog], SessionController]
) -> None:
    controller = controller_for(AppCatalog({"slow": hanging_server()}, frozenset({"slow"})))
    controller.new(tmp_path)
    controller.submit("hello")
    await until(lambda: controller._connecting_mcp is not None, 5)
    controller.cancel()
    await controller.wait_idle()
    assert not controller.busy
    session = controller.session
    assert session is not None
    assert session.store.state.operation.kind == "idle"
    assert server.requests == []  # the model was never asked
    assert children(b"time.sleep(60)") == []  # the server being connected was stopped


@pytest.fixture
def no_keyring() -> Iterator[object]:
    yield from use_keyring(fail.Keyring())  # type: ignore[no-untyped-call]


async def test_without_a_keyring_a_typed_token_is_refused_and_nothing_is_written(
    qtbot: QtBot, tmp_path: Path, no_keyring: object
) -> None:
    dialog = settings_dialog(qtbot, tmp_path)
    page = dialog.mcp
    assert page is not None
    page.add(HttpServer("docs", "https://mcp.example.com/mcp"), TOKEN)
    dialog.buttons.button(dialog.buttons.StandardButton.Save).click()
    await dialog.wait_saved()
    assert "the MCP settings were not" in dialog.error_label.text()
    assert "keyring" in dialog.error_label.text()
    assert not app_catalog_path(tmp_path / "config").exists()
