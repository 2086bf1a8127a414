"""The Help menu of the real window (offscreen): About, Open Log Folder, Copy Diagnostics; banners name the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from pytestqt.qtbot import QtBot

from tiny_agent_core.ledger import connect
from tiny_agent_core.pricing import PRICE_TABLE_VERSION
from tiny_agent_core.providers.client import ProviderClient
from tiny_agent_core.secrets import KeyStore
from tiny_agent_core.settings import AppSettings, ProfileConfig
from tiny_agent_core.tools.approval import ToolSettings
from tiny_agent_gui.about_dialog import AboutDialog
from tiny_agent_gui.diagnostics import app_version
from tiny_agent_gui.main_window import MainWindow, Services

SECRET = "sk-test-DO-NOT-LEAK-0123456789"


@pytest.fixture
async def window(tmp_path: Path, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MainWindow]:
    monkeypatch.setenv("TINY_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TINY_AGENT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(tmp_path / "log"))
    monkeypatch.setenv("MY_KEY", SECRET)
    settings = AppSettings()
    url = f"https://user:{SECRET}@llm.example.com/v1?api_key={SECRET}"
    profile = replace(ProfileConfig.custom("local", url, name="Example"), model="m-1", key_env="MY_KEY")
    settings.add_profile(profile)
    settings.active_profile = "local"
    http = httpx.AsyncClient(trust_env=False)
    ledger = connect(tmp_path / "index.sqlite3")
    services = Services(ProviderClient(http), ledger, settings, KeyStore(environ={}), ToolSettings.in_memory())
    made = MainWindow(services)
    qtbot.addWidget(made)
    made.show()
    yield made
    if made._diagnostics_task is not None:
        await asyncio.wait_for(asyncio.shield(made._diagnostics_task), 30)
    await made.controller.aclose()
    ledger.close()
    await http.aclose()


def _help_actions(window: MainWindow) -> list[str]:
    menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&Help")
    return [action.text() for action in menu.actions()]


async def test_the_help_menu_has_about_log_folder_and_diagnostics(window: MainWindow) -> None:
    assert _help_actions(window) == [
        "&Keyboard Shortcuts",
        "&About tiny-agent desktop…",
        "Open &Log Folder",
        "&Copy Diagnostics",
    ]


async def test_about_shows_versions_locations_and_availability(window: MainWindow, tmp_path: Path) -> None:
    window.about_action.trigger()
    dialog = window.about_dialog
    assert isinstance(dialog, AboutDialog)
    assert dialog.isVisible()
    assert window._diagnostics_task is not None
    await asyncio.wait_for(asyncio.shield(window._diagnostics_task), 30)
    await asyncio.sleep(0)  # the done callback runs on the loop
    values = {label: widget.text() for label, widget in dialog.values.items()}
    assert values["Version"] == app_version()
    assert values["Price table"] == PRICE_TABLE_VERSION
    assert values["Settings"] == str(tmp_path / "config" / "settings.json")
    assert values["Data"] == str(tmp_path / "data")
    assert values["Sessions (default workspace)"] == str(tmp_path / "data" / "workspace" / ".tiny-agent" / "sessions")
    assert values["Log file"] == str(tmp_path / "log" / "tiny-agent-desktop.log")
    assert values["Keyring"].startswith(("available", "not available: "))
    assert values["Bash sandbox"].startswith(("available", "not available: "))
    assert "checking…" not in values.values()
    assert dialog.copy_button.isEnabled()
    # Help › About again brings the same dialog forward instead of stacking a second one.
    window.about_action.trigger()
    assert window.about_dialog is dialog


async def test_copy_diagnostics_copies_no_secret(window: MainWindow) -> None:
    QGuiApplication.clipboard().setText("")
    window.copy_diagnostics_action.trigger()
    assert window._diagnostics_task is not None
    await asyncio.wait_for(asyncio.shield(window._diagnostics_task), 30)
    await asyncio.sleep(0)
    text = QGuiApplication.clipboard().text()
    assert text.startswith("tiny-agent desktop diagnostics")
    assert f"Version: {app_version()}" in text
    assert "Keyring: " in text
    assert "Bash sandbox: " in text
    assert "baseUrl: https://llm.example.com/v1" in text
    assert "keyEnv: MY_KEY" in text
    assert "model: m-1" in text
    assert SECRET not in text
    assert "user" not in text.split("baseUrl:")[1].splitlines()[0]
    assert window.statusBar().currentMessage() == "Diagnostics copied to the clipboard"


async def test_open_log_folder_creates_and_opens_it(
    window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[QUrl] = []

    def fake_open(url: QUrl) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(fake_open))
    window.open_log_action.trigger()
    assert (tmp_path / "log").is_dir()
    assert [url.toLocalFile() for url in opened] == [str(tmp_path / "log")]


async def test_error_banners_point_to_the_log(window: MainWindow) -> None:
    window.controller.failed.emit("The provider refused the request.")
    assert window.banner.isVisible()
    assert "The provider refused the request." in window.banner_text.text()
    assert "Help › Open Log Folder" in window.banner_text.text()
    assert "tiny-agent-desktop.log" in window.banner_text.text()

    window.controller.unfinished.emit("The last run did not finish.")
    assert "Help › Open Log Folder" in window.banner_text.text()
    assert window.banner_action.text() == "Recover"

    window.controller.recovery_blocked.emit("Recovery is blocked.")
    assert "Help › Open Log Folder" in window.banner_text.text()
    assert window.banner_action.text() == "Abort Unfinished Operation"
