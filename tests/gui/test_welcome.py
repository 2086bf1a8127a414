"""The first-run welcome view: local servers found first, cloud presets, a folder of sessions, and what it says about
keys and telemetry."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from tests.gui.waiting import emitted
from tiny_agent_core.local_servers import LocalServer
from tiny_agent_core.secrets import KeyringStatus
from tiny_agent_gui.welcome import WelcomeView


def test_set_up_a_provider_is_a_signal(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.setupProviderRequested, timeout=1000):
        qtbot.mouseClick(view.setup_button, Qt.MouseButton.LeftButton)


def test_open_folder_emits_the_chosen_folder_and_nothing_when_cancelled(qtbot: QtBot) -> None:
    answers = ["/home/me/project", None]
    asked: list[str] = []

    def chooser(parent: QWidget, title: str) -> str | None:
        asked.append(title)
        return answers.pop(0)

    view = WelcomeView(chooser=chooser)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.openFolderRequested, timeout=1000) as blocker:
        qtbot.mouseClick(view.open_button, Qt.MouseButton.LeftButton)
    assert blocker.args == ["/home/me/project"]
    with qtbot.assertNotEmitted(view.openFolderRequested):
        view.open_button.click()
    assert len(asked) == 2


def test_it_says_where_keys_go_and_that_there_is_no_telemetry(qtbot: QtBot) -> None:
    view = WelcomeView(KeyringStatus(True, "SecretService Keyring"))
    qtbot.addWidget(view)
    assert "system keyring" in view.privacy.text()
    assert "no telemetry" in view.privacy.text()
    missing = WelcomeView(KeyringStatus(False, "fail Keyring", "No system keyring is available."))
    qtbot.addWidget(missing)
    assert "No system keyring is available." in missing.privacy.text()
    assert "environment variable" in missing.privacy.text()


def test_buttons_have_mnemonics_and_accessible_names(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    for button in (view.setup_button, view.open_button):
        assert "&" in button.text()
        assert button.accessibleName()


async def test_found_local_servers_are_offered_first(qtbot: QtBot) -> None:
    found = [LocalServer("ollama", "Ollama", "http://127.0.0.1:11434/v1", ("llama3.2:3b", "qwen3:8b"))]

    async def detector() -> list[LocalServer]:
        return found

    view = WelcomeView(detector=detector)
    qtbot.addWidget(view)
    assert await view.detect() == found
    assert view.local_status.text() == "Found 1 server — choose a model and use it:"
    row = view.rows[0]
    assert "found at :11434 — 2 models" in row.label.text()
    assert row.use_button.text() == "&Use Ollama"
    assert row.use_button.accessibleName() == "Use Ollama at port 11434"
    async with emitted(view.localServerChosen) as chosen:
        row.use_button.click()
    assert chosen == [(found[0], "llama3.2:3b")]


async def test_nothing_found_says_what_to_start_and_can_look_again(qtbot: QtBot) -> None:
    calls: list[int] = []

    async def detector() -> list[LocalServer]:
        calls.append(1)
        return []

    view = WelcomeView(detector=detector)
    qtbot.addWidget(view)
    await view.detect()
    text = view.local_status.text()
    assert "Ollama :11434, LM Studio :1234, llama.cpp server :8080, vLLM :8000" in text
    assert "ollama serve" in text
    assert view.rows == []
    view.detect_button.click()
    await asyncio.sleep(0.05)
    assert len(calls) == 2


def test_cloud_presets_are_signals(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    assert "one key, many models, exact cost" in view.cloud_buttons["openrouter"].text()
    with qtbot.waitSignal(view.presetChosen, timeout=1000) as blocker:
        view.cloud_buttons["openrouter"].click()
    assert blocker.args == ["openrouter"]
    assert not view.detect_button.isEnabled()  # nothing to look with


def test_anthropic_is_offered_among_the_cloud_providers(qtbot: QtBot) -> None:
    view = WelcomeView()
    qtbot.addWidget(view)
    assert list(view.cloud_buttons) == ["openrouter", "openai", "anthropic"]
    with qtbot.waitSignal(view.presetChosen, timeout=1000) as blocker:
        view.cloud_buttons["anthropic"].click()
    assert blocker.args == ["anthropic"]
